"""Plain text and simple markdown tables of a findings document (the CLI's own output).

The PR comment renderer is :mod:`neuronasv.report.markdown`; this is the terminal table of
``neuronasv compare`` / ``regressions``. Untrusted names go through
:mod:`neuronasv.report.escape` (control/bidi characters, markdown punctuation), numbers
through :mod:`neuronasv.format`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from neuronasv.format import (
    format_ci,
    format_delta_pct,
    format_p,
    format_pair,
    format_pct,
    format_value,
)
from neuronasv.model import ChangePoint, Finding, FindingsDocument
from neuronasv.report.digest import lost_phrase
from neuronasv.report.escape import clean, inert_model, md_code, md_text, plain_model
from neuronasv.report.headline import headline
from neuronasv.report.rowwords import (
    ESTIMATE_NOTE,
    LEGEND,
    count_line,
    gate_phrase,
    shift_line,
    state_cell,
    state_words,
)

if TYPE_CHECKING:
    from neuronasv.analyse.states import Coverage

__all__ = ["ROW_ORDER", "compare_markdown", "compare_text", "history_text", "row_group",
           "sort_findings"]  # fmt: skip

#: The order of a table's rows: the worse way first, then failed, not decided, the better
#: way, new, removed, unchanged (:func:`row_group`).
ROW_ORDER = ("worse", "failed", "undecided", "better", "new", "removed", "unchanged")


def row_group(f: Finding) -> str:
    """Which :data:`ROW_ORDER` group a row's stored state puts it in."""
    st = f.state
    if st.presence != "both":
        return st.presence
    if st.direction is not None:
        return st.direction
    return "undecided" if st.time == "undecided" else "unchanged"


def sort_findings(findings: Sequence[Finding]) -> list[Finding]:
    """Most important first: the row's group, then the size of its Δ, then its label."""
    return sorted(
        findings,
        key=lambda f: (
            ROW_ORDER.index(row_group(f)),
            f.acknowledged is not None,
            -abs((f.ratio or 1.0) - 1.0),
            f.series.label,
        ),
    )


def _verdict(f: Finding) -> str:
    """The row's stored state in words (:mod:`neuronasv.report.rowwords`)."""
    v = state_cell(f)
    if f.acknowledged is not None:
        v += " (acknowledged)"
    return v


def _summary(doc: FindingsDocument) -> str:
    live = [f for f in doc.findings if f.acknowledged is None]
    counts = [count_line(live)] if count_line(live) else []
    within = sum(
        1 for f in live
        if f.estimate.shift is not None and f.state.direction is None
        and f.state.time in ("undecided", "noise")
    )  # fmt: skip
    if within:
        counts.append(f"{within} within the runner's shift")
    counts += [f"{doc.count(p)} {p}" for p in ("failed", "new", "removed") if doc.count(p)]
    acked = sum(1 for f in doc.findings if f.acknowledged is not None)
    if acked:
        counts.append(f"{acked} acknowledged")
    gate = gate_phrase(live) if doc.withheld is None else ""
    counts.append(f"fails ({gate})" if gate else "no gate rule fired")
    return ", ".join(counts)


def _settings_lines(doc: FindingsDocument) -> list[str]:
    """What was compared and how: the two sides, the rules, the rounds and the noise floor."""
    b, h = doc.base, doc.head
    lines = []
    if b and h:
        lines.append(
            f"compare {clean(b.label or b.commit[:8])} ({b.commit[:8]}, {clean(b.machine)})"
            f" -> {clean(h.label or h.commit[:8])} ({h.commit[:8]}, {clean(h.machine)})"
        )
    st = doc.settings
    lines.append(
        f"rules: {', '.join(st.get('rules', []))}; {st.get('test', '')};"
        f" {st.get('correction', '')} at alpha {st.get('alpha', '')}"
    )
    if int(st.get("rounds", 0) or 0) >= 2:
        lines.append(f"rounds: {st['rounds']} a side; {st.get('rounds_test', '')}")
    floor = str(st.get("noise_floor", ""))
    if floor and not floor.startswith("none"):
        lines.append(f"noise floor: {floor}")
    return lines


