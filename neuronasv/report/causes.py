"""Causes for people: one sentence, one range, one short table each (pure formatting).

Every renderer that shows causes (PR comment, job summary, terminal, demo) takes its
words from here, so they agree. Untrusted names (ops, workloads, shapes) go through the
``code`` callable the caller passes (an escaper for markdown, identity for plain text).

Attribution adds up: "where the time went" lists the ops' signed changes of median self
device time and one "other" line for the rest, so the parts sum to the total of the ops'
changes — no "explains 160 %" when ops move in opposite directions.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from neuronasv.analyse.causes import is_helper, op_order
from neuronasv.dtypes import short_name as short_dtype
from neuronasv.format import (
    ABOVE_PEAK,
    format_calls_per_iter,
    format_ci,
    format_delta_pct,
    format_pair,
    format_peak_fraction,
    format_ratio,
    format_signed,
    plural,
)
from neuronasv.model import Cause, Finding, FindingsDocument, OpContribution, WorkChange
from neuronasv.model.profile import module_series_path
from neuronasv.report.rowwords import held_back, state_cell, time_words, totals_summary

__all__ = [
    "CauseView",
    "cause_headline",
    "cause_views",
    "config_label",
    "module_chain_text",
    "of_peak",
    "of_peak_cell",
    "signed_attribution",
    "total_cells",
    "work_sentence",
]

Code = Callable[[str], str]


def _plain(s: str) -> str:
    return s


def config_label(shape: str, dtype: str) -> str:
    """``4x512 bf16``."""
    return f"{shape} {short_dtype(dtype)}".strip()


@dataclass(frozen=True)
class CauseView:
    """A cause with the findings and work changes it covers, in reading order."""

    cause: Cause
    totals: tuple[Finding, ...]
    work: tuple[WorkChange, ...]
    ops: tuple[Finding, ...] = ()  # the cause's op series (changed or moved ops)

    def _along(self, fs: Sequence[Finding]) -> list[Finding]:
        """The rows that moved the cause's way (their state's direction)."""
        want = {"regression": "worse", "improvement": "better"}.get(self.cause.direction)
        return [f for f in fs if want is not None and f.state.direction == want]

    @property
    def worst(self) -> Finding | None:
        """The row to quote: the total that moved most the cause's way, else such an op,
        else the largest total (by the size of its own Δ)."""
        sign = -1.0 if self.cause.direction == "improvement" else 1.0

        def pick(fs: Sequence[Finding]) -> Finding | None:
            moved = [f for f in fs if f.ratio is not None and f.ratio > 0]
            if not moved:
                return None
            return max(moved, key=lambda f: (sign * math.log(f.ratio or 1.0), f.series.label))

        return pick(self._along(self.totals)) or pick(self._along(self.ops)) or pick(self.totals)

    def actionable(self, rerun: bool) -> bool:
        """Worth a line above the fold: a work change (exact), or a time the
        re-measurement confirmed — or, when nothing was re-measured (``rerun`` False), a
        single-run decision, labelled as such; never a single-run time on rows whose work
        and exact counts are exactly equal (:func:`rowwords.held_back`: a suspect to
        re-measure, issue 39)."""
        if self.cause.kind == "work":
            return True
        rows = self._along(self.totals) if self.totals else self._along(self.ops)
        return any(f.state.confirmed or (not rerun and not held_back(f)) for f in rows)

    @property
    def decided(self) -> int:
        """Totals that moved the cause's way."""
        return len(self._along(self.totals))


def cause_views(doc: FindingsDocument) -> list[CauseView]:
    """The causes of ``doc`` (computed once in analyse, stored in ``doc.causes``), joined
    with their totals, changed or moved op series and work changes; nothing is regrouped
    here, so every view tells the story the document stores."""
    totals = {f.series: f for f in doc.findings if f.series.op is None}
    out = []
    for c in doc.causes:
        places = set(c.places)
        work = tuple(w for w in doc.work if w.config in places)
        fs = tuple(totals[s] for s in c.totals if s in totals)
        names = set(c.ops)
        ops = tuple(
            f
            for f in doc.findings
            if f.series.op in names
            and f.series.config in places
        )
        out.append(CauseView(c, fs, work, ops))
    return out


