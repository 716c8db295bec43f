"""Temporary detached git worktrees: the code *as of* a commit, without touching the checkout.

asv's ``existing`` environment never checks anything out, so ``neuronasv run`` benchmarks a
commit by adding a detached worktree for it, pointing asv's benchmark dir and the
benchmark processes' import path at that tree, and removing it afterwards.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Sequence

from neuronasv.errors import StoreError

__all__ = ["GitRunner", "detached_worktree", "rev_parse", "run_git", "subject"]

#: ``(args, cwd) -> stdout``; raises :class:`StoreError` on failure. Injected in tests.
GitRunner = Callable[[Sequence[str], str], str]


def run_git(args: Sequence[str], cwd: str) -> str:
    """Run ``git <args>`` in ``cwd``; stdout, or :class:`StoreError` with git's message."""
    try:
        proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    except OSError as exc:
        raise StoreError(f"cannot run git: {exc}") from exc
    if proc.returncode != 0:
        msg = (proc.stderr or proc.stdout).strip().splitlines()
        raise StoreError(f"git {' '.join(args)} failed: {msg[-1] if msg else proc.returncode}")
    return proc.stdout


def rev_parse(repo: str, commit: str, git: GitRunner = run_git) -> str:
    """Full 40-hex hash of ``commit`` (any rev git understands)."""
    if commit.startswith("-"):
        raise StoreError(f"not a commit: {commit!r}")
    try:
        return git(["rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}"], repo).strip()
    except StoreError:
        raise StoreError(f"{commit!r} is not a commit in {repo}") from None


def subject(repo: str, sha: str, git: GitRunner = run_git) -> str:
    """First line of the commit message (for progress lines)."""
    try:
        return git(["log", "-1", "--format=%s", sha], repo).strip()
    except StoreError:
        return ""


@contextlib.contextmanager
def detached_worktree(
    repo: str, sha: str, *, parent: str | None = None, git: GitRunner = run_git
) -> Iterator[str]:
    """Check ``sha`` out in a temporary detached worktree; yield its path; remove it.

    The worktree is removed (and pruned) even when the body raises, so a failing commit
    leaves no registered worktree behind.
    """
    base = tempfile.mkdtemp(prefix="neuronasv-wt-", dir=parent)
    path = os.path.join(base, sha[:12])
    git(["worktree", "add", "--detach", "--force", path, sha], repo)
    try:
        yield path
    finally:
        with contextlib.suppress(StoreError):
            git(["worktree", "remove", "--force", path], repo)
        shutil.rmtree(base, ignore_errors=True)
        with contextlib.suppress(StoreError):
            git(["worktree", "prune"], repo)
