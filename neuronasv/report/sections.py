"""The comment's section piece and its supporting sections, shared by both modes.

:mod:`neuronasv.report.markdown` composes a comment from sections: the headline, the
causes (comparison) or change points (history), then the sections here — series the
timing could not decide, warnings, environment changes, acknowledged shifts, results that
could not be read, the collapsed rest and the settings — and trims them to a budget by
``Section.rank``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from neuronasv.analyse.runnernoise import sentence as noise_sentence
from neuronasv.format import format_ci, format_delta_pct, format_p, format_pair, format_pct
from neuronasv.model.findings import ChangePoint, Finding
from neuronasv.report.digest import Digest, WarningKind, group_label, plural, warning_kinds
from neuronasv.report.escape import html_text, md_code, md_text
from neuronasv.report.rowwords import state_cell, state_words

__all__ = ["MAX_WARNING_LINES", "Section", "series_cells", "supporting_sections"]

#: The most lines the warnings take in a comment: one per kind, with its count.
MAX_WARNING_LINES = 12


@dataclass
class Section:
    """Lines of one section; ``rows`` may be dropped from the end when over budget."""

    name: str
    head: list[str]
    rows: list[str] = field(default_factory=list)
    tail: list[str] = field(default_factory=list)
    rank: int = 0  # 0 = never trimmed; otherwise lower ranks are trimmed first
    dropped: int = 0
    note: str = ""

    def text(self) -> str:
        lines = [*self.head, *self.rows]
        if self.note:
            lines += ["", self.note]
        return "\n".join(lines + self.tail)


def series_cells(f: Finding | ChangePoint) -> tuple[str, str]:
    """The benchmark and op cells of a row (``_total_`` for a workload's total)."""
    s = f.series
    bench = md_code(group_label(s), in_table=True)
    if s.workload is None:
        return bench, ""
    return bench, ("_total_" if s.op is None else md_code(s.op, in_table=True))


def _noise_tail(d: Digest, *, html: bool = False) -> str:
    """`` — on `demo-cpu`, timing changes under ~35 % ... at 6 rounds`` (the runner's noise,
    said once, from the document's settings; empty without floors). ``html``: for a
    ``<summary>`` line, where markdown escapes would show."""
    text = noise_sentence(d.doc.settings.get("runner_noise"))
    if not text:
        return ""
    return f" — {html_text(text, max_len=400) if html else md_text(text, max_len=400)}"


def _warnings_summary(kinds: Sequence[WarningKind]) -> str:
    """One line for many per-series warnings: how many, on how many series, of how many
    kinds."""
    n = sum(len(k.items) for k in kinds)
    series = len({s for k in kinds for s, _ in k.items})
    return (
        f"{plural(n, 'warning')} on {plural(series, 'series', 'series')},"
        f" {plural(len(kinds), 'kind')}"
    )


def _kind_line(k: WarningKind, examples: int = 2) -> str:
    """``- noisy base: 160 series (e.g. `a` IQR/median 17 %; `b` IQR/median 24 %; 158
    more)``: the kind once, its count, a few series with their own detail."""
    shown = "; ".join(
        f"{md_code(s.label, max_len=100)}" + (f" {md_text(d, max_len=100)}" if d else "")
        for s, w in k.items[:examples]
        for d in [k.detail(w)]
    )
    more = f"; {len(k.items) - examples} more" if len(k.items) > examples else ""
    count = plural(k.series, "series", "series")
    return f"- {md_text(k.label, max_len=160)}: {count} (e.g. {shown}{more})"


def _setting(value: object) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value))
    if isinstance(value, Mapping):  # sorted: a document read back has its keys sorted
        return ", ".join(f"{k} {_setting(value[k])}" for k in sorted(value, key=str))
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def supporting_sections(d: Digest, h3: str, *, details: bool) -> list[Section]:
    """The sections after the mode's own, in their order (each may be absent)."""
    return [
        *_noise_sections(d, details=details),
        *_warning_sections(d, details=details),
        *_env_sections(d, h3),
        *_ack_sections(d, h3),
        *_load_error_sections(d, h3),
        *_detail_sections(d, details=details),
        *_settings_sections(d, details=details),
    ]


def _noise_sections(d: Digest, *, details: bool) -> list[Section]:
    """Series the timing could not decide: one line trimmed, a collapsed table in full."""
    out: list[Section] = []
    # Noisy series are many on a shared runner and none of them is a verdict: one line in
    # view, the table collapsed, largest apparent changes first (a PR comment must read in
    # ten seconds). Other warnings (few, and about the run itself) stay in view.
    if d.noisy and not details:
        # Trimmed form: the count only (the full report has the table).
        out.append(
            Section(
                "noise",
                [f"_{len(d.noisy)} series the timing could not decide{_noise_tail(d)}._"],
                rank=5,
            )
        )
    elif d.noisy:
        noisy = sorted(d.noisy, key=lambda f: -abs(math.log(f.ratio)) if f.ratio else 0.0)
        head = [
            f"<details><summary>Time not decided: {plural(len(noisy), 'series', 'series')}"
            " moved beyond the minimum effect without a decision (not significant, inside"
            " the noise floor, or not reproduced on re-measurement)"
            f"{_noise_tail(d, html=True)}</summary>",
            "",
            "| Benchmark | Op | Base → Head | Δ | CI of Δ | p | Noise (IQR/median) |",
            "|---|---|---|---|---|---|---|",
        ]
        rows = []
        for f in noisy:
            bench, op = series_cells(f)
            noise = " / ".join(
                format_pct(v) for v in (f.noise_base, f.noise_head) if v is not None
            )
            rows.append(
                f"| {bench} | {op} | {format_pair(f.base, f.head, f.unit)}"
                f" | {format_delta_pct(f.ratio)} "
                f"| {format_ci(f.ci_low, f.ci_high)} "
                f"| {format_p(f.p_adjusted if f.p_adjusted is not None else f.p_value)} "
                f"| {noise} |"
            )
        out.append(Section("noise", head, rows, tail=["", "</details>"], rank=5))
    return out


