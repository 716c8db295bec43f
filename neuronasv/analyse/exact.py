"""Exact metrics judged as exact facts (pure, no I/O).

An exact metric of the registry (:data:`neuronasv.metrics.EXACT`) gives the same value for
the same binary and inputs, so any difference between base and head is a change of what
the code does, reported with its size and no statistics — ``aten::mul`` +2,443 per
iteration, +20 %, in the metric's own words — and never re-measured.

Two rules:

- **Exact rows** (:func:`judge_exact`): a series of an exact metric has an
  :class:`~neuronasv.model.Estimate` of source ``exact count`` (the two values, no
  interval) and a state on its own axis, the exact axis (``more``, ``fewer``, ``same``).
  A metric a counting pass keeps in the sidecar (``sidecar_key``) is judged by the pass's
  counts: a target *not deterministic* on either side (counted twice in a row, two
  numbers) is not judged — ``unsteady``, the reason says which count moved — while the
  other series of the same configuration are (:func:`counted_twice_alike`); the pass
  replays each op's *top-level* calls, so an op that runs on a side only inside other ops
  (``aten::slice`` inside an indexing op) has no count of its own there yet still runs —
  ``uncounted`` on that side, never ``removed`` (the profiler, which sees nested calls,
  says whether it runs). A sampled exact metric (no ``sidecar_key``) is judged exactly
  where each side's samples repeat exactly; where they do not, its row is ``unsteady``,
  not judged, and says at which side (its values may be negative — an op may free more
  than it allocates —, so no ratio test stands in).
- **Counts as work evidence** (:func:`count_changes`): an op whose count of
  :data:`~neuronasv.metrics.BESIDE_TIME` differs at the same calls per iteration is a
  :class:`~neuronasv.model.WorkChange` of kind :data:`~neuronasv.model.findings.COUNT_KIND`,
  with a direction (more/fewer); the device-time rows state it on their exact axis
  (:mod:`neuronasv.analyse.states`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from neuronasv.format import (
    format_count,
    format_delta_pct,
    format_pair,
    format_signed,
    format_value,
)
from neuronasv.keys import SeriesConfig as Config
from neuronasv.metrics import BESIDE_TIME, Metric, by_unit
from neuronasv.model import (
    Estimate,
    Finding,
    Point,
    RowState,
    SeriesId,
    WorkChange,
    WorkloadProfile,
)
from neuronasv.model.counts import PassCounts
from neuronasv.model.estimate import ExactAxis, Presence
from neuronasv.model.findings import COUNT_KIND
from neuronasv.model.profile import module_series_path
from neuronasv.units import is_exact

__all__ = [
    "count_changes",
    "count_delta",
    "is_exact",
    "judge_exact",
    "repeats_exactly",
]


def count_delta(name: str, base: float, head: float, metric: Metric = BESIDE_TIME) -> str:
    """``aten::mul +2,443 <noun> per iteration (+20 %, exact)``: the metric's noun."""
    sign = "+" if head >= base else "-"
    pct = format_delta_pct(head / base) if base > 0 else "new"
    return (
        f"{name} {sign}{format_count(abs(head - base))} {metric.noun} per iteration"
        f" ({pct}, exact)"
    )


def _counts(profiles: Iterable[WorkloadProfile]) -> dict[Config, PassCounts]:
    return {(p.name, p.shape, p.dtype): p.counted for p in profiles if p.counted}


def _profiles(profiles: Iterable[WorkloadProfile]) -> dict[Config, WorkloadProfile]:
    out: dict[Config, WorkloadProfile] = {}
    for p in profiles:
        out.setdefault((p.name, p.shape, p.dtype), p)
    return out


def target_name(s: SeriesId) -> str:
    """The pass's name of a series' target: ``total`` for ``instr_total``, else its op
    (``aten::mul``) or module (``module:block.mlp``)."""
    return s.op or "total"


def counted_twice_alike(c: PassCounts | None, target: str) -> bool:
    """False when the pass counted ``target`` twice in a row and got two numbers.

    Judged per target: in ``transformer.block.backward`` the whole step moves by a few
    hundred counts of its 306 M from run to run (the autograd engine's hash tables
    are keyed by node addresses), while every op counted at its dispatch boundaries repeats
    exactly; the ops are judged, the step is not. A configuration marked not deterministic
    with no target named (older sidecars) is not judged at all.
    """
    if c is None or c.deterministic:
        return True
    return bool(c.unstable) and target not in c.unstable


