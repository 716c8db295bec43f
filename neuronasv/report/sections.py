"""The comment's section piece and its supporting sections, shared by both modes.

:mod:`neuronasv.report.markdown` composes a comment from sections: the headline, the
causes (comparison) or change points (history), then the sections here — series the
timing could not decide, warnings, environment changes, acknowledged shifts, results that
could not be read, the collapsed rest and the settings — and trims them to a budget by
``Section.rank``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from neuronasv.analyse.runnernoise import sentence as noise_sentence
from neuronasv.format import format_ci, format_delta_pct, format_p, format_pair, format_pct
from neuronasv.model.findings import ChangePoint, Finding, SeriesId
from neuronasv.report.digest import Digest, group_label, plural
from neuronasv.report.escape import md_code, md_text
from neuronasv.report.rowwords import state_words

__all__ = ["Section", "series_cells", "supporting_sections"]


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


def _noise_tail(d: Digest) -> str:
    """`` — on `demo-cpu`, timing changes under ~35 % ... at 6 rounds`` (the runner's noise,
    said once, from the document's settings; empty without floors)."""
    text = noise_sentence(d.doc.settings.get("runner_noise"))
    return f" — {md_text(text, max_len=400)}" if text else ""


def _warnings_summary(warnings: Sequence[tuple[SeriesId, str]]) -> str:
    """One line for many per-series warnings: how many, on how many series, the kinds."""
    kinds: dict[str, int] = {}
    for _, w in warnings:
        kind = re.sub(r"[0-9][0-9.,]*", "N", w.split(":")[0])
        kinds[kind] = kinds.get(kind, 0) + 1
    series = len({s for s, _ in warnings})
    top = sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
    what = ", ".join(f"{n}× {k}" for k, n in top)
    return f"{plural(len(warnings), 'warning')} on {plural(series, 'series', 'series')} ({what})"


def _setting(value: object) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value))
    if isinstance(value, Mapping):
        return ", ".join(f"{k} {_setting(v)}" for k, v in value.items())
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
            f" the noise floor, or not reproduced on re-measurement){_noise_tail(d)}</summary>",
            "",
            "| Benchmark | Op | Δ | CI of Δ | p | Noise (IQR/median) |",
            "|---|---|---|---|---|---|",
        ]
        rows = []
        for f in noisy:
            bench, op = series_cells(f)
            noise = " / ".join(
                format_pct(v) for v in (f.noise_base, f.noise_head) if v is not None
            )
            rows.append(
                f"| {bench} | {op} | {format_delta_pct(f.ratio)} "
                f"| {format_ci(f.ci_low, f.ci_high)} "
                f"| {format_p(f.p_adjusted if f.p_adjusted is not None else f.p_value)} "
                f"| {noise} |"
            )
        out.append(Section("noise", head, rows, tail=["", "</details>"], rank=5))
    return out


def _warning_sections(d: Digest, *, details: bool) -> list[Section]:
    """Per-series warnings: a summary line, with the list collapsed in full."""
    out: list[Section] = []
    warn_rows = [f"- {md_code(s.label)}: {md_text(w, max_len=300)}" for s, w in d.warnings]
    if warn_rows and details:
        summary = md_text(_warnings_summary(d.warnings), max_len=300)
        out.append(
            Section(
                "warnings",
                [f"<details><summary>Warnings: {summary}</summary>", ""],
                warn_rows,
                tail=["", "</details>"],
                rank=5,
            )
        )
    elif warn_rows:
        out.append(
            Section("warnings", [f"_{md_text(_warnings_summary(d.warnings))}._"], rank=5)
        )
    return out


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
    """Unchanged, new and removed rows, collapsed (full report only)."""
    out: list[Section] = []
    rest = [*d.new, *d.removed, *d.unchanged]
    if details and rest:
        summary = ", ".join(
            f"{n} {word}"
            for n, word in (
                (len(d.unchanged), "unchanged"),
                (len(d.new), "new"),
                (len(d.removed), "removed"),
            )
            if n
        )
        head = [
            f"<details><summary>{summary}</summary>",
            "",
            "| Benchmark | Op | Base → Head | Δ | Verdict |",
            "|---|---|---|---|---|",
        ]
        rows = []
        for f in rest:
            bench, op = series_cells(f)
            rows.append(
                f"| {bench} | {op} | {format_pair(f.base, f.head, f.unit)} "
                f"| {format_delta_pct(f.ratio)} | {f.verdict} |"
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