def _warning_sections(d: Digest, *, details: bool) -> list[Section]:
    """Per-series warnings, summarised per kind with counts (at most
    :data:`MAX_WARNING_LINES` lines, never one line per series)."""
    kinds = warning_kinds(d.warnings)
    if not kinds:
        return []
    summary = _warnings_summary(kinds)
    if not details:
        return [Section("warnings", [f"_Warnings: {md_text(summary)}._"], rank=5)]
    rows = [_kind_line(k) for k in kinds[:MAX_WARNING_LINES]]
    if len(kinds) > MAX_WARNING_LINES:  # the last line counts the kinds it leaves out
        rest = kinds[MAX_WARNING_LINES - 1 :]
        n = sum(len(k.items) for k in rest)
        rows[-1] = f"- {plural(len(rest), 'more kind')}: {plural(n, 'warning')}"
    return [
        Section(
            "warnings",
            [f"<details><summary>Warnings: {html_text(summary)}</summary>", ""],
            rows,
            tail=["", "</details>"],
            rank=5,
        )
    ]


def _env_sections(d: Digest, h3: str) -> list[Section]:
    """Environment keys that differ between base and head (or at change points)."""
    out: list[Section] = []
    if d.env_changes:
        head = [
            f"{h3} Environment changes",
            "",
            "Base and head ran in different environments; a shift may come from these:"
            if d.doc.mode == "compare"
            else "The environment changed at these change points:",
            "",
            "| Key | Base | Head |",
            "|---|---|---|",
        ]
        rows = [
            f"| {md_code(e.key, in_table=True, max_len=40)} "
            f"| {md_code(e.before or 'none', in_table=True)} "
            f"| {md_code(e.after or 'none', in_table=True)} |"
            for e in d.env_changes
        ]
        out.append(Section("env", head, rows, rank=6))
    return out


def _ack_sections(d: Digest, h3: str) -> list[Section]:
    """Acknowledged rows and change points with their reasons."""
    out: list[Section] = []
    ack_rows = []
    for f in d.acknowledged:
        ack_rows.append(
            f"- {md_code(f.series.label)} {state_words(f)}: "
            f"{md_text(f.acknowledged or '', max_len=300)}"
        )
    for c in d.acknowledged_changes:
        ack_rows.append(
            f"- {md_code(c.series.label)} {format_delta_pct(c.ratio)} ({c.kind} at "
            f"{md_code(c.commit_after[:10])}): {md_text(c.acknowledged or '', max_len=300)}"
        )
    if ack_rows:
        out.append(Section("acks", [f"{h3} Acknowledged shifts", ""], ack_rows, rank=4))
    return out


def _load_error_sections(d: Digest, h3: str) -> list[Section]:
    """Results that could not be read."""
    out: list[Section] = []
    if d.doc.load_errors:
        rows = [f"- {md_text(e, max_len=300)}" for e in d.doc.load_errors]
        out.append(
            Section("load-errors", [f"{h3} Results that could not be read", ""], rows, rank=7)
        )
    return out


def _detail_sections(d: Digest, *, details: bool) -> list[Section]:
    """Rows within the runner's shift, unchanged, new and removed rows, collapsed (full
    report only)."""
    out: list[Section] = []
    rest = [*d.shifted, *d.new, *d.removed, *d.unchanged]
    if details and rest:
        summary = ", ".join(
            f"{n} {word}"
            for n, word in (
                (len(d.shifted), "within the runner's shift"),
                (len(d.unchanged), "unchanged"),
                (len(d.new), "new"),
                (len(d.removed), "removed"),
            )
            if n
        )
        head = [
            f"<details><summary>{summary}</summary>",
            "",
            "| Benchmark | Op | Base → Head | Δ | State |",
            "|---|---|---|---|---|",
        ]
        rows = []
        for f in rest:
            bench, op = series_cells(f)
            rows.append(
                f"| {bench} | {op} | {format_pair(f.base, f.head, f.unit)} "
                f"| {format_delta_pct(f.ratio)} | {state_cell(f)} |"
            )
        out.append(Section("details", head, rows, tail=["", "</details>"], rank=1))
    return out


def _settings_sections(d: Digest, *, details: bool) -> list[Section]:
    """The analysis settings, collapsed (full report only)."""
    out: list[Section] = []
    if details and d.doc.settings:
        rows = [
            f"- {md_code(str(k), max_len=40)}: {md_text(_setting(d.doc.settings[k]), max_len=600)}"
            for k in sorted(d.doc.settings, key=str)
        ]
        out.append(
            Section(
                "settings",
                ["<details><summary>Settings</summary>", ""],
                rows,
                tail=["", "</details>"],
                rank=2,
            )
        )
    return out
