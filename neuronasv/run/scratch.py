"""Scratch folders and worktrees of the run stage: removed on the way out, pruned if left.

Every folder the run stage needs for a while (``neuronasv run``'s per-run folder with its
private asv config, machine file and worktrees; ``confirm``'s two worktrees and profile
files) is a :func:`scratch_dir`: a temporary folder named ``neuronasv-<what>-*`` holding an
``owner.pid`` file, removed when the body ends — success, failure or Ctrl-C. A process
killed outright (``kill -9``, a cancelled CI job) cannot clean up; the next run or confirm
calls :func:`prune_stale`, which removes every worktree git still has registered inside a
scratch folder whose owner is gone, and those folders themselves.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
from collections.abc import Iterator

from neuronasv.store.git import Git

__all__ = ["OWNER_FILE", "PREFIX", "prune_stale", "scratch_dir"]

log = logging.getLogger(__name__)

#: Every scratch folder's name starts with this.
PREFIX = "neuronasv-"
#: The file holding the owning process id.
OWNER_FILE = "owner.pid"


@contextlib.contextmanager
def scratch_dir(what: str, *, parent: str | None = None) -> Iterator[str]:
    """A new ``neuronasv-<what>-*`` folder owned by this process; removed on exit."""
    path = tempfile.mkdtemp(prefix=f"{PREFIX}{what}-", dir=parent)
    try:
        with open(os.path.join(path, OWNER_FILE), "w", encoding="ascii") as fh:
            fh.write(str(os.getpid()))
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def _stale(folder: str) -> bool:
    """Whether ``folder`` is a scratch folder whose owning process is gone."""
    try:
        with open(os.path.join(folder, OWNER_FILE), encoding="ascii") as fh:
            pid = int(fh.read().strip() or "0")
    except (OSError, ValueError):
        return True  # never finished starting, or not ours to judge: no owner alive
    return pid <= 0 or (pid != os.getpid() and not _alive(pid))


def _scratch_root(path: str, tmp: str) -> str | None:
    """The scratch folder directly under ``tmp`` that holds ``path``, if any."""
    rel = os.path.relpath(os.path.abspath(path), tmp)
    first = rel.split(os.sep, 1)[0]
    if rel.startswith("..") or not first.startswith(PREFIX):
        return None
    return os.path.join(tmp, first)


def prune_stale(git: Git | None) -> int:
    """Remove worktrees and scratch folders left by killed runs; how many folders went.

    Only ``neuronasv-*`` folders of the temporary directory whose ``owner.pid`` names a
    process that no longer exists are touched; a concurrent run's folders are left alone.
    What went is said in one INFO line.
    """
    tmp = os.path.realpath(tempfile.gettempdir())
    stale: set[str] = set()
    if git is not None:
        for tree in git.worktree_paths():
            root = _scratch_root(os.path.realpath(tree), tmp)
            if root is not None and _stale(root):
                git.worktree_remove(tree)
                stale.add(root)
    with contextlib.suppress(OSError):
        for name in os.listdir(tmp):
            path = os.path.join(tmp, name)
            owned = os.path.isfile(os.path.join(path, OWNER_FILE))
            if name.startswith(PREFIX) and owned and _stale(path):
                stale.add(path)
    for root in sorted(stale):
        shutil.rmtree(root, ignore_errors=True)
    if git is not None and stale:
        with contextlib.suppress(Exception):
            git.run("worktree", "prune", check=False)
    if stale:
        log.info(f"removed {len(stale)} scratch folder(s) left by an interrupted run")
    return len(stale)