def _why(target: str, *counts: PassCounts | None) -> str:
    """Where the pass saw ``target``'s two counts differ (base's line first), or empty."""
    return next((w for c in counts if c is not None and (w := c.why_unstable(target))), "")


def repeats_exactly(p: Point | None) -> bool:
    """Every sample of a side the same value (or a single value): exact there."""
    return p is None or len(set(p.samples)) <= 1


def _sampled(s: SeriesId, metric: Metric, b: Point, h: Point) -> tuple[ExactAxis, str]:
    """A sampled exact metric (no counting pass): judged exactly where both sides' samples
    repeat exactly, else not judged here (said, naming the sides)."""
    sides = [side for side, p in (("base", b), ("head", h)) if not repeats_exactly(p)]
    name = s.op or "whole step"
    if sides:
        return "unsteady", (
            f"{metric.title} of {name} did not repeat exactly across samples at"
            f" {' and '.join(sides)}; not judged exactly"
        )
    base, head = b.value or 0.0, h.value or 0.0
    if head == base:
        return "same", f"exact: {metric.same}, {format_value(base, metric.unit)} on both"
    pct = format_delta_pct(head / base) if base > 0 else "new"
    return ("more" if head > base else "fewer"), (
        f"exact: {name} {metric.more if head > base else metric.less}"
        f" ({format_signed(head - base, metric.unit)} per iteration, {pct}),"
        f" {format_pair(base, head, metric.unit)}; {metric.evidence}"
    )


def _judged(
    s: SeriesId,
    base: float,
    head: float,
    cb: PassCounts | None,
    ch: PassCounts | None,
    metric: Metric,
) -> tuple[ExactAxis, str]:
    target = target_name(s)
    sides = [side for side, c in (("base", cb), ("head", ch)) if not counted_twice_alike(c, target)]
    if sides:
        return "unsteady", (
            f"{metric.value_noun} of {'the whole step' if target == 'total' else target}"
            f" not deterministic at {' and '.join(sides)}: the same work counted twice in"
            f" one run gave two numbers{f' ({why})' if (why := _why(target, cb, ch)) else ''};"
            " not judged"
        )
    if head == base:
        return "same", f"exact: {format_count(base)} {metric.noun} per iteration on both"
    name = s.op or "whole step"
    return ("more" if head > base else "fewer"), (
        f"exact: {count_delta(name, base, head, metric)},"
        f" {format_pair(base, head, metric.unit)}; {metric.evidence}"
    )


def _runs(p: WorkloadProfile | None, s: SeriesId) -> bool:
    """Whether the profiler saw the series' target run in ``p`` (nested calls included)."""
    if p is None:
        return False
    if s.op is None:
        return True
    path = module_series_path(s.op)
    if path is not None:
        return p.module(path) is not None
    o = p.op(s.op)
    return o is not None and o.calls_per_iter > 0


def _one_side(
    s: SeriesId, bv: float | None, hv: float | None, bp: WorkloadProfile | None,
    hp: WorkloadProfile | None,
) -> tuple[Presence, ExactAxis, str]:  # fmt: skip
    """A series counted on one side (or none): ``uncounted`` where the op still runs on
    the other side (only nested there: the replay counts top-level calls), else new,
    removed or failed."""
    name = s.op or "the whole step"
    if bv is not None and hv is None and _runs(hp, s):
        return (
            "both",
            "uncounted",
            (
                f"counted at base only: at head {name} still runs, but only inside other ops"
                " (the replay counts each op's top-level calls), so it has no count of its own"
            ),
        )
    if hv is not None and bv is None and _runs(bp, s):
        return (
            "both",
            "uncounted",
            (
                f"counted at head only: at base {name} ran, but only inside other ops"
                " (the replay counts each op's top-level calls), so it had no count of its own"
            ),
        )
    if hv is not None:
        return "new", "none", "counted at head only"
    if bv is not None:
        return "removed", "none", "counted at base only"
    return "failed", "none", "not counted on either side"


