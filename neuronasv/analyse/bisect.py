"""Find the commit: bisect one series over a first-parent range (pure; measurements injected).

The range is ``chain``: ``good`` first, then every commit on ``bad``'s first-parent chain
after it, ``bad`` last. The search keeps a bracket ``lo``..``hi`` with a proof that the
series is at the old level at ``lo`` and not at ``hi``, and halves it until ``hi``'s first
parent is ``lo``: ``hi`` is then the first commit at which the series changed.

**Exact axes** (:func:`exact_search`: an exact metric's counts, the work evidence).
One reading per commit decides: equal to ``good``'s reading or not. Readings already stored
decide for free (the bracket starts at the first stored commit that differs from ``good``
and the last stored one before it that equals it); every other probe is the midpoint, so at
most ``ceil(log2(n))`` commits are measured for ``n`` candidates. The answer is a fact: the
two readings of ``lo`` and ``hi``. A commit that cannot be measured is skipped (the nearest
other candidate is probed), as ``git bisect skip`` does.

**Device time** (:func:`time_search`). A single measurement per commit cannot decide: a run
differs from another of the same code by more than a 30 % step on a loaded CPU. So each
probe is measured in interleaved rounds with the bracket's ends — ``lo, probe, hi``, then
``hi, probe, lo``, one fresh process each — and judged with the rounds test ``confirm``
uses (:func:`neuronasv.analyse.pairwise.judge`: per-round log-ratios, moderated t, the rounds
agreeing in direction, the rule's minimum effect), adding rounds up to ``max_rounds`` — a
look after ``rounds`` rounds, then each time a quarter more — with alpha spent evenly over
the looks (:func:`multitest.spend`, union bound: valid whatever the
stopping rule). Two tests per probe:

- ``lo -> probe`` shows the change (in the direction the ends showed): the probe is *bad*,
  the bracket becomes ``lo..probe``;
- else ``probe -> hi`` shows it: the probe is *good*, the bracket becomes ``probe..hi``;
- neither within the budget: the probe is *undecided*, and the search stops and says the
  narrowest range it proved (``lo..hi``) rather than guess.

The ends' test is two-sided (it finds the direction); a probe's tests are one-sided in that
direction (the two-sided p-value at twice the level, a verdict in the other direction
ignored).

Error rate. First the ends are tested (``good -> bad``: a change not shown ends the search
"undecided between good and bad" — never "no change", which only an exact axis can prove);
then at most ``ceil(log2(n))`` probes. Alpha is split evenly over these
``1 + ceil(log2(n))`` tests. At a probe, the bracket's ends truly differ unless an earlier
test already erred, so at most one of its two null hypotheses is true: the probe errs with
probability at most its share. A wrong answer needs some test to reject a true null, so by
the union bound the chance that the named commit (or range) is wrong is at most ``alpha``
(it holds for any series, two levels or more; the halving is only efficient when the
series has one step). The prior variance of the moderated t is the round-to-round variance
of the search's own earlier tests (independent processes of the same series: a valid prior
for the next test), pooled with ``RoundsPlan.prior`` when one is given. ``neuronasv
bisect`` gives none: a history noise floor is a robust (MAD) spread that understates the
variance of heavy-tailed process offsets, and replayed searches that used it named wrong
commits (``bench/eval_bisect.py``, docs/analysis.md).
"""

from __future__ import annotations

import functools
import logging
import math
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from neuronasv.analyse import stats
from neuronasv.analyse.floors import NoiseFloor, floor_key
from neuronasv.analyse.multitest import spend
from neuronasv.analyse.pairwise import MAX_POOLED_DF, PairInput, Settings, judge
from neuronasv.analyse.rules import RuleSet
from neuronasv.errors import CaptureError, UsageError
from neuronasv.format import format_delta_pct, format_wall
from neuronasv.model import Finding, Point, SeriesId
from neuronasv.model.bisect import Probe, RoundSamples
from neuronasv.model.culprit import Outcome
from neuronasv.samples import median

__all__ = [
    "ExactMeasure",
    "Reading",
    "RoundsPlan",
    "SearchResult",
    "TimeRunner",
    "exact_search",
    "max_probes",
    "time_search",
]

log = logging.getLogger(__name__)

