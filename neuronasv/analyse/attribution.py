"""Op-level attribution: which ops explain a workload total's change (pure, no I/O).

For a workload total (``SeriesId.op is None``) that moved, every op of that workload is
ranked by its absolute change of median self device time, with its share of the total's
change (``share`` = op delta / total delta; shares can exceed 1 or be negative when ops
move in opposite directions).

Source of the per-op numbers, in order of preference:

1. the sidecar profiles (``WorkloadProfile.ops``: per-sample self device times, calls per
   iteration) of base and head — these also hold ops that exist on one side only, which
   asv's fixed parameter lists cannot;
2. otherwise the op series' own findings (base/head medians).

When both profiles carry module times (:mod:`neuronasv.measure.modules`), a moved total
also gets its ``module_chain`` (:func:`module_chain`): from the total down through the
module that moved most in the total's direction at each level, to the op that moved most
within the last one — "block +9 % ← block.mlp +14 % ← aten::mm +14 %".

:func:`headline` turns a finding into the sentence a reviewer reads; the Report stage
reuses it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from neuronasv.format import format_delta_pct, format_signed, pct_number
from neuronasv.model import Finding, OpContribution
from neuronasv.model.profile import (
    OpProfile,
    WorkloadProfile,
    module_series_name,
    module_series_path,
)

__all__ = ["MOVED", "attribute", "ci_text", "headline", "module_chain", "short_dtype"]

MOVED = ("regression", "improvement", "noisy")

_DTYPE_SHORT = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "float32": "fp32",
    "float": "fp32",
    "float64": "fp64",
    "double": "fp64",
    "float8_e4m3fn": "fp8e4m3",
    "float8_e5m2": "fp8e5m2",
}


def short_dtype(dtype: str | None) -> str:
    """``bfloat16`` -> ``bf16`` (unknown names unchanged)."""
    if not dtype:
        return ""
    d = dtype.removeprefix("torch.")
    return _DTYPE_SHORT.get(d, d)


def _scale(unit: str) -> float:
    """Profiles are in µs; series units are asv's (seconds for device time)."""
    return 1e-6 if unit == "seconds" else 1.0


def _find(profiles: Sequence[WorkloadProfile], f: Finding) -> WorkloadProfile | None:
    s = f.series
    for p in profiles:
        if p.name == s.workload and p.shape == s.shape and p.dtype == s.dtype:
            return p
    return None


def _from_profiles(
    f: Finding, bp: WorkloadProfile, hp: WorkloadProfile
) -> tuple[float, list[OpContribution]]:
    k = _scale(f.unit)
    total = (float(np.median(hp.device_time_us)) - float(np.median(bp.device_time_us))) * k
    names = sorted({o.op for o in bp.ops} | {o.op for o in hp.ops})
    out: list[OpContribution] = []
    for name in names:
        bo, ho = bp.op(name), hp.op(name)
        b = float(np.median(bo.self_device_time_us)) * k if bo else None
        h = float(np.median(ho.self_device_time_us)) * k if ho else None
        delta = (h or 0.0) - (b or 0.0)
        out.append(
            OpContribution(
                op=name,
                base=b,
                head=h,
                delta=delta,
                share=delta / total if total else 0.0,
                calls_base=bo.calls_per_iter if bo else None,
                calls_head=ho.calls_per_iter if ho else None,
                **_roofline(bo, ho),
            )
        )
    return total, out


def _roofline(bo: OpProfile | None, ho: OpProfile | None) -> dict[str, Any]:
    """The op's fraction of peak on each side and the roof it is of (head's, else base's)."""
    rb = bo.roofline_fraction if bo else None
    rh = ho.roofline_fraction if ho else None
    bound = (ho.roofline_bound if ho and rh is not None else None) or (
        bo.roofline_bound if bo and rb is not None else None
    )
    return {"roofline_base": rb, "roofline_head": rh, "roofline_bound": bound}


def _med(xs: Sequence[float]) -> float:
    return float(np.median(xs)) if len(xs) else 0.0


