"""Instruction counts judged as exact facts (pure, no I/O).

The CPU's ``instr_`` series (``neuronasv run --metrics devtime,instructions``,
``docs/instructions.md``) are counted under callgrind: the same binary and inputs give the
same count, so any difference between base and head is a change of the work the code does,
reported with its size and no statistics — ``aten::mul`` +2,443 instructions per
iteration, +20 % — and never re-measured.

Two rules:

- **Exact verdicts** (:func:`judge_exact`): an ``instr_`` series (unit ``instructions``)
  is ``unchanged`` when the counts are equal, else ``regression`` (more) or
  ``improvement`` (fewer), ``basis="work"``, confirmed. A series whose target was
  *not deterministic* on either side (the pass counted it twice in a row and got two
  numbers) is not judged: ``noisy``, and the reason says which count moved; the other
  series of the same configuration are judged (:func:`counted_twice_alike`).
- **Instructions as work evidence** (:func:`instruction_changes`): an op whose count
  differs at the same calls per iteration is a :class:`~neuronasv.model.WorkChange` of
  kind ``instructions``, with a direction (more/fewer); through
  :func:`neuronasv.analyse.evidence.apply_work` it decides the device-time rows that the
  timing left undecided on a noisy CPU runner.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from neuronasv.format import format_count, format_delta_pct, format_pair
from neuronasv.model import Finding, Point, SeriesId, WorkChange, WorkloadProfile
from neuronasv.model.findings import Verdict
from neuronasv.model.instructions import InstructionCounts

__all__ = [
    "INSTRUCTIONS_UNIT",
    "instruction_changes",
    "instruction_delta",
    "is_exact",
    "judge_exact",
]

#: The unit of every ``instr_`` series (asv's ``unit`` of the plugin type).
INSTRUCTIONS_UNIT = "instructions"

Config = tuple[str | None, str | None, str | None]


def is_exact(unit: str) -> bool:
    """True for a series judged exactly (an instruction count)."""
    return unit == INSTRUCTIONS_UNIT


def instruction_delta(name: str, base: float, head: float) -> str:
    """``aten::mul +2,443 instructions per iteration (+20 %, exact)``."""
    sign = "+" if head >= base else "-"
    pct = format_delta_pct(head / base) if base > 0 else "new"
    return (
        f"{name} {sign}{format_count(abs(head - base))} instructions per iteration ({pct}, exact)"
    )


def _counts(profiles: Iterable[WorkloadProfile]) -> dict[Config, InstructionCounts]:
    return {(p.name, p.shape, p.dtype): p.instructions for p in profiles if p.instructions}


def target_name(s: SeriesId) -> str:
    """The pass's name of a series' target: ``total`` for ``instr_total``, else its op
    (``aten::mul``) or module (``module:block.mlp``)."""
    return s.op or "total"


def counted_twice_alike(c: InstructionCounts | None, target: str) -> bool:
    """False when the pass counted ``target`` twice in a row and got two numbers.

    Judged per target: in ``transformer.block.backward`` the whole step moves by a few
    hundred of its 306 M instructions from run to run (the autograd engine's hash tables
    are keyed by node addresses), while every op counted at its dispatch boundaries repeats
    exactly; the ops are judged, the step is not. A configuration marked not deterministic
    with no target named (older sidecars) is not judged at all.
    """
    if c is None or c.deterministic:
        return True
    return bool(c.unstable) and target not in c.unstable


def _verdict(
    s: SeriesId,
    base: float,
    head: float,
    cb: InstructionCounts | None,
    ch: InstructionCounts | None,
) -> tuple[Verdict, str]:
    target = target_name(s)
    sides = [side for side, c in (("base", cb), ("head", ch)) if not counted_twice_alike(c, target)]
    if sides:
        return "noisy", (
            f"instruction count of {'the whole step' if target == 'total' else target}"
            f" not deterministic at {' and '.join(sides)}: the same work counted twice in"
            " one run gave two numbers; not judged"
        )
    if head == base:
        return "unchanged", f"exact: {format_count(base)} instructions per iteration on both"
    name = s.op or "whole step"
    return ("regression" if head > base else "improvement"), (
        f"exact: {instruction_delta(name, base, head)},"
        f" {format_pair(base, head, INSTRUCTIONS_UNIT)}; counted under callgrind, no statistics"
    )


def _absent(b: Point | None, h: Point | None) -> tuple[Verdict, str] | None:
    has_b = b is not None and b.value is not None
    has_h = h is not None and h.value is not None
    if has_b and has_h:
        return None
    if has_h:
        return "new", "counted at head only"
    if has_b:
        return "removed", "counted at base only"
    return "failed", "not counted on either side"


def judge_exact(
    series: Sequence[tuple[SeriesId, Point | None, Point | None]],
    base_profiles: Iterable[WorkloadProfile] = (),
    head_profiles: Iterable[WorkloadProfile] = (),
) -> list[Finding]:
    """Exact verdicts of instruction series (module doc), one per (series, base, head)."""
    cbs, chs = _counts(base_profiles), _counts(head_profiles)
    out: list[Finding] = []
    for s, b, h in series:
        bv = None if b is None else b.value
        hv = None if h is None else h.value
        missing = _absent(b, h)
        if missing is not None or bv is None or hv is None:
            verdict, reason = missing or ("failed", "not counted")
            out.append(Finding(series=s, verdict=verdict, unit=INSTRUCTIONS_UNIT, base=bv,
                               head=hv, reason=reason))  # fmt: skip
            continue
        key: Config = (s.workload, s.shape, s.dtype)
        verdict, reason = _verdict(s, bv, hv, cbs.get(key), chs.get(key))
        out.append(
            Finding(
                series=s,
                verdict=verdict,
                unit=INSTRUCTIONS_UNIT,
                base=bv,
                head=hv,
                ratio=hv / bv if bv > 0 else None,
                n_base=1,
                n_head=1,
                reason=reason,
                confirmed=True if verdict in ("regression", "improvement") else None,
                basis="work" if verdict in ("regression", "improvement", "unchanged") else "timing",
            )
        )
    return out


def instruction_changes(
    base_profiles: Iterable[WorkloadProfile],
    head_profiles: Iterable[WorkloadProfile],
    *,
    known: Iterable[tuple[Config, str]] = (),
) -> tuple[WorkChange, ...]:
    """Ops whose instruction count differs, per configuration counted on both sides.

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
        cb, ch = bp.instructions, hp.instructions if hp else None
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
                    kind="instructions",
                    calls_base=bo.calls_per_iter if bo else None,
                    calls_head=ho.calls_per_iter if ho else None,
                    instructions_base=b,
                    instructions_head=h,
                )
            )
    return tuple(out)
