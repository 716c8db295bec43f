"""Confirm's measurement: base and head checked out as git worktrees, re-profiled there.

:class:`WorktreeProfileRunner` is the :data:`neuronasv.analyse.confirm.Runner` the CLI
passes to :func:`neuronasv.analyse.confirm.confirm`: it checks out both commits as git
worktrees and runs ``python -m neuronasv profile --json`` in each (that command writes a
``model.ProfileDocument``), with the worktree's own code first on ``PYTHONPATH``; its
``profile`` finds the repository's workloads as :mod:`neuronasv.run.usersuite` says.
A side may also be a commit itself (40 hex digits): ``neuronasv bisect`` measures the
commits of its probes through the same runner (:mod:`neuronasv.run.bisect`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from neuronasv.analyse.profile_samples import samples_from_profile
from neuronasv.env import SUITE_REPO
from neuronasv.errors import CaptureError
from neuronasv.model import ProfileDocument, SeriesId
from neuronasv.proc import run_process
from neuronasv.run.scratch import prune_stale, scratch_dir
from neuronasv.run.usersuite import suite_root, with_root_on_path
from neuronasv.store.git import Git

__all__ = ["CommandRunner", "WorktreeProfileRunner"]

log = logging.getLogger(__name__)


CommandRunner = Callable[[Sequence[str], str, Mapping[str, str]], int]


def _run_cmd(cmd: Sequence[str], cwd: str, env: Mapping[str, str]) -> int:
    # Output is kept out of the user's view (one profile table per round and side would
    # bury the verdict) and shown only when the command fails.
    proc = run_process(cmd, cwd=cwd, env=env, text=True)
    if proc.returncode != 0:
        tail = proc.output.strip().splitlines()[-20:]
        log.warning("\n".join(["$ " + " ".join(cmd), *tail]))
    return proc.returncode


@dataclass
class WorktreeProfileRunner:
    """Measure base and head from git worktrees with ``python -m neuronasv profile``.

    Attributes:
        repo: the git work tree holding both commits.
        base, head: full commit hashes.
        backend: backend name passed to ``profile --backend``.
        samples: samples per round (``profile --samples``).
        active: iterations averaged into one sample (``profile --active``).
        python: interpreter (default: this one, whose packages the worktrees share).
        workdir: where worktrees and JSON files go (default: a scratch folder of this
            runner, removed by :meth:`close` with everything in it; scratch folders and
            worktrees a killed confirm left behind are pruned first).
        run_cmd: injected process runner ``(argv, cwd, env) -> returncode`` (tests).
        git: the git gateway that adds/removes the worktrees (default ``Git(repo)``).
        extra_env: more environment for the profile processes (the compile cache).
    """

    repo: str
    base: str
    head: str
    backend: str = "auto"
    samples: int = 10
    active: int = 1
    python: str = sys.executable
    workdir: str | None = None
    run_cmd: CommandRunner = _run_cmd
    git: Git | None = None
    extra_env: Mapping[str, str] = field(default_factory=dict)
    _trees: dict[str, str] = field(default_factory=dict)
    _scratch: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)

    def __post_init__(self) -> None:
        self.repo = os.path.abspath(self.repo)
        if self.git is None:
            self.git = Git(self.repo)

    def commit_of(self, side: str) -> str:
        """The commit a side names: ``base``, ``head``, or a commit hash itself."""
        return self.base if side == "base" else self.head if side == "head" else side

    def _tree(self, side: str) -> str:
        if side not in self._trees:
            if self.workdir is None:
                prune_stale(self.git)
                self.workdir = self._scratch.enter_context(scratch_dir("confirm"))
            root = self.workdir
            path = os.path.join(root, side)
            commit = self.commit_of(side)
            if not os.path.isdir(path):
                assert self.git is not None  # set in __post_init__
                self.git.worktree_add(path, commit)  # StoreError naming git's reason
            self._trees[side] = path
        return self._trees[side]

    def __call__(
        self, side: str, series: Sequence[SeriesId], round_index: int
    ) -> Mapping[SeriesId, Sequence[float]]:
        tree = self._tree(side)
        out: dict[SeriesId, list[float]] = {}
        # One process per workload and side per round, profiling every (shape, dtype) of
        # that workload's suspects: process start-up (torch import) is paid once, not once
        # per configuration.
        wanted: dict[str, tuple[list[str], list[str]]] = {}
        for s in series:
            if not s.workload:
                continue
            shapes, dtypes = wanted.setdefault(s.workload, ([], []))
            if s.shape and s.shape not in shapes:
                shapes.append(s.shape)
            if s.dtype and s.dtype not in dtypes:
                dtypes.append(s.dtype)
        commit = self.commit_of(side)
        shown = f"{side:<4} " if side in ("base", "head") else ""
        for wl in sorted(wanted):
            shapes, dtypes = wanted[wl]
            target = os.path.join(self.workdir or tree, f"{side}-{round_index}-{wl}.json")
            log.info(
                f"  round {round_index + 1} {shown}{commit[:8]}  {wl}"
                f" [{', '.join(shapes) or 'default shape'}] x [{', '.join(dtypes) or 'default'}]"
            )
            cmd = [
                self.python,
                "-m",
                "neuronasv",
                "profile",
                "--quiet",
                "--no-roofline",
                "--backend",
                self.backend,
                "--workload",
                wl,
                "--samples",
                str(self.samples),
                "--active",
                str(self.active),
                "--json",
                target,
            ]
            for shape in shapes:
                cmd += ["--shape", shape]
            for dtype in dtypes:
                cmd += ["--dtype", dtype]
            env = with_root_on_path(tree, {**os.environ, **self.extra_env})  # prepended
            env[SUITE_REPO.name] = suite_root(tree, self.repo)
            rc = self.run_cmd(cmd, tree, env)
            if rc != 0 or not os.path.exists(target):
                raise CaptureError(f"re-measuring {wl} at {side} failed (exit {rc})")
            with open(target, encoding="utf-8") as fh:
                doc = ProfileDocument.loads(fh.read(), source=target)
            out.update(samples_from_profile(doc, series))
        return out

    def close(self) -> None:
        """Remove the worktrees and this runner's scratch folder (best effort)."""
        try:
            for path in self._trees.values():
                if self.git is not None:
                    self.git.worktree_remove(path)
            self._trees.clear()
        finally:
            self._scratch.close()

    def __enter__(self) -> WorktreeProfileRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