#: A decided time axis (``RowState.time``) in the record's words.
_WORD = {"slower": "regression", "faster": "improvement"}


@dataclass(frozen=True)
class Reading:
    """One exact reading of the series at a commit.

    Attributes:
        value: what is compared for equality (a count, or a digest of the work).
        number: the count to record (None for a digest).
        words: the reading for people (``68,722 <noun> per iteration``).
    """

    value: Hashable
    number: float | None
    words: str


#: ``measure(commit) -> Reading`` (None: it could not be measured there).
ExactMeasure = Callable[[str], "Reading | None"]
#: ``runner(commit, call_index) -> samples`` of the series from one fresh process (None:
#: the measurement failed). ``call_index`` counts calls, for recorders and replays.
TimeRunner = Callable[[str, int], "Sequence[float] | None"]


@dataclass(frozen=True)
class SearchResult:
    """What a search proved.

    Attributes:
        outcome: ``culprit``, ``undecided`` or ``no change`` (an exact axis only: on
            device time ends not shown to differ are ``undecided`` between them).
        lo, hi: the narrowest range proven (the ends when nothing narrowed it).
        probes: every commit looked at, in order.
        measured: the commits measured (not taken from stored results), first time each.
        decided_by: the proof of ``lo``..``hi`` in words.
        seconds: wall time of the measurements.
        alpha: the bound on a wrong answer (time axis); None for an exact axis.
        direction: ``regression`` or ``improvement`` (time axis: what the ends showed).
        measurements: every round's samples (time axis).
        settings: how it searched, for the document.
    """

    outcome: Outcome
    lo: str
    hi: str
    probes: tuple[Probe, ...]
    measured: tuple[str, ...]
    decided_by: str
    seconds: float = 0.0
    alpha: float | None = None
    direction: str = ""
    measurements: tuple[RoundSamples, ...] = ()
    settings: Mapping[str, Any] = field(default_factory=dict)

    @property
    def culprit(self) -> str | None:
        return self.hi if self.outcome == "culprit" else None


def max_probes(candidates: int) -> int:
    """Probes a halving search needs at most for ``candidates`` commits: ``ceil(log2 n)``."""
    return math.ceil(math.log2(candidates)) if candidates > 1 else 0


def _check_chain(chain: Sequence[str]) -> None:
    if len(chain) < 2:
        raise UsageError("a bisection needs two different commits: GOOD and a later BAD")
    if len(set(chain)) != len(chain):
        raise UsageError("the commit range lists a commit twice")


# --- exact axes ---------------------------------------------------------------------------


def exact_search(
    chain: Sequence[str],
    stored: Mapping[str, Reading],
    measure: ExactMeasure,
    *,
    clock: Callable[[], float] = time.monotonic,
    budget_seconds: float | None = None,
) -> SearchResult:
    """Bisect an exact series (see the module doc).

    Args:
        chain: ``good``, the first-parent commits after it, ``bad`` (oldest first).
        stored: readings already stored, by commit.
        measure: reads a commit that has no stored reading.
        clock: seconds, monotonic (injected for tests).
        budget_seconds: no new measurement starts once this much time was spent.

    Raises:
        CaptureError: an end of the range cannot be read.
    """
    _check_chain(chain)
    walk = _ExactWalk(chain, stored, measure, clock)
    started = clock()
    good, bad = walk.read_ends()
    n = len(chain) - 1
    walk.note(0, "good", good, walk.source(0), good.words)
    if good.value == bad.value:
        walk.note(n, "good", bad, walk.source(n), f"{bad.words}: the same as at the start")
        return SearchResult(
            "no change", chain[0], chain[-1], tuple(walk.probes), tuple(walk.measured),
            f"{good.words} at both ends", walk.spent,
        )  # fmt: skip
    walk.note(n, "bad", bad, walk.source(n), bad.words)
    lo, hi = walk.narrow_from_stored(good)
    readings: dict[int, Reading] = {0: good, n: bad}
    out_of_time = functools.partial(_budget_spent, clock, started, budget_seconds)
    lo, hi = walk.halve(lo, hi, good, readings, out_of_time)
    lo_r = readings.get(lo) or stored.get(chain[lo]) or good
    hi_r = readings.get(hi) or stored.get(chain[hi]) or bad
    proof = f"{lo_r.words} at {chain[lo][:12]}, {hi_r.words} at {chain[hi][:12]}"
    outcome: Outcome = "culprit" if hi - lo == 1 else "undecided"
    return SearchResult(
        outcome, chain[lo], chain[hi], tuple(walk.probes), tuple(walk.measured), proof,
        walk.spent,
    )  # fmt: skip


