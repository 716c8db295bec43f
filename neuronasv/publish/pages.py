"""The site's index and regressions pages; HTML from one machine's view.

Every page renders from a :class:`View` (states, noise levels, the newest-commit check and
its printed comparison, computed once per machine by :mod:`neuronasv.publish.site`);
nothing here writes a file. The workload pages are :mod:`neuronasv.publish.workload`.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from neuronasv.analyse.states import ALARMS, FLAGGED, STATES, Coverage
from neuronasv.format import format_delta_pct, format_value, pct_number
from neuronasv.metrics import EXACT, by_unit
from neuronasv.model import ChangePoint, Finding, FindingsDocument, SeriesId
from neuronasv.model.profile import module_series_path
from neuronasv.publish import render
from neuronasv.publish.compared import Compared
from neuronasv.publish.render import h, sparkline_svg
from neuronasv.publish.sitedata import MachineData, SiteData
from neuronasv.report.bisect import culprit_plain
from neuronasv.report.rowwords import shift_line
from neuronasv.samples import NOISE_THRESHOLD

__all__ = [
    "FLAGGED",
    "CPIndex",
    "Group",
    "Newest",
    "PublishOptions",
    "View",
    "badge_text",
    "cp_key",
    "index_page",
    "module_of",
    "noise_badge_data",
    "regressions_page",
    "row_label",
    "slug",
    "state_badge",
]


def slug(text: str, key: str) -> str:
    base = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")[:60] or "x"
    return f"{base}-{hashlib.sha1(key.encode(), usedforsecurity=False).hexdigest()[:8]}"


QUIET = 0.02  # IQR/median below this: noise level "low" (above NOISE_THRESHOLD: "high")


@dataclass(frozen=True)
class PublishOptions:
    """How to link out and what to call things.

    Attributes:
        base_url: absolute site URL (feeds need absolute links); "" = relative links.
        commit_url: template with ``{commit}``, e.g. ``https://github.com/o/r/commit/{commit}``.
        trace_url: template with ``{path}`` for stored traces (sidecar paths); None with
            ``traces_dir`` = the copies this publish makes (``traces/{path}`` in the site).
        traces_dir: the trace store (``neuronasv run``'s ``.asv/traces``): each trace a
            sidecar names and this folder holds is copied into the site's ``traces/``,
            and each op chart's commit links it. None: no copies.
        title: site title.
        now: clock for the feed (tests inject it).
    """

    base_url: str = ""
    commit_url: str | None = None
    trace_url: str | None = None
    traces_dir: str | None = None
    title: str = "neuronasv history"
    now: datetime | None = None


@dataclass
class Group:
    """One workload (shape, dtype) or plain benchmark: its rows, totals first.

    ``total`` is the workload's device-time total, ``exact_totals`` its total of each exact
    metric counted (:mod:`neuronasv.metrics`; each its own axis: never one chart with
    another, never one badge).
    """

    machine: MachineData
    gid: str
    title: str
    slug: str
    rows: list[int]
    total: int | None
    trace_key: str | None
    exact_totals: Mapping[str, int] = field(default_factory=dict)

    @property
    def totals(self) -> tuple[int, ...]:
        """Every total row: device time's, then each exact metric's."""
        first = () if self.total is None else (self.total,)
        return (*first, *self.exact_totals.values())

    @property
    def lead(self) -> int | None:
        """The row that stands for the group on the index: its device-time total, else its
        first exact metric's total, else its only row."""
        if self.totals:
            return self.totals[0]
        return self.rows[0] if len(self.rows) == 1 else None


def module_of(md: MachineData, sid: SeriesId) -> str | None:
    """The module a row sits under: a module's own path, an op's main module, or None."""
    path = module_series_path(sid.op)
    if path is not None:
        return path
    if sid.op is None or sid.workload is None:
        return None
    return md.op_modules.get((sid.workload, sid.shape or "", sid.dtype or "", sid.op))


def row_label(md: MachineData, r: int, g: Group) -> str:
    """A row's name on its group's pages; an exact metric's row says which (its twin on the
    device-time axis has the same op name)."""
    sid = md.series[r].series
    metric = by_unit(md.series[r].unit)
    axis = f" ({metric.name})" if metric is not None else ""
    if g.trace_key is not None:
        path = module_series_path(sid.op)
        if path is not None:  # a module: indented by its depth, ▸ marks it
            return "\u2003" * path.count(".") + f"▸ {path}" + axis
        module = module_of(md, sid)
        if module:  # an op nested beneath its module
            return "\u2003" * (module.count(".") + 1) + (sid.op or "") + axis
        return (sid.op or "total") + axis
    return (", ".join(sid.params) or sid.benchmark) + axis


def cp_key(machine: str, sid: SeriesId) -> tuple[str, str, tuple[str, ...]]:
    return (machine, sid.benchmark, sid.params)


CPIndex = Mapping[tuple[str, str, tuple[str, ...]], list[ChangePoint]]


@dataclass
class Newest:
    """One machine's newest-commit check, matched to the site's rows."""

    doc: FindingsDocument | None
    by_key: dict[tuple[str, str, tuple[str, ...]], Finding]
    parent: int | None  # commit index of the parent on this machine
    note: str  # why there is no check ("" when there is one)

    def finding(self, machine: str, sid: SeriesId) -> Finding | None:
        return self.by_key.get(cp_key(machine, sid))


def noise_badge_data(level: float | None) -> dict[str, str]:
    """The noise badge as data (class, text, tooltip): the index and the workload page's
    script show the same badge, decided here."""
    if level is None:
        return {"cls": "none", "text": "–", "title": "no quartiles recorded"}
    cls = "low" if level < QUIET else ("mid" if level < NOISE_THRESHOLD else "high")
    return {
        "cls": cls,
        "text": f"IQR {pct_number(level)} %",
        "title": "noise: within-run IQR/median, median of the last 10 commits",
    }


def _noise_badge(level: float | None) -> str:
    nz = noise_badge_data(level)
    return f'<span class="nz nz-{nz["cls"]}" title="{h(nz["title"])}">{h(nz["text"])}</span>'


def _latest(v: np.ndarray) -> float | None:
    idx = np.flatnonzero(np.isfinite(v))
    return float(v[idx[-1]]) if idx.size else None


@dataclass
class View:
    """Everything one machine's pages show, computed once."""

    md: MachineData
    groups: list[Group]
    states: list[str]
    noise: list[float | None]
    newest: Newest
    coverage: Coverage | None  # None: no change-point findings given
    #: row -> the newest commit's comparison as printed (publish/compared.py)
    compared: dict[int, Compared] = field(default_factory=dict)

    def finding(self, r: int) -> Finding | None:
        return self.newest.finding(self.md.name, self.md.series[r].series)


def _severity(state: str) -> int:
    return STATES.index(state) if state in STATES else len(STATES)


#: An exact metric's state in its own words (``allocates more``; :mod:`neuronasv.metrics`).
_STATE_WORDS = {m.state_more: m.more for m in EXACT} | {m.state_less: m.less for m in EXACT}
#: The style of an exact metric's state: one per role (more / less of it), whichever the
#: metric, so a new registry entry is styled and marked without touching the assets.
_STATE_STYLE = {m.state_more: "exact-more" for m in EXACT} | {
    m.state_less: "exact-less" for m in EXACT
}


def badge_text(state: str) -> str:
    """A state's badge: an exact metric's state in its words (``allocates more``), any
    other its name (``more-work`` as it is)."""
    return _STATE_WORDS.get(state, state)


def state_style(state: str) -> str:
    """The style (CSS class ``st-<style>``, chart mark kind) of a state: an exact metric's
    by its role (``exact-more``/``exact-less``), any other its name."""
    return _STATE_STYLE.get(state, state)


def state_badge(state: str, title: str = "") -> str:
    tip = f' title="{h(title)}"' if title else ""
    return f'<span class="st st-{h(state_style(state))}"{tip}>{h(badge_text(state))}</span>'


def _newest_html(v: View, commit_link: Callable[[str], str]) -> str:
    """The machine's verdict: newest commit vs parent, and the change-point coverage."""
    nw = v.newest
    parts = []
    if nw.doc is not None and nw.doc.base is not None and nw.doc.head is not None:
        counts: dict[str, int] = {}
        for r, st in enumerate(v.states):
            if v.finding(r) is not None and st in FLAGGED:
                counts[st] = counts.get(st, 0) + 1
        how = (
            "re-measured by <code>neuronasv confirm</code>"
            if any(f.remeasured for f in nw.doc.findings)
            else "single run, not re-measured"
        )
        said = " ".join(
            f'{state_badge(st)} {counts[st]}'
            for st in FLAGGED
            if counts.get(st)
        )  # fmt: skip
        shift = shift_line(nw.doc.runner)
        parts.append(
            f"<p><strong>Newest commit</strong> {commit_link(nw.doc.head.commit)} vs its parent"
            f" {commit_link(nw.doc.base.commit)}: "
            + (f"{h(shift)} · " if shift else "")  # the runner first, as every view says it
            + (f"{said} series ({how})" if said else f"no regression ({how})")
            + "</p>"
        )
    else:
        parts.append(f"<p><strong>Newest commit</strong>: not checked ({h(nw.note)}).</p>")
    if v.coverage is None:
        parts.append(
            "<p><strong>Change points</strong>: none given (publish with <code>--findings</code>"
            " from <code>neuronasv regressions --format json</code>, or <code>--detect</code>)."
            "</p>"
        )
    elif not v.coverage.ran:
        parts.append(f"<p><strong>Change points</strong>: {h(v.coverage.sentence)}.</p>")
    else:
        n_open = sum(1 for st in v.states if st == "regression")
        parts.append(
            f"<p><strong>Change points</strong>: {h(v.coverage.sentence)};"
            f" {n_open} series with an open regression.</p>"
        )
    return '<div class="verdict">' + "".join(parts) + "</div>"


def _series_row(v: View, r: int, label: str, cps: CPIndex, col: Mapping[str, int], *,
                cls: str, extra: str = "", worst: str | None = None) -> str:  # fmt: skip
    """One index row. Its badge is the row's own state on its own axis (a workload total
    is never "confirmed" for its ops' sake: the group's worst state is said beside it);
    "latest" and "vs parent" are the newest commit's comparison as the comment prints them
    (:mod:`neuronasv.publish.compared`), else asv's latest result, labelled so."""
    md = v.md
    s = md.series[r]
    vals = md.value[r]
    tail = vals[-120:].astype(np.float64)
    off = len(vals) - len(tail)
    c = v.compared.get(r)
    if c is not None:  # the sparkline ends at the comparison's values, as the charts do
        for j, x in ((c.base_col, c.base), (c.head_col, c.head)):
            if j is not None and j >= off and x is not None and math.isfinite(x):
                tail[j - off] = x
    mine = [
        c
        for c in cps.get(cp_key(md.name, s.series), [])
        if c.commit_after in col and col[c.commit_after] >= off
    ]
    marks = [col[c.commit_after] - off for c in mine if c.kind == "regression"]
    good = [col[c.commit_after] - off for c in mine if c.kind != "regression"]
    st = v.states[r]
    shown = state_badge(st)
    if worst is not None and worst != st:
        shown += (
            f' <span class="worst" title="the worst state among this workload\'s series">'
            f"ops: {h(badge_text(worst))}</span>"
        )
    hot = " alarm" if st in ("confirmed", "suspect") else ""  # red: slower vs the parent
    if c is not None:
        latest = (
            f'<td class="num" title="the comparison\'s head ({h(c.source_text)})">'
            f"{h(c.head_label)}</td>"
        )
        change = h(c.change) + (
            f' <span class="from">from {h(c.base_label)}</span>' if c.base is not None else ""
        )
    else:
        val = _latest(vals)
        latest = (
            f'<td class="num" title="asv result of the latest commit with one">'
            f"{h(format_value(val, s.unit))}</td>"
        )
        change = ""
    return (
        f'<tr class="{cls}" data-state="{h(st)}"{extra}><td>{shown}</td>'
        f"<td>{label}</td>{latest}"
        f'<td class="num chg{hot}">{change}</td>'
        f"<td>{_noise_badge(v.noise[r])}</td>"
        f"<td>{sparkline_svg(tail, marks=marks, good=good, label=f'trend of {s.series.label}')}"
        "</td></tr>"
    )


def _group_html(v: View, g: Group, href: str, cps: CPIndex, col: Mapping[str, int]) -> str:
    """One workload: its total as the lead row, its ops beneath (collapsed)."""
    md = v.md
    lead = g.lead
    # flagged ops first (as on the workload page), then in the group's order
    rest = sorted((r for r in g.rows if r != lead), key=lambda r: _severity(v.states[r]))
    worst = min((v.states[r] for r in g.rows), key=_severity)
    alarm = any(v.states[r] in ALARMS for r in g.rows)
    link = f'<a href="{h(href)}">{h(g.title)}</a>'
    note = ""
    if rest:
        flagged: dict[str, int] = {}
        for r in rest:
            if v.states[r] != "ok":
                flagged[v.states[r]] = flagged.get(v.states[r], 0) + 1
        what = "ops" if g.trace_key is not None else "series"
        if any(module_series_path(md.series[r].series.op) is not None for r in rest):
            what = "modules and ops"
        said = ", ".join(
            f"{n} {badge_text(st)}"
            for st, n in sorted(flagged.items(), key=lambda kv: _severity(kv[0]))
        )
        note = (
            f' <button type="button" class="tog" aria-expanded="false">▸ {len(rest)} {what}'
            f"</button>" + (f' <span class="flag">{h(said)}</span>' if said else "")
        )
    out = [f'<tbody class="wl" data-alarm="{int(alarm)}" data-worst="{h(worst)}">']
    if lead is not None:
        out.append(_series_row(v, lead, link + note, cps, col, cls="lead", worst=worst))
    else:
        out.append(
            f'<tr class="lead" data-state="{h(worst)}"><td>{state_badge(worst)}</td>'
            f"<td>{link}{note}</td><td></td><td></td><td></td><td></td></tr>"
        )
    for r in rest:
        label = f'<span class="opname">{h(row_label(md, r, g))}</span>'
        out.append(_series_row(v, r, label, cps, col, cls="op", extra=" hidden"))
    out.append("</tbody>")
    return "".join(out)


def index_page(
    data: SiteData,
    views: Sequence[View],
    cps: CPIndex,
    opts: PublishOptions,
    commit_link: Callable[[str], str],
) -> str:
    parts = [
        f"<h1>{h(opts.title)}</h1>",
        '<div class="filters"><label><input type="checkbox" id="only-reg"> regressions only'
        "</label>"
        ' <input type="search" id="q" placeholder="filter workloads and ops…" aria-label="filter">'
        ' <button type="button" id="expand-all">expand all</button></div>',
    ]
    if data.load_errors:
        errs = "".join(f"<li>{h(e)}</li>" for e in data.load_errors[:50])
        more = f"<li>… {len(data.load_errors) - 50} more</li>" if len(data.load_errors) > 50 else ""
        parts.append(
            f'<details class="errors"><summary>{len(data.load_errors)} load problems'
            f"</summary><ul>{errs}{more}</ul></details>"
        )
    for v in views:
        md = v.md
        mslug = slug(md.name, md.name)
        col = {c: i for i, c in enumerate(md.commits)}
        fp = md.latest_fingerprint()
        fp_rows = "".join(f"<tr><th>{h(k)}</th><td>{h(x)}</td></tr>" for k, x in sorted(fp.items()))
        envs = "".join(
            f"<li>#{j} {h(md.commits[j][:12])}: "
            + ", ".join(f"{h(k)} {h(b)} → {h(a)}" for k, b, a in diff)
            + "</li>"
            for j, diff in md.env_changes()
        )
        latest = md.commits[-1][:12] if md.commits else "none"
        parts.append(
            f'<section class="machine"><h2>{h(md.name)}</h2>'
            f"<p>{len(md.commits)} commits, latest {h(latest)}; {len(v.groups)} workloads,"
            f" {len(md.series)} series.</p>"
            + _newest_html(v, commit_link)
            + f'<details><summary>Environment</summary><table class="fp">{fp_rows}</table>'
            + (f"<p>Environment changes:</p><ul>{envs}</ul>" if envs else "")
            + "</details>"
        )
        order = sorted(
            v.groups,
            key=lambda g: (min(_severity(v.states[r]) for r in g.rows), g.title),
        )
        body = "".join(_group_html(v, g, f"m/{mslug}/{g.slug}.html", cps, col) for g in order)
        parts.append(
            '<table class="series wl"><thead><tr><th>state</th><th>workload · op</th>'
            '<th>latest</th><th title="newest commit against its parent">vs parent</th>'
            '<th title="within-run IQR/median, median of the last 10 commits">noise</th>'
            "<th>trend (last 120 commits, log scale)</th></tr></thead>"
            f"{body}</table></section>"
        )
    return render.page(opts.title, "".join(parts), root="", scripts=["assets/site.js"])


def _newest_section(
    views: Sequence[View],
    page_for: Mapping[tuple[str, str, tuple[str, ...]], str],
    commit_link: Callable[[str], str],
) -> str:
    """ "Newest commit vs its parent": each machine's note, then its flagged rows."""
    newest_rows = []
    for v in views:
        nw = v.newest
        if nw.doc is None or nw.doc.base is None or nw.doc.head is None:
            continue
        for r, st in enumerate(v.states):
            f = v.finding(r)
            if f is None or st not in FLAGGED:
                continue
            key = cp_key(v.md.name, f.series)
            href = page_for.get(key)
            label = f.series.label
            name = f'<a href="{h(href)}">{h(label)}</a>' if href else h(label)
            c = v.compared.get(r)
            change = (
                f"{h(c.base_label)} → {h(c.head_label)}, {h(c.change)}"
                if c is not None and c.base is not None and c.head is not None
                else h(c.change if c is not None else "")
            )
            newest_rows.append(
                (
                    _severity(st),
                    -abs((f.ratio or 1.0) - 1.0),
                    f'<tr data-state="{h(st)}" data-alarm="{int(st in ALARMS)}">'
                    f"<td>{state_badge(st)}</td><td>{name}</td>"
                    f"<td>{h(v.md.name)}</td>"
                    f'<td class="num">{change}</td>'
                    f"<td>{commit_link(nw.doc.base.commit)}..{commit_link(nw.doc.head.commit)}"
                    "</td></tr>",
                )
            )
    newest_rows.sort(key=lambda t: (t[0], t[1]))
    notes = "".join(_newest_html(v, commit_link) for v in views)
    return (
        "<h2>Newest commit vs its parent</h2>" + notes
        + (
            '<table class="series"><thead><tr><th>state</th><th>series</th><th>machine</th>'
            "<th>change</th><th>commits</th></tr></thead>"
            f"<tbody>{''.join(t[2] for t in newest_rows)}</tbody></table>"
            if newest_rows
            else ""
        )
    )  # fmt: skip


def _culprit_html(cp: ChangePoint, commit_link: Callable[[str], str]) -> str:
    """What a bisection proved about the change point (the feed says the same words)."""
    c = cp.culprit
    words = culprit_plain(c) if c is not None else ""
    if c is None or not words:
        return ""
    link = f"{commit_link(c.commit)}: " if c.found else ""
    return f'<br><span class="culprit">{link}{h(words)}</span>'


def _change_point_rows(
    doc: FindingsDocument,
    page_of: Callable[[ChangePoint], str | None],
    commit_link: Callable[[str], str],
) -> list[str]:
    """One row per change point: open regressions first."""
    rows = []
    for cp in sorted(
        doc.change_points,
        key=lambda c: (not (c.open and not c.acknowledged), c.kind != "regression"),
    ):
        state = (
            "open"
            if cp.open and not cp.acknowledged
            else ("acknowledged" if cp.acknowledged else "past")
        )
        href = page_of(cp)
        ack = f"<br><em>ack: {h(cp.acknowledged)}</em>" if cp.acknowledged else ""
        name = f'<a href="{h(href)}">{h(cp.series.label)}</a>' if href else h(cp.series.label)
        rows.append(
            f'<tr data-state="{h(cp.kind if state == "open" else state)}"'
            f' data-alarm="{int(state == "open" and cp.kind == "regression")}">'
            f'<td><span class="st st-{h(state)}">{h(state)}</span></td>'
            f"<td>{h(cp.kind)}</td><td>{name}</td><td>{h(cp.machine)}</td>"
            f'<td class="num">{format_delta_pct(cp.ratio)}</td>'
            f"<td>{commit_link(cp.commit_before)}..{commit_link(cp.commit_after)}</td>"
            f"<td>{h(cp.reason)}{ack}{_culprit_html(cp, commit_link)}</td></tr>"
        )
    return rows


def regressions_page(
    doc: FindingsDocument | None,
    views: Sequence[View],
    page_of: Callable[[ChangePoint], str | None],
    page_for: Mapping[tuple[str, str, tuple[str, ...]], str],
    commit_link: Callable[[str], str],
) -> str:
    newest_html = _newest_section(views, page_for, commit_link)
    if doc is None:
        body = (
            "<h1>Regressions</h1><p>No change-point findings were given: run "
            "<code>neuronasv regressions --format json &gt; findings.json</code> and publish with "
            "<code>--findings findings.json</code>"
            " (or <code>--detect</code> for small histories).</p>" + newest_html
        )
        return render.page("Regressions", body, root="", scripts=["assets/site.js"])
    rows = _change_point_rows(doc, page_of, commit_link)
    ran = [v.coverage for v in views if v.coverage is not None and v.coverage.ran]
    short = [v.coverage for v in views if v.coverage is not None and not v.coverage.ran]
    if not ran and short:
        head = "; ".join(f"{h(c.machine)}: {h(c.sentence)}" for c in short) + "."
    else:
        head = f"{len(doc.change_points)} change points; open regressions first."
        if short:
            head += " " + "; ".join(f"{h(c.machine)}: {h(c.sentence)}" for c in short) + "."
    table = (
        '<table class="series"><thead><tr><th>state</th><th>kind</th><th>series</th>'
        "<th>machine</th>"
        "<th>change</th><th>culprit range</th><th>reason</th>"
        f"</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        if rows
        else ""
    )
    body = (
        f"<h1>Regressions</h1>{newest_html}<h2>Change points</h2><p>{head}"
        ' Also as <a href="regressions.json">JSON</a> and an'
        ' <a href="regressions.atom">Atom feed</a>.</p>' + table
    )
    return render.page("Regressions", body, root="", scripts=["assets/site.js"])
