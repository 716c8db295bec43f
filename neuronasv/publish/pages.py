"""The site's pages: index, one page per workload, regressions; HTML from one machine's view.

Every page renders from a :class:`View` (states, noise levels, the newest-commit check,
computed once per machine by :mod:`neuronasv.publish.site`); nothing here writes a file.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from neuronasv.analyse.states import ALARMS, STATES, Coverage, change_text
from neuronasv.format import format_delta_pct, format_value, pct_number
from neuronasv.model import ChangePoint, Finding, FindingsDocument, SeriesId
from neuronasv.model.profile import module_series_path
from neuronasv.publish import render
from neuronasv.publish.render import h, script_json, sparkline_svg
from neuronasv.publish.sitedata import MachineData, SiteData
from neuronasv.report.bisect import culprit_plain
from neuronasv.report.rowwords import state_words
from neuronasv.samples import NOISE_THRESHOLD

__all__ = [
    "CPIndex",
    "Group",
    "Newest",
    "PublishOptions",
    "View",
    "cp_key",
    "index_page",
    "module_of",
    "regressions_page",
    "slug",
    "workload_page",
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
    machine: MachineData
    gid: str
    title: str
    slug: str
    rows: list[int]
    total: int | None
    trace_key: str | None


def module_of(md: MachineData, sid: SeriesId) -> str | None:
    """The module a row sits under: a module's own path, an op's main module, or None."""
    path = module_series_path(sid.op)
    if path is not None:
        return path
    if sid.op is None or sid.workload is None:
        return None
    return md.op_modules.get((sid.workload, sid.shape or "", sid.dtype or "", sid.op))


def _row_label(md: MachineData, r: int, g: Group) -> str:
    sid = md.series[r].series
    if g.trace_key is not None:
        path = module_series_path(sid.op)
        if path is not None:  # a module: indented by its depth, ▸ marks it
            return "\u2003" * path.count(".") + f"▸ {path}"
        module = module_of(md, sid)
        if module:  # an op nested beneath its module
            return "\u2003" * (module.count(".") + 1) + (sid.op or "")
        return sid.op or "total"
    return ", ".join(sid.params) or sid.benchmark


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


def _noise_badge(level: float | None) -> str:
    if level is None:
        return '<span class="nz nz-none" title="no quartiles recorded">–</span>'
    cls = "low" if level < QUIET else ("mid" if level < NOISE_THRESHOLD else "high")
    pct = pct_number(level)
    return (
        f'<span class="nz nz-{cls}" title="noise: within-run IQR/median, median of the last'
        f' 10 commits">IQR {pct} %</span>'
    )


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

    def finding(self, r: int) -> Finding | None:
        return self.newest.finding(self.md.name, self.md.series[r].series)


def _severity(state: str) -> int:
    return STATES.index(state) if state in STATES else len(STATES)


def _state_badge(state: str) -> str:
    return f'<span class="st st-{h(state)}">{h(state)}</span>'


def _newest_html(v: View, commit_link: Callable[[str], str]) -> str:
    """The machine's verdict: newest commit vs parent, and the change-point coverage."""
    nw = v.newest
    parts = []
    if nw.doc is not None and nw.doc.base is not None and nw.doc.head is not None:
        counts: dict[str, int] = {}
        for r, st in enumerate(v.states):
            if v.finding(r) is not None and st in ("confirmed", "suspect", "more-work", "failed"):
                counts[st] = counts.get(st, 0) + 1
        how = (
            "re-measured by <code>neuronasv confirm</code>"
            if any(f.state is not None and f.state.source == "rounds" for f in nw.doc.findings)
            else "single run, not re-measured"
        )
        said = " ".join(
            f'{_state_badge(st)} {counts[st]}'
            for st in ("confirmed", "suspect", "more-work", "failed")
            if counts.get(st)
        )  # fmt: skip
        parts.append(
            f"<p><strong>Newest commit</strong> {commit_link(nw.doc.head.commit)} vs its parent"
            f" {commit_link(nw.doc.base.commit)}: "
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


def _peak_text(f: Finding | None) -> str:
    """``80 % of peak (compute)`` of an op at the newest commit (vs its parent), or ""."""
    if f is None or f.series.op is None:
        return ""
    from neuronasv.report.causes import of_peak

    return of_peak(f.roofline_base, f.roofline_head, f.roofline_bound)


def workload_page(
    g: Group,
    v: View,
    cps: CPIndex,
    opts: PublishOptions,
    n_chunks: int,
    copied: set[str] | None = None,
) -> str:
    md = g.machine
    col = {c: i for i, c in enumerate(md.commits)}
    rows_meta = []
    cp_meta = []
    for i, r in enumerate(g.rows):
        s = md.series[r]
        f = v.finding(r)
        rows_meta.append(
            {
                "peak": _peak_text(f),
                "label": _row_label(md, r, g),
                "total": r == g.total,
                "state": v.states[r],
                "noise": v.noise[r],
                "change": change_text(f),
                "words": state_words(f) if f is not None else "",
                "unit": s.unit,
                "benchmark": s.series.benchmark,
                "params": list(s.series.params),
            }
        )
        for c in cps.get(cp_key(md.name, s.series), []):
            if c.commit_after in col:
                cp_meta.append(
                    {
                        "row": i,
                        "index": col[c.commit_after],
                        "kind": c.kind,
                        "open": c.open,
                        "ratio": c.ratio,
                        "ack": c.acknowledged,
                        "reason": c.reason,
                        "before": c.commit_before,
                        "after": c.commit_after,
                    }
                )
    traces = []
    trace_url = opts.trace_url
    if trace_url is None and copied:
        # The copies this publish made; workload pages live at m/<machine>/<page>.html.
        trace_url = "../../traces/{path}"
    if g.trace_key is not None:
        for j in sorted(md.traces):
            p = md.traces[j].get(g.trace_key)
            if p and (opts.trace_url is not None or (copied is not None and p in copied)):
                traces.append([j, p])
    nw = v.newest
    meta = {
        "id": g.gid,
        "machine": md.name,
        "title": g.title,
        "n": len(md.commits),
        "rows": rows_meta,
        "changePoints": cp_meta,
        "newest": (
            {"index": len(md.commits) - 1, "parent": nw.parent} if nw.doc is not None else None
        ),
        "envChanges": [
            {"index": j, "changes": [list(d) for d in diff]} for j, diff in md.env_changes()
        ],
        "traces": traces,
        "commitUrl": opts.commit_url,
        "traceUrl": trace_url,
    }
    lead = g.total if g.total is not None else (g.rows[0] if len(g.rows) == 1 else None)
    badge = ""
    if lead is not None:
        ch = change_text(v.finding(lead))
        badge = (
            f" {_state_badge(v.states[lead])}"
            + (f' <span class="chg">{h(ch)} vs parent</span>' if ch else "")
            + f" {_noise_badge(v.noise[lead])}"
        )
    chunks = [f"{g.slug}/c{k:05d}.js" for k in range(n_chunks)]
    body = (
        f"<h1>{h(g.title)} <small>on {h(md.name)}</small>{badge}</h1>"
        '<p class="hint">Median per commit with the interquartile band; red lines: regressions'
        " (dashed: the newest commit's suspect regression against its parent), dashed amber:"
        " more work at the newest commit, green: improvements, dashed purple: environment"
        " changes; a series measured once is a point. Drag to zoom, double-click to reset,"
        " click a commit for details.</p>"
        '<section><h2>Total device time</h2><div id="chart-total" class="chart"></div></section>'
        '<section id="details" class="details"><em>Click a commit on a chart.</em></section>'
        "<section><h2>Where the time goes (stacked per op)</h2>"
        '<div id="chart-stack" class="chart"></div></section>'
        '<section><h2>Per-op series</h2><div id="ops" class="grid"></div></section>'
        f'<script type="application/json" id="meta">{script_json(meta)}</script>'
        "<script>window.NASV={c:{},chunk:function(id,d){(this.c[id]=this.c[id]||[]).push(d);}};</script>"
    )
    return render.page(
        f"{g.title} · {md.name}",
        body,
        root="../../",
        scripts=["../../assets/uPlot.iife.min.js", *chunks, "../../assets/site.js"],
        head='<link rel="stylesheet" href="../../assets/uPlot.min.css">',
    )


def _series_row(v: View, r: int, label: str, cps: CPIndex, col: Mapping[str, int], *,
                cls: str, extra: str = "", badge: str | None = None) -> str:  # fmt: skip
    md = v.md
    s = md.series[r]
    vals = md.value[r]
    tail = vals[-120:]
    off = len(vals) - len(tail)
    mine = [
        c
        for c in cps.get(cp_key(md.name, s.series), [])
        if c.commit_after in col and col[c.commit_after] >= off
    ]
    marks = [col[c.commit_after] - off for c in mine if c.kind == "regression"]
    good = [col[c.commit_after] - off for c in mine if c.kind != "regression"]
    st = v.states[r]
    shown = _state_badge(st)
    if badge is not None and badge != st:
        # the workload's state is its worst series'; the total's own state stays readable
        shown = (
            f'<span class="st st-{h(badge)}" title="worst in this workload; the total: {h(st)}">'
            f"{h(badge)}</span>"
        )
    hot = " alarm" if st in ("confirmed", "suspect") else ""  # red: slower vs the parent
    f = v.finding(r)
    # "latest" and "vs parent" from one comparison: the newest-commit finding's head value
    latest = f.head if f is not None and f.head is not None else _latest(vals)
    return (
        f'<tr class="{cls}" data-state="{h(st)}"{extra}><td>{shown}</td>'
        f"<td>{label}</td>"
        f'<td class="num">{h(format_value(latest, s.unit))}</td>'
        f'<td class="num chg{hot}">{h(change_text(f))}</td>'
        f"<td>{_noise_badge(v.noise[r])}</td>"
        f"<td>{sparkline_svg(tail, marks=marks, good=good, label=f'trend of {s.series.label}')}"
        "</td></tr>"
    )


def _group_html(v: View, g: Group, href: str, cps: CPIndex, col: Mapping[str, int]) -> str:
    """One workload: its total as the lead row, its ops beneath (collapsed)."""
    md = v.md
    lead = g.total if g.total is not None else (g.rows[0] if len(g.rows) == 1 else None)
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
            f"{n} {st}" for st, n in sorted(flagged.items(), key=lambda kv: _severity(kv[0]))
        )
        note = (
            f' <button type="button" class="tog" aria-expanded="false">▸ {len(rest)} {what}'
            f"</button>" + (f' <span class="flag">{h(said)}</span>' if said else "")
        )
    out = [f'<tbody class="wl" data-alarm="{int(alarm)}" data-worst="{h(worst)}">']
    if lead is not None:
        out.append(_series_row(v, lead, link + note, cps, col, cls="lead", badge=worst))
    else:
        out.append(
            f'<tr class="lead" data-state="{h(worst)}"><td>{_state_badge(worst)}</td>'
            f"<td>{link}{note}</td><td></td><td></td><td></td><td></td></tr>"
        )
    for r in rest:
        label = f'<span class="opname">{h(_row_label(md, r, g))}</span>'
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
    """"Newest commit vs its parent": each machine's note, then its flagged rows."""
    newest_rows = []
    for v in views:
        nw = v.newest
        if nw.doc is None or nw.doc.base is None or nw.doc.head is None:
            continue
        for r, st in enumerate(v.states):
            f = v.finding(r)
            if f is None or st not in ("confirmed", "suspect", "more-work", "failed"):
                continue
            key = cp_key(v.md.name, f.series)
            href = page_for.get(key)
            label = f.series.label
            name = f'<a href="{h(href)}">{h(label)}</a>' if href else h(label)
            newest_rows.append(
                (
                    _severity(st),
                    -abs((f.ratio or 1.0) - 1.0),
                    f'<tr data-state="{h(st)}"><td>{_state_badge(st)}</td><td>{name}</td>'
                    f"<td>{h(v.md.name)}</td>"
                    f'<td class="num">{h(change_text(f))}</td>'
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
            f'<tr data-state="{h(cp.kind if state == "open" else state)}">'
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
