"""``neuronasv bisect``'s measurements: the run stage for exact readings, rounds for time.

:func:`bisect_range` resolves the range (``good``, then ``bad``'s first-parent chain) and
the series (the pattern, against the stored history), takes every stored result it can,
and runs the pure search of :mod:`neuronasv.analyse.bisect` with measuring functions that
start processes:

- **exact axes** (each exact metric of :mod:`neuronasv.metrics`, work): ``neuronasv run``'s
  own stage (:func:`neuronasv.run.asvrun.run_commits`) at the probe only, ``--bench``
  narrowed to the series' benchmark class, ``NEURONASV_SHAPES``/``NEURONASV_DTYPES`` narrowed to its
  configuration, an exact metric measured only when the axis is that metric, the compile
  cache shared; the probe's results land in the results folder as ordinary results (its
  sidecar holds the reading);
- **time**: confirm's worktree runner (:class:`neuronasv.run.worktree.WorktreeProfileRunner`,
  one ``python -m neuronasv profile`` process per commit and round, in the commit's own
  worktree), then the run stage once for the culprit and its parent if they have no stored
  results (their comparison explains the culprit).

Everything the run stage starts lives in scratch folders and worktrees that are removed on
success, failure and Ctrl-C (:mod:`neuronasv.run.scratch`).
"""

from __future__ import annotations

import datetime as _dt
import logging
import os
import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from neuronasv import env as suite_env
from neuronasv.analyse.bisect import (
    Reading,
    RoundsPlan,
    SearchResult,
    exact_search,
    time_search,
)
from neuronasv.analyse.bisect_budget import (
    Goal,
    SearchBudget,
    budget_line,
    round_sd_of_levels,
    size_search,
)
from neuronasv.analyse.culprits import culprit_of, explain, pull_from_subject
from neuronasv.analyse.exact import is_exact
from neuronasv.analyse.patterns import SeriesPattern, ambiguous_error, no_match_error
from neuronasv.analyse.readings import ends_differ, reading_at, stored_readings
from neuronasv.errors import CaptureError, StoreError, UsageError
from neuronasv.format import format_wall
from neuronasv.log import indented
from neuronasv.measure.backends import default_samples
from neuronasv.metrics import DEVTIME, EXACT, by_name
from neuronasv.metrics import names as metric_names
from neuronasv.model import History, Series, SeriesId
from neuronasv.model.bisect import BisectDocument
from neuronasv.model.culprit import Axis
from neuronasv.run.asvrun import (
    RunOptions,
    canonical_python,
    compile_cache_env,
    run_commits,
    run_dirs,
)
from neuronasv.run.worktree import WorktreeProfileRunner
from neuronasv.samples import median
from neuronasv.store.git import Git
from neuronasv.store.history import load_history
from neuronasv.store.layout import MACHINE_FILE

__all__ = [
    "AXIS_CHOICES",
    "AxisChoice",
    "BisectOptions",
    "bisect_range",
    "first_parent_chain",
    "match_series",
]

log = logging.getLogger(__name__)

#: ``--axis``: one of :data:`AXIS_CHOICES`.
AxisChoice = str
#: The exact metrics a bisection may search on their own series (the registry's).
EXACT_AXES: tuple[str, ...] = tuple(m.name for m in EXACT)
#: ``--axis``'s choices: auto, every exact metric, work, time.
AXIS_CHOICES: tuple[str, ...] = ("auto", *EXACT_AXES, "work", "time")


@dataclass(frozen=True)
class BisectOptions:
    """What ``neuronasv bisect`` does (see the command's help for each option)."""

    repo: str
    good: str
    bad: str
    pattern: str
    machine: str | None = None
    results_dir: str | None = None
    axis: AxisChoice = "auto"
    bench: str | None = None
    backend: str = "auto"
    compile_cache: str | None = None
    alpha: float = 0.001
    rounds: int = 3
    #: time: a cap on the rounds a test may take (None: the rounds the noise needs)
    max_rounds: int | None = None
    #: time: the change the rounds are sized to find (a ratio), and the chance to find it
    step: float = 1.3
    target: float = 0.95
    #: time: processes of GOOD measured first for the noise; or the round sd, given
    pilot: int = 5
    round_sd: float | None = None
    samples: int | None = None
    active: int = 1
    budget_seconds: float | None = None
    side_branches: bool = False
    python: str = field(default_factory=lambda: canonical_python(sys.executable))