def _budget_spent(
    clock: Callable[[], float], started: float, budget_seconds: float | None
) -> bool:
    """Whether no new measurement may start (and says so once it may not)."""
    if budget_seconds is not None and clock() - started >= budget_seconds:
        log.info(f"  budget of {format_wall(budget_seconds)} spent")
        return True
    return False


class _ExactWalk:
    """One exact search's reads and probes: what it looked at, measured, and the time spent."""

    def __init__(
        self,
        chain: Sequence[str],
        stored: Mapping[str, Reading],
        measure: ExactMeasure,
        clock: Callable[[], float],
    ) -> None:
        self.chain, self.stored, self.measure = chain, stored, measure
        self.clock = clock
        self.probes: list[Probe] = []
        self.measured: list[str] = []
        self.spent = 0.0

    def source(self, i: int) -> str:
        return "stored" if self.chain[i] in self.stored else "measured"

    def read(self, i: int) -> Reading | None:
        c = self.chain[i]
        if c in self.stored:
            return self.stored[c]
        t0 = self.clock()
        got = self.measure(c)
        self.spent += self.clock() - t0
        self.measured.append(c)
        return got

    def note(self, i: int, verdict: str, r: Reading | None, source: str, reason: str) -> None:
        c = self.chain[i]
        self.probes.append(
            Probe(c, verdict, source, r.number if r else None, reason=reason)  # type: ignore[arg-type]
        )
        log.info(f"  {c[:12]} {verdict:<9} {reason} ({source})")

    def read_ends(self) -> tuple[Reading, Reading]:
        """GOOD's and BAD's readings; an end that cannot be read stops the search."""
        ends = []
        for i in (0, len(self.chain) - 1):
            r = self.read(i)
            if r is None:
                raise CaptureError(
                    f"{self.chain[i][:12]} (an end of the range) could not be measured"
                )
            ends.append(r)
        return ends[0], ends[1]

    def narrow_from_stored(self, good: Reading) -> tuple[int, int]:
        """The bracket stored readings prove for free: the last good before the first bad."""
        lo, hi = 0, len(self.chain) - 1
        for i in range(1, hi):
            r = self.stored.get(self.chain[i])
            if r is None:
                continue
            if r.value == good.value:
                lo = i
                self.note(i, "good", r, "stored", r.words)
            else:
                hi = i
                self.note(i, "bad", r, "stored", r.words)
                break
        return lo, hi

    def halve(
        self,
        lo: int,
        hi: int,
        good: Reading,
        readings: dict[int, Reading],
        out_of_time: Callable[[], bool],
    ) -> tuple[int, int]:
        """Measure the open commit nearest the middle until the bracket is one commit wide,
        every open commit failed, or the budget is spent; a commit that fails is skipped."""
        skipped: set[int] = set()
        while hi - lo > 1:
            if out_of_time():
                break
            open_ = [i for i in range(lo + 1, hi) if i not in skipped]
            if not open_:
                break
            mid = (lo + hi) // 2
            i = min(open_, key=lambda j: (abs(j - mid), j))
            r = self.read(i)
            if r is None:
                skipped.add(i)
                self.note(i, "failed", None, "measured", "could not be measured: skipped")
                continue
            readings[i] = r
            if r.value == good.value:
                lo = i
                self.note(i, "good", r, "measured", r.words)
            else:
                hi = i
                self.note(i, "bad", r, "measured", r.words)
        return lo, hi


# --- device time --------------------------------------------------------------------------


