"""The one git gateway: every git call of the package goes through :meth:`Git._run`.

Shape after asv's ``asv/plugins/git.py`` (one ``_run_git``, one error type): a
:class:`Git` is one repository; its operations (``rev_parse``, ``commit_order``,
``detached_worktree``, ...) are methods built on ``_run``, which

* runs the command through an injected :class:`GitTransport` (the real one is
  :class:`SubprocessGit`; tests pass ``tests/fakegit.py``'s ``FakeGit`` or wrap the real
  one to interpose, e.g. on the first push of the results store);
* runs in ``cwd=repo`` with ``GIT_TERMINAL_PROMPT=0`` (a missing credential fails fast on
  a runner with no terminal) plus the gateway's and the call's extra environment;
* turns a non-zero exit into :class:`~neuronasv.errors.StoreError` (exit 7) with one
  wording — ``git <cmd> failed in <repo> (exit N): <git's message>`` — with credentials
  redacted (URLs with a user/token, ``Authorization:`` headers).

Nothing else in ``neuronasv`` starts a ``git`` process.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from neuronasv.errors import StoreError
from neuronasv.proc import run_process

__all__ = [
    "Git",
    "GitResult",
    "GitTransport",
    "SubprocessGit",
    "branch_problem",
    "git_for",
    "redact",
]


def branch_problem(name: str) -> str | None:
    """Why ``name`` cannot be a branch of ours, or None: git's ``check-ref-format`` rules for
    ``refs/heads/<name>`` (no component starting with ``.`` or ending in ``.lock``, no
    ``..``, control characters, space, ``~ ^ : ? * [ \\``, no empty component or trailing
    ``/`` or ``.``, no ``@{``, not ``@``), and not ``HEAD``, not a full ref (``refs/...``:
    it would become ``refs/heads/refs/...``), not starting with ``-`` (an option to git)."""
    if name.startswith("-"):
        return "starts with '-'"
    if name == "HEAD" or name.startswith("refs/"):
        return "is HEAD or a full ref name (give the branch's short name)"
    if name == "@" or "@{" in name or ".." in name or "\\" in name:
        return "holds '..', '@{' or '\\' (or is '@')"
    if any(ord(ch) < 0x20 or ch == "\x7f" or ch in " ~^:?*[" for ch in name):
        return "holds a control character, a space or one of ~ ^ : ? * ["
    parts = name.split("/")
    if any(not p or p.startswith(".") or p.endswith(".lock") for p in parts) or name.endswith("."):
        return "has an empty part, a part starting with '.' or ending in '.lock', or ends in '.'"
    return None


@dataclass(frozen=True)
class GitResult:
    """Outcome of one git invocation (stdout as bytes: blobs are not always text)."""

    returncode: int
    stdout: bytes
    stderr: str

    @property
    def text(self) -> str:
        return self.stdout.decode("utf-8", errors="replace")


class GitTransport(Protocol):
    """Runs ``git <args>`` in ``cwd``; never raises for a non-zero exit (the gateway does)."""

    def __call__(
        self,
        args: Sequence[str],
        *,
        cwd: str,
        env: Mapping[str, str] | None = None,
        input: bytes | None = None,
    ) -> GitResult: ...


class SubprocessGit:
    """The real git, as a subprocess. ``env`` entries are added to the inherited environment.

    ``GIT_TERMINAL_PROMPT=0`` so a missing credential fails fast instead of waiting for a
    password on a CI runner with no terminal. A command that runs past ``timeout`` seconds
    is reported as exit 124.
    """

    def __init__(self, executable: str = "git", timeout: float = 600.0) -> None:
        self.executable = executable
        self.timeout = timeout

    def __call__(
        self,
        args: Sequence[str],
        *,
        cwd: str,
        env: Mapping[str, str] | None = None,
        input: bytes | None = None,
    ) -> GitResult:
        full_env = dict(os.environ)
        full_env["GIT_TERMINAL_PROMPT"] = "0"
        if env:
            full_env.update(env)
        try:
            proc = run_process(
                [self.executable, *args], cwd=cwd, env=full_env, input=input, timeout=self.timeout
            )
        except FileNotFoundError as exc:
            if not os.path.isdir(cwd):
                raise StoreError(f"{cwd}: no such folder (for git {' '.join(args[:1])})") from exc
            raise StoreError(
                "git is not installed or not on PATH", hint="install git to use neuronasv"
            ) from exc
        except OSError as exc:
            raise StoreError(f"cannot run git: {exc}") from exc
        if proc.timed_out:
            return GitResult(proc.returncode, b"", f"git {args[0] if args else ''} timed out")
        assert isinstance(proc.stdout, bytes) and isinstance(proc.stderr, bytes)
        return GitResult(proc.returncode, proc.stdout, proc.stderr.decode("utf-8", "replace"))


_CRED_RE = re.compile(r"(https?://)[^/@\s]+@")
_HEADER_RE = re.compile(r"(authorization:\s*\w+\s+)\S+", re.IGNORECASE)


def redact(text: str) -> str:
    """Strip credentials from URLs and headers before text reaches a log."""
    return _HEADER_RE.sub(r"\1***", _CRED_RE.sub(r"\1***@", text))


# Off-ref commits passed on one command line (41 bytes each; Linux allows ~2 MB).
_MAX_EXTRA_ARGS = 20_000


class Git:
    """One repository's git (a work tree or a git dir), every call through :meth:`_run`.

    Args:
        repo: the repository; commands run with ``cwd=repo``.
        transport: what runs git (default :class:`SubprocessGit`).
        env: extra environment for every call (identity, ``GIT_CONFIG_*`` headers).
    """

    def __init__(
        self,
        repo: str | os.PathLike[str],
        *,
        transport: GitTransport | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.repo = os.fspath(repo)
        self.transport: GitTransport = transport or SubprocessGit()
        self.env: dict[str, str] = dict(env or {})

    def at(self, repo: str | os.PathLike[str]) -> Git:
        """The same transport and environment, for another repository."""
        return Git(repo, transport=self.transport, env=self.env)

    # -- the one call --------------------------------------------------------------------

    def _run(
        self,
        args: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        input: bytes | None = None,
        check: bool = True,
    ) -> GitResult:
        merged = {**self.env, **(env or {})}
        res = self.transport(list(args), cwd=self.repo, env=merged or None, input=input)
        if check and res.returncode != 0:
            msg = redact(res.stderr or res.text).strip()[:500]
            raise StoreError(
                f"git {' '.join(args[:2])} failed in {self.repo} (exit {res.returncode})"
                + (f": {msg}" if msg else "")
            )
        return res

    def run(
        self,
        *args: str,
        env: Mapping[str, str] | None = None,
        input: bytes | None = None,
        check: bool = True,
    ) -> GitResult:
        """``git <args>``; :class:`StoreError` on a non-zero exit unless ``check=False``."""
        return self._run(args, env=env, input=input, check=check)

    def text(self, *args: str) -> str:
        """stdout of ``git <args>`` as text, stripped of surrounding white space."""
        return self._run(args).text.strip()

    def ok(self, *args: str) -> bool:
        """Whether ``git <args>`` exits 0 (its output discarded)."""
        return self._run(args, check=False).returncode == 0

    # -- operations ----------------------------------------------------------------------

    def is_repo(self) -> bool:
        """Whether :attr:`repo` is inside a git work tree or is a git dir."""
        if not os.path.isdir(self.repo):
            return False
        return self.ok("rev-parse", "--git-dir")

    def toplevel(self) -> str:
        """The work tree's top folder."""
        return self.text("rev-parse", "--show-toplevel")

    def resolve(self, ref: str) -> str | None:
        """Full hash of the commit ``ref`` names (branch, tag, prefix, ``HEAD~1``), or None."""
        if ref.startswith("-"):
            return None  # never an option
        res = self._run(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], check=False)
        out = res.text.strip()
        return out if res.returncode == 0 and out else None

    def rev_parse(self, commit: str) -> str:
        """Full 40-hex hash of ``commit``; :class:`StoreError` when it is not a commit here."""
        if commit.startswith("-"):
            raise StoreError(f"not a commit: {commit!r}")
        full = self.resolve(commit)
        if full is None:
            raise StoreError(f"{commit!r} is not a commit in {self.repo}")
        return full

    def known_commits(self, hashes: Iterable[str]) -> set[str]:
        """Those of ``hashes`` (full hashes) that are commits of this repository, in one
        ``git cat-file --batch-check``."""
        wanted = sorted({h for h in hashes if h and not h.startswith("-")})
        if not wanted:
            return set()
        res = self._run(["cat-file", "--batch-check=%(objectname) %(objecttype)"],
                        input="".join(f"{h}\n" for h in wanted).encode(), check=False)  # fmt: skip
        if res.returncode != 0:
            return set()
        found = {ln.split(" ", 1)[0] for ln in res.text.splitlines() if ln.endswith(" commit")}
        return found & set(wanted)

    def subject(self, sha: str) -> str:
        """First line of the commit message ("" when git cannot say)."""
        res = self._run(["log", "-1", "--format=%s", sha], check=False)
        return res.text.strip() if res.returncode == 0 else ""

    def remote_url(self, name: str = "origin") -> str | None:
        """The URL of remote ``name``, None when there is none."""
        res = self._run(["remote", "get-url", name], check=False)
        return (res.text.strip() or None) if res.returncode == 0 else None

    def commit_order(self, commits: Iterable[str]) -> list[str]:
        """Order ``commits`` oldest first by git history; unknown commits are left out.

        One ``git rev-list --topo-order --reverse --all`` orders every commit reachable
        from a ref. Commits with results that no ref reaches (a deleted PR branch whose
        objects remain) cost one more call that walks them together with all refs, so
        they land between their ancestors and descendants; hashes git does not have are
        ignored (``--ignore-missing``) and left out.
        """
        wanted = set(commits)
        if not wanted:
            return []
        listed = self._run(["rev-list", "--topo-order", "--reverse", "--all"]).text.split()
        missing = wanted.difference(listed)
        if missing and len(missing) <= _MAX_EXTRA_ARGS:
            args = ["rev-list", "--topo-order", "--reverse", "--ignore-missing", "--all"]
            listed = self._run([*args, *sorted(missing)]).text.split()
        return [c for c in listed if c in wanted]

    def ancestors(self, commit: str, limit: int) -> list[str]:
        """Up to ``limit`` first-parent ancestors of ``commit``, newest first (itself first)."""
        return self.text("rev-list", "--first-parent", f"--max-count={limit}", commit).split()

    def worktree_add(self, path: str, sha: str) -> None:
        """A detached worktree of ``sha`` at ``path``."""
        self._run(["worktree", "add", "--detach", "--force", path, sha])

    def worktree_paths(self) -> list[str]:
        """Paths of the linked worktrees git has registered (not the main one)."""
        res = self._run(["worktree", "list", "--porcelain"], check=False)
        if res.returncode != 0:
            return []
        paths = [
            ln[len("worktree ") :] for ln in res.text.splitlines() if ln.startswith("worktree ")
        ]
        return paths[1:]

    def worktree_remove(self, path: str) -> None:
        """Remove the worktree at ``path`` and prune (best effort: never raises)."""
        with contextlib.suppress(StoreError):
            self._run(["worktree", "remove", "--force", path])
        with contextlib.suppress(StoreError):
            self._run(["worktree", "prune"])

    @contextlib.contextmanager
    def detached_worktree(self, sha: str, *, parent: str | None = None) -> Iterator[str]:
        """Check ``sha`` out in a temporary detached worktree; yield its path; remove it.

        The worktree is removed (and pruned) even when the body raises, so a failing
        commit leaves no registered worktree behind. asv's ``existing`` environment never
        checks anything out, so ``neuronasv run`` benchmarks a commit from such a tree.
        """
        base = tempfile.mkdtemp(prefix="neuronasv-wt-", dir=parent)
        path = os.path.join(base, sha[:12])
        try:
            self.worktree_add(path, sha)
            yield path
        finally:
            self.worktree_remove(path)
            shutil.rmtree(base, ignore_errors=True)


def git_for(
    repo: str | os.PathLike[str] | None, transport: GitTransport | None = None
) -> Git | None:
    """A :class:`Git` for ``repo`` when it is a git work tree or git dir, else None."""
    if repo is None:
        return None
    git = Git(repo, transport=transport)
    return git if git.is_repo() else None