def first_parent_chain(git: Git, good: str, bad: str) -> list[str]:
    """``[good, ..., bad]``: ``bad``'s first-parent chain back to ``good`` (oldest first).

    Raises:
        UsageError: ``good`` is ``bad``, or not on ``bad``'s first-parent chain.
    """
    if good == bad:
        raise UsageError(f"GOOD and BAD are the same commit ({good[:12]}): nothing to bisect")
    listed = git.text("rev-list", "--first-parent", "--reverse", f"{good}..{bad}").split()
    if not listed or git.text("rev-parse", f"{listed[0]}^") != good:
        raise UsageError(
            f"{good[:12]}..{bad[:12]} is not a range: {good[:12]} is not on {bad[:12]}'s"
            " first-parent chain",
            hint="give an ancestor of BAD as GOOD (a merge's side branch is bisected with"
            " --side-branches once its merge is found)",
        )
    return [good, *listed]


def _resolve(git: Git, ref: str, what: str) -> str:
    full = git.resolve(ref)
    if full is None:
        raise UsageError(f"{what} {ref!r} is not a commit in {git.repo}")
    return full


def match_series(history: History, machine: str, pattern: str | SeriesPattern) -> list[Series]:
    """The series of ``machine`` that ``pattern`` names (:mod:`neuronasv.analyse.patterns`:
    fields of the id, or the earlier form's glob over version-1 names), parsed once."""
    pat = pattern if isinstance(pattern, SeriesPattern) else SeriesPattern.parse(pattern)
    return [s for s in history.series if s.machine == machine and pat.matches(s.series)]


def _only(pool: Sequence[Series]) -> Series | None:
    return pool[0] if len(pool) == 1 else None


def _auto(
    found: Sequence[Series], history: History, machine: str, good: str, bad: str
) -> tuple[Series, Axis] | None:
    """``--axis auto``'s exact choice: the first exact axis on which the range's stored ends
    differ — each exact metric of the registry (on its own series, else on the matched
    device-time series' configuration and op), then the work evidence — or None (the ends
    read the same on every exact axis, or are not stored: time decides)."""
    timed = _only([s for s in found if not is_exact(s.unit)])
    candidates: list[tuple[Series, Axis]] = []
    for m in EXACT:
        own = _only([s for s in found if s.series.metric == m.name]) or timed
        if own is not None:
            candidates.append((own, m.name))
    either = timed or _only(found)
    if either is not None:
        candidates.append((either, "work"))
    for series, axis in candidates:
        ends = ends_differ(history, machine, series.series, axis, good, bad)
        if ends is not None:
            log.info(f"axis auto: {axis} differs at the ends ({ends[0].words} -> {ends[1].words})")
            return series, axis
    if candidates:
        said = ", ".join(dict.fromkeys(a for _, a in candidates))
        log.info(f"axis auto: the ends read the same on {said} (or were not read): time")
    return None


def _pool(found: Sequence[Series], axis: AxisChoice) -> tuple[list[Series], str]:
    """The series an axis may search, and the axis (auto without an exact difference:
    time on the device-time series, an exact series alone its own metric)."""
    exact = [s for s in found if is_exact(s.unit)]
    timed = [s for s in found if not is_exact(s.unit)]
    if axis in EXACT_AXES:
        return [s for s in exact if s.series.metric == axis], axis
    if axis == "auto" and not timed and exact:
        return exact, exact[0].series.metric or "time"
    return timed, axis if axis in ("work", "time") else "time"