@dataclass(frozen=True)
class RoundsPlan:
    """How the time axis measures and decides.

    Attributes:
        alpha: the bound on the chance of a wrong answer, for the whole search (0.001: a
            search has one true null hypothesis per probe, so at 0.01 about one search in
            a hundred names a wrong commit, as the replay showed: 1 of 200).
        rounds: rounds before a test's first look (at least 2: the rounds test needs them).
        max_rounds: rounds a test may take before its probe is undecided.
        rules: minimum effects (the default rule: ``median:5%``).
        prior: the series' between-run noise floor from stored history, if any.
        budget_seconds: no new round starts when the last round's duration would overrun.
    """

    alpha: float = 0.001
    rounds: int = 3
    max_rounds: int = 48
    rules: RuleSet = field(default_factory=RuleSet)
    prior: NoiseFloor | None = None
    budget_seconds: float | None = None

    def __post_init__(self) -> None:
        if not 0.0 < self.alpha < 1.0:
            raise UsageError(f"alpha must be in (0, 1), got {self.alpha}")
        if self.rounds < 2:
            raise UsageError(f"rounds must be at least 2 for the rounds test, got {self.rounds}")
        if self.max_rounds < self.rounds:
            raise UsageError("max rounds must be at least rounds")

    @property
    def schedule(self) -> tuple[int, ...]:
        """Rounds measured at each look: ``rounds``, then a quarter more each time (at least
        one), ending at ``max_rounds`` (3, 4, 5, 7, 9, 12, ...). Fewer looks than one per
        round leave each look more alpha; confirm's one-per-round is this schedule with
        small budgets."""
        out = [self.rounds]
        while out[-1] < self.max_rounds:
            out.append(min(self.max_rounds, max(out[-1] + 1, math.ceil(out[-1] * 1.25))))
        return tuple(out)

    @property
    def looks(self) -> int:
        return len(self.schedule)


@dataclass
class _Clock:
    clock: Callable[[], float]
    budget: float | None
    started: float = 0.0
    last_round: float = 0.0
    spent: float = 0.0

    def over(self) -> bool:
        if self.budget is None:
            return False
        if self.budget <= 0.0:  # spent before the search (its noise pilot): no round
            return True
        return self.clock() - self.started + self.last_round > self.budget


@dataclass
class _TimeState:
    series: SeriesId
    unit: str
    runner: TimeRunner
    plan: RoundsPlan
    level: float  # alpha of one test
    timer: _Clock
    calls: int = 0
    measured: list[str] = field(default_factory=list)
    samples: list[RoundSamples] = field(default_factory=list)
    residuals: list[tuple[float, float]] = field(default_factory=list)  # (variance, df)

    def prior(self) -> NoiseFloor | None:
        """The residual variance of earlier tests (with ``plan.prior`` when given), worth at
        most :data:`~neuronasv.analyse.pairwise.MAX_POOLED_DF` degrees of freedom, as
        confirm's pooled prior: one heavy-tailed process offset in a test's first rounds
        must not meet a prior so sure of itself that three rounds decide (replayed CPU
        noise: a run 2.6 times slower than the others, drawn twice in three rounds, named a
        wrong range)."""
        parts = list(self.residuals)
        if self.plan.prior is not None:
            parts.append((self.plan.prior.sd**2, self.plan.prior.df))
        df = sum(d for _, d in parts)
        if df <= 0:
            return None
        var = sum(v * d for v, d in parts) / df
        df = min(df, MAX_POOLED_DF)
        return NoiseFloor(math.sqrt(var), max(1, round(df / stats.MAD_EFFICIENCY)))

    def measure_round(
        self, test: int, r: int, commits: Sequence[str]
    ) -> dict[str, tuple[float, ...]] | None:
        order = list(commits) if r % 2 == 0 else list(reversed(commits))
        t0 = self.timer.clock()
        out: dict[str, tuple[float, ...]] = {}
        for c in order:
            got = self.runner(c, self.calls)
            self.calls += 1
            if c not in self.measured:
                self.measured.append(c)
            xs = tuple(float(x) for x in got or ())
            if not xs or not all(math.isfinite(x) and x > 0 for x in xs):
                self.timer.last_round = self.timer.clock() - t0
                self.timer.spent += self.timer.last_round
                return None
            out[c] = xs
            self.samples.append(RoundSamples(test, r, c, xs))
        self.timer.last_round = self.timer.clock() - t0
        self.timer.spent += self.timer.last_round
        return out

    def judge_pair(
        self,
        base: Sequence[tuple[float, ...]],
        head: Sequence[tuple[float, ...]],
        look: int,
        one_sided: bool,
    ) -> Finding:
        """The rounds test of ``base`` against ``head`` at this look's level; ``one_sided``
        (the direction is known: a probe's tests) doubles the two-sided level, the caller
        accepting only a verdict in that direction."""
        pb = [x for rnd in base for x in rnd]
        ph = [x for rnd in head for x in rnd]
        prior = self.prior()
        pi = PairInput(
            series=self.series,
            unit=self.unit,
            base=Point("lo", 0, median(pb), tuple(pb)),
            head=Point("hi", 1, median(ph), tuple(ph)),
            base_rounds=tuple(base),
            head_rounds=tuple(head),
        )
        st = Settings(rules=self.plan.rules, alpha=self.level)
        floors = {floor_key(self.series): prior} if prior is not None else None
        level = spend(self.level, look, self.plan.looks) * (2.0 if one_sided else 1.0)
        (f,) = judge([pi], st, floors, level=level)
        return f

    def keep_residual(
        self, base: Sequence[tuple[float, ...]], head: Sequence[tuple[float, ...]]
    ) -> None:
        d = stats.round_log_ratios(base, head)
        if d.size >= 2:
            self.residuals.append((float(np.var(d, ddof=1)), float(d.size - 1)))


