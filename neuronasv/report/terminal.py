"""A terminal view of a findings document (rich tables), for people running neuronasv locally.

Untrusted text is passed to rich as :class:`rich.text.Text` objects, never as markup, so
an op called ``[bold red]x`` prints literally; control characters are cleaned first.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from neuronasv.analyse.runnernoise import sentence as noise_sentence
from neuronasv.format import (
    format_calls,
    format_ci,
    format_delta_pct,
    format_p,
    format_pair,
)
from neuronasv.log import emit
from neuronasv.model.findings import ChangePoint, Finding, FindingsDocument
from neuronasv.report.causes import module_chain_text, of_peak
from neuronasv.report.digest import Digest, digest, group_label, warning_kinds
from neuronasv.report.escape import clean, plain_model
from neuronasv.report.headline import headline
from neuronasv.report.rowwords import ESTIMATE_NOTE, LEGEND, state_cell

__all__ = ["render_terminal", "stdout_console", "terminal_text"]

_STYLE = {
    "regression": "bold red",
    "improvement": "bold green",
    "noisy": "yellow",
    "failed": "bold magenta",
}


def _t(text: str, style: str = "") -> Text:
    return Text(clean(text, max_len=200), style=style)


def _time_style(f: Finding) -> str:
    """The Δ's colour follows the stored time axis (red slower, green faster)."""
    time = f.state.time
    return {"slower": "regression", "faster": "improvement"}.get(time, "")


def _findings_table(title: str, fs: Sequence[Finding], style: str) -> Table:
    table = Table(title=title, title_justify="left", title_style=style, expand=False)
    peak = any(f.roofline_base is not None or f.roofline_head is not None for f in fs)
    cols = ("Benchmark", "Op", "Base → Head", "Δ", "CI of Δ", "p", "Calls", "State")
    for col in (*cols, "Of peak") if peak else cols:
        table.add_column(col, no_wrap=col in ("Δ", "p"))
    for f in fs:
        op = "" if f.series.workload is None else (f.series.op or "total")
        cells: list[Text | str] = [
            _t(group_label(f.series)),
            _t(op),
            format_pair(f.base, f.head, f.unit),
            Text(format_delta_pct(f.ratio), style=_STYLE.get(_time_style(f), "")),
            format_ci(f.ci_low, f.ci_high),
            format_p(f.p_adjusted if f.p_adjusted is not None else f.p_value),
            format_calls(f.calls_base, f.calls_head),
            state_cell(f),
        ]
        if peak:  # the op's fraction of the device's peak (issue 14 item 5)
            cells.append(_t(of_peak(f.roofline_base, f.roofline_head, f.roofline_bound)))
        table.add_row(*cells)
    return table


def _cp_table(title: str, cps: Sequence[ChangePoint], style: str) -> Table:
    table = Table(title=title, title_justify="left", title_style=style)
    for col in ("Series", "Commits", "Before → After", "Δ", "p"):
        table.add_column(col)
    for c in cps:
        table.add_row(
            _t(c.series.label),
            _t(f"{c.commit_before[:10]}..{c.commit_after[:10]}"),
            format_pair(c.before, c.after, c.unit),
            Text(format_delta_pct(c.ratio), style=_STYLE[c.kind]),
            format_p(c.p_value),
        )
    return table


def _header(d: Digest) -> list[object]:
    """The headline, the "also" line and the legend (when there are rows to read it by)."""
    style = "bold red" if d.has_regressions else "bold green"
    # room for the runner's shift before the rest of the headline (issue 39)
    head = Text(clean(d.headline, max_len=600), style=style)
    out: list[object] = [Text.assemble(("neuronasv: ", "bold"), head)]
    if d.also:
        out.append(Text(f"also {d.also}", style="dim"))
    if d.causes or d.regressions or d.improvements:
        out.append(Text(f"{LEGEND} {ESTIMATE_NOTE}", style="dim"))
    return out


def _regression_section(regressions: Sequence[Finding]) -> list[object]:
    """The regressions table, each row followed by its cause and its module chain."""
    if not regressions:
        return []
    out: list[object] = [_findings_table("Slower, or more work", regressions, "bold red")]
    for f in regressions:
        if f.attribution:
            out.append(Text.assemble("  → ", _t(headline(f), "")))
        chain = module_chain_text(f)
        if chain:
            out.append(Text.assemble("    ", _t(chain, "")))
    return out


