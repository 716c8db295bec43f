"""The results branch: asv results kept on a git branch, written safely by many runners.

Layout on the branch (default ``benchmark-results``) is asv's results folder itself, so a
worktree of the branch *is* a results directory ``asv compare``/``asv publish`` can read::

    benchmarks.json
    <machine>/machine.json
    <machine>/<hash8>-<env>.json          one file per (machine, commit, environment)
    <machine>/<hash8>-<env>.neuronasv     its sidecar (fingerprint, op tables, trace index)

Writing is fetch → add → commit → push, built with plumbing on a *temporary index* in the
caller's repository: the user's checkout, index and HEAD are never touched, only objects and
a short-lived private ref (``refs/neuronasv-tmp/...``, deleted afterwards) are added.

Why a retry loop and not a lock: several runners (a sharded matrix, a backfill, a PR that
merged meanwhile) push to the same branch; GitHub has no lock and a workflow ``concurrency``
group *drops* queued runs, which would lose results. So a rejected (non-fast-forward) push
re-fetches the new tip, re-applies our files onto it and pushes again, after an exponential
backoff with jitter, a bounded number of times. Never a force-push: that is how results get
lost. Writing is idempotent: each file's path is its identity, so re-running a commit
replaces its own file, and a write that changes nothing makes no commit.

Everything that talks to the world (git, sleep, clock, randomness) is injected so tests run
real git against a local bare remote without sleeping on the wall clock.
"""

from __future__ import annotations

import base64
import hashlib
import os
import random
import re
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from neuronasv.errors import StoreError, UsageError
from neuronasv.fileio import write_atomic
from neuronasv.store.git import Git, GitResult, GitTransport, SubprocessGit, redact
from neuronasv.store.layout import (
    BENCHMARKS_FILE,
    MACHINE_FILE,
    PEAKS_FILE,
    is_bisect_name,
    parse_result_name,
)

__all__ = [
    "DEFAULT_BRANCH",
    "PullReport",
    "PushReport",
    "ResultsStore",
    "collect_result_files",
    "result_commit_prefix",
    "token_git_env",
]

DEFAULT_BRANCH = "benchmark-results"
_TMP_REF_PREFIX = "refs/neuronasv-tmp/"
# asv names a result file <hash8>-<env>.json; the sidecar shares the stem.
# Messages git prints when a push lost a race (remote moved on) or a ref lock was
# contended: worth a re-fetch and another try. Anything else (auth, missing repo) is not.
_RETRYABLE = (
    "non-fast-forward",
    "fetch first",
    "[rejected]",
    "failed to update ref",
    "cannot lock ref",
    "incorrect old value",
    "failed to lock",
    "but expected",  # "ref ... is at X but expected Y": it moved under us
    "remote end hung up",
    "connection reset",
    "timed out",
    "rpc failed",
)
_MISSING_BRANCH = ("couldn't find remote ref", "could not find remote ref")


@dataclass(frozen=True)
class PushReport:
    """What a :meth:`ResultsStore.write` did.

    Attributes:
        commit: the results-branch commit that holds the files (new, or the existing tip
            when nothing changed).
        changed: False when the branch already held exactly these bytes (no commit made).
        attempts: push attempts made (1 = no race).
        files: branch paths written.
    """

    commit: str
    changed: bool
    attempts: int
    files: tuple[str, ...] = ()


@dataclass(frozen=True)
class PullReport:
    """What a :meth:`ResultsStore.pull` did.

    Attributes:
        written: paths copied from the branch (new locally, or replacing an older version
            of the same file that had been pushed before).
        unchanged: paths whose local copy already equals the branch's.
        kept: paths whose local copy differs from the branch and was never pushed (its
            content is nowhere in the branch's history): left alone, never overwritten.
    """

    written: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()
    kept: tuple[str, ...] = ()


def result_commit_prefix(path: str) -> str | None:
    """``machine/abcd1234-env.json`` → ``abcd1234`` (None for machine.json etc.)."""
    parsed = parse_result_name(path)
    return parsed[0] if parsed else None