def _clause_kind(ws: Sequence[WorkChange]) -> str:
    """How one op's change reads: new, removed, calls, more data, less data, shapes."""
    if all(w.kind == "new" for w in ws):
        return "new"
    if all(w.kind == "removed" for w in ws):
        return "removed"
    if any(w.kind == "calls" for w in ws):
        return "calls"
    r = _bytes_ratio([w for w in ws if w.kind in ("shapes", "bytes")])
    return "more data" if r > 1.0 else "less data" if r < 1.0 else "shapes"


def _names(ops: Sequence[str], code: Code) -> str:
    shown = [code(o) for o in ops]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]


def _clause(kind: str, ops: Sequence[str], by_op: dict[str, list[WorkChange]], code: Code) -> str:
    """One clause for consecutive ops (in weight order) whose change reads the same."""
    s = "s" if len(ops) > 1 else ""
    if kind in ("new", "removed"):
        return f"{kind} op{s} {_names(ops, code)}"
    if kind in ("more data", "less data"):
        verb = ("move" if s else "moves") + (" more data" if kind == "more data" else " less data")
        ws = [w for op in ops for w in by_op[op]]
        biggest = max(ws, key=lambda w: abs(math.log(_one_ratio(w))))
        return (
            f"{_names(ops, code)} {verb} (bytes {format_ratio(_one_ratio(biggest))} at"
            f" {code(config_label(biggest.shape, biggest.dtype))})"
        )
    if kind == "shapes":
        w = by_op[ops[0]][0]
        sig = _sig_diff(w)
        where = f" ({code(sig)} at {code(config_label(w.shape, w.dtype))})" if sig else ""
        return f"{_names(ops, code)}: other input shapes{where}"
    bits = []
    for op in ops:
        pairs = {
            (format_calls_per_iter(w.calls_base), format_calls_per_iter(w.calls_head))
            for w in by_op[op]
        }
        if len(pairs) == 1:
            b, h = next(iter(pairs))
            bits.append(f"{code(op)} {b} → {h} calls")
        else:
            w = by_op[op][0]
            bits.append(
                f"{code(op)} calls changed ({format_calls_per_iter(w.calls_base)}"
                f" → {format_calls_per_iter(w.calls_head)} at"
                f" {code(config_label(w.shape, w.dtype))})"
            )
    return "; ".join(bits)


def work_sentence(work: Sequence[WorkChange], *, code: Code = _plain, max_ops: int = 5) -> str:
    """What changed in the work, by weight, in one sentence.

    The ops that carry bytes, FLOPs and time lead, removed and new ones first
    (:func:`neuronasv.analyse.causes.op_order`); view, alias, stride and allocation ops
    are counted, not named: ``removed op aten::_scaled_dot_product_flash_attention_for_cpu;
    new ops aten::bmm, aten::masked_fill_ and aten::_softmax; +4 helper ops (views,
    strides, allocations).`` At most ``max_ops`` ops that carry work are named.
    """
    if not work:
        return ""
    by_op: dict[str, list[WorkChange]] = {}
    for w in work:
        by_op.setdefault(w.op, []).append(w)
    order = op_order(work)
    heavy = [op for op in order if not all(is_helper(w) for w in by_op[op])]
    helpers = len(order) - len(heavy)
    groups: list[tuple[str, list[str]]] = []
    for op in heavy[:max_ops]:
        kind = _clause_kind(by_op[op])
        if groups and groups[-1][0] == kind:
            groups[-1][1].append(op)
        else:
            groups.append((kind, [op]))
    parts = [_clause(kind, ops, by_op, code) for kind, ops in groups]
    if len(heavy) > max_ops:
        parts.append(f"{plural(len(heavy) - max_ops, 'more op')} that carry work")
    if helpers:
        parts.append(f"+{plural(helpers, 'helper op')} (views, strides, allocations)")
    text = "; ".join(parts)  # starts with an op name or a word of ours: keep its case
    return text + "." if text else ""