def module_chain(
    f: Finding, bp: WorkloadProfile, hp: WorkloadProfile
) -> tuple[OpContribution, ...]:
    """Total -> modules -> op for a moved total (see the module docstring); ``()`` when a
    side has no module times or no module moved in the total's direction.

    Links are :class:`OpContribution` s: the total (``op`` ``""``), then each module
    (``op`` ``module:<path>``, inclusive time), then the op within the last module (its
    median self time times its share in that module, ``OpProfile.modules``).
    """
    if not bp.modules or not hp.modules:
        return ()
    k = _scale(f.unit)
    tb, th = _med(bp.device_time_us) * k, _med(hp.device_time_us) * k
    total = th - tb
    if total == 0.0:
        return ()
    sign = 1.0 if total > 0 else -1.0
    links = [OpContribution(op="", base=tb, head=th, delta=total, share=1.0)]

    def side(p: WorkloadProfile, path: str) -> float | None:
        m = p.module(path)
        return _med(m.device_time_us) * k if m else None

    paths = {m.path for m in bp.modules} | {m.path for m in hp.modules}
    current = ""
    while True:
        children = sorted(p for p in paths if p and p.rpartition(".")[0] == current)
        moves = []
        for p in children:
            b, h = side(bp, p), side(hp, p)
            moves.append((sign * ((h or 0.0) - (b or 0.0)), p, b, h))
        if not moves:
            break
        gain, path, b, h = max(moves, key=lambda m: (m[0], m[1]))
        if gain <= 0.0:
            break
        delta = (h or 0.0) - (b or 0.0)
        links.append(OpContribution(module_series_name(path), b, h, delta, delta / total))
        current = path
    if len(links) == 1:
        return ()

    def in_module(p: WorkloadProfile, op: str) -> float | None:
        o = p.op(op)
        if o is None or current not in o.modules:
            return None
        return _med(o.self_device_time_us) * o.modules[current] * k

    ops = sorted({o.op for o in bp.ops} | {o.op for o in hp.ops})
    best: tuple[float, str, float | None, float | None] | None = None
    for op in ops:
        b, h = in_module(bp, op), in_module(hp, op)
        if b is None and h is None:
            continue
        gain = sign * ((h or 0.0) - (b or 0.0))
        if gain > 0.0 and (best is None or (gain, op) > (best[0], best[1])):
            best = (gain, op, b, h)
    if best is not None:
        _, op, b, h = best
        delta = (h or 0.0) - (b or 0.0)
        links.append(OpContribution(op, b, h, delta, delta / total))
    return tuple(links)


def _from_findings(f: Finding, ops: Sequence[Finding]) -> tuple[float, list[OpContribution]]:
    total = (f.head or 0.0) - (f.base or 0.0)
    out = []
    for o in ops:
        delta = (o.head or 0.0) - (o.base or 0.0)
        out.append(
            OpContribution(
                op=o.series.op or "?",
                base=o.base,
                head=o.head,
                delta=delta,
                share=delta / total if total else 0.0,
                calls_base=o.calls_base,
                calls_head=o.calls_head,
                roofline_base=o.roofline_base,
                roofline_head=o.roofline_head,
                roofline_bound=o.roofline_bound,
            )
        )
    return total, out