def _pick(
    found: Sequence[Series],
    pattern: str,
    machine: str,
    axis: AxisChoice,
    *,
    history: History | None = None,
    ends: tuple[str, str] | None = None,
) -> tuple[Series, Axis]:
    """The series and the axis that decides. ``auto``: an exact axis on which the range's
    ends differ (:func:`_auto`, with ``history`` and ``ends``), else time on the matched
    device-time series (an exact series alone: its own axis)."""
    if axis == "auto" and history is not None and ends is not None:
        chosen_auto = _auto(found, history, machine, *ends)
        if chosen_auto is not None:
            return chosen_auto
    pool, chosen = _pool(found, axis)
    if not pool:
        kind = f"{by_name(chosen).title}" if chosen in EXACT_AXES else "device-time"
        raise UsageError(f"{pattern!r} matches no {kind} series on {machine!r}")
    if len(pool) > 1:
        where = f"on {machine!r}"
        raise ambiguous_error(SeriesPattern.parse(pattern), [s.series for s in pool], where)
    return pool[0], chosen


def _metrics_for(axis: str, named: Sequence[str]) -> tuple[str, ...] | None:
    """``--metrics`` of a probe: device time, and the exact metric the axis is. The ends of
    an auto search: the exact metrics the pattern names with ``metric=``, else ``run``'s
    default (None: every exact metric the backend counts here, the evidence auto decides
    by)."""
    if axis != "auto":
        return (DEVTIME.name, *([axis] if axis in EXACT_AXES else []))
    if set(named) == set(metric_names()):
        return None
    return (DEVTIME.name, *(m for m in named if m in EXACT_AXES))


def _bench_of(series: SeriesId) -> str:
    """``--bench`` for one series: its asv benchmark class (``devtime.RmsnormNaive.``)."""
    cls = series.benchmark.rsplit(".", 1)[0] if "." in series.benchmark else series.benchmark
    return "^" + re.escape(cls) + r"\."


def _default_machine(results_dir: str, machine: str | None) -> str:
    if machine:
        return machine
    try:
        names = os.listdir(results_dir)
        found = sorted(
            m for m in names
            if not m.startswith(".") and os.path.isfile(os.path.join(results_dir, m, MACHINE_FILE))
        )  # fmt: skip
    except OSError:
        found = []
    if len(found) == 1:
        return found[0]
    from neuronasv.store.machine import machine_info

    if found:
        raise UsageError(
            f"{results_dir} holds {len(found)} machines ({', '.join(found[:5])}): give --machine"
        )
    return machine_info()["machine"]


@dataclass
class _Stage:
    """The run stage for single commits, and the stored history it adds to."""

    opts: BisectOptions
    git: Git
    results_dir: str
    machine: str
    bench: str | None = None
    metrics: tuple[str, ...] | None = ("devtime",)
    extra_env: Mapping[str, str] = field(default_factory=dict)
    fingerprint: Mapping[str, str] | None = None
    history: History | None = None
    #: commits measured (and seconds) before the search: the ends, to find the series
    before: tuple[tuple[str, ...], float] = ((), 0.0)

    def load(self) -> History:
        self.history = load_history(self.results_dir, machine=self.machine, git=self.git)
        return self.history

    def run(self, commits: Sequence[str]) -> bool:
        """The run stage at ``commits`` (their results stored); False when one failed."""
        if self.fingerprint is None:
            from neuronasv.measure.backends import get_backend
            from neuronasv.measure.fingerprint import collect_fingerprint

            self.fingerprint = collect_fingerprint(get_backend(self.opts.backend))
        ro = RunOptions(
            repo=self.git.repo, commits=tuple(commits), machine=self.machine,
            results_dir=self.results_dir, bench=self.bench, backend=self.opts.backend,
            python=self.opts.python, extra_env=dict(self.extra_env),
            compile_cache=self.opts.compile_cache, metrics=self.metrics,
        )  # fmt: skip
        try:
            with indented("    "):
                run_commits(ro, git=self.git, fingerprint=self.fingerprint)
        except StoreError as exc:  # a commit produced no results: the others are kept
            log.info(f"    {exc}")
            return False
        return True