def _caveat_lines(doc: FindingsDocument) -> list[str]:
    """Environment changes, files not read and withheld verdicts (device health)."""
    lines = [
        f"environment changed: {clean(e.key)} {clean(str(e.before))} -> {clean(str(e.after))}"
        for e in doc.env_changes
    ]
    lines += [f"load error: {clean(err, max_len=400)}" for err in doc.load_errors]
    if doc.health is not None and doc.health.withheld:
        # Device health (analyse/health.py): withheld verdicts are listed, not reported.
        lines.append(clean(doc.health.reason, max_len=400))
        lines += [f"  {clean(c.reason, max_len=400)}" for c in doc.health.checks]
    return lines


def _text_row(f: Finding) -> tuple[str, ...]:
    """One row of the text table: state, values, Δ, CI, p, the larger noise, the series."""
    noise = max((x for x in (f.noise_base, f.noise_head) if x is not None), default=None)
    return (
        _verdict(f),
        format_pair(f.base, f.head, f.unit),
        format_delta_pct(f.ratio),
        format_ci(f.ci_low, f.ci_high),
        format_p(f.p_adjusted),
        "" if noise is None else format_pct(noise),
        clean(f.series.label),
    )


def _table_lines(doc: FindingsDocument, show_unchanged: bool) -> list[str]:
    """The aligned table (a blank line first); the last column, the series, is not padded."""
    rows: list[tuple[str, ...]] = [
        ("state", "base → head", "change", "95% CI", "p(Holm)", "noise", "series")
    ]
    rows += [
        _text_row(f)
        for f in sort_findings(doc.findings)
        if show_unchanged or row_group(f) != "unchanged"
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(6)]
    return [""] + [
        "  ".join(c.ljust(w) for c, w in zip(r[:6], widths, strict=True)) + "  " + r[6]
        for r in rows
    ]


def _moved_lines(doc: FindingsDocument) -> list[str]:
    """The cause of each row that moved, after a blank line; nothing when none moved."""
    moved = [f for f in sort_findings(doc.findings) if row_group(f) in ("worse", "better")]
    if not moved:
        return []
    lines = [""]
    for f in moved:
        ack = f" [acknowledged: {clean(f.acknowledged)}]" if f.acknowledged else ""
        lines.append(f"{state_cell(f)}: {clean(headline(f), max_len=400)}{ack}")
    return lines


def compare_text(doc: FindingsDocument, *, show_unchanged: bool = True) -> str:
    """The terminal table of a compare document."""
    doc = plain_model(doc)  # untrusted strings on one line, by type (escape.py)
    lines = [*_warning_lines(doc, clean), *_settings_lines(doc), *_caveat_lines(doc)]
    lines.append(f"legend: {LEGEND} {ESTIMATE_NOTE}")
    lines += [*_table_lines(doc, show_unchanged), *_moved_lines(doc)]
    lines.append("")
    lines.append(f"summary: {_summary(doc)}")
    return "\n".join(lines) + "\n"


def _warning_lines(doc: FindingsDocument, esc: Callable[..., str]) -> list[str]:
    """Headline lines that must come first: a forced comparison, the runner's shift (what
    every row was judged against), series lost at head."""
    out = []
    shift = shift_line(doc.runner)
    if doc.forced:
        out.append(
            "FORCED comparison: " + esc("; ".join(doc.forced), max_len=400)
            + " (compared anyway with --force; the verdicts may mean nothing)"
        )
    if shift:
        out.append(esc(shift, max_len=1000))
    if doc.lost:
        out.append(
            f"LOST: {lost_phrase(doc)}: the head run did not measure them"
            " (a failure of the run, whatever else moved)"
        )
    return out


