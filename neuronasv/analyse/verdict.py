"""The row decision of PR mode: one series' evidence -> its finding (pure, no I/O).

:mod:`neuronasv.analyse.pairwise` measures (medians, rounds, Mann–Whitney, bootstrap, the
gatekeeping correction) and hands each series' :class:`Evidence` here with the bar its
change must clear (:class:`Bar`). This module turns it into a row: the estimate (the
evidence's own figures) and the time axis from **one decision table** for both modes
(beyond the rule's minimum effect × significant × consistent/outside the noise floor),
with a reason that says which test spoke. A side without a value becomes new, removed or
failed; a series without samples gets a factor-only decision.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from neuronasv.analyse.floors import NoiseFloor
from neuronasv.analyse.rules import Rule, RuleSet
from neuronasv.analyse.states import time_axis
from neuronasv.format import format_delta_pct, format_p, format_pct, p_text
from neuronasv.metrics import BESIDE_TIME
from neuronasv.model import Estimate, Finding, Point, RowState, SeriesId
from neuronasv.model.estimate import Presence
from neuronasv.samples import NOISE_THRESHOLD

__all__ = [
    "Bar",
    "Evidence",
    "Outcome",
    "PairInput",
    "ShiftBar",
    "against_shift",
    "allowed_against",
    "verdict",
]


@dataclass(frozen=True)
class PairInput:
    """One series on both sides. A side is None when the series is absent there."""

    series: SeriesId
    unit: str
    base: Point | None
    head: Point | None
    base_rounds: tuple[tuple[float, ...], ...] = ()
    head_rounds: tuple[tuple[float, ...], ...] = ()

    @property
    def rounds(self) -> int:
        """Paired rounds (0 or 1 = judged as a single run)."""
        return min(len(self.base_rounds), len(self.head_rounds))


@dataclass(frozen=True)
class Evidence:
    """What the statistics found for one series, before the verdict (typed, no I/O).

    ``mode`` says how the series is judged: ``rounds`` (per-round log-ratios), ``samples``
    (one run a side, Mann–Whitney), ``value`` (no samples: factor only) or ``absent``
    (a side is missing or failed).
    """

    mode: Literal["rounds", "samples", "value", "absent"]
    base: float | None = None
    head: float | None = None
    ratio: float | None = None
    ci: tuple[float, float] | None = None
    noise: tuple[float | None, float | None] = (None, None)
    samples: tuple[tuple[float, ...], tuple[float, ...]] | None = None
    log_ratios: tuple[float, ...] = ()
    p: float | None = None
    p_adj: float | None = None
    prior: tuple[str, float, float] | None = None  # (source, sd, df) of the rounds prior
    warnings: tuple[str, ...] = ()

    @property
    def n(self) -> tuple[int, int] | None:
        return (len(self.samples[0]), len(self.samples[1])) if self.samples else None


@dataclass(frozen=True)
class ShiftBar:
    """The runner's shared shift a single-run row is judged against
    (:mod:`neuronasv.analyse.runnershift`): its ``factor`` (head / base), the ``spread``
    of the series about it (log scale), the ``series`` it rests on, and ``k``: how many
    spreads the row's change over the factor must exceed."""

    factor: float
    spread: float
    series: int
    k: float


@dataclass(frozen=True)
class Bar:
    """What one row's change must clear: the alpha this look spends against the
    gatekeeping-adjusted p over ``tested`` series, (one run a side) ``k`` times the
    series' between-run noise ``floor`` when it has one, and ``shift`` when the row is
    judged against the runner's shared shift."""

    alpha: float
    tested: int
    floor: NoiseFloor | None
    k: float
    shift: ShiftBar | None = None


@dataclass(frozen=True)
class _TestSays:
    """What the test of one mode says, in words: ``text`` (the test and its p-values),
    whether the change is ``consistent`` (rounds agree / outside the floor), the rounds'
    agreement (``agree``, rounds only) and why it is not consistent (``not_consistent``)."""

    text: str
    consistent: bool
    agree: str = ""
    not_consistent: str = ""


