"""The branch ``neuronasv init`` writes into the callers and ``asv.conf.json``: the default one.

The normal route to adopt is a feature branch and a PR, so the branch checked out is never
taken silently: ``--branch NAME`` when given, else the remote's HEAD (``origin``'s, or the
only remote's: what ``git clone`` records as ``refs/remotes/<remote>/HEAD``), else — no
remote HEAD known — a local ``main``, ``master`` or ``init.defaultBranch`` branch, else the
current branch; in those last cases :attr:`Branch.how` says what was chosen and how to
change it.
"""

from __future__ import annotations

from dataclasses import dataclass

from neuronasv.errors import UsageError
from neuronasv.store.git import Git

__all__ = ["Branch", "default_branch", "remote_head", "valid_branch"]


@dataclass(frozen=True)
class Branch:
    """The default branch, how it was found, and whether that was a fallback."""

    name: str
    how: str
    fallback: bool = False


def valid_branch(git: Git, name: str) -> str:
    """``name`` when git accepts it as a branch name, else a UsageError."""
    if name.startswith("-") or not git.ok("check-ref-format", f"refs/heads/{name}"):
        raise UsageError(f"--branch {name!r} is not a valid git branch name")
    return name


def _remotes(git: Git) -> list[str]:
    res = git.run("remote", check=False)
    return res.text.split() if res.returncode == 0 else []


def remote_head(git: Git) -> tuple[str, str] | None:
    """(remote, branch) of ``origin``'s recorded HEAD (or the only remote's), else None."""
    remotes = _remotes(git)
    remote = "origin" if "origin" in remotes else remotes[0] if len(remotes) == 1 else None
    if remote is None:
        return None
    res = git.run("symbolic-ref", "--quiet", f"refs/remotes/{remote}/HEAD", check=False)
    ref = res.text.strip()
    prefix = f"refs/remotes/{remote}/"
    if res.returncode != 0 or not ref.startswith(prefix):
        return None
    return remote, ref[len(prefix) :]


def default_branch(git: Git, requested: str | None = None) -> Branch:
    """The branch the callers trigger on (see the module doc)."""
    if requested:
        return Branch(valid_branch(git, requested), "--branch")
    head = remote_head(git)
    if head is not None:
        return Branch(head[1], f"{head[0]}'s HEAD")
    remotes = _remotes(git)
    why = (
        f"{remotes[0] if len(remotes) == 1 else 'origin'} records no HEAD"
        " (`git remote set-head origin --auto` fetches it)"
        if remotes
        else "no remote"
    )
    res = git.run("config", "--get", "init.defaultBranch", check=False)
    configured = res.text.strip() if res.returncode == 0 else ""
    for name in ("main", "master", configured):
        if name and git.ok("show-ref", "--verify", "--quiet", f"refs/heads/{name}"):
            return Branch(name, f"{why}: the local branch {name}", fallback=True)
    current = git.run("symbolic-ref", "--quiet", "--short", "HEAD", check=False).text.strip()
    if current:
        return Branch(current, f"{why}: the current branch, no main or master here", True)
    return Branch(configured or "main", f"{why}, no branch checked out", fallback=True)
