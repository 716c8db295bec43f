"""The words of a row state (the one renderer of :class:`~neuronasv.model.RowState`).

Every view — comment, terminal, summary, status, annotations, site, ``regressions`` —
says a row's state with these functions, from the state analyse stored in the findings
document, and never re-derives it. Three axes, each in its own vocabulary: work is exact
(more / less / different / same work), each exact metric in its registry entry's words
(:mod:`neuronasv.metrics`: ``more``/``less``/``same``), time is measured (slower / faster
/ within the noise / not decided) and always stands beside its Δ and CI; "confirmed" is
said only of a time the interleaved rounds confirmed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

from neuronasv.analyse.states import CI_LEVEL, ci_beside_time
from neuronasv.format import (
    format_ci,
    format_count,
    format_delta_pct,
    format_load,
    format_mhz,
    format_pct,
    plural,
)
from neuronasv.metrics import BESIDE_TIME, EXACT, Metric, by_unit
from neuronasv.model import Finding, RowState
from neuronasv.model.findings import RunnerShift, SideState
from neuronasv.units import is_exact

__all__ = [
    "ESTIMATE_NOTE",
    "LEGEND",
    "SAME_EXACT",
    "UNADJUSTED",
    "WITHIN_SHIFT",
    "count_line",
    "count_words",
    "gate_phrase",
    "held_back",
    "shift_line",
    "shifted_words",
    "state_cell",
    "state_words",
    "time_words",
    "totals_summary",
    "work_words",
]

#: One sentence a view prints wherever it shows state words.
LEGEND = (
    "Work is exact (the untimed shapes pass: more/less = more/fewer bytes or FLOPs moved);"
    + "".join(f" {m.legend};" for m in EXACT if m.legend)
    + " time is measured (slower/faster only where the test decided, with its Δ and CI);"
    " confirmed = reproduced by the interleaved re-measurement rounds."
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


#: Where a decided time comes from: a single run only nominates (issue 39: a time one run
#: a side saw is a suspect to re-measure in interleaved rounds, never a finding).
_SOURCE = {"first run": "single run, a suspect to re-measure", "rounds": "from the rounds"}

#: Both exact axes equal: what a row whose time moved says beside it (the code did the
#: same work and the same count of :data:`~neuronasv.metrics.BESIDE_TIME` on both sides;
#: counted, not measured).
SAME_EXACT = f"same work, {BESIDE_TIME.same} (exact)"


def work_words(state: RowState) -> str:
    """``more work`` ... (empty when the work is unknown: plain asv benchmarks);
    :data:`SAME_EXACT` when the exact count is equal too."""
    if state.work == "same" and state.exact == "same":
        return SAME_EXACT
    return _WORK[state.work]


def held_back(f: Finding) -> bool:
    """A time one run a side decided on a row whose work and exact counts are both
    exactly equal: a suspect to re-measure, never a headline cause (issue 39)."""
    st = f.state
    return (
        st.decided
        and not st.confirmed
        and f.estimate.source == "first run"
        and st.work == "same"
        and st.exact == "same"
    )


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
    not decide; an exact row's own words (:func:`exact_words`)."""
    if state.time == "none":
        if is_exact(f.unit) and state.presence == "both":
            return exact_words(f)
        return {"new": "new", "removed": "removed", "failed": "failed"}.get(
            state.presence, "no time"
        )
    if f.estimate.shift is not None:
        return shifted_words(f, state)
    fig = _figures(f)
    if state.time in ("slower", "faster"):
        how = "confirmed" if state.confirmed else _SOURCE.get(f.estimate.source, "")
        return f"{state.time} ({fig}), {how}{_beside(state)}"
    return f"{_undecided_word(f, state)} ({fig}){_beside(state)}"


#: The time word of a row whose change over the runner's shift was not decided.
WITHIN_SHIFT = "time within the runner's shift"
#: A time decided over the runner's shift: its own words, since the row's measured Δ (its
#: table cell) may have the other sign — "slower"/"faster" stay the measured time's.
_RELATIVE = {"slower": "above the runner's shift", "faster": "below the runner's shift"}


