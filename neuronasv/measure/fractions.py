"""Fractions of peak: an op's achieved rates against the machine's roof, and a profile
annotated with them.

The roof comes from :mod:`neuronasv.measure.peaks` (datasheet, or the CPU's calibration);
the work (FLOPs, bytes) from :mod:`neuronasv.measure.roofline`'s formulas. A fraction is
``ideal time at peak / measured time``; above 1 the roof is wrong for that op, and every
view says so instead of a figure (:func:`neuronasv.format.format_peak_fraction`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from statistics import median

from neuronasv.measure.peaks import Peak
from neuronasv.measure.roofline import BANDWIDTH_ONLY, OpCost
from neuronasv.model.profile import OpProfile, WorkloadProfile
from neuronasv.units import US

__all__ = ["RooflinePoint", "annotate", "roofline_fraction", "roofline_label", "roofline_point"]

_NO_COST = OpCost(None, None)  # an op without a formula


@dataclass(frozen=True)
class RooflinePoint:
    """Achieved rates of one op against a peak.

    Attributes:
        bytes_per_s: achieved bandwidth, or None.
        flops_per_s: achieved FLOP/s, or None.
        fraction: ideal time at peak / measured time, or None.
        bound: ``"memory"`` or ``"compute"``: which roof the ideal time comes from.
    """

    bytes_per_s: float | None
    flops_per_s: float | None
    fraction: float | None
    bound: str | None


def roofline_point(cost: OpCost, time_us: float, peak: Peak | None) -> RooflinePoint:
    """Achieved bandwidth/throughput and the fraction of ``peak`` for ``time_us`` per iteration."""
    if time_us <= 0 or not math.isfinite(time_us):
        return RooflinePoint(None, None, None, None)
    seconds = time_us * US
    bw = cost.bytes / seconds if cost.bytes is not None else None
    fl = cost.flops / seconds if cost.flops is not None else None
    if peak is None:
        return RooflinePoint(bw, fl, None, None)
    mem_t = cost.bytes / peak.memory_bytes_per_s if cost.bytes and peak.memory_bytes_per_s else 0.0
    comp_t = 0.0
    for dt, f in cost.flops_by_dtype.items():
        pf = peak.flops_for(dt)
        if pf and f:
            comp_t += f / pf
    ideal = max(mem_t, comp_t)
    if ideal <= 0:
        return RooflinePoint(bw, fl, None, None)
    return RooflinePoint(bw, fl, ideal / seconds, "memory" if mem_t >= comp_t else "compute")


def roofline_label(cost: OpCost, point: RooflinePoint) -> str | None:
    """What a fraction is a fraction of, for people: ``compute``, ``memory``, or
    :data:`BANDWIDTH_ONLY` (bytes alone: FLOPs unknown), then the cost's notes
    (``memory; assumed causal``). None when there is no fraction."""
    if point.fraction is None or point.bound is None:
        return None
    label = BANDWIDTH_ONLY if cost.flops is None and point.bound == "memory" else point.bound
    return "; ".join((label, *cost.notes))


def roofline_fraction(cost: OpCost, time_us: float, peak: Peak | None) -> float | None:
    """``ideal time at peak / measured time`` (None when unknown); see :func:`roofline_point`."""
    return roofline_point(cost, time_us, peak).fraction


def annotate(
    profile: WorkloadProfile, op_costs: Mapping[str, OpCost], peak: Peak | None
) -> WorkloadProfile:
    """Fill ``flops``, ``bytes``, ``roofline_fraction`` and ``roofline_bound`` of every op.

    The fraction uses the op's median self device time per iteration; the bound says
    which roof it is measured against (:func:`roofline_label`). Ops missing from
    ``op_costs`` (or unknown there) keep ``None``.

    Returns:
        A new :class:`WorkloadProfile` (the input is frozen and left unchanged).
    """
    ops: list[OpProfile] = []
    for op in profile.ops:
        cost = op_costs.get(op.op, _NO_COST)
        if not cost.known:
            ops.append(replace(
                op, flops=None, bytes=None, roofline_fraction=None, roofline_bound=None
            ))
            continue
        times = [t for t in op.self_device_time_us if math.isfinite(t)]
        point = roofline_point(cost, median(times), peak) if times else None
        work = (cost.flops or 0.0) + (cost.bytes or 0.0)
        known = point is not None and point.fraction is not None and work > 0
        ops.append(replace(
            op,
            flops=cost.flops,
            bytes=cost.bytes,
            roofline_fraction=point.fraction if known and point else None,
            roofline_bound=roofline_label(cost, point) if known and point else None,
        ))
    return replace(profile, ops=tuple(ops))