def collect_result_files(
    results_dir: str | os.PathLike[str],
    *,
    machine: str | None = None,
    commits: Iterable[str] = (),
) -> dict[str, Path]:
    """Find the files of an asv results folder that belong on the results branch.

    Takes ``benchmarks.json``, each ``<machine>/machine.json`` (and the machine's
    ``calibration.peaks``), every
    ``<machine>/<hash8>-<env>.json`` with its ``.neuronasv`` sidecar, and the bisection
    records ``<machine>/bisect-<key>.bisect`` (not when ``commits`` narrow the selection);
    anything else (traces, caches, html) stays local. ``machine`` and ``commits`` (full or
    ≥ 8-char prefixes) narrow the selection.

    Returns:
        branch path (posix, relative) → local file.
    """
    root = Path(results_dir)
    if not root.is_dir():
        raise StoreError(f"results folder {root} does not exist", hint="run `neuronasv run` first")
    prefixes = _commit_prefixes(commits)
    out: dict[str, Path] = {}
    if (root / BENCHMARKS_FILE).is_file():
        out[BENCHMARKS_FILE] = root / BENCHMARKS_FILE
    for mdir in sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink()):
        if machine is not None and mdir.name != machine:
            continue
        if mdir.name.startswith("."):
            continue
        for f in sorted(mdir.iterdir()):
            if f.is_file() and not f.is_symlink() and _belongs_on_branch(f.name, prefixes):
                out[f"{mdir.name}/{f.name}"] = f
    return out


def _commit_prefixes(commits: Iterable[str]) -> set[str]:
    """The 8-hex-digit prefixes of ``commits``; anything else is refused."""
    prefixes = {c.strip().lower()[:8] for c in commits if c.strip()}
    for p in prefixes:
        if not re.fullmatch(r"[0-9a-f]{8}", p):
            raise StoreError(f"{p!r} is not a commit hash (need at least 8 hex digits)")
    return prefixes


def _belongs_on_branch(name: str, prefixes: set[str]) -> bool:
    """Whether a machine folder's file ``name`` goes on the results branch: the machine file
    and peaks, bisection records (unless ``prefixes`` narrow it), results of the commits."""
    if name in (MACHINE_FILE, PEAKS_FILE):
        return True
    if is_bisect_name(name):
        return not prefixes
    h = result_commit_prefix(name)
    return h is not None and (not prefixes or h in prefixes)


def token_git_env(var: str) -> dict[str, str]:
    """``GIT_CONFIG_*`` entries that send ``$var`` as GitHub's basic-auth header.

    The same mechanism actions/checkout uses (``http.<server>/.extraheader``), but only in
    the environment of our own git processes.
    """
    token = os.environ.get(var, "")
    if not token:
        raise UsageError(f"--token-env {var}: the variable is empty or not set")
    server = os.environ.get("GITHUB_SERVER_URL", "https://github.com").rstrip("/")
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    n = int(os.environ.get("GIT_CONFIG_COUNT", "0") or 0)
    return {
        "GIT_CONFIG_COUNT": str(n + 1),
        f"GIT_CONFIG_KEY_{n}": f"http.{server}/.extraheader",
        f"GIT_CONFIG_VALUE_{n}": f"AUTHORIZATION: basic {basic}",
    }


def _check_branch_path(path: str) -> str:
    """Refuse paths that could escape the folder they are written into."""
    p = PurePosixPath(path)
    if p.is_absolute() or not p.parts or any(part in ("", ".", "..") for part in p.parts):
        raise StoreError(f"refusing unsafe results path {path!r}")
    if any(c in path for c in ("\n", "\t", "\\", "\0")):
        raise StoreError(f"refusing results path with control characters: {path!r}")
    return p.as_posix()


