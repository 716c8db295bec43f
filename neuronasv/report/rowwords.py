"""The words of a row state (the one renderer of :class:`~neuronasv.model.RowState`).

Every view — comment, terminal, summary, status, annotations, site, ``regressions`` —
says a row's state with these functions, from the state analyse stored in the findings
document, and never re-derives it. Three axes, three vocabularies: work is exact (more /
less / different / same work), instructions are exact (more / fewer / same instructions,
counted under callgrind), time is measured (slower / faster / within the noise / not
decided) and always stands beside its Δ and CI; "confirmed" is said only of a time the
interleaved rounds confirmed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from neuronasv.analyse.states import CI_LEVEL, ci_beside_time
from neuronasv.format import (
    format_ci,
    format_count,
    format_delta_pct,
    format_pct,
    plural,
)
from neuronasv.model import Finding, RowState
from neuronasv.units import is_exact

__all__ = [
    "ESTIMATE_NOTE",
    "LEGEND",
    "UNADJUSTED",
    "count_line",
    "count_words",
    "gate_phrase",
    "state_cell",
    "state_words",
    "time_words",
    "totals_summary",
    "work_words",
]

#: One sentence a view prints wherever it shows state words.
LEGEND = (
    "Work is exact (the untimed shapes pass: more/less = more/fewer bytes or FLOPs moved);"
    " instructions are exact (counted under callgrind); time is measured (slower/faster"
    " only where the test decided, with its Δ and CI); confirmed = reproduced by the"
    " interleaved re-measurement rounds."
)
#: How a row's numbers relate, said once beside the tables that print them.
ESTIMATE_NOTE = (
    "Δ = head / base − 1 of the printed values; its CI bounds the same ratio. From the"
    " rounds, base and head are the geometric means of the rounds' medians (their ratio is"
    " the mean paired ratio the test judges); from a single run, the medians. Where the"
    " time went: the ops' changes and the rest add up to the row's change."
)

_WORK = {
    "more": "more work",
    "less": "less work",
    "different": "different work",
    "same": "same work",
    "unknown": "",
}


_SOURCE = {"first run": "single run, not re-measured", "rounds": "from the rounds"}


def work_words(state: RowState) -> str:
    """``more work`` ... (empty when the work is unknown: plain asv benchmarks)."""
    return _WORK[state.work]


#: The level of an interval shown beside an undecided time that excludes zero
#: (:func:`~neuronasv.analyse.states.ci_beside_time`): the decision's is wider.
UNADJUSTED = f"{format_pct(CI_LEVEL)} CI, not adjusted for the rows tested together"


def _figures(f: Finding) -> str:
    pct = format_delta_pct(f.ratio)
    ci = format_ci(f.ci_low, f.ci_high)
    if not ci:
        return pct
    if ci_beside_time(f) == "unadjusted":
        level, _, note = UNADJUSTED.partition(", ")
        return f"{pct}, {level} {ci}, {note}"
    return f"{pct}, CI {ci}"


def _undecided_word(f: Finding, state: RowState) -> str:
    """``time within the noise`` / ``time within the minimum effect`` (a CI beyond zero:
    a real change too small to matter) / ``time not decided``."""
    if state.time == "noise":
        if ci_beside_time(f) == "beyond zero":
            return "time within the minimum effect"
        return "time within the noise"
    return "time not decided"


def time_words(f: Finding, state: RowState) -> str:
    """``slower (+55 %, CI +35 … +80 %), confirmed`` / ``time not decided (-0.3 %, CI ...)``
    / ``time not decided (+77 %, 95 % CI +41 … +122 %, not adjusted for the rows tested
    together)`` where that per-row interval excludes zero but the adjusted decision did
    not decide; an instruction row's own words (:func:`exact_words`)."""
    if state.time == "none":
        if is_exact(f.unit) and state.presence == "both":
            return exact_words(f)
        return {"new": "new", "removed": "removed", "failed": "failed"}.get(
            state.presence, "no time"
        )
    fig = _figures(f)
    if state.time in ("slower", "faster"):
        how = "confirmed" if state.confirmed else _SOURCE.get(f.estimate.source, "")
        return f"{state.time} ({fig}), {how}"
    return f"{_undecided_word(f, state)} ({fig}){_beside(state)}"


def exact_words(f: Finding) -> str:
    """An instruction row's words, on its own axis (docs/instructions.md): ``more
    instructions (+2,443 per iteration, +20 %), exact`` / ``fewer instructions (...)`` /
    ``same instructions, exact`` / not judged when two counts of the same work differed /
    not counted on a side where the op runs only inside other ops."""
    axis = f.state.instructions
    if axis == "unsteady":
        why = f": {f.state.instr_why}" if f.state.instr_why else ""
        return f"instruction count not deterministic, not judged{why}"
    if axis == "uncounted":
        side = "head" if f.head is None else "base"
        return (
            f"instructions not counted at {side}: the op runs there only inside other ops"
            " (the replay counts top-level calls)"
        )
    return count_words(f.base, f.head)


def count_words(base: float | None, head: float | None) -> str:
    """``more instructions (+2,443 per iteration, +20 %), exact`` / ``fewer instructions
    (-5,867 per iteration, -39 %), exact`` / ``same instructions, exact``: the word follows
    the count's sign, always."""
    if base is None or head is None or base == head:
        return "same instructions, exact"
    word = "more" if head > base else "fewer"
    delta = f"{'+' if head > base else '-'}{format_count(abs(head - base))} per iteration"
    pct = format_delta_pct(head / base) if base > 0 else ""
    return f"{word} instructions ({delta}{', ' + pct if pct else ''}), exact"