def _against_figures(f: Finding) -> str:
    """``+30 %, CI +20 … +41 %``: the row's change over the runner's shift and its CI."""
    e = f.estimate
    pct = format_delta_pct(e.against)
    ci = e.ci_against
    ci_txt = format_ci(*ci) if ci is not None else ""
    if not ci_txt:
        return pct
    if ci_beside_time(f) == "unadjusted":
        level, _, note = UNADJUSTED.partition(", ")
        return f"{pct}, {level} {ci_txt}, {note}"
    return f"{pct}, CI {ci_txt}"


def shifted_words(f: Finding, state: RowState) -> str:
    """A single-run row judged against the runner's shift (``Estimate.shift``): its time
    word follows its change *over the shift*, printed first, with the shift and the
    measured Δ beside it — ``above the runner's shift (+30 %, CI +20 … +41 % over its
    +88 %; +144 % as measured), single run, a suspect to re-measure`` / ``time within the
    runner's shift (+144 % as measured, the runner's +88 %; over it +30 %, CI …)``. A
    decided time reads above/below the shift, never slower/faster: those words stay with
    the measured Δ, which may have the other sign."""
    e = f.estimate
    shift = format_delta_pct(e.shift)
    measured = format_delta_pct(e.ratio)
    fig = _against_figures(f)
    if state.time in ("slower", "faster"):
        how = "confirmed" if state.confirmed else _SOURCE.get(e.source, "")
        return (
            f"{_RELATIVE[state.time]} ({fig} over its {shift}; {measured} as measured),"
            f" {how}{_beside(state)}"
        )
    return (
        f"{WITHIN_SHIFT} ({measured} as measured, the runner's {shift}; over it {fig})"
        + _beside(state)
    )


def exact_words(f: Finding) -> str:
    """An exact row's words, on its own axis, in its metric's words (``more`` / ``less``
    / ``same``, with the change per iteration and its Δ, then ``exact``); a counted
    metric's row not judged when two counts of the same work differed, or not counted on
    a side where the op runs only inside other ops; a sampled metric's row not judged
    where its samples did not repeat."""
    axis = f.state.exact
    metric = by_unit(f.unit) or BESIDE_TIME
    if not metric.sidecar_key:  # a sampled exact metric
        if axis == "unsteady":
            return f"{metric.title} did not repeat exactly across samples, not judged exactly"
        return count_words(f.base, f.head, metric)
    if axis == "unsteady":
        why = f": {f.state.exact_why}" if f.state.exact_why else ""
        return f"{metric.value_noun} not deterministic, not judged{why}"
    if axis == "uncounted":
        side = "head" if f.head is None else "base"
        return (
            f"{metric.noun} not counted at {side}: the op runs there only inside other ops"
            " (the replay counts top-level calls)"
        )
    return count_words(f.base, f.head, metric)


def count_words(base: float | None, head: float | None, metric: Metric = BESIDE_TIME) -> str:
    """An exact metric's words for a change (``allocates more (+8,192 bytes per
    iteration, +33 %), exact`` / its ``less`` word / ``<same>, exact``): the word follows
    the count's sign, always."""
    if base is None or head is None or base == head:
        return f"{metric.same}, exact"
    word = metric.more if head > base else metric.less
    size = format_count(abs(head - base)) + (f" {metric.delta_unit}" if metric.delta_unit else "")
    delta = f"{'+' if head > base else '-'}{size} per iteration"
    pct = format_delta_pct(head / base) if base > 0 else ""
    return f"{word} ({delta}{', ' + pct if pct else ''}), exact"


def _beside(state: RowState) -> str:
    """``; <more> (+2,169 per iteration, +3.2 %), exact`` beside a row's time, when the
    same series was counted (:data:`~neuronasv.metrics.BESIDE_TIME`; an equal count is
    said with the work instead: :data:`SAME_EXACT`)."""
    if state.exact_base is None or state.exact_head is None:
        return ""
    if state.work == "same" and state.exact == "same":
        return ""
    return f"; {count_words(state.exact_base, state.exact_head)}"