def judge_exact(
    series: Sequence[
        tuple[SeriesId, Point | None, Point | None]
        | tuple[SeriesId, Point | None, Point | None, str]
    ],
    base_profiles: Iterable[WorkloadProfile] = (),
    head_profiles: Iterable[WorkloadProfile] = (),
) -> list[Finding]:
    """Exact rows (module doc), one per (series, base, head[, unit]; without one, the
    unit of :data:`~neuronasv.metrics.BESIDE_TIME`): a counted metric's series by the
    pass's counts, a sampled one's by its samples repeating exactly."""
    base_profiles, head_profiles = list(base_profiles), list(head_profiles)
    cbs, chs = _counts(base_profiles), _counts(head_profiles)
    bps, hps = _profiles(base_profiles), _profiles(head_profiles)
    out: list[Finding] = []
    for item in series:
        s, b, h = item[0], item[1], item[2]
        unit = item[3] if len(item) == 4 else BESIDE_TIME.unit
        metric = by_unit(unit) or BESIDE_TIME
        counted = bool(metric.sidecar_key)  # by a counting pass, else sampled
        bv = None if b is None else b.value
        hv = None if h is None else h.value
        key: Config = s.config
        if bv is None or hv is None:
            presence, axis, reason = _one_side(s, bv, hv, bps.get(key), hps.get(key))
            if not counted and axis == "uncounted":  # no replay: new/removed
                presence, axis = ("new" if bv is None else "removed"), "none"
        elif not counted and b is not None and h is not None:
            presence = "both"
            axis, reason = _sampled(s, metric, b, h)
        else:
            presence = "both"
            axis, reason = _judged(s, bv, hv, cbs.get(key), chs.get(key), metric)
        if not counted:
            out.append(Finding(series=s, estimate=Estimate(
                unit=unit, base=bv, head=hv, source="exact count",
                n_base=len(b.samples) if b else 0, n_head=len(h.samples) if h else 0,
            ), state=RowState(presence=presence, exact=axis), reason=reason))  # fmt: skip
            continue
        est = Estimate(
            unit=metric.unit,
            base=bv,
            head=hv,
            source="exact count",
            n_base=int(bv is not None),
            n_head=int(hv is not None),
        )
        why = _why(target_name(s), cbs.get(key), chs.get(key)) if axis == "unsteady" else ""
        state = RowState(presence=presence, exact=axis, exact_why=why)
        out.append(Finding(series=s, estimate=est, state=state, reason=reason))
    return out


def count_changes(
    base_profiles: Iterable[WorkloadProfile],
    head_profiles: Iterable[WorkloadProfile],
    *,
    known: Iterable[tuple[Config, str]] = (),
) -> tuple[WorkChange, ...]:
    """Ops whose count (of :data:`~neuronasv.metrics.BESIDE_TIME`) differs, per
    configuration counted on both sides.

    Only ops counted alike twice on both sides (:func:`counted_twice_alike`) and counted
    on both (an op that appears or disappears is the ``new``/``removed`` evidence
    already); ``known`` (config, op) pairs that already have a work change are left to it.
    """
    heads: dict[Config, WorkloadProfile] = {(p.name, p.shape, p.dtype): p for p in head_profiles}
    skip = set(known)
    out: list[WorkChange] = []
    for bp in base_profiles:
        key: Config = (bp.name, bp.shape, bp.dtype)
        hp = heads.get(key)
        cb, ch = bp.counted, hp.counted if hp else None
        if hp is None or cb is None or ch is None:
            continue
        for op in sorted(set(cb.ops) & set(ch.ops)):
            b, h = cb.ops[op], ch.ops[op]
            if b == h or (key, op) in skip:
                continue
            if not (counted_twice_alike(cb, op) and counted_twice_alike(ch, op)):
                continue
            bo, ho = bp.op(op), hp.op(op)
            out.append(
                WorkChange(
                    workload=bp.name,
                    shape=bp.shape,
                    dtype=bp.dtype,
                    op=op,
                    kind=COUNT_KIND,
                    calls_base=bo.calls_per_iter if bo else None,
                    calls_head=ho.calls_per_iter if ho else None,
                    count_base=b,
                    count_head=h,
                )
            )
    return tuple(out)