def compare_markdown(doc: FindingsDocument) -> str:
    """A simple markdown table (the PR comment proper is ``neuronasv.report``'s)."""
    doc = inert_model(doc)  # untrusted strings inert by type (escape.py)
    top = [f"**{line}**" for line in _warning_lines(doc, md_text)]
    lines = [*top, *([""] if top else []),
        f"_{LEGEND} {ESTIMATE_NOTE}_",
        "",
        "| state | base → head | change | 95% CI | p (Holm) | series |",
        "|---|---|---:|---|---:|---|",
    ]
    for f in sort_findings(doc.findings):
        lines.append(
            f"| {_verdict(f)} | {format_pair(f.base, f.head, f.unit)}"
            f" | {format_delta_pct(f.ratio)}"
            f" | {format_ci(f.ci_low, f.ci_high)} | {format_p(f.p_adjusted)} |"
            f" {md_code(f.series.label, in_table=True)} |"
        )
    moved = [f for f in sort_findings(doc.findings) if row_group(f) in ("worse", "better")]
    out = "\n".join(lines) + "\n"
    if moved:
        out += "\n" + "\n".join(
            f"- {state_cell(f)}: {md_text(headline(f), max_len=400)}" for f in moved
        ) + "\n"
    return out + f"\n{md_text(_summary(doc))}\n"


def _cp_row(c: ChangePoint) -> tuple[str, ...]:
    state = "open" if c.open else ""
    if c.acknowledged is not None:
        state = (state + " ack").strip()
    return (
        c.kind,
        state,
        format_delta_pct(c.ratio),
        f"{c.commit_before[:8]}..{c.commit_after[:8]}",
        f"{format_value(c.before, c.unit)} -> {format_value(c.after, c.unit)}",
        format_p(c.p_value),
        clean(c.machine),
        clean(c.series.label),
    )


def history_text(doc: FindingsDocument, *, only_open: bool = False) -> str:
    """The terminal table of a history document (``neuronasv regressions``).

    Three parts: change points (or why the detector could not run), the newest commit
    against its parent (:mod:`neuronasv.analyse.newest`), and one summary line naming both.
    """
    doc = plain_model(doc)  # untrusted strings on one line, by type (escape.py)
    from neuronasv.analyse.states import coverage_of

    coverage = coverage_of(doc)
    cps = [c for c in doc.change_points if c.open or not only_open]
    lines = _cp_preamble(doc, coverage)
    if cps or not coverage or any(c.ran for c in coverage):
        lines += _cp_table(cps)
    lines += _env_lines(cps)
    newest_lines, newest_part = _newest_part(doc)
    lines += newest_lines
    lines.append("")
    lines.append(
        "summary: " + "; ".join(p for p in (_cp_part(doc, coverage), newest_part) if p)
    )
    return "\n".join(lines) + "\n"


def _cp_preamble(doc: FindingsDocument, coverage: Sequence[Coverage]) -> list[str]:
    """The detector's settings, the machines it could not judge, and the load errors."""
    st = doc.settings
    lines = [
        f"change points: {st.get('method', '')}, window {st.get('window')},"
        f" p < {st.get('max_pvalue')}, min magnitude {st.get('min_magnitude')}"
    ]
    for cov in coverage:
        if not cov.ran:
            lines.append(f"{clean(cov.machine)}: {cov.sentence}")
    for err in doc.load_errors:
        lines.append(f"load error: {clean(err, max_len=400)}")
    return lines


def _cp_table(cps: Sequence[ChangePoint]) -> list[str]:
    """The change-point table, columns padded to their widest cell (series last, unpadded)."""
    rows: list[tuple[str, ...]] = [
        ("kind", "state", "change", "commits", "level", "p", "machine", "series")
    ]
    rows += [_cp_row(c) for c in cps]
    widths = [max(len(r[i]) for r in rows) for i in range(7)]
    lines = [""]
    for r in rows:
        lines.append(
            "  ".join(c.ljust(w) for c, w in zip(r[:7], widths, strict=True)) + "  " + r[7]
        )
    return lines


