"""One output path (issue 38 item 1): no command prints a live control character or starts a
workflow command, on a terminal or in a GitHub Actions step.

A repository whose commit subjects, op names and series labels are hostile (a CR that
starts a new line for the runner, ``::add-mask::``/``::error::``, a legacy ``##[set-output
...]``, ESC/BEL/CSI sequences that clear a terminal or set its title, a C1 CSI, a bidi
override); every command that reads them runs in this process through the public entry
points (``neuronasv ...``, ``python -m neuronasv.ci ...``), its stdout and stderr captured
— results, progress, usage errors and the error line that ends it. Each is read the way
the runner reads a step's log (``actions/runner``'s ``ActionCommandManager``: ``::`` after
leading spaces, ``##[`` anywhere in a line, ``::stop-commands::TOKEN`` pausing until
``::TOKEN::``) and checked for control characters (newline and tab aside).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest

from neuronasv.analyse.acks import Acknowledgement, dumps_acks
from neuronasv.analyse.patterns import SeriesPattern
from neuronasv.cli import main
from tests.analyse.analyse_asvdata import neuronasv_run

HOSTILE = "\r::add-mask::m\x1b]0;title\x07\x1b[2J ##[set-output name=x]y \x9b1m\u202e"
OP = "aten::mul" + HOSTILE
SUBJECT = "fix" + HOSTILE + "\n\nbody"
MACHINE = "box"
WL = ("w", "4x4", "float32")

#: Workflow commands a command may send on purpose: ``summary``'s annotations (built
#: escaped by report/annotations.py) and the fences themselves.
OURS = {"warning", "notice", "error"}


def _git(repo: Path, *args: str) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.invalid",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.invalid")  # fmt: skip
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()  # fmt: skip


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """8 commits, the 6th (hostile subject) doubles the hostile op's calls; results of every
    commit stored, so ``bisect`` decides from them without measuring."""
    repo = tmp_path_factory.mktemp("inert") / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    shas = []
    for i in range(8):
        _git(repo, "commit", "-q", "--allow-empty", "-m", SUBJECT if i == 5 else f"change {i}")
        shas.append(_git(repo, "rev-parse", "HEAD"))
    rd = str(repo / ".asv" / "results")
    for i, c in enumerate(shas):
        calls = 2.0 if i >= 5 else 1.0
        table = {OP: (calls, [10.0 * calls] * 6), "aten::add": (1.0, [5.0] * 6)}
        neuronasv_run(rd, MACHINE, c, 1000 + i, {WL: table})
    ack = Acknowledgement(SeriesPattern.parse("*" + HOSTILE), shas[5], "known" + HOSTILE)
    (repo / "acks.json").write_text(dumps_acks([ack]))
    return repo, shas


def _commands(repo: Path, shas: list[str], tmp: Path) -> Iterator[tuple[str, list[str]]]:
    """(name, argv) of every command that prints what the hostile repository holds."""
    r = ["--repo", str(repo)]
    found = str(tmp / "f.json")
    yield "bisect text", ["bisect", shas[0], shas[-1], "--series", "*mul*", "--axis", "work",
                          "--no-github", "--no-record", *r]  # fmt: skip
    yield "bisect json", ["bisect", shas[0], shas[-1], "--series", "*mul*", "--axis", "work",
                          "--no-github", "--no-record", "--format", "json", *r]  # fmt: skip
    yield "bisect usage error", ["bisect", shas[0], shas[-1], "--series", "w 4x4*", *r]
    yield "compare text", ["compare", shas[4], shas[5], *r]
    yield "compare markdown", ["compare", shas[4], shas[5], "--format", "markdown", *r]
    yield "compare json", ["compare", shas[4], shas[5], "--format", "json", *r]
    yield "compare into a file", ["compare", shas[4], shas[5], "--format", "json", "--out", found,
                                  *r]  # fmt: skip
    yield "regressions text", ["regressions", *r]
    yield "regressions json", ["regressions", "--format", "json", *r]
    yield "comment dry run", ["comment", "--pr", "1", "--report", found, "--dry-run"]
    yield "summary", ["summary", "--report", found, "--out", "-", "--annotations"]
    yield "summary terminal", ["summary", "--report", found, "--format", "terminal"]
    yield "status dry run", ["status", "--sha", shas[5], "--report", found, "--dry-run"]
    yield "ack list", ["ack", "--list", "--file", str(repo / "acks.json")]
    yield "error naming a hostile path", ["compare", shas[4], shas[5], "--results-dir",
                                          str(tmp / ("r" + HOSTILE)), *r]  # fmt: skip
    yield "usage error naming a hostile path", ["compare", shas[4], shas[5], "--out",
                                                str(tmp / ("d" + HOSTILE) / "x.json"), *r]
    yield "ci verdict", ["ci", "verdict", found]


def live_commands(text: str) -> list[str]:
    """The workflow commands the runner would process in ``text`` (a step's log), by its
    rules: a line is split at CR, LF or CRLF; ``::name`` after leading spaces, or ``##[name``
    anywhere; between ``::stop-commands::TOKEN`` and ``::TOKEN::`` nothing but the token."""
    stopped: str | None = None
    found = []
    for line in re.split(r"\r\n|\r|\n", text):
        name = None
        stripped = line.lstrip()
        if stripped.startswith("::") and "::" in stripped[2:]:
            name = stripped[2:].split("::", 1)[0].split(" ", 1)[0]
        elif "##[" in line and "]" in line.split("##[", 1)[1]:
            name = line.split("##[", 1)[1].split("]", 1)[0].split(" ", 1)[0]
        if name is None:
            continue
        if stopped is not None:
            if name == stopped:
                stopped = None
            continue
        if name == "stop-commands":
            stopped = stripped.split("::", 2)[2]
            continue
        found.append(line)
    return found


def controls(text: str) -> list[str]:
    cc = {ch for ch in text if unicodedata.category(ch) == "Cc" and ch not in "\n\t"}
    return sorted(repr(ch) for ch in cc)


def _run(argv: list[str]) -> int:
    if argv[0] == "ci":
        from neuronasv.ci.__main__ import main as ci_main

        try:
            return ci_main(argv[1:])
        except SystemExit as exc:
            return int(exc.code or 0)
    return main(argv)


@pytest.mark.parametrize("actions", [False, True], ids=["terminal", "actions"])
def test_no_command_prints_a_live_control_character_or_workflow_command(
    hostile: tuple[Path, list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch, actions: bool,
) -> None:  # fmt: skip
    repo, shas = hostile
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    monkeypatch.delenv("GITHUB_OUTPUT", raising=False)
    if actions:
        monkeypatch.setenv("GITHUB_ACTIONS", "true")
    else:
        monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    seen = set()
    for name, argv in _commands(repo, shas, tmp_path):
        code = _run(argv)
        out, err = capsys.readouterr()
        assert code in (0, 2, 5), (name, code, err)
        assert "Traceback" not in err and "internal error" not in err, (name, err)
        for where, text in (("stdout", out), ("stderr", err)):
            assert controls(text) == [], (name, where, text)
            live = live_commands(text) if actions else []
            if name.startswith("summary") and where == "stdout":  # its annotations
                live = [ln for ln in live if ln[2:].split(" ", 1)[0].split("::")[0] not in OURS]
            assert live == [], (name, where, live)
        seen.add(name)
        if name.startswith("bisect text"):
            assert "culprit" in out and "fix" in out  # the subject is shown, made inert
        if name in ("bisect json", "compare json", "regressions json", "comment dry run"):
            json.loads(out)  # a JSON result still parses (its values: the test below)
    assert len(seen) == len(list(_commands(repo, shas, tmp_path)))


def test_a_json_result_keeps_every_value_exactly(
    hostile: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """The JSON on stdout is made inert without changing a value: it parses to the document
    the command wrote to a file."""
    repo, shas = hostile
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    argv = ["bisect", shas[0], shas[-1], "--series", "*mul*", "--axis", "work", "--no-github",
            "--no-record", "--format", "json", "--repo", str(repo)]  # fmt: skip
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["series"]["op"] == OP and doc["result"]["subject"].startswith("fix" + HOSTILE)