@dataclass
class ResultsStore:
    """A results branch in a git repository, reached through ``remote``.

    Args:
        repo: a git working copy or bare repository used for objects and the temporary
            index (the caller's checkout; it is not modified).
        remote: remote name or URL the branch lives on.
        branch: branch name (default ``benchmark-results``).
        git: git runner (default: the real git).
        sleep: called with seconds between retries (inject a no-op in tests).
        clock: monotonic seconds, for the overall ``deadline``.
        rng: randomness for jitter.
        max_attempts: push attempts before giving up (each re-fetches and re-applies).
        base_delay, max_delay: backoff delay = min(max_delay, base_delay·2^k), jittered
            to between half and all of it so racing writers spread out.
        deadline: seconds after which no further attempt is started.
        author: (name, email) used when the repository has no identity configured.
        env: extra environment for every git call (e.g. ``GIT_CONFIG_*`` carrying an
            ``http.extraheader`` so credentials never land in ``.git/config``).
    """

    repo: str | os.PathLike[str]
    remote: str = "origin"
    branch: str = DEFAULT_BRANCH
    git: GitTransport = field(default_factory=SubprocessGit)
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    rng: random.Random = field(default_factory=random.Random)
    max_attempts: int = 8
    base_delay: float = 1.0
    max_delay: float = 30.0
    deadline: float = 900.0
    author: tuple[str, str] = ("neuronasv", "neuronasv@users.noreply.github.com")
    env: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[A-Za-z0-9._/-]+", self.branch) or ".." in self.branch:
            raise StoreError(f"invalid results branch name {self.branch!r}")
        if self.max_attempts < 1:
            raise StoreError("max_attempts must be at least 1")
        self._cwd = os.fspath(self.repo)
        self._gw = Git(self._cwd, transport=self.git, env=self.env)
        res = self._git(["rev-parse", "--git-dir"], check=False)
        if res.returncode != 0:
            raise StoreError(
                f"{self._cwd} is not a git repository",
                hint="run the store from a clone of the project (or pass --repo)",
            )

    # -- low level -------------------------------------------------------------------------

    def _git(
        self,
        args: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        input: bytes | None = None,
        check: bool = True,
    ) -> GitResult:
        return self._gw.run(*args, env=env, input=input, check=check)

    def _fetch_tip(self) -> str | None:
        """Fetch the branch into a private ref; its commit, or None if it does not exist."""
        ref = f"{_TMP_REF_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:12]}"
        try:
            res = self._git(
                [
                    "fetch",
                    "--quiet",
                    "--no-tags",
                    "--no-write-fetch-head",
                    "--no-recurse-submodules",
                    self.remote,
                    f"+refs/heads/{self.branch}:{ref}",
                ],
                check=False,
            )
            if res.returncode != 0:
                low = res.stderr.lower()
                if any(s in low for s in _MISSING_BRANCH):
                    return None
                raise (
                    _Retryable(res.stderr)
                    if _is_retryable(low)
                    else StoreError(
                        f"cannot fetch {self.branch!r} from {redact(self.remote)}: "
                        f"{redact(res.stderr).strip()[:500]}"
                    )
                )
            return self._git(["rev-parse", "--verify", f"{ref}^{{commit}}"]).text.strip()
        finally:
            self._git(["update-ref", "-d", ref], check=False)

    def _identity_env(self) -> dict[str, str]:
        env: dict[str, str] = {}
        if (
            "GIT_AUTHOR_NAME" not in os.environ
            and self._git(["config", "user.name"], check=False).returncode != 0
        ):
            env["GIT_AUTHOR_NAME"] = env["GIT_COMMITTER_NAME"] = self.author[0]
        if (
            "GIT_AUTHOR_EMAIL" not in os.environ
            and self._git(["config", "user.email"], check=False).returncode != 0
        ):
            env["GIT_AUTHOR_EMAIL"] = env["GIT_COMMITTER_EMAIL"] = self.author[1]
        return env

    def _build_commit(
        self, tip: str | None, blobs: Mapping[str, str], message: str, ident: Mapping[str, str]
    ) -> str | None:
        """Tip's tree plus our blobs on a temporary index; None when nothing would change."""
        with tempfile.TemporaryDirectory(prefix="neuronasv-index-") as tmp:
            ienv = {"GIT_INDEX_FILE": os.path.join(tmp, "index")}
            if tip is not None:
                self._git(["read-tree", tip], env=ienv)
            else:
                self._git(["read-tree", "--empty"], env=ienv)
            info = "".join(f"100644 {sha}\t{path}\n" for path, sha in sorted(blobs.items()))
            self._git(["update-index", "--add", "--index-info"], env=ienv, input=info.encode())
            tree = self._git(["write-tree"], env=ienv).text.strip()
        if tip is not None:
            old_tree = self._git(["rev-parse", f"{tip}^{{tree}}"]).text.strip()
            if old_tree == tree:
                return None
        args = ["commit-tree", tree, "-m", message]
        if tip is not None:
            args[2:2] = ["-p", tip]
        return self._git(args, env=ident).text.strip()

    def _hash_objects(self, files: Mapping[str, bytes]) -> dict[str, str]:
        """Write each payload as a blob (one git call per file keeps bytes exact)."""
        out: dict[str, str] = {}
        for path, data in files.items():
            out[path] = self._git(["hash-object", "-w", "--stdin"], input=data).text.strip()
        return out

    def _backoff(self, attempt: int) -> float:
        cap = min(self.max_delay, self.base_delay * (2 ** (attempt - 1)))
        return cap / 2 + self.rng.uniform(0, cap / 2)

    # -- public API ------------------------------------------------------------------------

    def tip(self) -> str | None:
        """The branch's current commit on the remote (None when it does not exist yet)."""
        return self._with_retries(self._fetch_tip)

    def write(self, files: Mapping[str, bytes | os.PathLike[str]], message: str) -> PushReport:
        """Put ``files`` (branch path → bytes, or a local file's path) on the branch, safely.

        Other files on the branch are kept; a file at the same path is replaced (so a
        re-run of a commit replaces its own result). Retries lost races as described in
        the module docstring; never force-pushes.

        Raises:
            StoreError: retries exhausted, or a non-retryable git failure (auth, no repo).
        """
        if not files:
            raise StoreError("nothing to store: no result files selected")
        payload: dict[str, bytes] = {}
        for path, value in files.items():
            safe = _check_branch_path(path)
            if isinstance(value, (bytes, bytearray)):
                payload[safe] = bytes(value)
            else:  # a local file
                payload[safe] = Path(value).read_bytes()
        blobs = self._hash_objects(payload)
        ident = self._identity_env()
        start = self.clock()
        attempt = 0
        last_error = ""
        while True:
            attempt += 1
            try:
                tip = self._fetch_tip()
                commit = self._build_commit(tip, blobs, message, ident)
                if commit is None:
                    assert tip is not None
                    return PushReport(tip, False, attempt, tuple(sorted(blobs)))
                res = self._git(
                    [
                        "push",
                        "--quiet",
                        "--no-verify",
                        self.remote,
                        f"{commit}:refs/heads/{self.branch}",
                    ],
                    check=False,
                )
                if res.returncode == 0:
                    return PushReport(commit, True, attempt, tuple(sorted(blobs)))
                if not _is_retryable(res.stderr.lower()):
                    raise StoreError(
                        f"push to {redact(self.remote)} {self.branch!r} failed: "
                        f"{redact(res.stderr).strip()[:500]}",
                        hint="check the token has `contents: write` on this repository",
                    )
                last_error = res.stderr
            except _Retryable as exc:
                last_error = str(exc)
            if attempt >= self.max_attempts or self.clock() - start > self.deadline:
                raise StoreError(
                    f"gave up storing results on {self.branch!r} after {attempt} attempts"
                    " (the branch kept moving or git kept failing): "
                    f"{redact(last_error).strip()[:300]}",
                    hint="re-run the job; nothing was force-pushed and no result was lost",
                )
            self.sleep(self._backoff(attempt))

    def list_files(self) -> list[str]:
        """Paths of every file on the branch (empty when the branch does not exist)."""
        tip = self.tip()
        if tip is None:
            return []
        out = self._git(["ls-tree", "-r", "-z", "--name-only", tip]).stdout
        return [p.decode("utf-8", "replace") for p in out.split(b"\0") if p]

    def missing_commits(self, commits: Sequence[str], machine: str) -> list[str]:
        """The commits (in the given order) that have no result file for ``machine``."""
        have = {
            result_commit_prefix(p)
            for p in self.list_files()
            if p.startswith(f"{machine}/") and p.endswith(".json")
        }
        return [c for c in commits if c.lower()[:8] not in have]

    def pull(self, dest: str | os.PathLike[str], *, machine: str | None = None) -> PullReport:
        """Copy the branch's files into ``dest`` (an asv results folder), by path.

        Nothing local is lost: files in ``dest`` that the branch does not hold are left
        alone, and a local file that differs from the branch's copy is replaced only when
        its content was pushed before (it is in the branch's history, so the branch holds
        a newer version). A local file never pushed (a newer result measured here) is
        kept and reported in :attr:`PullReport.kept`. Symlinks and submodules on the
        branch are skipped (a results branch has none; a planted one must not write
        outside dest), and so is a local path that is a symlink or a folder.
        """
        tip = self.tip()
        if tip is None:
            raise StoreError(
                f"results branch {self.branch!r} does not exist on {redact(self.remote)}",
                hint="push results first: `neuronasv store push`",
            )
        listing = self._git(["ls-tree", "-r", "-z", "--full-tree", tip]).stdout
        entries: list[tuple[str, str]] = []
        for raw in listing.split(b"\0"):
            if not raw:
                continue
            meta, _, name = raw.partition(b"\t")
            mode, kind, sha = meta.decode().split()
            path = name.decode("utf-8", "replace")
            if kind != "blob" or mode not in ("100644", "100755"):
                continue
            if machine is not None and "/" in path and not path.startswith(f"{machine}/"):
                continue
            entries.append((_check_branch_path(path), sha))
        root = Path(dest)
        root.mkdir(parents=True, exist_ok=True)
        batch = self._git(
            ["cat-file", "--batch"], input="".join(f"{sha}\n" for _, sha in entries).encode()
        ).stdout
        pos = 0
        written: list[str] = []
        unchanged: list[str] = []
        kept: list[str] = []
        fmt = self._object_format()
        for path, sha in entries:
            header_end = batch.index(b"\n", pos)
            got_sha, _kind, size_s = batch[pos:header_end].decode().split()
            if got_sha != sha:
                raise StoreError(f"git cat-file returned {got_sha} for {sha} ({path})")
            size = int(size_s)
            data = batch[header_end + 1 : header_end + 1 + size]
            pos = header_end + 1 + size + 1  # trailing newline after each object
            target = root / path
            if target.is_symlink() or target.is_dir():
                kept.append(path)
                continue
            if target.exists():
                local = _blob_id(target.read_bytes(), fmt)
                if local == sha:
                    unchanged.append(path)
                    continue
                if not self._in_history(tip, local):
                    kept.append(path)
                    continue
            target.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(target, data)  # a reader never sees half a file
            written.append(path)
        return PullReport(tuple(written), tuple(unchanged), tuple(kept))

    def _object_format(self) -> str:
        res = self._git(["rev-parse", "--show-object-format"], check=False)
        fmt = res.text.strip() if res.returncode == 0 else ""
        return fmt if fmt in ("sha1", "sha256") else "sha1"

    def _in_history(self, tip: str, blob: str) -> bool:
        """True when some commit of the branch up to ``tip`` added or removed ``blob``."""
        res = self._git(
            ["log", "--format=%H", "-1", f"--find-object={blob}", tip, "--"], check=False
        )
        return res.returncode == 0 and bool(res.text.strip())

    def _with_retries(self, fn: Callable[[], str | None]) -> str | None:
        attempt = 0
        while True:
            attempt += 1
            try:
                return fn()
            except _Retryable as exc:
                if attempt >= self.max_attempts:
                    msg = redact(str(exc)).strip()[:300]
                    raise StoreError(f"git kept failing: {msg}") from exc
                self.sleep(self._backoff(attempt))


def _blob_id(data: bytes, fmt: str) -> str:
    """The git object id of ``data`` as a blob (what ``git hash-object`` prints)."""
    h = hashlib.new(fmt)
    h.update(b"blob %d\0" % len(data))
    h.update(data)
    return h.hexdigest()


class _Retryable(Exception):
    """A transient git failure (lost race, lock contention, network blip)."""


def _is_retryable(stderr_lower: str) -> bool:
    return any(s in stderr_lower for s in _RETRYABLE)
