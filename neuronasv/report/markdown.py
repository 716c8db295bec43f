"""The sticky PR comment (GitHub markdown), rendered from a findings document.

Layout, top to bottom: hidden marker, a headline a maintainer reads in ten seconds, the
base/head line, regressions (table + op attribution), a small history chart of the worst
series when values are given, improvements, failures, noise warnings, environment
changes, acknowledged shifts, unreadable results; then everything else in collapsed
``<details>``; links; a footer.

Guarantees:

- Deterministic: the same document (and arguments) gives the same bytes — no clocks, no
  dict-order or set-order dependence.
- Safe: every string from code or people (op names, params, branch labels, machine names,
  acknowledgement reasons, URLs) passes through :mod:`neuronasv.report.escape`.
- Bounded: at most ``max_chars`` characters (default 60,000, under GitHub's 65,536). When
  the full text is longer, whole rows are dropped from the least important section first
  (the unchanged list, then settings, ...) and a note links the full report; the headline,
  links and marker are never dropped.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from neuronasv import __version__
from neuronasv.analyse.causes import op_order
from neuronasv.format import (
    TIME_UNITS,
    format_calls,
    format_ci,
    format_delta_pct,
    format_p,
    format_pair,
    pick_time_scale,
)
from neuronasv.measure.backends import device_time_note
from neuronasv.model.findings import (
    ChangePoint,
    Finding,
    FindingsDocument,
    RunRef,
    WorkChange,
)
from neuronasv.report.causes import (
    CauseView,
    cause_headline,
    config_label,
    module_chain_text,
    of_peak,
    of_peak_cell,
    signed_attribution,
    total_cells,
    work_sentence,
)
from neuronasv.report.digest import (
    Digest,
    digest,
    plural,
)
from neuronasv.report.escape import (
    html_text,
    inert,
    inert_model,
    md_code,
    md_text,
    mermaid_label,
    safe_url,
)
from neuronasv.report.rowwords import ESTIMATE_NOTE, LEGEND, count_line, state_cell
from neuronasv.report.sections import Section, series_cells, supporting_sections

__all__ = [
    "COMMENT_MAX_CHARS",
    "MARKER",
    "TRIMMED_MAX_CHARS",
    "comment_marker",
    "render_comment",
    "render_comment_trimmed",
    "render_markdown",
]

#: Hidden marker that identifies our sticky comment (together with its author).
MARKER = "<!-- neuronasv:comment -->"
#: Budget for the comment body; GitHub refuses bodies over 65,536 characters.
COMMENT_MAX_CHARS = 60_000
#: Budget of the fallback sent after GitHub answers 422 "body is too long".
TRIMMED_MAX_CHARS = 16_000

_KEY_OK = re.compile(r"[A-Za-z0-9._-]{1,64}")


def comment_marker(key: str | None = None) -> str:
    """The hidden marker; a ``key`` (e.g. the machine) gives one sticky comment per key.

    Raises:
        ValueError: ``key`` is not 1–64 characters of ``A-Za-z0-9._-``.
    """
    if key is None:
        return MARKER
    if not _KEY_OK.fullmatch(key):
        raise ValueError(f"comment key {key!r} must be 1-64 characters of A-Za-z0-9._-")
    return f"<!-- neuronasv:comment:{key} -->"


# --------------------------------------------------------------------------- cells


def _pct_cell(f: Finding) -> str:
    text = format_delta_pct(f.ratio)
    # bold: a time the test decided (the row's stored state), never a work-only decision
    return f"**{text}**" if f.state is not None and f.state.time in ("slower", "faster") else text


def _peak_text(x: str) -> str:
    return md_text(x, max_len=60)


def _finding_row(f: Finding, *, peak_col: bool = False) -> str:
    bench, op = series_cells(f)
    cells = [
        bench,
        op,
        format_pair(f.base, f.head, f.unit),
        _pct_cell(f),
        format_ci(f.ci_low, f.ci_high),
        format_p(f.p_adjusted if f.p_adjusted is not None else f.p_value),
        format_calls(f.calls_base, f.calls_head),
    ]
    if peak_col:
        cells.append(of_peak(f.roofline_base, f.roofline_head, f.roofline_bound,
                             text=_peak_text))  # fmt: skip
    cells.append(state_cell(f))
    return "| " + " | ".join(cells) + " |"


def _finding_table(fs: Sequence[Finding]) -> tuple[list[str], list[str]]:
    peak_col = any(f.roofline_base is not None or f.roofline_head is not None for f in fs)
    cols = ["Benchmark", "Op", "Base → Head", "Δ", "CI of Δ", "p", "Calls"]
    if peak_col:
        cols.append("Of peak")
    cols.append("State")
    head = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    rows = [_finding_row(f, peak_col=peak_col) for f in fs]
    return head, rows


# ------------------------------------------------------------------------- sections


def _links_line(doc: FindingsDocument, report_url: str | None) -> str:
    links: list[str] = []
    base_t = doc.base.trace_url if doc.base else None
    head_t = doc.head.trace_url if doc.head else None
    traces = (
        (("Traces", base_t),)  # one place for both sides (the PR workflow's artifact)
        if base_t == head_t
        else (("Base trace", base_t), ("Head trace", head_t))
    )
    named = (
        ("History", doc.links.get("history_url")),
        ("Full report", report_url),
        *traces,
    )
    for name, url in named:
        safe = safe_url(url)
        if safe:
            links.append(f"[{name}]({safe})")
    for key in sorted(doc.links):
        if key in ("history_url", "report_url"):
            continue
        safe = safe_url(doc.links[key])
        if safe:
            links.append(f"[{md_text(key.removesuffix('_url').replace('_', ' '))}]({safe})")
    return " · ".join(links)


def _side(ref: RunRef | None, word: str) -> str:
    if ref is None:
        return ""
    text = f"{word} {md_code(ref.commit[:10])}"
    if ref.label and not ref.commit.startswith(ref.label):
        text += f" ({md_code(ref.label, max_len=60)})"
    return text


def _context_line(d: Digest) -> str:
    doc = d.doc
    bits = []
    if doc.mode == "compare" and (doc.base or doc.head):
        bits.append(" → ".join(b for b in (_side(doc.base, "Base"), _side(doc.head, "head")) if b))
    elif doc.head:
        bits.append(_side(doc.head, "Latest"))
    bits.append(f"machine {md_code(d.machine, max_len=60)}")
    fp = doc.head.fingerprint if doc.head else {}
    backend = fp.get("backend")
    if backend and backend != "none":
        text = f"backend {md_code(backend, max_len=20)}"
        if note := device_time_note(backend):
            text += f" ({note})"
        bits.append(text)
    return " · ".join(b for b in bits if b)


def _withheld_lines(d: Digest) -> list[str]:
    """Device health (issue 14 item 6): the withheld reason and each side's canary check."""
    health = d.doc.health
    if health is None or not health.withheld:
        return []
    lines = [f"> :warning: **{md_text(health.reason, max_len=300)}** — the device ran slower"
             " than usual, so the changes below are not evidence about the code; re-run"
             " (`neuronasv confirm`) on a healthy device."]
    for c in health.checks:
        lines.append(f"> - {md_text(c.reason, max_len=400)}")
    return ["", *lines]


