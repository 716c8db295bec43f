"""The per-commit workflow's bisection step (``python -m neuronasv.ci bisect``).

Runs on the accelerator runner between the bench jobs and the store job: the history is the
results branch plus this run's results; ``neuronasv regressions`` finds its change points;
every open, unacknowledged regression whose range (``commit_before..commit_after`` on the
first-parent chain) holds commits with no result on that machine is bisected with
``neuronasv bisect`` — one search per range, the exact series (an exact metric's count) when
the range has one, else the largest shift — within a budget of minutes. The pull, the
analysis and each search are the package's step functions (:mod:`neuronasv.steps`) called
in this process; the measurements a search makes run in their own processes (asv, the
profiler, valgrind), as they do for ``neuronasv bisect``. A change point
inside one measured commit needs no bisection. What the searches measured (ordinary
results, sidecars) and their records (``bisect-<key>.bisect``) are copied into ``--out``,
which the workflow uploads beside the bench jobs' results: the store job pushes them all,
and the analysis that follows names the culprits (``regressions`` attaches the records to
the change points; the issue, the site and the feed render them).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import logging
import math
import os
import shlex
import shutil
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from neuronasv import env
from neuronasv.analyse.exact import is_exact
from neuronasv.analyse.patterns import SeriesPattern
from neuronasv.ci.outputs import set_output
from neuronasv.ci.owned import claim_dir, remove_owned
from neuronasv.errors import UsageError
from neuronasv.exits import run_guarded
from neuronasv.model import ChangePoint, FindingsDocument
from neuronasv.steps.store import StoreRef
from neuronasv.store.git import Git
from neuronasv.store.layout import (
    MACHINE_FILE,
    is_bisect_name,
    parse_result_name,
    result_files_of_commit,
)

if TYPE_CHECKING:
    from neuronasv.model.bisect import BisectDocument
    from neuronasv.run.bisect import BisectOptions
    from neuronasv.steps.measure import Bisected

__all__ = [
    "Range",
    "bisect_args",
    "bisect_options",
    "bisect_step",
    "drop_tokens",
    "plan_ranges",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Range:
    """One range to bisect: the change point chosen for it and its unmeasured commits."""

    cp: ChangePoint
    unmeasured: int
    candidates: int


def plan_ranges(
    docs: Sequence[FindingsDocument], git: Git, results_dir: str
) -> list[Range]:
    """The ranges worth a bisection, one change point each (exact series first, then the
    largest shift), nearest the newest commit first."""
    chosen: dict[tuple[str, str, str], ChangePoint] = {}
    for doc in docs:
        for cp in doc.change_points:
            if cp.kind != "regression" or not cp.open or cp.acknowledged or cp.culprit:
                continue
            key = (cp.machine, cp.commit_before, cp.commit_after)
            have = chosen.get(key)
            rank = (is_exact(cp.unit), abs(math.log(cp.ratio)) if cp.ratio > 0 else 0.0)
            if have is None or rank > (
                is_exact(have.unit), abs(math.log(have.ratio)) if have.ratio > 0 else 0.0
            ):
                chosen[key] = cp
    out = []
    for (machine, before, after), cp in chosen.items():
        listed = git.text("rev-list", "--first-parent", f"{before}..{after}").split()
        if not listed or git.resolve(f"{listed[-1]}^") != before:
            continue  # not a first-parent range: nothing a bisection may walk
        inside = listed[1:]  # newest first; the change point's ends are measured
        missing = [c for c in inside if not result_files_of_commit(results_dir, machine, c)]
        if missing:
            out.append(Range(cp, len(missing), len(listed)))
    return sorted(out, key=lambda r: (r.cp.machine, -r.cp.index))


def _files(root: Path) -> dict[str, float]:
    out = {}
    for mdir in root.iterdir() if root.is_dir() else ():
        if mdir.is_dir() and not mdir.name.startswith(".") and not mdir.is_symlink():
            for f in mdir.iterdir():
                keep = f.name == MACHINE_FILE or is_bisect_name(f.name) or parse_result_name(f.name)
                if keep and f.is_file() and not f.is_symlink():
                    out[f"{mdir.name}/{f.name}"] = f.stat().st_mtime
    return out


def _merge(src: Path, dest: Path) -> int:
    """Copy ``src``'s results files (this run's) into ``dest``; how many."""
    n = 0
    for rel in _files(src):
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src / rel, target)
        n += 1
    return n


def _step_pct(cp: ChangePoint) -> float | None:
    """The step a device-time change point showed, percent (None: an exact series)."""
    if not is_exact(cp.unit) and math.isfinite(cp.ratio) and cp.ratio > 0 and cp.ratio != 1:
        return round(100.0 * (max(cp.ratio, 1.0 / cp.ratio) - 1.0), 2)
    return None


def bisect_args(
    cp: ChangePoint, *, repo: str, results_dir: str, backend: str, minutes: float
) -> list[str]:
    """``neuronasv bisect``'s arguments for one change point: within ``minutes`` (what is
    left of the step's bound; the command's noise pilot counts in it), and on device time
    its rounds sized for the step the change point showed (``--step``), not a guess. The
    step runs :func:`bisect_options` in process; this is the command line that does the
    same (said before each search, for a replay). The series is named by its id's fields
    (:meth:`SeriesPattern.exact`), never its label: two series may share a label."""
    args = ["bisect", cp.commit_before, cp.commit_after,
            "--series", SeriesPattern.exact(cp.series).text, "--machine", cp.machine,
            "--results-dir", results_dir, "--repo", repo, "--backend", backend,
            "--budget-minutes", f"{minutes:.2f}"]  # fmt: skip
    pct = _step_pct(cp)
    if pct is not None:
        args += ["--step", str(pct)]  # a CLI argument, not words
    return args


def bisect_options(
    cp: ChangePoint, *, repo: str, results_dir: str, backend: str, minutes: float
) -> BisectOptions:
    """The options :func:`bisect_args` gives ``neuronasv bisect`` (and its environment's
    compile cache), for the search in this process."""
    from neuronasv.run.bisect import BisectOptions

    pct = _step_pct(cp)
    opts = BisectOptions(
        repo=repo, good=cp.commit_before, bad=cp.commit_after,
        pattern=SeriesPattern.exact(cp.series).text, machine=cp.machine, results_dir=results_dir,
        backend=backend, budget_seconds=float(f"{minutes:.2f}") * 60.0,
        compile_cache=env.COMPILE_CACHE.read(),  # as `neuronasv bisect`'s default
    )  # fmt: skip
    return opts if pct is None else dataclasses.replace(opts, step=1.0 + pct / 100.0)


def _guarded(work: Callable[[], None], where: str) -> int:
    """``work()``'s exit status as the command's would be (its error said on stderr, what
    it prints too); Ctrl-C ends the whole step."""
    with contextlib.redirect_stdout(sys.stderr):
        rc = run_guarded(work, where)
    if rc == 130:
        raise KeyboardInterrupt
    return rc


def _history_docs(
    repo: str, history: Path, machines: Sequence[str]
) -> list[FindingsDocument]:
    """Each machine's regressions document; a machine whose analysis fails is skipped."""
    from neuronasv.steps.regressions import RegressionsOptions, regressions_per_machine

    opts = RegressionsOptions(results_dir=str(history), repo=repo)
    with contextlib.redirect_stdout(sys.stderr):
        return list(regressions_per_machine(opts, machines, skip_failing=True).values())