def state_words(f: Finding) -> str:
    """``more work · slower (+55 %, CI +35 … +80 %), confirmed`` (the work part dropped
    when unknown: plain asv benchmarks and exact rows)."""
    state = f.state
    parts = [w for w in (work_words(state), time_words(f, state)) if w]
    return " · ".join(parts)


def state_cell(f: Finding) -> str:
    """The state for a table whose row already shows Δ and CI in their own columns:
    ``more work · slower, confirmed`` / ``more work · time not decided``."""
    state = f.state
    shift = f.estimate.shift
    if shift is not None and state.time in ("slower", "faster"):
        how = "confirmed" if state.confirmed else _SOURCE.get(f.estimate.source, "")
        time = (
            f"{_RELATIVE[state.time]} ({format_delta_pct(f.estimate.against)} over its"
            f" {format_delta_pct(shift)}), {how}{_beside(state)}"
        )
    elif shift is not None and state.time in ("undecided", "noise"):
        time = (
            f"{WITHIN_SHIFT} (the runner's {format_delta_pct(shift)}; over it"
            f" {format_delta_pct(f.estimate.against)}){_beside(state)}"
        )
    elif state.time in ("slower", "faster"):
        how = "confirmed" if state.confirmed else _SOURCE.get(f.estimate.source, "")
        time = f"{state.time}, {how}{_beside(state)}"
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


def _measured(f: Finding) -> float | None:
    return f.ratio


def _over_shift(f: Finding) -> float | None:
    return f.estimate.against


def _span(
    fs: list[Finding],
    at: Callable[[Finding], str] | None,
    ratio: Callable[[Finding], float | None] = _measured,
) -> str:
    """``+12 … +59 %`` over the rows' Δ (one figure when they agree); with ``at``, each
    end says where: ``+12 % at 4x512 bf16 … +59 % at 2x128x512 bf16``; ``ratio``: which
    change (the measured Δ, or the change over the runner's shift)."""
    rows = sorted(
        (f for f in fs if ratio(f) is not None), key=lambda f: (ratio(f) or 1.0, f.series.label)
    )
    if not rows:
        return ""
    lo, hi = rows[0], rows[-1]
    plo, phi = format_delta_pct(ratio(lo)), format_delta_pct(ratio(hi))
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
            label = _GROUP.get(f.state.time, f.state.time)
            if f.estimate.shift is not None:  # judged over the runner's shift
                label = _RELATIVE.get(f.state.time, "within the runner's shift")
            groups.setdefault(label, []).append(f)
    bits = [f"{w} in {k}/{len(fs)} configurations" for w, k in work.items()]
    times = []
    for label, members in groups.items():
        if label in _RELATIVE.values():  # each word beside its own change: over the shift
            inner = [f"{_span(members, at, _over_shift)} over it"]
        elif label == "within the runner's shift":
            inner = [f"{_span(members, at)} as measured"]
        else:
            inner = [_span(members, at)]
        confirmed = sum(1 for f in members if f.state.confirmed)
        if confirmed:
            inner.append(f"{confirmed} confirmed")
        times.append(f"{label} in {len(members)} ({', '.join(x for x in inner if x)})")
    if times:
        bits.append("time " + ", ".join(times))
    return "; ".join(bits)