_ICONS = (
    ":red_circle: a gate rule fired, or series were lost; :yellow_circle: something to"
    " look at; :green_circle: faster; :white_check_mark: nothing moved."
)


def _icon(d: Digest) -> str:
    if d.withheld is not None:
        return ":warning:"
    directions = {v.cause.direction for v in d.causes}
    # issue 13 (#2, #3): lost series and forced comparisons are never a calm icon.
    if d.has_regressions or d.open_regressions or d.doc.lost or d.doc.forced:
        return ":red_circle:"
    if "regression" in directions:
        return ":yellow_circle:"
    if d.failed or d.doc.load_errors or "unconfirmed" in directions:
        return ":yellow_circle:"
    if "improvement" in directions or d.change_improvements:
        return ":green_circle:"
    return ":white_check_mark:"


def _chart(d: Digest, history: Mapping[str, Sequence[float]] | None) -> list[str]:
    worst = d.worst
    if not history or worst is None:
        return []
    values = [v for v in history.get(worst.series.label, ()) if math.isfinite(v)][-40:]
    if len(values) < 2:
        return []
    unit = worst.unit
    if unit.lower() in TIME_UNITS:
        factor, suffix = pick_time_scale(max(abs(v) for v in values) or 1.0)
    else:
        factor, suffix = 1.0, unit
    label = mermaid_label(f"{worst.series.label} · {suffix}")
    nums = ", ".join(f"{v / factor:.4g}" for v in values)
    return [
        f"**History of {md_code(worst.series.label)}** (oldest → newest):",
        "",
        "```mermaid",
        "xychart-beta",
        f'    title "{label}"',
        f'    x-axis "commit" 1 --> {len(values)}',
        f'    y-axis "{mermaid_label(suffix)}"',
        f"    line [{nums}]",
        "```",
    ]