def _env_lines(cps: Sequence[ChangePoint]) -> list[str]:
    """One line per change point that came with an environment change, naming the change."""
    env = [c for c in cps if c.env_changes]
    if not env:
        return []
    lines = [""]
    for c in env:
        named = ", ".join(
            f"{clean(e.key)} {clean(str(e.before))} -> {clean(str(e.after))}"
            for e in c.env_changes
        )
        lines.append(
            f"{clean(c.series.label)} at {c.commit_after[:8]}: environment changed"
            f" ({named}): likely the cause"
        )
    return lines


def _newest_part(doc: FindingsDocument) -> tuple[list[str], str]:
    """The newest commit against its parent: its lines and its part of the summary."""
    st = doc.settings
    newest = st.get("newest") if isinstance(st.get("newest"), dict) else None
    if newest is not None and newest.get("checked") and doc.base and doc.head:
        return _newest_checked(doc, newest)
    if newest is not None and newest.get("note"):
        return [], f"newest commit not checked: {newest['note']}"
    return [], ""


def _newest_title(doc: FindingsDocument, newest: dict[str, Any]) -> list[str]:
    """A blank line, ``newest commit X vs its parent Y on M (how it was compared):``, and
    the runner's shift every row below was judged against, when there was one."""
    assert doc.base is not None and doc.head is not None
    how = (
        "from the given report, re-measured by neuronasv confirm"
        if newest.get("confirmed_run")
        else ("from the given report" if newest.get("source") == "report" else
              "compared here, not re-measured")
    )  # fmt: skip
    lines = [
        "",
        f"newest commit {doc.head.commit[:8]} vs its parent {doc.base.commit[:8]}"
        f" on {clean(doc.head.machine)} ({how}):",
    ]
    shift = shift_line(doc.runner)
    if shift:
        lines.append(clean(shift, max_len=1000))
    return lines


def _newest_checked(doc: FindingsDocument, newest: dict[str, Any]) -> tuple[list[str], str]:
    """The newest-commit table when it was checked (head and base present)."""
    from neuronasv.analyse.states import newest_state

    assert doc.base is not None and doc.head is not None
    lines = _newest_title(doc, newest)
    states = [(newest_state(f), f) for f in sort_findings(doc.findings)]
    shown = [(s, f) for s, f in states if s is not None]
    if shown:
        nrows = [("state", "row (work · time)", "series")] + [
            (s, state_words(f), clean(f.series.label)) for s, f in shown
        ]
        w0 = max(len(r[0]) for r in nrows)
        w1 = max(len(r[1]) for r in nrows)
        lines += [f"{a.ljust(w0)}  {b.ljust(w1)}  {c}" for a, b, c in nrows]
    else:
        lines.append("nothing slower and no more work against the parent")
    n_conf = sum(1 for s, _ in shown if s == "confirmed")
    n_susp = sum(1 for s, _ in shown if s == "suspect")
    n_work = sum(1 for s, _ in shown if s == "more-work")
    part = (
        f"newest commit {doc.head.commit[:8]}: {n_conf} confirmed slower,"
        f" {n_susp} suspect slower" + (" (single run, suspects to re-measure)" if n_susp else "")
        + (f", {n_work} more work with the time not decided" if n_work else "")
    )
    return lines, part


def _cp_part(doc: FindingsDocument, coverage: Sequence[Coverage]) -> str:
    """The change-point part of the summary line."""
    n_open = sum(1 for c in doc.change_points if c.open and c.acknowledged is None)
    if coverage and not any(c.ran for c in coverage):
        return "; ".join(c.sentence for c in coverage)
    part = f"{len(doc.change_points)} change points, {n_open} open regressions"
    short = [c for c in coverage if not c.ran]
    if short:
        part += " (" + "; ".join(f"{clean(c.machine)}: {c.sentence}" for c in short) + ")"
    return part
