"""Start-up: a command imports scipy, numpy or torch only when it computes with them.

Importing ``scipy.stats`` costs about a second cold, numpy ~0.1 s, torch ~1.5 s: a command
that renders a document or writes the site pays that on every CI step for nothing (issue
29: ``neuronasv publish`` spent ~1 s of its 1.4 s importing ``scipy.stats`` through report
→ analyse → stats). Each case runs the real command in a fresh interpreter and lists the
heavy packages left in ``sys.modules`` when it is done: deterministic, no timing.

``publish`` computes with numpy (the site's arrays: medians, quartiles, sparklines), so
numpy is allowed there; the statistics it never computes (scipy) and torch are not.
``bench/bench_publish.py`` measures what the start-up costs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.publish.conftest import load_synth

DATA = Path(__file__).parent / "data" / "report"
HEAVY = ("scipy", "numpy", "torch")

_RUN = (
    "import json, sys\n"
    "from neuronasv.cli import main\n"
    "try:\n"
    "    rc = main(json.loads(sys.argv[1]))\n"
    "except SystemExit as exc:\n"  # --help
    "    rc = exc.code\n"
    "heavy = {m.split('.')[0] for m in sys.modules} & set(sys.argv[2].split(','))\n"
    "print(json.dumps([rc, sorted(heavy)]))\n"
)


def heavy_after(argv: list[str], cwd: Path) -> tuple[int, list[str]]:
    """``(exit code, heavy packages imported)`` of ``neuronasv ARGV`` in a new interpreter."""
    out = subprocess.run(
        [sys.executable, "-c", _RUN, json.dumps(argv), ",".join(HEAVY)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "GITHUB_REPOSITORY": "o/r", "GITHUB_TOKEN": ""},
        check=True,
    )
    rc, heavy = json.loads(out.stdout.strip().splitlines()[-1])
    return int(rc), list(heavy)


def test_top_level_help_imports_no_heavy_package(tmp_path: Path) -> None:
    assert heavy_after(["--help"], tmp_path) == (0, [])


@pytest.mark.parametrize(
    "argv",
    [
        ["summary", "--report", str(DATA / "compare.findings.json"), "--out", "summary.md"],
        ["comment", "--pr", "1", "--report", str(DATA / "compare.findings.json"),
         "--dry-run", "--out", "req.json", "--github-repo", "o/r"],
        ["comment", "--pr", "1", "--report", str(DATA / "history.findings.json"),
         "--dry-run", "--out", "req.json", "--github-repo", "o/r"],
        ["status", "--sha", "a" * 40, "--report", str(DATA / "compare.findings.json"),
         "--dry-run", "--out", "req.json", "--github-repo", "o/r"],
        ["issues-sync", "--dry-run", str(DATA / "history.findings.json")],
        ["ack", "*aten::mul*", "--commit", "*", "--reason", "expected", "--file", "acks.json"],
    ],
    ids=["summary", "comment", "comment-history", "status", "issues-sync", "ack"],
)  # fmt: skip
def test_commands_that_render_a_document_import_no_heavy_package(
    argv: list[str], tmp_path: Path
) -> None:
    rc, heavy = heavy_after(argv, tmp_path)
    assert rc == 0
    assert heavy == [], f"`neuronasv {argv[0]}` imported {heavy} and computes with none"


def test_publish_imports_neither_scipy_nor_torch(tmp_path: Path) -> None:
    tiny_history = tmp_path / "hist"
    load_synth().generate(tiny_history, commits=12, workloads=2, ops=3)
    argv = [
        "publish", "--results-dir", str(tiny_history / "results"),
        "--repo", str(tiny_history / "repo"), "--out", str(tmp_path / "site"),
        "--findings", str(DATA / "history.findings.json"),
    ]  # fmt: skip
    rc, heavy = heavy_after(argv, tmp_path)
    assert rc == 0
    assert (tmp_path / "site" / "index.html").is_file()
    assert heavy == ["numpy"], f"publish imported {heavy}: it computes with numpy only"