def _change_point_rows(cps: Sequence[ChangePoint]) -> tuple[list[str], list[str]]:
    head = [
        "| Benchmark | Op | Commits | Before → After | Δ | p | Environment |",
        "|---|---|---|---|---|---|---|",
    ]
    rows = []
    for c in cps:
        bench, op = series_cells(c)
        commits = f"{md_code(c.commit_before[:10])}…{md_code(c.commit_after[:10])}"
        env = ", ".join(md_code(e.key, in_table=True, max_len=40) for e in c.env_changes)
        rows.append(
            f"| {bench} | {op} | {commits} | {format_pair(c.before, c.after, c.unit)} "
            f"| **{format_delta_pct(c.ratio)}** | {format_p(c.p_value)} | {env} |"
        )
    return head, rows


def _sections(
    d: Digest,
    *,
    marker: str | None,
    history: Mapping[str, Sequence[float]] | None,
    report_url: str | None,
    details: bool,
    title: str,
    level: int,
) -> list[Section]:
    doc = d.doc
    h3 = "#" * (level + 1)
    out = _headline_sections(d, marker=marker, title=title, level=level)
    if doc.mode == "compare":
        out += _compare_sections(d, history, h3, details=details)
    else:
        out += _history_sections(d, history, h3)
    out += supporting_sections(d, h3, details=details)
    out.append(_footer_section(doc, report_url))
    return out


def _headline_sections(
    d: Digest, *, marker: str | None, title: str, level: int
) -> list[Section]:
    """The marker, the heading with the headline, the context line, the withheld note."""
    h2 = "#" * level
    top = [marker] if marker else []
    # room for the runner's shift before the rest of the headline (issue 39)
    top.append(f"{h2} {_icon(d)} {md_text(title)}: {md_text(d.headline, max_len=600)}")
    top += ["", _context_line(d)]
    if d.also:
        top[-1] += f" · also {md_text(d.also)}"
    if d.doc.mode == "compare":
        top += ["", f"<sub>{_ICONS} {LEGEND} {ESTIMATE_NOTE}</sub>"]
    out = [Section("headline", top)]
    withheld = _withheld_lines(d)
    if withheld:
        out.append(Section("withheld", withheld))  # never trimmed
    return out


def _compare_sections(
    d: Digest, history: Mapping[str, Sequence[float]] | None, h3: str, *, details: bool
) -> list[Section]:
    """A comparison's causes, traces, failed benchmarks and chart."""
    out = _cause_sections(d, h3, details=details)
    traces = _trace_section(d.doc, h3)
    if traces is not None:
        out.append(traces)
    if d.failed:
        rows = [
            f"- {md_code(f.series.label)}: "
            f"{md_text(f.reason or 'benchmark failed', max_len=300)}"
            for f in d.failed
        ]
        out.append(Section("failed", [f"{h3} Failed", ""], rows, rank=8))
    chart = _chart(d, history)
    if chart:
        out.append(Section("chart", chart, rank=3))
    return out