def attribute(
    findings: Sequence[Finding],
    *,
    base_profiles: Sequence[WorkloadProfile] = (),
    head_profiles: Sequence[WorkloadProfile] = (),
) -> list[Finding]:
    """Add attribution to moved workload totals (and calls and fractions of peak to op
    findings from profiles).

    Args:
        findings: one comparison's findings.
        base_profiles, head_profiles: sidecar profiles of base and head, when present.

    Returns:
        The findings, same order; totals that moved carry ``attribution`` ranked by
        absolute delta.
    """
    out: list[Finding] = []
    for f in findings:
        s = f.series
        if s.workload is None:
            out.append(f)
            continue
        bp, hp = _find(base_profiles, f), _find(head_profiles, f)
        if s.op is not None:
            # Op series: calls per iteration from the profiles, when the finding lacks them.
            bo = bp.op(s.op) if bp else None
            ho = hp.op(s.op) if hp else None
            if (bo or ho) and f.calls_base is None and f.calls_head is None:
                f = replace(
                    f,
                    calls_base=bo.calls_per_iter if bo else None,
                    calls_head=ho.calls_per_iter if ho else None,
                )
            if (bo or ho) and f.roofline_base is None and f.roofline_head is None:
                # The op's fraction of peak (issue 14 item 5): what the comment shows.
                f = replace(f, **_roofline(bo, ho))
            out.append(f)
            continue
        if f.verdict not in MOVED or f.base is None or f.head is None:
            out.append(f)
            continue
        chain: tuple[OpContribution, ...] = ()
        if bp is not None and hp is not None:
            _, contribs = _from_profiles(f, bp, hp)
            chain = module_chain(f, bp, hp)
        else:
            ops = [
                o
                for o in findings
                if o.series.op is not None
                and module_series_path(o.series.op) is None  # a module is not an op
                and (o.series.workload, o.series.shape, o.series.dtype)
                == (s.workload, s.shape, s.dtype)
            ]
            _, contribs = _from_findings(f, ops)
        contribs = [c for c in contribs if c.delta != 0.0 or c.base is None or c.head is None]
        contribs.sort(key=lambda c: (-abs(c.delta), c.op))
        out.append(replace(f, attribution=tuple(contribs), module_chain=chain))
    return out


def _num(ratio: float, signed: bool = False) -> str:
    return pct_number(ratio - 1.0, signed=signed)


def ci_text(low: float, high: float) -> str:
    """``CI 12–25 %`` when both bounds are on one side of zero, else ``CI -3.1 to +8.0 %``."""
    if (low >= 1.0) == (high >= 1.0) and low >= 1.0:
        return f"CI {_num(low)}–{_num(high)} %"
    if high < 1.0:
        return f"CI {_num(low)} to {_num(high)} %"
    return f"CI {_num(low, True)} to {_num(high, True)} %"


def _calls(c: OpContribution) -> str:
    def n(x: float) -> str:
        return f"{x:g}" if x == int(x) else f"{x:.2f}"

    if c.calls_base is None and c.calls_head is None:
        return ""
    if c.calls_base is None:
        return f" (new, {n(c.calls_head or 0)} calls)"
    if c.calls_head is None:
        return f" (removed, was {n(c.calls_base)} calls)"
    if c.calls_base != c.calls_head:
        return f" ({n(c.calls_base)}→{n(c.calls_head)} calls)"
    return f" ({n(c.calls_head)} calls)"


def headline(finding: Finding) -> str:
    """The sentence a reviewer reads.

    Example: ``rmsnorm.naive 4x512 bf16: +18 % (CI 12–25 %); aten::mul +0.41 ms (3 calls),
    4 other ops +0.03 ms`` (signed parts that add up to the ops' total change). Without a
    ratio it states the verdict (``new``, ``failed``, ...).
    """
    s = finding.series
    if s.workload is not None:
        name = " ".join(x for x in (s.workload, s.shape or "", short_dtype(s.dtype)) if x)
        if s.op:
            name += f" · {s.op}"
    else:
        name = s.label
    if finding.ratio is None or not math.isfinite(finding.ratio):
        return f"{name}: {finding.verdict}"
    text = f"{name}: {format_delta_pct(finding.ratio)}"
    if finding.ci_low is not None and finding.ci_high is not None:
        text += f" ({ci_text(finding.ci_low, finding.ci_high)})"
    if finding.attribution:
        # Signed parts that add up (the top op and the rest), never "explains 160 %".
        top, rest = finding.attribution[0], finding.attribution[1:]
        text += f"; {top.op} {format_signed(top.delta, finding.unit)}{_calls(top)}"
        moved = [a for a in rest if a.delta != 0.0]
        if moved:
            other = sum(a.delta for a in moved)
            word = "op" if len(moved) == 1 else "ops"
            text += f", {len(moved)} other {word} {format_signed(other, finding.unit)}"
    return text