def _one_ratio(w: WorkChange) -> float:
    if w.bytes_base and w.bytes_head and w.bytes_base > 0 and w.bytes_head > 0:
        return w.bytes_head / w.bytes_base
    return 1.0


def _bytes_ratio(ws: Sequence[WorkChange]) -> float:
    """The most extreme bytes ratio over the configurations (1.0 when unknown)."""
    rs = [_one_ratio(w) for w in ws]
    return max(rs, key=lambda r: abs(math.log(r))) if rs else 1.0


def _sig_diff(w: WorkChange) -> str:
    """The first call signature that differs: ``bf16[4,1] → bf16[4,512]``."""
    only_b = [s for s in w.signature_base if s not in w.signature_head]
    only_h = [s for s in w.signature_head if s not in w.signature_base]
    if not only_b or not only_h:
        return ""
    strip = lambda s: s.split("×", 1)[-1]  # noqa: E731
    return f"{strip(only_b[0])} → {strip(only_h[0])}"


def signed_attribution(f: Finding, *, code: Code = _plain, max_ops: int = 3) -> str:
    """``aten::add +2.10 µs, new aten::fill_ +1.90 µs, aten::mul -0.40 µs, the rest
    +0.10 µs`` — the largest ops' signed changes and the rest, which add up to the row's
    change (``head - base`` of its estimate) by construction: the rest is what the shown
    ops do not explain (the other ops, and medians that do not add). Empty when unknown."""
    contribs: list[OpContribution] = [a for a in f.attribution if a.delta != 0.0]
    if not contribs:
        return ""
    contribs.sort(key=lambda a: (-abs(a.delta), a.op))
    shown = contribs[:max_ops]
    bits = []
    for a in shown:
        tag = "new " if a.base is None else "removed " if a.head is None else ""
        bits.append(f"{tag}{code(a.op)} {format_signed(a.delta, f.unit)}")
    total = f.estimate.delta
    if total is not None:
        rest = total - sum(a.delta for a in shown)
        if format_signed(rest, f.unit).lstrip("+-") != format_signed(0.0, f.unit).lstrip("+-"):
            bits.append(f"the rest {format_signed(rest, f.unit)}")
    return ", ".join(bits)


def of_peak(
    base: float | None, head: float | None, bound: str | None, *, text: Code = _plain
) -> str:
    """``80 % of peak (compute)``, or ``62 % → 80 % of peak (memory)`` when base differs;
    empty when unknown (no roof: the column is left out). A fraction above 1 is the op
    outrunning the roof (data served from cache against a DRAM roof): that side reads
    ``above peak`` (:func:`~neuronasv.format.format_peak_fraction`), and the cell says only
    that — a fact, never advice to the reader. ``bound`` passes through ``text``."""
    vals = [v for v in (base, head) if v is not None and math.isfinite(v) and v >= 0]
    if not vals:
        return ""
    pct = format_peak_fraction
    if any(v > 1.0 for v in vals):
        return ABOVE_PEAK + (f" ({text(bound)})" if bound else "")
    if base is not None and head is not None and pct(base) != pct(head):
        figure = f"{pct(base)} → {pct(head)}"
    else:
        figure = pct(vals[-1])
    return f"{figure} of peak" + (f" ({text(bound)})" if bound else "")


def of_peak_cell(f: Finding, *, code: Code = _plain, text: Code = _plain, max_ops: int = 2) -> str:
    """The "of peak" cell of a total's row: the moved ops with a known fraction, largest
    change first — ``aten::mm 80 % of peak (compute)`` (empty when none is known)."""
    contribs = [
        a
        for a in f.attribution
        if a.delta != 0.0 and (a.roofline_head is not None or a.roofline_base is not None)
    ]
    contribs.sort(key=lambda a: (-abs(a.delta), a.op))
    return ", ".join(
        f"{code(a.op)} {of_peak(a.roofline_base, a.roofline_head, a.roofline_bound, text=text)}"
        for a in contribs[:max_ops]
    )