def _history_sections(
    d: Digest, history: Mapping[str, Sequence[float]] | None, h3: str
) -> list[Section]:
    """A history's change-point tables (open, fixed, improvements) and chart."""
    out: list[Section] = []
    for name, title_text, cps, rank in (
        ("open", "Open regressions", d.open_regressions, 10),
        ("fixed", "Regressions since fixed", d.closed_regressions, 6),
        ("cp-improvements", "Improvements", d.change_improvements, 7),
    ):
        if cps:
            head, rows = _change_point_rows(cps)
            out.append(Section(name, [f"{h3} {title_text}", "", *head], rows, rank=rank))
    chart = _chart(d, history)
    if chart:
        out.append(Section("chart", chart, rank=3))
    return out


def _footer_section(doc: FindingsDocument, report_url: str | None) -> Section:
    """The links line (when any) and the version."""
    footer = []
    links = _links_line(doc, report_url)
    if links:
        footer.append(links)
    footer.append(f"<sub>neuronasv {__version__}</sub>")
    return Section("footer", ["\n\n".join(footer)])


def _trace_section(doc: FindingsDocument, h3: str) -> Section | None:
    """Base and head trace of every flagged workload, the op to look for, how to open them
    (issue 14 item 4). From ``RunRef.traces``/``trace_url``; None when no side names any."""
    from neuronasv.report.traces import TRACE_HINT_MD, flagged_workloads

    if doc.base is None or doc.head is None or not (doc.base.traces or doc.head.traces):
        return None
    rows = []
    for fw in flagged_workloads(doc):
        links = []
        for word, ref in (("base", doc.base), ("head", doc.head)):
            name = ref.traces.get(fw.key)
            if not name:
                continue
            url = safe_url(ref.trace_url)
            label = f"{word} {md_code(name, max_len=200)}"
            links.append(f"[{label}]({url})" if url else label)
        if not links:
            continue
        what = md_code(config_label(fw.shape, fw.dtype))
        look = f" — look for {md_code(fw.op)}" if fw.op else ""
        rows.append(f"- {md_code(fw.workload)} {what}{look}: " + " · ".join(links))
    if not rows:
        return None
    return Section(
        "traces", [f"{h3} Traces", "", TRACE_HINT_MD, ""], rows, rank=5
    )


def _cell_code(text: str) -> str:
    """Untrusted text as a code span fit for a table cell."""
    return md_code(text, in_table=True)


def _cause_sentence(view: CauseView) -> list[str]:
    """The sentence under a cause's heading: its work change, else the ops whose time moved."""
    if view.work:
        return ["", work_sentence(view.work, code=md_code)]
    if view.cause.ops:
        ops = ", ".join(md_code(o) for o in view.cause.ops[:3])
        return ["", f"Time moved in {ops} with no recorded change of work."]
    return []


def _cause_row(f: Finding, *, mixed: bool, peak: str | None) -> str:
    """One total's row of a cause table; ``mixed``: its samples' source said per row;
    ``peak``: the "of peak" cell when the table has that column."""
    pair, change, state = total_cells(f)
    label = config_label(f.series.shape or "", f.series.dtype or "")
    where = signed_attribution(f, code=_cell_code)
    chain = module_chain_text(f, code=_cell_code)
    if chain:  # model -> module -> op first, then every op's signed part
        where = f"{chain}<br>{where}" if where else chain
    if mixed and where:
        where = ("rounds: " if f.remeasured else "first run: ") + where
    row = f"| {md_code(label, in_table=True)} | {pair} | {change} | {state} | {where} |"
    if peak is not None:
        row += f" {peak} |"
    return row


def _cause_section(n: int, view: CauseView, h3: str) -> Section:
    """Cause ``n``: its heading, its sentence and a short table of its totals."""
    head = [f"{h3} {n}. {cause_headline(view, code=md_code)}", *_cause_sentence(view)]
    # A row's total, Δ, CI and breakdown come from one set of samples (the rounds when
    # re-measured, else the compared runs): the header says which, or each row does.
    sources = {f.remeasured for f in view.totals}
    mixed = len(sources) > 1
    where_col = "Where the time went" + (" (rounds)" if sources == {True} else "")
    peaks = {f.series: of_peak_cell(f, code=_cell_code, text=_peak_text) for f in view.totals}
    peak_col = " Of peak |" if any(peaks.values()) else ""
    head += [
        "",
        f"| Shape · dtype | Total | Δ (CI) | State | {where_col} |{peak_col}",
        "|---|---|---|---|---|" + ("---|" if peak_col else ""),
    ]
    rows = [
        _cause_row(f, mixed=mixed, peak=peaks[f.series] if peak_col else None)
        for f in sorted(view.totals, key=lambda f: -abs(_log_ratio(f)))
    ]
    return Section(f"cause {n}", head, rows, rank=9)