def _absent(pi: PairInput, unit: str, n: tuple[int, int]) -> Finding:
    """A series without a value on a side: new, removed or failed (no Δ, no time)."""
    b, h = pi.base, pi.head
    bv = b.value if b is not None else None
    hv = h.value if h is not None else None
    presence: Presence
    if b is None and h is None:
        presence, why = "removed", "absent on both sides"
    elif b is None:
        presence = "failed" if hv is None else "new"
        why = "new at head, failed" if hv is None else "new at head (absent at base)"
    elif h is None:
        presence, why = "removed", "absent at head (present at base)"
    elif hv is None:
        presence = "failed"
        why = "failed at head" + (" (also failed at base)" if bv is None else "")
    else:
        presence, why = "new", "failed at base, works at head"
    est = Estimate(
        unit=unit,
        base=bv if presence in ("removed", "failed") else None,
        head=hv if presence == "new" else None,
        n_base=n[0],
        n_head=n[1],
    )
    return Finding(series=pi.series, estimate=est, state=RowState(presence=presence), reason=why)


def allowed_against(rounds: int) -> int:
    """Rounds that may point the other way for a rounds verdict: none up to 4 rounds, then
    one more per 4 rounds (5–8: 1, 9–12: 2, ... 22: 5), and from 23 rounds a majority
    at least two binomial sds short of half (``(R-1)//2 - ceil(√R)``: 48 → 16, 134 → 54).

    The agreement check guards a small R against one outlier round carrying the mean; kept
    at "every round" it would make a real change harder to confirm the more rounds are
    added (at 8 rounds one stray round in eight is common under pure noise on a +1 % shift
    measured at a 0.6 % floor). Kept at "a quarter" for every R it bounded the power: a
    change smaller than 0.67 round sds puts more than a quarter of the rounds the other way,
    and adding rounds then made the verdict *less* likely (replayed CPU noise, a +30 % step
    at a round sd of 0.42: 27 % of rounds against, the ends' test withheld in half of the
    searches at 134 rounds — issue 30). It only ever withholds a verdict the moderated t
    already made, so it cannot add false alarms.
    """
    return max(0, (rounds - 1) // 4, (rounds - 1) // 2 - math.ceil(math.sqrt(rounds)))


#: A timing decision, before it becomes the row's time axis (:func:`states.time_axis`).
Outcome = Literal["slower", "faster", "noise", "undecided"]

#: The decision table: (beyond the rule's minimum effect, significant, consistent/outside
#: the floor) -> outcome. "Direction" fills in slower or faster; "noise" is a change
#: within the minimum effect; "undecided" one beyond it that the test did not establish.
_DECIDE: dict[tuple[bool, bool, bool], str] = {
    (True, True, True): "direction",
    (True, True, False): "undecided",
    (True, False, True): "undecided",
    (True, False, False): "undecided",
    (False, True, True): "noise",
    (False, True, False): "noise",
    (False, False, True): "noise",
    (False, False, False): "noise",
}


def against_shift(e: Evidence, factor: float) -> Evidence:
    """A single-run row's evidence over the runner's shared ``factor``: head samples (or
    value) divided by it, the ratio and CI likewise (the bootstrap of a ratio of medians
    scales exactly), the p-value left to recompute on those samples. Rounds and absent
    rows are returned as they are (interleaved rounds cancel the runner's drift)."""
    if e.mode not in ("samples", "value") or e.head is None or factor <= 0:
        return e
    samples = e.samples
    if samples is not None:
        samples = (samples[0], tuple(x / factor for x in samples[1]))
    return replace(
        e,
        head=e.head / factor,
        ratio=None if e.ratio is None else e.ratio / factor,
        ci=None if e.ci is None else (e.ci[0] / factor, e.ci[1] / factor),
        samples=samples,
        p=None,
        p_adj=None,
    )


def verdict(
    pi: PairInput,
    e: Evidence,
    rules: RuleSet,
    bar: Bar,
    have_floors: bool,
    judged: Evidence | None = None,
) -> Finding:
    """One row: its estimate (the evidence's figures) and its time axis (the decision).

    ``have_floors``: the comparison has noise floors at all (a single-run series without
    its own floor is then warned about). ``judged``: the evidence against the runner's
    shift (:func:`against_shift`, with ``bar.shift``), which the time is decided on; the
    estimate stays the measured one, with the shift beside it."""
    b, h = pi.base, pi.head
    n = e.n or (len(b.samples) if b else 0, len(h.samples) if h else 0)
    if e.mode == "absent":
        return _absent(pi, pi.unit, n)
    assert e.base is not None and e.head is not None
    shift = bar.shift if judged is not None else None
    d = judged if judged is not None else e
    assert d.base is not None and d.head is not None
    rule = rules.for_series(pi.series)
    warnings = [*e.warnings, *_noise_warnings(e)]
    effect = format_delta_pct(d.ratio) if d.ratio is not None else "n/a"
    if shift is not None:
        effect = f"{effect} against the runner's {format_delta_pct(shift.factor)} shift"
    ci_txt = f" (CI {format_delta_pct(d.ci[0])} to {format_delta_pct(d.ci[1])})" if d.ci else ""
    outcome: Outcome
    if d.mode == "value":
        outcome, reason = _decide_by_value(d.base, d.head, rule, effect)
    else:
        outcome, reason = _decide(d, rule, bar, effect + ci_txt)
        if d.mode == "samples" and bar.floor is None and have_floors:
            warnings.append(
                "no between-run noise floor for this series (too little main-branch history):"
                " the within-run test cannot see run-to-run shifts"
            )
    est = _estimate(pi, e, n, shift.factor if shift is not None else None)
    return Finding(
        series=pi.series,
        estimate=est,
        state=RowState(time=time_axis(outcome, est.against)),
        p_value=d.p,
        p_adjusted=d.p_adj,
        noise_base=e.noise[0],
        noise_head=e.noise[1],
        reason=reason,
        warnings=tuple(warnings),
    )


def _noise_warnings(e: Evidence) -> list[str]:
    """A warning per side whose samples are noisier than :data:`NOISE_THRESHOLD`."""
    return [
        f"noisy {side}: IQR/median {format_pct(nz)}"
        for side, nz in zip(("base", "head"), e.noise, strict=True)
        if nz is not None and nz > NOISE_THRESHOLD
    ]


def _estimate(
    pi: PairInput, e: Evidence, n: tuple[int, int], shift: float | None = None
) -> Estimate:
    """The row's figures: the evidence's base, head and CI, as measured (and the runner's
    shift the time was judged against, when it was)."""
    return Estimate(
        unit=pi.unit,
        base=e.base,
        head=e.head,
        source="rounds" if e.mode == "rounds" else "first run",
        ci_low=e.ci[0] if e.ci else None,
        ci_high=e.ci[1] if e.ci else None,
        n_base=n[0],
        n_head=n[1],
        rounds=pi.rounds if e.mode == "rounds" else 0,
        shift=shift,
    )


def _decide_by_value(base: float, head: float, rule: Rule, effect: str) -> tuple[Outcome, str]:
    """No samples: the rule's minimum effect on the values alone, no test."""
    worse, better = rule.exceeded(base, head), rule.improved(base, head)
    outcome: Outcome = "slower" if worse else "faster" if better else "noise"
    return outcome, (
        f"{effect} by value alone, {'above' if worse or better else 'within'} the"
        f" {rule.describe()} minimum effect (no samples: no test)"
    )


def _beyond_rule(e: Evidence, rule: Rule) -> tuple[bool, bool]:
    """(worse, better): the change exceeds the rule's minimum effect, either way. Rounds
    with a relative median rule read the judged ratio; otherwise the rule's statistic of
    each side's samples."""
    assert e.samples is not None and e.ratio is not None
    if e.mode == "rounds" and rule.relative and rule.stat == "median":
        return rule.exceeded(1.0, e.ratio), rule.improved(1.0, e.ratio)
    pb, ph = e.samples
    sb, sh = rule.statistic(pb), rule.statistic(ph)
    return rule.exceeded(sb, sh), rule.improved(sb, sh)


def _rounds_says(e: Evidence, p: float, corr: str) -> _TestSays:
    """Rounds: the moderated t over the per-round log-ratios; consistent when no more
    rounds point the other way than :func:`allowed_against` allows."""
    assert e.ratio is not None
    d = np.asarray(e.log_ratios)
    sign = 1.0 if e.ratio > 1.0 else -1.0
    against = int(np.sum(np.sign(d) != sign))
    agree = (
        ", every round the same way"
        if against == 0
        else f", {d.size - against} of {d.size} rounds the same way"
    )
    src, prior_sd, prior_df = e.prior or ("pooled", 0.0, 0.0)
    prior = (
        f"prior: noise floor {format_pct(prior_sd)}"
        if src == "floor"
        else f"prior {format_pct(prior_sd)} pooled over other workloads"
        if prior_df > 0
        else "no prior"
    )
    per_round = ", ".join(format_delta_pct(math.exp(x)) for x in d)
    return _TestSays(
        text=f"moderated t over {d.size} rounds ({per_round}; {prior}), {p_text(p)}, {corr}",
        consistent=against <= allowed_against(d.size),  # the rounds agree on the direction
        agree=agree,
        not_consistent=(
            f"the rounds disagree ({against} of {d.size} the other way, at most"
            f" {allowed_against(d.size)} allowed)"
        ),
    )


def _samples_says(e: Evidence, p: float, corr: str, bar: Bar) -> _TestSays:
    """One run a side: Mann–Whitney; consistent when the change is beyond ``k`` times the
    series' noise floor (or it has none)."""
    assert e.ratio is not None
    lr = abs(math.log(e.ratio)) if e.ratio > 0 else 0.0
    floor, k, sh = bar.floor, bar.k, bar.shift
    if floor is not None and not lr > k * floor.sd:
        why = (
            f"within the between-run noise floor (±{format_pct(math.exp(k * floor.sd) - 1)}"
            f" = {k:.2g} × {floor.describe()}); re-measure in rounds (neuronasv confirm)"
        )
    elif sh is not None and not lr > sh.k * sh.spread:
        why = (
            f"within the spread of the series about the runner's shift"
            f" (±{format_pct(math.exp(sh.k * sh.spread) - 1)} = {sh.k:.2g} ×"
            f" {format_pct(sh.spread)} over {sh.series} series with the same work and"
            f" {BESIDE_TIME.noun}); re-measure in rounds (neuronasv confirm)"
        )
    else:
        why = ""
    return _TestSays(text=f"{p_text(p)}, {corr}", consistent=not why, not_consistent=why)


def _decide(e: Evidence, rule: Rule, bar: Bar, effect: str) -> tuple[Outcome, str]:
    """One decision table for both modes; the reason says which test spoke."""
    assert e.samples is not None and e.ratio is not None
    worse, better = _beyond_rule(e, rule)
    p = 1.0 if e.p is None else float(e.p)
    p_adj = 1.0 if e.p_adj is None else float(e.p_adj)
    sig = p_adj <= bar.alpha
    corr = f"gatekeeping-adjusted {format_p(p_adj)} over {bar.tested} series"
    says = _rounds_says(e, p, corr) if e.mode == "rounds" else _samples_says(e, p, corr, bar)
    outcome = _DECIDE[(worse or better, sig, says.consistent)]
    rule_txt = f"the {rule.describe()} rule"
    if outcome == "direction":
        return ("slower" if worse else "faster"), _moved_reason(e, says, bar, effect, rule_txt)
    if outcome == "undecided":
        why = (
            f"{says.not_consistent} ({says.text})"
            if sig
            else f"not significant ({says.text} > {bar.alpha:.2g})"
        )
        return "undecided", f"{effect} beyond {rule_txt} but {why}"
    if sig:
        return "noise", (
            f"{effect}, significant ({says.text}) but within the {rule.describe()} minimum effect"
        )
    return "noise", f"{effect}, {says.text}"


def _moved_reason(e: Evidence, says: _TestSays, bar: Bar, effect: str, rule_txt: str) -> str:
    """The reason of a slower/faster row: the effect, the test that established it, and
    (one run a side) the noise floor it cleared."""
    extra = says.agree if e.mode == "rounds" else ""
    reason = f"{effect}, {says.text} ≤ {bar.alpha:.2g}{extra}, beyond {rule_txt}"
    if e.mode == "samples" and bar.floor is not None:
        reason += f" and the ±{format_pct(math.exp(bar.k * bar.floor.sd) - 1)} noise floor"
    if e.mode == "samples" and bar.shift is not None:
        sh = bar.shift
        reason += (
            f" and the ±{format_pct(math.exp(sh.k * sh.spread) - 1)} spread about the"
            " runner's shift"
        )
    return reason