def _movement_tables(d: Digest) -> list[object]:
    """The tables of what moved: regressions, open regressions, improvements."""
    out = _regression_section(d.regressions)
    if d.open_regressions:
        out.append(_cp_table("Open regressions", d.open_regressions, "bold red"))
    if d.improvements:
        out.append(_findings_table("Faster, or less work", d.improvements, "bold green"))
    if d.change_improvements:
        out.append(_cp_table("Improvements", d.change_improvements, "bold green"))
    return out


def _noisy_line(d: Digest) -> list[object]:
    """One line, not one per series: the runner's noise said once (analyse/runnernoise)."""
    if not d.noisy:
        return []
    said = noise_sentence(d.doc.settings.get("runner_noise"))
    return [
        Text.assemble(
            ("time not decided: ", "yellow"),
            _t(f"{len(d.noisy)} series" + (f" — {said}" if said else "")
               + " (the markdown summary lists them)"),
        )
    ]  # fmt: skip


def _warning_lines(d: Digest) -> list[object]:
    """One line per warning kind, with its count and the first series as an example."""
    out: list[object] = []
    for k in warning_kinds(d.warnings):
        s, w = k.items[0]
        detail = k.detail(w)
        more = f" and {len(k.items) - 1} more" if len(k.items) > 1 else ""
        eg = f"{s.label}{' ' + detail if detail else ''}{more}"
        out.append(
            Text.assemble(("warning: ", "yellow"), _t(f"{k.label}: {k.series} series ({eg})"))
        )
    return out


def _note_lines(d: Digest) -> list[object]:
    """Environment changes, acknowledged rows and files not read, one line each."""
    out: list[object] = []
    for e in d.env_changes:
        out.append(
            Text.assemble(
                ("environment: ", "yellow"),
                _t(f"{e.key} {e.before or 'none'} → {e.after or 'none'}"),
            )
        )
    for f in d.acknowledged:
        out.append(
            Text.assemble(
                ("acknowledged: ", "dim"),
                _t(f"{f.series.label} {format_delta_pct(f.ratio)}: {f.acknowledged}"),
            )
        )
    for c in d.acknowledged_changes:
        out.append(
            Text.assemble(
                ("acknowledged: ", "dim"),
                _t(f"{c.series.label} {format_delta_pct(c.ratio)}: {c.acknowledged}"),
            )
        )
    for err in d.doc.load_errors:
        out.append(Text.assemble(("not read: ", "yellow"), _t(err, "")))
    return out


def _renderables(d: Digest, show_unchanged: bool) -> list[object]:
    out = [*_header(d), *_movement_tables(d)]
    for f in d.failed:
        out.append(Text.assemble(("failed: ", "bold magenta"), _t(f"{f.series.label}: {f.reason}")))
    out += [*_noisy_line(d), *_warning_lines(d), *_note_lines(d)]
    if show_unchanged and (d.unchanged or d.new or d.removed):
        out.append(_findings_table("Other series", [*d.new, *d.removed, *d.unchanged], "bold"))
    return out


class _Emitting(Console):
    """A rich console whose every ``print`` goes through the one output path."""

    def print(self, *objects: Any, **kwargs: Any) -> None:
        with self.capture() as captured:
            super().print(*objects, **kwargs)
        emit(captured.get(), end="", styled=True)


def stdout_console(**options: Any) -> Console:
    """A rich console for a command's result on stdout: rich lays it out (for the terminal
    stdout is, colours included), :func:`neuronasv.log.emit` writes it (``styled``: its
    colour sequences kept, every other control character inert, fenced under Actions)."""
    return _Emitting(**options)


def render_terminal(
    doc: FindingsDocument, console: Console | None = None, *, show_unchanged: bool = False
) -> None:
    """Print the findings to ``console`` (default: :func:`stdout_console`)."""
    console = console or stdout_console()
    doc = plain_model(doc)  # untrusted strings on one line, by type (escape.py)
    console.print(Group(*_renderables(digest(doc), show_unchanged)))  # type: ignore[arg-type]


def terminal_text(doc: FindingsDocument, *, width: int = 120, show_unchanged: bool = False) -> str:
    """The terminal view as plain text (no colour), e.g. for tests and logs."""
    buf = io.StringIO()
    console = Console(
        file=buf,
        width=width,
        color_system=None,
        force_terminal=False,
        legacy_windows=False,
        highlight=False,
    )
    render_terminal(doc, console, show_unchanged=show_unchanged)
    return buf.getvalue()