def _cause_details(d: Digest) -> list[Section]:
    """The collapsed lists under the causes: every work change, every row that moved."""
    out: list[Section] = []
    work = _by_weight([w for v in d.causes for w in v.work])
    if work:
        out.append(_work_details(work))
    series = [*d.regressions, *d.improvements]
    if series:
        head, rows = _finding_table(series)
        out.append(
            Section(
                "series",
                [
                    f"<details><summary>Every row that moved: {html_text(_count_line(d))}"
                    "</summary>",
                    "",
                    *head,
                ],
                rows,
                tail=["", "</details>"],
                rank=6,
            )
        )
    return out


def _cause_sections(d: Digest, h3: str, *, details: bool = True) -> list[Section]:
    """One heading, one sentence and one short table per cause, then the details."""
    # Above the fold only what a reviewer can act on: work changes (exact) and verdicts
    # that the re-measurement confirmed — or, when no re-measurement ran, the single-run
    # verdicts, labelled as such. The rest is one collapsed list.
    out = [_cause_section(n, view, h3) for n, view in enumerate(d.causes, 1)]
    if not details:  # the short form: causes only, no collapsed lists
        return out
    return out + _cause_details(d)


def _by_weight(work: Sequence[WorkChange]) -> list[WorkChange]:
    """Work changes heaviest op first (:func:`neuronasv.analyse.causes.op_order`), so a
    comment over its budget drops the lightest rows."""
    rank = {op: i for i, op in enumerate(op_order(work))}
    return sorted(work, key=lambda w: (rank[w.op], w.workload, w.shape, w.dtype))


def _log_ratio(f: Finding) -> float:
    return math.log(f.ratio) if f.ratio and f.ratio > 0 else 0.0


def _count_line(d: Digest) -> str:
    return count_line([*d.regressions, *d.improvements]) or plural(
        len(d.regressions) + len(d.improvements), "series", "series"
    )


def _work_details(work: Sequence[WorkChange]) -> Section:
    head = [
        f"<details><summary>Work changes op by op ({len(work)}): exact, from calls and"
        " recorded input shapes, no statistics</summary>",
        "",
        "| Shape · dtype | Op | Change | Calls | Inputs (base → head) | Bytes | Time |",
        "|---|---|---|---|---|---|---|",
    ]
    rows = []
    for w in work:
        label = config_label(w.shape, w.dtype)
        sig = _sig_cell(w)
        nbytes = (
            format_pair(w.bytes_base, w.bytes_head, "bytes")
            if w.bytes_base is not None or w.bytes_head is not None
            else ""
        )
        rows.append(
            f"| {md_code(label, in_table=True)} | {md_code(w.op, in_table=True)} | {w.kind}"
            f" | {format_calls(w.calls_base, w.calls_head)} | {sig} | {nbytes}"
            f" | {format_pair(w.time_base, w.time_head, 'seconds')} |"
        )
    return Section("work", head, rows, tail=["", "</details>"], rank=4)


def _sig_cell(w: WorkChange) -> str:
    b = [x for x in w.signature_base if x not in w.signature_head]
    h = [x for x in w.signature_head if x not in w.signature_base]
    if not b and not h:
        return ""
    side = lambda xs: md_code("; ".join(xs[:2]) or "–", in_table=True, max_len=80)  # noqa: E731
    return f"{side(b)} → {side(h)}"


# --------------------------------------------------------------------------- budget


def _join(sections: Sequence[Section]) -> str:
    return "\n\n".join(s.text() for s in sections) + "\n"