def _narrow_env(series: SeriesId) -> dict[str, str]:
    out: dict[str, str] = {}
    if series.shape:
        out[suite_env.SHAPES.name] = series.shape
    if series.dtype:
        out[suite_env.DTYPES.name] = series.dtype
    return out


def _exact_measure(stage: _Stage, series: SeriesId, axis: Axis) -> Callable[[str], Reading | None]:
    def measure(commit: str) -> Reading | None:
        log.info(f"  measuring {commit[:12]} {stage.git.subject(commit)[:60]}")
        stage.run([commit])
        history = stage.load()
        return reading_at(history, stage.machine, commit, series, axis)

    return measure


def _time_runner(
    stage: _Stage, series: SeriesId, good: str, bad: str, samples: int
) -> tuple[WorktreeProfileRunner, Callable[[str, int], Sequence[float] | None]]:
    runner = WorktreeProfileRunner(
        repo=stage.git.repo, base=good, head=bad, backend=stage.opts.backend, samples=samples,
        active=stage.opts.active, python=stage.opts.python, git=stage.git,
        extra_env=compile_cache_env(stage.opts.compile_cache),
    )  # fmt: skip

    def measure(commit: str, call: int) -> Sequence[float] | None:
        try:
            got = runner(commit, [series], call)
        except (CaptureError, StoreError) as exc:
            log.info(f"  {commit[:12]}: {exc}")
            return None
        return got.get(series)

    return runner, measure


def _samples_default(opts: BisectOptions, history: History, machine: str, commit: str) -> int:
    """Samples per process: the option, else confirm's (10 on the CPU, 30 elsewhere)."""
    if opts.samples:
        return opts.samples
    backend = history.fingerprints.get((machine, commit), {}).get("backend") or opts.backend
    return default_samples(backend)


def _search(
    stage: _Stage, chain: Sequence[str], series: Series, axis: Axis, clock: Callable[[], float]
) -> SearchResult:
    opts = stage.opts
    history = stage.history or stage.load()
    if axis != "time":
        stored = stored_readings(history, stage.machine, series.series, axis, list(chain))
        return exact_search(
            chain, stored, _exact_measure(stage, series.series, axis),
            clock=clock, budget_seconds=opts.budget_seconds,
        )  # fmt: skip
    samples = _samples_default(opts, history, stage.machine, chain[-1])
    runner, measure = _time_runner(stage, series.series, chain[0], chain[-1], samples)
    try:
        plan, budget = sized_plan(opts, chain, measure, clock=clock)
        result = time_search(chain, series.series, series.unit, measure, plan, clock=clock)
    finally:
        runner.close()
    spent = budget.pilot_seconds
    settings = {**dict(result.settings), "sizing": budget.to_json()}
    return replace(result, seconds=result.seconds + spent, settings=settings)


@dataclass(frozen=True)
class _Sized:
    """A time search's plan and what sized it (the pilot's cost included)."""

    budget: SearchBudget | None  # None: the time budget ran out in the pilot
    pilot_seconds: float

    def to_json(self) -> dict[str, object]:
        if self.budget is None:
            return {"pilot_seconds": self.pilot_seconds, "note": "the budget ran out in the pilot"}
        return {**self.budget.to_json(), "pilot_seconds": self.pilot_seconds}


