"""CI scripts delete only folders a script of ours created (issue 22 item 5).

``ci/pr-bench.sh --traces-out DIR`` used to ``rm -rf`` whatever DIR was. Now every
folder a script clears is claimed with a marker file (``ci/lib.sh`` ``claim_dir``); an
existing folder without it is refused with exit 2 and left as it was.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHA = "a" * 40


def _bench(out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "ci/pr-bench.sh", "--pr", "7", "--base", SHA, "--head", SHA, "--out", str(out),
         *extra],
        cwd=ROOT, capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip


def test_pr_bench_refuses_a_traces_out_folder_it_did_not_create(tmp_path: Path) -> None:
    mine = tmp_path / "my-traces"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    r = _bench(tmp_path / "out", "--traces-out", str(mine))
    assert r.returncode == 2, r.stderr
    assert str(mine) in r.stderr and "not created by this script" in r.stderr
    assert (mine / "thesis.tex").read_text() == "years of work"


def test_pr_bench_refuses_a_foreign_results_folder_in_out(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "results").mkdir(parents=True)
    (out / "results" / "keep.json").write_text("{}")
    r = _bench(out)
    assert r.returncode == 2 and "results" in r.stderr, r.stderr
    assert (out / "results" / "keep.json").exists()


def _lib(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", f"source {ROOT}/ci/lib.sh; {script}"],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def test_claim_and_remove_only_touch_marked_folders(tmp_path: Path) -> None:
    d = tmp_path / "d"
    assert _lib(f"claim_dir {d}", tmp_path).returncode == 0
    (d / "old").write_text("from the last run")
    assert _lib(f"claim_dir {d}", tmp_path).returncode == 0  # ours: cleared
    assert sorted(p.name for p in d.iterdir()) == [".neuronasv-owned"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _lib(f"claim_dir {empty}", tmp_path).returncode == 0  # empty: taken as is
    link = tmp_path / "link"
    link.symlink_to(d)
    r = _lib(f"claim_dir {link}", tmp_path)
    assert r.returncode == 2 and "not a folder" in r.stderr
    r = _lib(f"remove_owned {link}", tmp_path)
    assert r.returncode == 2 and d.exists()
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "x").write_text("x")
    r = _lib(f"remove_owned {foreign}", tmp_path)
    assert r.returncode == 2 and (foreign / "x").exists()
    assert _lib(f"remove_owned {d}", tmp_path).returncode == 0 and not d.exists()