def _fit(sections: list[Section], max_chars: int, report_url: str | None) -> str:
    """Drop rows (least important section first) until the text fits ``max_chars``."""
    text = _join(sections)
    if len(text) <= max_chars:
        return text
    where = f"the [full report]({report_url})" if report_url else "the full report"
    for sec in sorted((s for s in sections if s.rank), key=lambda s: (s.rank, s.name)):
        while sec.rows and len(text) > max_chars:
            # Drop enough rows in one go, then re-measure (the note's length changes).
            over = len(text) - max_chars
            cut, n = 0, 0
            while sec.rows and cut <= over:
                cut += len(sec.rows.pop()) + 1
                n += 1
            sec.dropped += n
            sec.note = f"_… {plural(sec.dropped, 'more row')} in {where}._"
            text = _join(sections)
        if len(text) <= max_chars:
            return text
        if not sec.rows:
            # Nothing left to show but the heading: replace the section with one line.
            sec.head = [
                f"_{md_text(sec.name)}: {plural(sec.dropped, 'row')} omitted, see {where}._"
            ]
            sec.note, sec.tail = "", []
            text = _join(sections)
            if len(text) <= max_chars:
                return text
    # Only never-trimmed parts remain and they are still too long: cut hard (cannot happen
    # with the built-in length caps unless max_chars is tiny).
    return text[: max_chars - 1] + "\n"


# --------------------------------------------------------------------------- public


def render_markdown(
    doc: FindingsDocument,
    *,
    history: Mapping[str, Sequence[float]] | None = None,
    marker: str | None = None,
    max_chars: int = COMMENT_MAX_CHARS,
    report_url: str | None = None,
    details: bool = True,
    title: str = "neuronasv",
    heading_level: int = 2,
) -> str:
    """Render a findings document as GitHub markdown (the engine under comment and summary).

    Args:
        doc: the findings document.
        history: optional past values per series label (oldest first, ending with head);
            the worst series gets a mermaid ``xychart-beta`` line chart when present.
        marker: hidden first line (``None`` for none).
        max_chars: character budget; rows are trimmed by section to fit.
        report_url: link for "see the full report" (defaults to ``doc.links["report_url"]``).
        details: include the collapsed unchanged list and settings.
        title: word before the headline.
        heading_level: markdown level of the headline (2 → ``##``).

    Returns:
        The markdown text, ending with a newline, at most ``max_chars`` characters.
    """
    # Untrusted strings are made inert by type before any view sees them (escape.py).
    doc = inert_model(doc)
    if history is not None:
        history = {inert(k): v for k, v in history.items()}
    d = digest(doc)
    url = safe_url(report_url or doc.links.get("report_url"))
    sections = _sections(
        d,
        marker=marker,
        history=history,
        report_url=url,
        details=details,
        title=title,
        level=heading_level,
    )
    return _fit(sections, max_chars, url)


def render_comment(
    doc: FindingsDocument,
    *,
    history: Mapping[str, Sequence[float]] | None = None,
    marker: str = MARKER,
    max_chars: int = COMMENT_MAX_CHARS,
    report_url: str | None = None,
    title: str = "neuronasv",
) -> str:
    """The sticky PR comment: hidden ``marker`` first, at most ``max_chars`` characters.

    Args:
        doc: the findings document (compare mode; history mode renders change points).
        history: optional ``{series label: [values oldest → head]}`` for the worst series'
            chart (values in the finding's unit, e.g. seconds).
        marker: hidden marker (see :func:`comment_marker`).
        max_chars: budget (GitHub's hard limit is 65,536).
        report_url: where the untrimmed report lives (job summary, Pages); defaults to
            ``doc.links["report_url"]``.
        title: the word before the headline (the project's name; escaped).
    """
    return render_markdown(
        doc,
        history=history,
        marker=marker,
        max_chars=max_chars,
        report_url=report_url,
        title=title,
    )


def render_comment_trimmed(
    doc: FindingsDocument,
    *,
    marker: str = MARKER,
    max_chars: int = TRIMMED_MAX_CHARS,
    report_url: str | None = None,
    title: str = "neuronasv",
) -> str:
    """The short form sent when GitHub rejects the full comment (422 "body is too long").

    No chart, no collapsed lists, a smaller budget; headline, regressions and links stay.
    """
    return render_markdown(
        doc,
        marker=marker,
        max_chars=max_chars,
        report_url=report_url,
        details=False,
        title=title,
    )
