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

**Work decides where timing cannot.** A change has a *direction* when it is one-sided:
an op added, more calls, more bytes and no fewer FLOPs (``more``), or the mirror image
(``less``); a configuration has one when all its changes agree, or else when its changed
ops' total calls, bytes and FLOPs move one way (:func:`config_directions`). Strictly more
work cannot take less device time except by noise, so where the timing test left a row
undecided its work axis gives the row's direction (:attr:`RowState.direction
<neuronasv.model.RowState.direction>`, decided in :mod:`neuronasv.analyse.states`), and the
timing stays beside it as the measured size with its confidence interval. A decided time
always stands (more work that runs faster is news the reviewer must see: both axes are
printed); mixed changes (an op replaced by another) are left to the timing. Identical code
has no work change, so this adds no false alarm to an A/A comparison.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Literal

from neuronasv.keys import SeriesConfig as Config
from neuronasv.model import OpProfile, WorkChange, WorkloadProfile
from neuronasv.model.findings import COUNT_KIND, WorkKind
from neuronasv.samples import median
from neuronasv.units import US, is_time

__all__ = [
    "Direction",
    "change_direction",
    "changed_modules",
    "config_directions",
    "has_evidence",
    "work_changes",
]

Direction = Literal["more", "less", "mixed"]


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
    k = US if is_time(unit) else 1.0
    heads = {(p.name, p.shape, p.dtype): p for p in head_profiles}
    out: list[WorkChange] = []
    for bp in base_profiles:
        hp = heads.get((bp.name, bp.shape, bp.dtype))
        if hp is not None:
            out += _config_changes(bp, hp, k)
    out.sort(key=lambda w: (w.workload, w.shape, w.dtype, w.op))
    return tuple(out)


def _config_changes(bp: WorkloadProfile, hp: WorkloadProfile, k: float) -> list[WorkChange]:
    """The changed ops of one configuration profiled on both sides, by op name (times
    scaled from µs by ``k``)."""
    out: list[WorkChange] = []
    for name in sorted({o.op for o in bp.ops} | {o.op for o in hp.ops}):
        bo, ho = bp.op(name), hp.op(name)
        kind = _kind(bo, ho)
        if kind is not None:
            out.append(_work_change(bp, name, kind, (bo, ho), k))
    return out


def _work_change(
    bp: WorkloadProfile,
    name: str,
    kind: WorkKind,
    ops: tuple[OpProfile | None, OpProfile | None],
    k: float,
) -> WorkChange:
    """One op's change of work in ``bp``'s configuration, its figures from each side that
    has the op (base, head)."""
    bo, ho = ops
    tb = _median(bo.self_device_time_us) if bo else None
    th = _median(ho.self_device_time_us) if ho else None
    return WorkChange(
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
        modules=changed_modules(bo, ho),
    )


def changed_modules(bo: OpProfile | None, ho: OpProfile | None) -> tuple[str, ...]:
    """The module paths whose calls of an op differ between base and head (all paths
    that call it, for an op on one side only); ``()`` when a side recorded no modules."""
    bm = bo.module_signatures if bo is not None else {}
    hm = ho.module_signatures if ho is not None else {}
    if (bo is not None and not bm) or (ho is not None and not hm):
        return ()
    return tuple(p for p in sorted(set(bm) | set(hm)) if bm.get(p, ()) != hm.get(p, ()))


def _cmp(a: float | None, b: float | None) -> int | None:
    """-1/0/+1 for b vs a; None when a side is unknown."""
    if a is None or b is None:
        return None
    if _same(a, b):
        return 0
    return 1 if b > a else -1


def change_direction(w: WorkChange) -> Direction:
    """``more``/``less`` when the op's work moved one way only, else ``mixed``.

    New op: more; removed: less. Otherwise calls, bytes and FLOPs per iteration are
    compared: all that are known move the same way (or stay) and at least one moves. A
    shapes change with unknown bytes and FLOPs has no direction (``mixed``).
    """
    if w.kind == "new":
        return "more"
    if w.kind == "removed":
        return "less"
    if w.kind == COUNT_KIND:  # a counting pass's exact counts (analyse/exact.py)
        d = _cmp(w.count_base, w.count_head)
        return "more" if d == 1 else "less" if d == -1 else "mixed"
    return _one_way(
        (
            _cmp(w.calls_base, w.calls_head),
            _cmp(w.bytes_base, w.bytes_head),
            _cmp(w.flops_base, w.flops_head),
        )
    )


def _one_way(signs: Iterable[int | None]) -> Direction:
    """``more`` when every known sign is up or flat and one is up, ``less`` the mirror
    image, else ``mixed`` (also when none is known)."""
    known = [c for c in signs if c is not None]
    if known and all(c >= 0 for c in known) and any(c > 0 for c in known):
        return "more"
    if known and all(c <= 0 for c in known) and any(c < 0 for c in known):
        return "less"
    return "mixed"


def config_directions(work: Iterable[WorkChange]) -> dict[Config, Direction]:
    """Per configuration: ``more``/``less`` when its work moved one way, else ``mixed``.

    First by dominance (every change agrees: certain). Otherwise by the totals over the
    configuration's changed ops — calls, bytes and FLOPs per iteration — under the cost
    model every roofline uses (device time does not fall when calls, bytes and FLOPs all
    stay or rise): all three totals move the same way or stay, at least one moves. An op
    without a cost formula (a wrapper such as ``aten::to``, whose work its child
    ``aten::copy_`` carries) counts by its calls only. Anything else is ``mixed``.
    """
    groups: dict[Config, list[WorkChange]] = {}
    for w in work:
        groups.setdefault(w.config, []).append(w)
    return {cfg: _config_direction(changes) for cfg, changes in groups.items()}


def _config_direction(changes: Sequence[WorkChange]) -> Direction:
    """One configuration's direction: by dominance, else by its changed ops' totals."""
    dirs = {change_direction(w) for w in changes}
    if len(dirs) == 1 and dirs != {"mixed"}:
        return dirs.pop()
    return _one_way(
        _cmp(
            sum(getattr(w, f"{what}_base") or 0.0 for w in changes),
            sum(getattr(w, f"{what}_head") or 0.0 for w in changes),
        )
        for what in ("calls", "bytes", "flops")
    )