def _futile(f: Finding, rules: RuleSet) -> bool:
    """The CI lies within the minimum effect: more rounds cannot show a change (as confirm)."""
    rule = rules.for_series(f.series)
    if f.ci_low is None or f.ci_high is None or not (rule.relative and rule.stat == "median"):
        return False
    return not rule.exceeded(1.0, f.ci_high) and not rule.improved(1.0, f.ci_low)


@dataclass(frozen=True)
class _Test:
    """A test's outcome: which pair showed the change (-1: none), its finding, rounds."""

    shown: int
    finding: Finding | None
    others: tuple[Finding, ...]
    rounds: int
    futile: bool = False
    failed: bool = False
    budget: bool = False


def _run_test(
    st: _TimeState,
    test: int,
    commits: Sequence[str],
    pairs: Sequence[tuple[int, int]],
    direction: str | None,
) -> _Test:
    """Rounds of ``commits`` until a pair shows the change (in ``direction``; any direction
    when None), every pair is futile, or the rounds or the budget run out."""
    data: dict[str, list[tuple[float, ...]]] = {c: [] for c in commits}
    latest: list[Finding] = []
    r = 0
    for look, target in enumerate(st.plan.schedule, 1):
        while r < target:
            if st.timer.over():
                return _Test(-1, None, tuple(latest), r, budget=True)
            got = st.measure_round(test, r, commits)
            if got is None:
                return _Test(-1, None, tuple(latest), r, failed=True)
            for c in commits:
                data[c].append(got[c])
            r += 1
        latest = [
            st.judge_pair(data[commits[a]], data[commits[b]], look, direction is not None)
            for a, b in pairs
        ]
        for k, f in enumerate(latest):
            if f.state.time in ("slower", "faster") and direction in (None, f.state.time):
                st.keep_residual(data[commits[0]], data[commits[-1]])
                return _Test(k, f, tuple(latest), r)
        if all(_futile(f, st.plan.rules) for f in latest):
            st.keep_residual(data[commits[0]], data[commits[-1]])
            return _Test(-1, None, tuple(latest), r, futile=True)
    st.keep_residual(data[commits[0]], data[commits[-1]])
    return _Test(-1, None, tuple(latest), r)


def _why_not(t: _Test, plan: RoundsPlan) -> str:
    if t.failed:
        return f"a measurement failed after {t.rounds} round(s)"
    if t.budget:
        return f"the time budget ran out after {t.rounds} round(s)"
    if t.futile:
        return f"within the minimum effect after {t.rounds} rounds"
    return f"not shown in {t.rounds} rounds (at most {plan.max_rounds})"