def drop_tokens(store: StoreRef) -> dict[str, str]:
    """Before the searches run the range's commits (asv, the pre-pass, valgrind: processes
    that inherit this one's environment), the store's token and ``GITHUB_TOKEN`` leave this
    process's environment for the rest of the step; returned, for the culprit's PR, asked
    of the API between searches (:func:`_pull_of`), while no measured process runs."""
    names = {n for n in (store.token_env, "GITHUB_TOKEN") if n}
    return {n: os.environ.pop(n) for n in sorted(names) if n in os.environ}


def _pull_of(done: Bisected, tokens: Mapping[str, str]) -> BisectDocument:
    """The search's document with its culprit's PR from the GitHub API (the token back in
    the environment only for that request; the record rewritten with it)."""
    from neuronasv.steps.measure import with_pull
    from neuronasv.store.bisections import save_bisection

    token = tokens.get("GITHUB_TOKEN")
    if not token or not done.doc.result.found:
        return done.doc
    os.environ["GITHUB_TOKEN"] = token
    try:
        doc = with_pull(done.doc)
    finally:
        os.environ.pop("GITHUB_TOKEN", None)
    if doc != done.doc and done.record:
        save_bisection(os.path.dirname(os.path.dirname(done.record)), doc)
    return doc


def bisect_step(
    repo: str, *, out: str, minutes: float, add: Sequence[str], store: StoreRef,
    machine: str | None = None, backend: str = "auto", max_ranges: int = 5,
) -> int:  # fmt: skip
    """Bisect the open regressions whose ranges hold unmeasured commits (see the module doc).

    Returns the number of searches that ended (culprit, range or no change).
    """
    if not 0 < minutes <= 24 * 60:
        raise UsageError(f"--minutes must be in (0, 1440], got {minutes}")
    started = time.monotonic()
    outp = Path(out)
    claim_dir(str(outp))
    history = Path(f"{out}.history")
    claim_dir(str(history))
    from neuronasv.report.bisect import render_text
    from neuronasv.steps.measure import bisect, check_change
    from neuronasv.steps.store import branch_of, pull, pull_lines

    def pulled() -> None:
        line, kept = pull_lines(pull(store, str(history)), branch_of(store), str(history))
        log.info("\n".join([line, *kept]))

    rc = _guarded(pulled, "neuronasv store pull")
    if rc != 0:
        log.info(f"no stored history to bisect in (store pull exit {rc})")
    tokens = drop_tokens(store)  # no measured process below inherits it (docs/runners.md)
    for folder in add:
        if os.path.isdir(folder):
            log.info(f"added {_merge(Path(folder), history)} file(s) of this run from {folder}")
    machines = [machine] if machine else sorted(
        p.parent.name for p in history.glob(f"*/{MACHINE_FILE}")
    )  # fmt: skip
    docs = _history_docs(repo, history, machines)
    ranges = plan_ranges(docs, Git(repo), str(history))
    log.info(f"{len(ranges)} range(s) with unmeasured commits to bisect"
         + (f" (the first {max_ranges})" if len(ranges) > max_ranges else ""))  # fmt: skip
    before = _files(history)
    done = 0
    for r in ranges[:max_ranges]:
        left = minutes - (time.monotonic() - started) / 60.0
        if left <= 0.5:
            log.info("the bisection budget is spent")
            break
        cp = r.cp
        log.info(f"==> bisecting {cp.series.label} on {cp.machine}: {cp.commit_before[:12]}.."
             f"{cp.commit_after[:12]} ({r.unmeasured} of {r.candidates} commits unmeasured)")
        said = bisect_args(cp, repo=repo, results_dir=str(history), backend=backend,
                           minutes=left)  # fmt: skip
        log.info("$ neuronasv " + shlex.join(said))  # the command line that does the same
        opts = bisect_options(cp, repo=repo, results_dir=str(history), backend=backend,
                              minutes=left)  # fmt: skip

        def search(opts: BisectOptions = opts) -> None:
            done = bisect(opts)
            doc = _pull_of(done, tokens)
            log.info(render_text(doc))
            check_change(doc)

        rc = _guarded(search, "neuronasv bisect")
        if rc in (0, 12):
            done += 1
        else:
            log.info(f"bisection ended with exit {rc}; the others go on")
    new = {p for p, t in _files(history).items() if before.get(p) != t}
    for rel in sorted(new):
        (outp / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(history / rel, outp / rel)
    remove_owned(str(history))
    log.info(f"{done} search(es); {len(new)} file(s) for the results branch in {out}")
    set_output("bisected", str(done))
    return done


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The ``bisect`` step's arguments (``python -m neuronasv.ci bisect``)."""
    from neuronasv.ci.options import add_store_args

    p = sub.add_parser("bisect", help="bisect open regressions whose ranges skip commits")
    p.add_argument("--out", required=True, help="results folder for what it measured")
    p.add_argument("--add", action="append", default=[], metavar="RESULTS",
                   help="this run's results folder(s), added to the stored history")
    p.add_argument("--minutes", type=float, default=30.0, help="budget of the whole step")
    p.add_argument("--machine", default=None, help="only this asv machine")
    p.add_argument("--backend", default=env.BACKEND.read(), help="$NEURONASV_BACKEND or auto")
    p.add_argument("--max-ranges", type=int, default=5)
    add_store_args(p)
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> None:
    from neuronasv.ci.options import repo_of, store_ref

    bisect_step(repo_of(args), out=args.out, minutes=args.minutes, add=args.add,
                store=store_ref(args), machine=args.machine, backend=args.backend,
                max_ranges=args.max_ranges)  # fmt: skip
