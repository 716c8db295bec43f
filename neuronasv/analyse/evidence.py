"""Exact work evidence between base and head (pure, no I/O).

The sidecar profiles of a run carry, per op, the calls per iteration and the input shapes
and dtypes of every call (:mod:`neuronasv.measure.evidence`), plus the bytes and FLOPs the
roofline derives from them. Identical code gives identical evidence on every run, so a
difference is a *certain* change of work — found without timing, immune to noise:

- ``new`` / ``removed``: an op runs only at head / only at base;
- ``calls``: the same op runs more or fewer times per iteration;
- ``shapes``: the same calls with other input shapes or dtypes (``aten::add`` now adds a
  ``[4,512]`` tensor instead of a ``[4,1]`` one);
- ``bytes``: same signature, other estimated bytes/FLOPs (a cost formula saw a change the
  signature does not show, e.g. a strided input).

Ops and their calls per iteration are compared for every configuration (workload, shape,
dtype) profiled on both sides; signatures only where both sides have them: a side
captured without the shapes pass (older results) has no signatures and gives no
``shapes`` change, never a false one.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from neuronasv.model import OpProfile, WorkChange, WorkloadProfile
from neuronasv.model.findings import WorkKind
from neuronasv.samples import median

__all__ = ["has_evidence", "work_changes"]


def has_evidence(profile: WorkloadProfile) -> bool:
    """True when the profile's ops carry call signatures (the shapes pass ran)."""
    return any(op.signature for op in profile.ops)


def _median(xs: Sequence[float]) -> float | None:
    """Median of the finite values, None without any."""
    s = [x for x in xs if math.isfinite(x)]
    return median(s) if s else None


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return True  # unknown on a side: no evidence of a change
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def _kind(bo: OpProfile | None, ho: OpProfile | None) -> WorkKind | None:
    if bo is None:
        return "new"
    if ho is None:
        return "removed"
    if not _same(bo.calls_per_iter, ho.calls_per_iter):
        return "calls"
    if bo.signature and ho.signature and bo.signature != ho.signature:
        return "shapes"
    if not (_same(bo.bytes, ho.bytes) and _same(bo.flops, ho.flops)):
        return "bytes"
    return None


def work_changes(
    base_profiles: Iterable[WorkloadProfile],
    head_profiles: Iterable[WorkloadProfile],
    *,
    unit: str = "seconds",
) -> tuple[WorkChange, ...]:
    """Every op whose work differs, per configuration present with evidence on both sides.

    Args:
        base_profiles, head_profiles: the sidecar profiles of base and head.
        unit: unit of ``time_base``/``time_head`` (profiles are in µs; ``seconds`` as asv).

    Returns:
        Changes sorted by (workload, shape, dtype, op).
    """
    k = 1e-6 if unit == "seconds" else 1.0
    heads = {(p.name, p.shape, p.dtype): p for p in head_profiles}
    out: list[WorkChange] = []
    for bp in base_profiles:
        hp = heads.get((bp.name, bp.shape, bp.dtype))
        if hp is None:
            continue
        names = sorted({o.op for o in bp.ops} | {o.op for o in hp.ops})
        for name in names:
            bo, ho = bp.op(name), hp.op(name)
            kind = _kind(bo, ho)
            if kind is None:
                continue
            tb = _median(bo.self_device_time_us) if bo else None
            th = _median(ho.self_device_time_us) if ho else None
            out.append(
                WorkChange(
                    workload=bp.name,
                    shape=bp.shape,
                    dtype=bp.dtype,
                    op=name,
                    kind=kind,
                    calls_base=bo.calls_per_iter if bo else None,
                    calls_head=ho.calls_per_iter if ho else None,
                    bytes_base=bo.bytes if bo else None,
                    bytes_head=ho.bytes if ho else None,
                    flops_base=bo.flops if bo else None,
                    flops_head=ho.flops if ho else None,
                    signature_base=bo.signature if bo else (),
                    signature_head=ho.signature if ho else (),
                    time_base=None if tb is None else tb * k,
                    time_head=None if th is None else th * k,
                )
            )
    out.sort(key=lambda w: (w.workload, w.shape, w.dtype, w.op))
    return tuple(out)
