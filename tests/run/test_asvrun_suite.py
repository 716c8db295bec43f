"""``neuronasv run`` and the repository's suite: none yet, and how asv launches it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from neuronasv.errors import UsageError
from neuronasv.run import asvrun

NEURONASV = str(Path(sys.executable).parent / "neuronasv")


def _repo(root: Path) -> Path:
    (root / "mypkg").mkdir(parents=True)
    (root / "mypkg" / "__init__.py").write_text("import torch\n")
    ident = ["-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    subprocess.run(["git", *ident, "-C", str(root), "add", "-A"], check=True)
    subprocess.run(["git", *ident, "-C", str(root), "commit", "-qm", "a"], check=True)
    return root


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if ".git" not in p.parts)


def test_run_before_init_says_so_in_one_line_and_writes_nothing(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo")
    before = _tree(repo)
    worktrees = subprocess.run(["git", "-C", str(repo), "worktree", "list"], capture_output=True,
                               text=True, check=True).stdout  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEURONASV_")}
    proc = subprocess.run([NEURONASV, "run", "HEAD"], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "no asv suite" in lines[0] and "neuronasv init" in lines[0], lines
    assert _tree(repo) == before  # no .asv/, no catalogue, no calibration
    assert subprocess.run(["git", "-C", str(repo), "worktree", "list"], capture_output=True,
                          text=True, check=True).stdout == worktrees  # fmt: skip


def test_a_config_naming_a_missing_suite_is_refused(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo")
    (repo / "asv.conf.json").write_text(json.dumps({"version": 1, "benchmark_dir": "bench"}))
    with pytest.raises(UsageError, match="benchmark_dir 'bench', which does not exist"):
        asvrun.require_suite(str(repo))
    (repo / "bench").mkdir()
    asvrun.require_suite(str(repo))


@pytest.mark.parametrize(("configured", "used"), [(None, "forkserver"), ("spawn", "spawn")])
def test_asv_forks_its_benchmark_processes_unless_the_config_says(
    tmp_path: Path, configured: str | None, used: str
) -> None:
    """One import of the suite, a fork per parameter: what keeps a series cheap."""
    tree = tmp_path / "tree"
    (tree / "benchmarks").mkdir(parents=True)
    conf = {"version": 1, **({"launch_method": configured} if configured else {})}
    (tree / "asv.conf.json").write_text(json.dumps(conf))
    shared = asvrun._Shared(
        asvrun.RunOptions(repo=str(tmp_path)), str(tmp_path), "m", "cpu", {}, {},
        str(tmp_path / "res"), str(tmp_path / "html"), str(tmp_path / "traces"),
        str(tmp_path / "cat"), str(tmp_path / "home"),
    )  # fmt: skip
    work = tmp_path / "work"
    work.mkdir()
    path, suite = asvrun._commit_conf(shared, str(tree), str(work), "")
    assert json.loads(Path(path).read_text())["launch_method"] == used
    assert suite == str(tree / "benchmarks")
