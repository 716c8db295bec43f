"""Scratch folders go on success, failure and Ctrl-C; a killed run's leftovers are pruned."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from neuronasv.run import scratch
from neuronasv.store.git import Git


@pytest.fixture()
def tmpdir_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private temporary directory (other processes' scratch folders are not ours)."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return tmp


def _repo(path: Path) -> Git:
    path.mkdir()
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    (path / "f").write_text("x\n")
    subprocess.run(["git", "-C", str(path), "add", "f"], check=True)
    subprocess.run(["git", "-C", str(path), "commit", "-qm", "one"], check=True)
    return Git(str(path))


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid  # reaped: no process has it now (pids are not reused this fast)


@pytest.mark.parametrize("exc", [None, RuntimeError, KeyboardInterrupt])
def test_scratch_dir_is_removed_however_the_body_ends(tmpdir_env: Path, exc: type | None) -> None:
    seen: list[str] = []
    try:
        with scratch.scratch_dir("run") as path:
            seen.append(path)
            Path(path, "file").write_text("x")
            assert Path(path, scratch.OWNER_FILE).read_text() == str(os.getpid())
            if exc is not None:
                raise exc
    except (RuntimeError, KeyboardInterrupt):
        pass
    assert seen and not os.path.exists(seen[0])
    assert os.listdir(tmpdir_env) == []


def test_prune_removes_a_killed_runs_worktree_and_folder(
    tmpdir_env: Path, tmp_path: Path, log_lines: list[str]
) -> None:
    git = _repo(tmp_path / "repo")
    head = git.rev_parse("HEAD")
    # What a run killed with SIGKILL leaves: its scratch folder, a registered worktree.
    dead = tmpdir_env / "neuronasv-run-dead"
    tree = dead / "abc" / "tree"
    tree.parent.mkdir(parents=True)
    (dead / scratch.OWNER_FILE).write_text(str(_dead_pid()))
    git.worktree_add(str(tree), head)
    # A concurrent live run (this process owns it): left alone.
    live = tmpdir_env / "neuronasv-run-live"
    live.mkdir()
    (live / scratch.OWNER_FILE).write_text(str(os.getppid()))
    git.worktree_add(str(live / "tree"), head)
    # Not a scratch folder of ours (no owner file): left alone.
    other = tmpdir_env / "neuronasv-test-home-x"
    other.mkdir()
    assert len(git.worktree_paths()) == 2

    lines = log_lines
    assert scratch.prune_stale(git) == 1
    assert not dead.exists() and live.exists() and other.exists()
    assert [os.path.realpath(p) for p in git.worktree_paths()] == [os.path.realpath(live / "tree")]
    assert lines == ["removed 1 scratch folder(s) left by an interrupted run"]
    assert scratch.prune_stale(git) == 0  # nothing more the second time


def test_worktree_runner_removes_its_scratch_folder(tmpdir_env: Path, tmp_path: Path) -> None:
    from neuronasv.run.worktree import WorktreeProfileRunner

    git = _repo(tmp_path / "repo")
    head = git.rev_parse("HEAD")

    def run_cmd(cmd: list[str], cwd: str, env: dict[str, str]) -> int:
        raise KeyboardInterrupt  # Ctrl-C while the first profile runs

    from neuronasv.model import SeriesId

    sid = SeriesId("b", (), "rmsnorm.naive", "4x512", "float32", None)
    with (
        pytest.raises(KeyboardInterrupt),
        WorktreeProfileRunner(str(tmp_path / "repo"), head, head, run_cmd=run_cmd) as runner,
    ):
        runner("base", [sid], 0)
    assert os.listdir(tmpdir_env) == []
    assert git.worktree_paths() == []
