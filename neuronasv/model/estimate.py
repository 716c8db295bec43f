"""One row's figures and its state: the two values every view prints as they are.

A row of a comparison (one series, base against head) is two values, both computed once in
analyse and stored in the findings document (:class:`~neuronasv.model.Finding`):

- its :class:`Estimate` — base, head, the confidence interval of head/base, the samples
  behind each side, the unit and where the figures come from. Δ is *defined* as
  ``head / base - 1`` of these numbers, so a reader who divides the two printed values
  gets the printed Δ (within the printed precision);
- its :class:`RowState` — what the row says on each of its three axes (work, the exact
  metrics' counts, time), whether it exists on both sides, whether the interleaved rounds
  confirmed its time, and the gate rule it fires.

Nothing else about a row's time is stored (issue 28: it lived in seven fields that could
disagree).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal, get_args

from neuronasv.metrics import EXACT, KEYS
from neuronasv.model._codec import Model, spec

__all__ = [
    "ESTIMATE_SOURCES",
    "EXACT_AXIS",
    "GATE_RULE_WORDS",
    "PRESENCES",
    "TIME_AXIS",
    "WORK_AXIS",
    "Estimate",
    "EstimateSource",
    "ExactAxis",
    "GateRule",
    "Presence",
    "RowState",
    "TimeAxis",
    "WorkAxis",
]

#: Where an estimate's figures come from (see :class:`Estimate`).
EstimateSource = Literal["rounds", "first run", "exact count"]
ESTIMATE_SOURCES: tuple[str, ...] = get_args(EstimateSource)
#: The work axis of a row: exact, from the untimed shapes pass (calls, shapes, bytes, FLOPs).
WorkAxis = Literal["more", "less", "different", "same", "unknown"]
WORK_AXIS: tuple[str, ...] = get_args(WorkAxis)
#: The time axis of a row: measured, always beside its Δ and CI.
TimeAxis = Literal["slower", "faster", "noise", "undecided", "none"]
TIME_AXIS: tuple[str, ...] = get_args(TimeAxis)
#: The exact axis of a row: an exact metric's own count (:data:`neuronasv.metrics.EXACT`).
ExactAxis = Literal["more", "fewer", "same", "unsteady", "uncounted", "none"]
EXACT_AXIS: tuple[str, ...] = get_args(ExactAxis)
#: Whether the series has a value on both sides.
Presence = Literal["both", "new", "removed", "failed"]
PRESENCES: tuple[str, ...] = get_args(Presence)
#: The gate rule a row fires, in the gate's own words (each names its axis), or "" for
#: none (:data:`neuronasv.analyse.states.GATE_RULES`); an exact metric's rules are named by
#: its registry entry (:attr:`neuronasv.metrics.Metric.gate`).
GateRule = str
GATE_RULE_WORDS: tuple[str, ...] = (
    "",
    "confirmed slower time",
    "slower time",
    "more work, time undecided",
    "more work",
    *(w for m in EXACT for w in (f"{m.gate}, time undecided", m.gate)),
)


@dataclass(frozen=True)
class Estimate(Model):
    """One row's figures, computed once in analyse: what every view prints.

    Attributes:
        unit: the unit of ``base`` and ``head`` (``seconds`` for device time, an exact
            metric's unit for a count; :mod:`neuronasv.units`).
        base, head: the estimator's own values (None on a side without a value):

            - ``first run`` — the median of each side's samples (asv's value when a side
              has too few samples for a test);
            - ``rounds`` — the geometric mean of each side's per-round medians, so that
              ``head / base`` is exactly the mean paired ratio the rounds test judges
              (``exp(mean(log(median(head_r) / median(base_r))))``);
            - ``exact count`` — the two counts.
        ci_low, ci_high: the confidence interval of ``head / base`` from the same estimator
            (the bootstrap of the ratio of medians, or ``exp(mean ± t·se)`` of the rounds);
            None without one (an exact count has none).
        n_base, n_head: the samples behind each side (1 a side for an exact count).
        rounds: the paired rounds behind a ``rounds`` estimate (0 otherwise).
        source: ``rounds``, ``first run`` or ``exact count``.
        shift: the runner's shared factor (head / base of the series that moved together
            with equal work and equal counts, :mod:`neuronasv.analyse.runnershift`) that
            this row's time was judged against; None when it was judged as measured (no
            shift, or interleaved rounds, where the runner's drift cancels). The row's
            own figures stay as measured: :attr:`against` and :attr:`ci_against` are
            them over the shift.
    """

    _what = "estimate"

    unit: str
    base: float | None
    head: float | None
    source: EstimateSource = field(default="first run", metadata=spec(label="estimate source"))
    ci_low: float | None = None
    ci_high: float | None = None
    n_base: int = 0
    n_head: int = 0
    rounds: int = field(default=0, metadata=spec(omit_empty=True))
    shift: float | None = field(default=None, metadata=spec(omit_empty=True, bound="positive"))

    @property
    def ratio(self) -> float | None:
        """``head / base`` (None when a side is missing or ``base`` is not positive): Δ is
        this minus one, by definition."""
        b, h = self.base, self.head
        if b is None or h is None or not (math.isfinite(b) and math.isfinite(h)) or b <= 0:
            return None
        return h / b

    @property
    def against(self) -> float | None:
        """The row's ratio over the runner's shift (``ratio / shift``): what its time was
        judged on; the ratio itself when it was judged as measured."""
        r = self.ratio
        if r is None or self.shift is None:
            return r
        return r / self.shift

    @property
    def ci_against(self) -> tuple[float, float] | None:
        """The CI of :attr:`against` (the row's CI over the shift: a constant factor)."""
        if self.ci_low is None or self.ci_high is None:
            return None
        k = self.shift or 1.0
        return self.ci_low / k, self.ci_high / k

    @property
    def delta(self) -> float | None:
        """``head - base`` in the unit (None when a side is missing)."""
        if self.base is None or self.head is None:
            return None
        return self.head - self.base


@dataclass(frozen=True)
class RowState(Model):
    """What one row says, axis by axis, decided once in analyse (:mod:`neuronasv.analyse.states`).

    Every view renders these fields (:mod:`neuronasv.report.rowwords`) and never
    re-derives them.

    Attributes:
        presence: ``both`` (a value at base and at head), ``new`` (only at head, or failed
            at base), ``removed`` (absent at head), ``failed`` (failed at head).
        work: the work axis, exact (calls, input shapes, bytes/FLOPs of the untimed pass):
            ``more``/``less`` (more/fewer bytes or FLOPs moved by ops that carry them, or
            an op added/removed), ``different`` (changed without one direction, or only
            calls of view/alias/no-op conversion ops changed), ``same``, ``unknown`` (no
            work evidence: plain asv benchmarks, exact metrics' rows).
        time: the time axis, measured: ``slower``/``faster`` (the test decided and the
            printed Δ has that sign), ``noise`` (the change is within the minimum
            effect), ``undecided`` (the timing could not decide), ``none`` (no time: a
            side missing, or an exact metric's row).
        exact: the exact axis (:data:`neuronasv.metrics.EXACT`; written under
            ``KEYS["axis"]``): ``more``/``fewer``/``same`` per iteration, ``unsteady``
            (a count that differed when taken twice, or samples that did not repeat: not
            judged), ``uncounted`` (an op that still runs on a side where the counting
            pass did not count it on its own: there it runs only inside other ops),
            ``none`` (not counted). On an exact metric's row its own value; on a time row
            the same series' count of :data:`~neuronasv.metrics.BESIDE_TIME`, where it
            was counted.
        confirmed: the interleaved rounds confirmed ``time`` (only with slower/faster).
        gate: the ``--fail-on``/status rule this row fires, empty when none.
        exact_base, exact_head: beside the row's time, the same series' count of
            :data:`~neuronasv.metrics.BESIDE_TIME` at base and head, where counted: the
            exact fact the row states with its time (an equal count beside a slower time
            says the code did the same; before issue 39 only an undecided time carried it).
        exact_why: on an ``unsteady`` exact row, where its values differed and why, in
            one line (the pass's :attr:`PassCounts.why`); empty when not said.
    """

    _what = "row state"

    work: WorkAxis = field(default="unknown", metadata=spec(label="work axis"))
    time: TimeAxis = field(default="none", metadata=spec(label="time axis"))
    exact: ExactAxis = field(default="none", metadata=spec(key=KEYS["axis"], label="exact axis"))
    presence: Presence = field(default="both", metadata=spec(label="presence"))
    confirmed: bool = False
    gate: GateRule = field(default="", metadata=spec(label="gate rule", choices=GATE_RULE_WORDS))
    exact_base: float | None = field(default=None, metadata=spec(key=KEYS["base"], omit_empty=True))
    exact_head: float | None = field(default=None, metadata=spec(key=KEYS["head"], omit_empty=True))
    exact_why: str = field(default="", metadata=spec(key=KEYS["why"], omit_empty=True))

    @property
    def decided(self) -> bool:
        """The time test decided a direction (slower or faster)."""
        return self.time in ("slower", "faster")

    @property
    def direction(self) -> Literal["worse", "better"] | None:
        """Which way the row moved, axis by axis: a decided time first (slower/faster);
        where the time did not decide, the exact axes (more/less work, more/less of an
        exact metric); None when nothing decided or the axes disagree, and for a series
        on one side only."""
        if self.presence != "both":
            return None
        if self.time == "slower":
            return "worse"
        if self.time == "faster":
            return "better"
        worse = self.work == "more" or self.exact == "more"
        better = self.work == "less" or self.exact == "fewer"
        if worse and not better:
            return "worse"
        if better and not worse:
            return "better"
        return None