def sized_plan(
    opts: BisectOptions,
    chain: Sequence[str],
    measure: Callable[[str, int], Sequence[float] | None],
    *,
    clock: Callable[[], float] = time.monotonic,
) -> tuple[RoundsPlan, _Sized]:
    """The rounds plan of a time search over ``chain``, sized from the noise before it
    measures anything (:func:`neuronasv.analyse.bisect_budget.size_search`), and the budget
    said in one INFO line: the round sd given (``opts.round_sd``), else a pilot of
    ``opts.pilot`` fresh processes of GOOD (their wall time prices a process too). The
    pilot's time counts against ``opts.budget_seconds``, and no pilot process starts that
    would end past it (the budget spent before two processes: no sizing, no rounds).

    No history floor, for the prior or the sizing: it is a robust (MAD) spread, below the
    variance of heavy-tailed process offsets, which made replayed searches name wrong
    commits as a prior (bench/eval_bisect.py) and would size too few rounds; the search's
    own earlier rounds are its prior.

    Raises:
        CaptureError: a pilot process of GOOD could not be measured.
    """
    t0 = clock()
    spp: float | None = None
    if opts.round_sd is not None:
        round_sd, source = opts.round_sd, "given"
    else:
        log.info(f"  pilot: {opts.pilot} processes of GOOD {chain[0][:12]} for the noise")
        levels: list[float] = []
        for i in range(opts.pilot):
            last = (clock() - t0) / len(levels) if levels else 0.0
            if opts.budget_seconds is not None and clock() - t0 + last > opts.budget_seconds:
                break
            xs = measure(chain[0], i)
            if not xs:
                raise CaptureError(
                    f"{chain[0][:12]} (GOOD) could not be measured for the noise pilot"
                )
            levels.append(median(list(xs)))
        if len(levels) < 2:
            spent = clock() - t0
            log.info(f"  the budget of {format_wall(opts.budget_seconds or 0.0)} ran out in the"
                     " noise pilot: no rounds")  # fmt: skip
            return RoundsPlan(opts.alpha, opts.rounds, opts.rounds, budget_seconds=0.0), _Sized(
                None, spent
            )
        spp = (clock() - t0) / len(levels)
        round_sd, source = round_sd_of_levels(levels), f"{len(levels)} pilot processes of GOOD"
    pilot_seconds = clock() - t0
    left = None if opts.budget_seconds is None else max(0.0, opts.budget_seconds - pilot_seconds)
    goal = Goal(step=opts.step, target=opts.target, alpha=opts.alpha, rounds=opts.rounds)
    budget = size_search(
        round_sd, len(chain) - 1, goal, source=source, cap=opts.max_rounds,
        seconds_per_process=spp, budget_seconds=left,
    )  # fmt: skip
    log.info(budget_line(budget))
    plan = RoundsPlan(
        alpha=opts.alpha, rounds=opts.rounds, max_rounds=budget.rounds, budget_seconds=left,
    )  # fmt: skip
    return plan, _Sized(budget, pilot_seconds)


def _explained(stage: _Stage, result: SearchResult, series: Series) -> tuple[SearchResult, History]:
    """The culprit and its parent stored (the run stage for the missing ones), for
    :func:`neuronasv.analyse.culprits.explain`."""
    history = stage.history or stage.load()
    if result.outcome != "culprit":
        return result, history
    missing = [c for c in (result.lo, result.hi) if (stage.machine, c) not in history.profiles]
    if missing:
        log.info(f"  storing {len(missing)} commit(s) to explain the culprit")
        t0 = time.monotonic()
        stage.run(missing)
        extra = time.monotonic() - t0
        history = stage.load()
        more = tuple(c for c in missing if c not in result.measured)
        result = replace(result, measured=result.measured + more, seconds=result.seconds + extra)
    return result, history


def _side_branch(
    stage: _Stage, series: Series, axis: Axis, culprit: str, clock: Callable[[], float]
) -> BisectDocument | None:
    parents = stage.git.text("rev-list", "--parents", "-n", "1", culprit).split()[1:]
    if len(parents) < 2:
        return None
    base = stage.git.text("merge-base", parents[0], parents[1])
    if base == parents[1]:
        return None
    log.info(
        f"  {culprit[:12]} is a merge: bisecting its side branch {base[:12]}..{parents[1][:12]}"
    )
    chain = first_parent_chain(stage.git, base, parents[1])
    result = _search(stage, chain, series, axis, clock)
    return _document(stage, chain, series, axis, result, None)