def _beside(state: RowState) -> str:
    """``; more instructions (+2,169 per iteration, +3.2 %), exact`` beside a time the
    runner could not decide, when the same series was counted under callgrind."""
    if state.instr_base is None or state.instr_head is None:
        return ""
    return f"; {count_words(state.instr_base, state.instr_head)}"


def state_words(f: Finding) -> str:
    """``more work · slower (+55 %, CI +35 … +80 %), confirmed`` (the work part dropped
    when unknown: plain asv benchmarks and instruction rows)."""
    state = f.state
    parts = [w for w in (work_words(state), time_words(f, state)) if w]
    return " · ".join(parts)


def state_cell(f: Finding) -> str:
    """The state for a table whose row already shows Δ and CI in their own columns:
    ``more work · slower, confirmed`` / ``more work · time not decided``."""
    state = f.state
    if state.time in ("slower", "faster"):
        how = "confirmed" if state.confirmed else _SOURCE.get(f.estimate.source, "")
        time = f"{state.time}, {how}"
    elif state.time == "none":
        time = time_words(f, state)
    else:
        time = _undecided_word(f, state)
        if ci_beside_time(f) == "unadjusted":
            time += f" ({format_pct(CI_LEVEL)} CI not adjusted)"  # the table's CI column
        time += _beside(state)
    parts = [w for w in (work_words(state), time) if w]
    return " · ".join(parts)


def gate_phrase(findings: Iterable[Finding]) -> str:
    """``gate: confirmed slower time, 2 rows`` (empty when no rule fired)."""
    counts: dict[str, int] = {}
    for f in findings:
        if f.state.gate:
            counts[f.state.gate] = counts.get(f.state.gate, 0) + 1
    if not counts:
        return ""
    return "gate: " + "; ".join(f"{rule}, {plural(n, 'row')}" for rule, n in counts.items())


def _span(fs: list[Finding], at: Callable[[Finding], str] | None) -> str:
    """``+12 … +59 %`` over the rows' Δ (one figure when they agree); with ``at``, each
    end says where: ``+12 % at 4x512 bf16 … +59 % at 2x128x512 bf16``."""
    rows = sorted(
        (f for f in fs if f.ratio is not None), key=lambda f: (f.ratio or 1.0, f.series.label)
    )
    if not rows:
        return ""
    lo, hi = rows[0], rows[-1]
    plo, phi = format_delta_pct(lo.ratio), format_delta_pct(hi.ratio)
    if at is not None:
        if lo is hi or plo == phi:
            return f"{phi} at {at(hi)}"
        return f"{plo} at {at(lo)} … {phi} at {at(hi)}"
    return phi if plo == phi else f"{plo.removesuffix(' %')} … {phi}"


_GROUP = {"noise": "within the noise", "undecided": "not decided"}


def totals_summary(totals: Iterable[Finding], at: Callable[[Finding], str] | None = None) -> str:
    """``more work in 6/6 configurations; time slower in 2 (+12 % at 4x512 bf16 … +59 % at
    2x128x512 bf16, 2 confirmed), not decided in 4 (…)``: each time word with the Δ of its
    own rows only (``at`` names a row's place; without it, the Δ range alone)."""
    fs = list(totals)
    if not fs:
        return ""
    work: dict[str, int] = {}
    groups: dict[str, list[Finding]] = {}
    for f in fs:
        if f.state.work not in ("same", "unknown"):
            word = _WORK[f.state.work]
            work[word] = work.get(word, 0) + 1
        if f.state.time != "none":
            groups.setdefault(_GROUP.get(f.state.time, f.state.time), []).append(f)
    bits = [f"{w} in {k}/{len(fs)} configurations" for w, k in work.items()]
    times = []
    for label, members in groups.items():
        inner = [_span(members, at)]
        confirmed = sum(1 for f in members if f.state.confirmed)
        if confirmed:
            inner.append(f"{confirmed} confirmed")
        times.append(f"{label} in {len(members)} ({', '.join(x for x in inner if x)})")
    if times:
        bits.append("time " + ", ".join(times))
    return "; ".join(bits)


def count_line(findings: Iterable[Finding]) -> str:
    """``2 slower (1 confirmed), 1 faster, 3 more work, 4 more instructions`` over rows'
    states, each axis counted on its own rows (instructions on instruction rows)."""
    slower = faster = conf_s = conf_f = more = less = i_more = i_fewer = 0
    for f in findings:
        s = f.state
        slower += s.time == "slower"
        faster += s.time == "faster"
        conf_s += s.time == "slower" and s.confirmed
        conf_f += s.time == "faster" and s.confirmed
        more += s.work == "more"
        less += s.work == "less"
        if is_exact(f.unit):
            i_more += s.instructions == "more"
            i_fewer += s.instructions == "fewer"
    bits = []
    for n, c, word in ((slower, conf_s, "slower"), (faster, conf_f, "faster")):
        if n:
            bits.append(f"{n} {word}" + (f" ({c} confirmed)" if c else ""))
    bits += [
        f"{n} {w}"
        for n, w in (
            (more, "more work"),
            (less, "less work"),
            (i_more, "more instructions"),
            (i_fewer, "fewer instructions"),
        )
        if n
    ]
    return ", ".join(bits)