def time_search(
    chain: Sequence[str],
    series: SeriesId,
    unit: str,
    runner: TimeRunner,
    plan: RoundsPlan = RoundsPlan(),
    *,
    clock: Callable[[], float] = time.monotonic,
) -> SearchResult:
    """Bisect a measured series in interleaved rounds (see the module doc).

    Args:
        chain: ``good``, the first-parent commits after it, ``bad`` (oldest first).
        series, unit: what is measured (the rounds test names it).
        runner: one fresh process's samples of the series at a commit.
        plan: alpha, rounds, budget, rules, prior.
        clock: seconds, monotonic (injected for tests).
    """
    _check_chain(chain)
    n = len(chain) - 1
    tests = 1 + max_probes(n)
    timer = _Clock(clock, plan.budget_seconds, started=clock())
    st = _TimeState(series, unit, runner, plan, plan.alpha / tests, timer)
    settings = {
        "alpha": plan.alpha,
        "tests": tests,
        "alpha_per_test": st.level,
        "rounds": plan.rounds,
        "max_rounds": plan.max_rounds,
        "looks_after_rounds": list(plan.schedule),
        "order": "lo, probe, hi then hi, probe, lo (one process each)",
        "test": "rounds test (moderated t on per-round log-ratios, rounds agreeing, minimum"
        " effect), alpha spent evenly over the looks; union bound over the tests",
        "prior": plan.prior.describe() if plan.prior else "none from history",
    }
    probes: list[Probe] = []

    def done(outcome: Outcome, lo: int, hi: int, proof: str, direction: str = "") -> SearchResult:
        return SearchResult(
            outcome, chain[lo], chain[hi], tuple(probes), tuple(st.measured), proof,
            timer.spent, plan.alpha, direction, tuple(st.samples), settings,
        )  # fmt: skip

    good, bad = chain[0], chain[-1]
    t0 = timer.spent
    ends = _run_test(st, 0, [good, bad], [(0, 1)], None)
    f = ends.finding
    ratio = ends.others[0].ratio if ends.others else None
    if f is None:
        why = _why_not(ends, plan)
        reason = f"{ends.others[0].reason}; {why}" if ends.others else why
        probes.append(Probe(bad, "undecided", "measured", ratio, ends.rounds, reason,
                            timer.spent - t0))  # fmt: skip
        log.info(f"  ends {good[:12]}..{bad[:12]}: not shown to differ ({why})")
        # undecided, never "no change": rounds that do not reject show only that they
        # could not decide (the step may be smaller than the noise lets them see); "no
        # change" is an exact axis's fact
        return done("undecided", 0, n, f"the ends were not shown to differ: {reason}")
    direction = f.state.time
    probes.append(Probe(bad, "bad", "measured", f.ratio, ends.rounds, f.reason, timer.spent - t0))
    log.info(f"  ends {good[:12]}..{bad[:12]}: {format_delta_pct(f.ratio)} after"
             f" {ends.rounds} rounds ({direction})")  # fmt: skip
    lo, hi, proof = 0, n, f.reason
    test = 0
    while hi - lo > 1:
        test += 1
        if test >= tests:  # cannot happen with halving; a guard for the alpha split
            break
        mid = (lo + hi) // 2
        c = chain[mid]
        t0 = timer.spent
        t = _run_test(st, test, [chain[lo], c, chain[hi]], [(0, 1), (1, 2)], direction)
        ratio = t.others[0].ratio if t.others else None
        if t.shown == 0:
            assert t.finding is not None
            probes.append(Probe(c, "bad", "measured", ratio, t.rounds, t.finding.reason,
                                timer.spent - t0))  # fmt: skip
            hi, proof = mid, t.finding.reason
        elif t.shown == 1:
            assert t.finding is not None
            probes.append(Probe(c, "good", "measured", ratio, t.rounds, t.finding.reason,
                                timer.spent - t0))  # fmt: skip
            lo, proof = mid, t.finding.reason
        else:
            why = _why_not(t, plan)
            words = "; ".join(x.reason for x in t.others)
            probes.append(Probe(c, "undecided", "measured", ratio, t.rounds,
                                f"{why}: {words}" if words else why, timer.spent - t0))  # fmt: skip
            log.info(f"  {c[:12]} undecided ({why})")
            break
        log.info(f"  {c[:12]} {probes[-1].verdict:<4} after {t.rounds} rounds:"
                 f" {chain[lo][:12]}..{chain[hi][:12]} left")  # fmt: skip
    outcome: Outcome = "culprit" if hi - lo == 1 else "undecided"
    return done(outcome, lo, hi, proof, _WORD[direction])