def _document(
    stage: _Stage, chain: Sequence[str], series: Series, axis: Axis, result: SearchResult,
    side: BisectDocument | None,
) -> BisectDocument:  # fmt: skip
    result, history = _explained(stage, result, series)
    ends, seconds = stage.before
    if ends:  # measured to find the series: part of what the search cost
        more = tuple(c for c in ends if c not in result.measured)
        result = replace(result, measured=more + result.measured, seconds=result.seconds + seconds)
        stage.before = ((), 0.0)
    why = None
    if result.culprit is not None:
        why = explain(history, result.lo, result.hi, stage.machine, series.series)
    subject = stage.git.subject(result.culprit) if result.culprit else ""
    culprit = culprit_of(result, axis, subject=subject, pull=pull_from_subject(subject),
                         explanation=why)  # fmt: skip
    created = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    settings = {
        **dict(result.settings),
        "axis": axis,
        "bench": stage.bench or "",
        "first_parent": True,
        "stored_readings": sum(1 for p in result.probes if p.source == "stored"),
    }
    return BisectDocument(
        series=series.series, machine=stage.machine, unit=series.unit, good=chain[0],
        bad=chain[-1], candidates=len(chain) - 1, result=culprit, probes=result.probes,
        measurements=result.measurements, settings=settings,
        side_branch=side.to_json() if side is not None else {}, created=created,
    )  # fmt: skip


def bisect_range(
    opts: BisectOptions,
    *,
    git: Git | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> BisectDocument:
    """Bisect ``opts.pattern``'s series over ``opts.good..opts.bad`` (see the module doc).

    Raises:
        UsageError: a commit that does not exist, GOOD not an ancestor of BAD on its first-
            parent chain, a pattern that matches no series (or several).
        CaptureError: an end of the range could not be measured.
    """
    pattern = SeriesPattern.parse(opts.pattern)  # a bad pattern: one line, before any work
    gw = git or Git(opts.repo)
    gw = gw.at(os.path.abspath(gw.toplevel()))
    good = _resolve(gw, opts.good, "GOOD")
    bad = _resolve(gw, opts.bad, "BAD")
    chain = first_parent_chain(gw, good, bad)
    results_dir, _, _ = run_dirs(gw.repo, RunOptions(repo=gw.repo, results_dir=opts.results_dir))
    machine = _default_machine(results_dir, opts.machine)
    stage = _Stage(opts, gw, results_dir, machine)
    history = stage.load() if os.path.isdir(results_dir) else History(())
    found = match_series(history, machine, pattern)
    unstored = [c for c in (good, bad) if (machine, c) not in history.profiles]
    # auto decides by the ends' exact evidence: measure the ends first when they have none
    if unstored and (not found or opts.axis == "auto"):
        log.info(f"measuring the range's ends first ({len(unstored)} without stored results)")
        one = _only(found)
        stage.bench = opts.bench or (_bench_of(one.series) if one is not None else None)
        stage.extra_env = _narrow_env(one.series) if one is not None else {}
        stage.metrics = _metrics_for(opts.axis, pattern.metrics())
        t0 = time.monotonic()
        stage.run(unstored)
        stage.before = (tuple(unstored), time.monotonic() - t0)
        history = stage.load()
        found = match_series(history, machine, pattern)
    if not found:
        mine = [s.series for s in history.series if s.machine == machine]
        raise no_match_error(pattern, mine, f"on {machine!r}")
    series, axis = _pick(found, opts.pattern, machine, opts.axis, history=history, ends=(good, bad))
    stage.bench = opts.bench or _bench_of(series.series)
    stage.extra_env = _narrow_env(series.series)
    stage.metrics = _metrics_for(axis, ())
    log.info(
        f"bisecting {series.series.label} on {machine} over {len(chain) - 1} commit(s)"
        f" {good[:12]}..{bad[:12]} ({axis})"
    )
    result = _search(stage, chain, series, axis, clock)
    side = None
    if opts.side_branches and result.culprit is not None:
        side = _side_branch(stage, series, axis, result.culprit, clock)
    return _document(stage, chain, series, axis, result, side)