def count_line(findings: Iterable[Finding]) -> str:
    """``2 slower (1 confirmed), 1 faster, 3 more work, 4 allocates more`` over rows'
    states, each axis counted on its own rows (an exact metric on its own rows)."""
    slower = faster = conf_s = conf_f = more = less = 0
    exact: dict[str, int] = {}  # an exact metric's own word -> rows
    for f in findings:
        s = f.state
        slower += s.time == "slower"
        faster += s.time == "faster"
        conf_s += s.time == "slower" and s.confirmed
        conf_f += s.time == "faster" and s.confirmed
        more += s.work == "more"
        less += s.work == "less"
        metric = by_unit(f.unit)
        if metric is not None and s.exact in ("more", "fewer"):
            word = metric.more if s.exact == "more" else metric.less
            exact[word] = exact.get(word, 0) + 1
    bits = []
    for n, c, word in ((slower, conf_s, "slower"), (faster, conf_f, "faster")):
        if n:
            bits.append(f"{n} {word}" + (f" ({c} confirmed)" if c else ""))
    bits += [
        f"{n} {w}"
        for n, w in (
            (more, "more work"),
            (less, "less work"),
            *((exact.get(w, 0), w) for m in EXACT for w in (m.more, m.less)),
        )
        if n
    ]
    return ", ".join(bits)


def _pair(sides: list[SideState], one: Callable[[SideState], str | None]) -> str:
    """``0.4–0.5 → 4.9–5.6``: one figure per side, base → head ("" when a side has none)."""
    got = [one(s) for s in sides]
    return " → ".join(g for g in got if g) if len(sides) == 2 and all(got) else ""


def _load(s: SideState) -> str | None:
    if s.load_start is None or s.load_end is None:
        return None
    return f"{format_load(s.load_start)}–{format_load(s.load_end)}"


def _machine_words(r: RunnerShift, *, canary: bool) -> str:
    """`` — base → head: load 0.4–0.5 → 4.9–5.6 (2 CPUs), clock 2,596 → 2,596 MHz, canary
    +500 %, head throttled: sw_power_cap``: what the sidecars recorded of the machine (the
    1-minute load average at the run's start–end, the CPUs' clock at its start, the
    canary's change), each part only where both sides recorded it."""
    sides = [s for s in (r.base, r.head) if s is not None]
    bits = []
    load = _pair(sides, _load)
    if load:
        cpus = max(s.cpus for s in sides)
        bits.append(f"load {load}" + (f" ({plural(cpus, 'CPU')})" if cpus else ""))
    clock = _pair(sides, lambda s: None if s.cpu_mhz_start is None else format_mhz(s.cpu_mhz_start))
    if clock:
        bits.append(f"clock {clock.replace(' MHz →', ' →')}")
    if canary:
        bits.append(
            f"canary {format_delta_pct(r.canary)}" if r.canary is not None else "canary not read"
        )
    for s in sides:
        if s.throttle and s.throttle != "none":
            bits.append(f"{s.side} throttled: {s.throttle[:80]}")
    return f" — base → head: {', '.join(bits)}" if bits else ""


def shift_line(r: RunnerShift | None) -> str:
    """The first line of every view when most series moved together (""
    otherwise): ``the runner shifted, not the code: 20 of 20 series with equal work and
    <counts> moved +89 % together (spread ±17 %); rows judged against it — base →
    head: load 0.4–0.5 → 4.9–5.6 (2 CPUs), clock 2,596 → 2,596 MHz, canary +500 %``.
    When the canary held while the series moved, it says so and that the rows were judged
    as measured."""
    if r is None or r.factor is None or r.spread is None or r.status not in ("runner", "series"):
        return ""
    if r.counted >= r.series:
        same = f"equal work and {BESIDE_TIME.noun}"
    elif r.counted:
        same = f"equal work ({r.counted} also equal {BESIDE_TIME.noun})"
    else:
        same = "equal work"
    moved = (
        f"{r.along} of {plural(r.series, 'series', 'series')} with {same} moved"
        f" {format_delta_pct(r.factor)} together (spread ±{format_pct(math.expm1(r.spread))})"
    )
    if r.status == "runner":
        return (
            f"the runner shifted, not the code: {moved}; rows judged against it"
            + _machine_words(r, canary=True)
        )
    return (
        f"{moved} while the canary held ({format_delta_pct(r.canary)}): not the runner's"
        " shift, rows judged as measured" + _machine_words(r, canary=False)
    )