def _link_name(op: str) -> str:
    path = module_series_path(op)
    return op if path is None else path


def module_chain_text(f: Finding, *, code: Code = _plain) -> str:
    """``total +9.0 % ← block.mlp +14.2 % ← aten::mm +14.3 %``: the row's own change (its
    estimate: the same Δ the row prints), the module that moved most at each level, and
    the op that moved most inside the last one (empty without a module rollup). A top
    module that *is* the total (same times within 0.5 %) is named beside it —
    ``total (block) +9.0 %`` — so the chain says the row's number once. An op on one side
    only reads ``new``/``removed``: ``mlp +4.1 % ← new aten::copy_ +1.50 µs``."""
    links = list(f.module_chain)
    if len(links) < 2:
        return ""
    total, first = links[0], links[1]
    head_name = "total"
    if _same(total.base, first.base) and _same(total.head, first.head):
        head_name = f"total ({code(_link_name(first.op))})"
        links = [links[0], *links[2:]]
    bits = [f"{head_name} {format_delta_pct(f.ratio)}"]
    for a in links[1:]:
        name = _link_name(a.op)
        tag = ""
        if a.op and module_series_path(a.op) is None and (a.base is None or a.head is None):
            tag = "new " if a.base is None else "removed "  # an op the change added or removed
        if a.base and a.head is not None and a.base > 0:
            change = format_delta_pct(a.head / a.base)
        else:
            change = format_signed(a.delta, f.unit)
        bits.append(f"{tag}{code(name)} {change}")
    return " ← ".join(bits)


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return abs(a - b) <= 0.005 * max(abs(a), abs(b))


def cause_headline(view: CauseView, *, code: Code = _plain) -> str:
    """``rmsnorm.naive — more work in 2/2 configurations; time slower in 2 (+6.0 % at 4x512
    fp32 … +61 % at 2x128x512 bf16, 2 confirmed)``: from the rows' stored states, each
    time word with its own rows' Δ and where they are."""
    c = view.cause
    text = ", ".join(code(w) for w in c.workloads)
    n = len(view.totals)
    moved_ops = [
        f for f in view.ops if f.series.op and f.state and f.state.time in ("slower", "faster")
    ]
    several = len(c.workloads) > 1

    def at(f: Finding) -> str:
        where = config_label(f.series.shape or "", f.series.dtype or "")
        if several:  # one cause seen in several workloads: say which
            where = f"{f.series.workload} {where}"
        return code(where)  # untrusted text (issue 22)

    summary = totals_summary(view.totals, at)
    if c.direction in ("regression", "improvement") and not view.decided and moved_ops:
        names = ", ".join(
            f"{code(f.series.op or '')} {time_words(f, f.state)}"
            for f in moved_ops[:2]
        )
        more = f" and {len(moved_ops) - 2} more" if len(moved_ops) > 2 else ""
        text += f" — {names}{more}; totals: {summary}"
    elif n and summary:
        text += f" — {summary}"
    elif c.kind == "work":
        text += " · work changed"
    return text


def total_cells(f: Finding) -> tuple[str, str, str]:
    """(base → head, change with CI and mark, state) for one total's table row."""
    pair = format_pair(f.base, f.head, f.unit)
    pct = format_delta_pct(f.ratio)
    ci = format_ci(f.ci_low, f.ci_high)
    # Bold is for a change the timing established; a work-decided total's time may still be
    # within the noise (its CI says so), so it is not bolded.
    timed = f.state is not None and f.state.time in ("slower", "faster")
    change = f"**{pct}**" if timed else pct
    if ci:
        change += f" ({ci})"
    state = state_cell(f)
    return pair, change, state
