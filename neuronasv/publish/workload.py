"""A workload page: its series as drawn (:class:`GroupSeries`) and the page with its metadata.

Everything the page's JavaScript shows is decided here, in Python, and handed over as
data: every value's text (:func:`neuronasv.format.value_labels`, the one formatter), each
chart's value axis (range, ticks, their labels and title: :func:`neuronasv.format.axis_ticks`),
states and their badge text, noise badges, markers, the stacked charts' layers and colours,
the grid's order. The script keeps no threshold, rounding or state rule of its own.

Charts never mix units: each metric of the registry (:mod:`neuronasv.metrics`) has its
own total chart and value axis (``total_title``, ``axis_label``); a metric that adds up
stacks its own ops only (``stack_title``: "where the time goes" the device-time ops; module
rows are inclusive of their ops and are never stacked). A stack colours up to
:data:`STACK_COLOURS` ops, each its own colour (:data:`PALETTE`: distinct hues); beyond
that the rest are one grey "other" layer.

The newest commit and its parent are drawn at the comparison's values (the same numbers as
the comment: :mod:`neuronasv.publish.compared`); every other point is asv's result of that
commit's run, and the commit details say which is which.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from neuronasv.analyse.states import FLAGGED
from neuronasv.format import TIME_UNITS, axis_ticks
from neuronasv.metrics import DEVTIME, METRICS, by_name, by_unit
from neuronasv.model.profile import module_series_path
from neuronasv.publish import render
from neuronasv.publish.pages import (
    CPIndex,
    Group,
    PublishOptions,
    View,
    badge_text,
    cp_key,
    noise_badge_data,
    row_label,
    state_badge,
    state_style,
)
from neuronasv.publish.render import h, script_json
from neuronasv.report.rowwords import state_words

__all__ = [
    "OTHER_COLOUR",
    "PALETTE",
    "STACK_COLOURS",
    "GroupSeries",
    "Stack",
    "axis_of",
    "group_series",
    "workload_page",
]

#: Distinct hues for stacked layers (ColorBrewer "Paired" without its pale yellow, which
#: does not show on white), dark ones first: the largest layers get the strongest colours.
PALETTE = (
    "#1f78b4", "#ff7f00", "#33a02c", "#e31a1c", "#6a3d9a", "#b15928",
    "#a6cee3", "#fdbf6f", "#b2df8a", "#fb9a99", "#cab2d6",
)  # fmt: skip
#: Ops a stacked chart colours one by one; the rest are summed into one grey layer.
STACK_COLOURS = len(PALETTE)
OTHER_COLOUR = "#8c8c8c"

#: The newest commit's states the workload page marks on a chart, and how (the script
#: maps the kind to a line style; which rows get one is decided here).
_NEWEST_MARKS = frozenset(FLAGGED) - {"failed"}
#: The exact metrics' words for "more", as the page's legend says them.
_MORE_WORDS = " or ".join(m.more for m in METRICS if m.exact)
#: States whose words the commit details repeat for the newest commit.
_FLAGGED = frozenset(FLAGGED)


def axis_of(unit: str) -> str:
    """``time``, an exact metric's name (:mod:`neuronasv.metrics`) or the unit itself: what
    a chart may put on one axis."""
    if unit.lower() in TIME_UNITS:
        return "time"
    metric = by_unit(unit)
    return unit if metric is None else metric.name


@dataclass(frozen=True)
class Stack:
    """One stacked chart: its title, unit and layers (chunk row, colour), largest first."""

    title: str
    unit: str
    layers: tuple[tuple[int, str], ...]


@dataclass
class GroupSeries:
    """A group's series as drawn: one row per chart row, the group's own rows first, then
    the stacks' "other" rows (sums). ``v``/``q1``/``q3`` are asv's medians and quartiles
    except at the comparison's two commits, which carry its values (no band: the
    comparison has no quartiles of its own); ``forced`` holds their printed labels."""

    md_rows: list[int | None]
    labels: list[str]
    units: list[str]
    v: np.ndarray
    q1: np.ndarray
    q3: np.ndarray
    forced: dict[tuple[int, int], str] = field(default_factory=dict)
    stacks: list[Stack] = field(default_factory=list)


def _latest(a: np.ndarray) -> float:
    idx = np.flatnonzero(np.isfinite(a))
    return float(a[idx[-1]]) if idx.size else -math.inf


def group_series(g: Group, v: View) -> GroupSeries:
    """The arrays a workload page draws (and its data files hold) for group ``g``."""
    md = g.machine
    rows = np.asarray(g.rows)
    vals = md.value[rows].astype(np.float64, copy=True)
    q1 = md.q25[rows].astype(np.float64)
    q3 = md.q75[rows].astype(np.float64)
    forced: dict[tuple[int, int], str] = {}
    for pos, r in enumerate(g.rows):
        c = v.compared.get(r)
        if c is None:
            continue
        for col, val, label in ((c.base_col, c.base, c.base_label),
                                (c.head_col, c.head, c.head_label)):  # fmt: skip
            if col is None or val is None or not math.isfinite(val):
                continue
            vals[pos, col] = val
            q1[pos, col] = q3[pos, col] = np.nan
            forced[(pos, col)] = label
    gs = GroupSeries(
        md_rows=list(g.rows),
        labels=[row_label(md, r, g) for r in g.rows],
        units=[md.series[r].unit for r in g.rows],
        v=vals,
        q1=q1,
        q3=q3,
        forced=forced,
    )
    if g.trace_key is not None:  # a workload: its ops stack; plain benchmarks do not
        for m in METRICS:  # only what adds up stacks (a peak does not)
            if m.adds_up == "sum":
                _add_stack(gs, g, "time" if m is DEVTIME else m.name, m.stack_title)
    return gs


def _add_stack(gs: GroupSeries, g: Group, axis: str, title: str) -> None:
    md = g.machine
    ops = [
        pos
        for pos, r in enumerate(g.rows)
        if md.series[r].series.op is not None
        and module_series_path(md.series[r].series.op) is None
        and axis_of(md.series[r].unit) == axis
    ]
    if not ops:
        return
    ops.sort(key=lambda p: -_latest(gs.v[p]))
    shown, rest = ops[:STACK_COLOURS], ops[STACK_COLOURS:]
    layers = [(p, PALETTE[i]) for i, p in enumerate(shown)]
    if rest:
        sub = gs.v[rest]
        other = np.where(np.isfinite(sub).any(axis=0), np.nansum(sub, axis=0), np.nan)
        pos = len(gs.md_rows)
        gs.md_rows.append(None)
        gs.labels.append(f"{len(rest)} other ops")
        gs.units.append(gs.units[rest[0]])
        gs.v = np.vstack([gs.v, other])
        nan = np.full((1, gs.v.shape[1]), np.nan)
        gs.q1 = np.vstack([gs.q1, nan])
        gs.q3 = np.vstack([gs.q3, nan])
        layers.append((pos, OTHER_COLOUR))
    gs.stacks.append(Stack(title, gs.units[ops[0]], tuple(layers)))


def _y_axis(
    lo: float, hi: float, unit: str, *, from_zero: bool = False, count: int = 5
) -> dict[str, Any] | None:
    """A chart's fixed value axis: padded range, 1-2-5 ticks and their labels, title."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return None
    if from_zero:
        lo = min(lo, 0.0)
    pad = (hi - lo) * 0.06 or abs(hi) * 0.1 or 1.0
    lo_p = lo if from_zero else lo - pad
    hi_p = hi + pad
    if lo >= 0 and lo_p < 0:
        lo_p = 0.0  # a count or a time never goes below zero
    ticks, labels, title = axis_ticks(lo_p, hi_p, unit, count=count)
    return {
        "min": lo_p,
        "max": hi_p,
        "ticks": ticks,
        "labels": labels,
        "title": title,
        # wide enough for the longest label (no cut "…structions"), in CSS pixels
        "size": 20 + 7 * max((len(t) for t in labels), default=4),
    }


def _band_axis(gs: GroupSeries, pos: int, count: int) -> dict[str, Any] | None:
    block = np.concatenate([gs.v[pos], gs.q1[pos], gs.q3[pos]])
    fin = block[np.isfinite(block)]
    if not fin.size:
        return None
    return _y_axis(float(fin.min()), float(fin.max()), gs.units[pos], count=count)


def _stack_axis(gs: GroupSeries, st: Stack) -> dict[str, Any] | None:
    layers = gs.v[[p for p, _ in st.layers]]
    cum = np.nansum(layers, axis=0)
    if not cum.size or not np.isfinite(cum).any():
        return None
    return _y_axis(0.0, float(np.nanmax(cum)), st.unit, from_zero=True)


def _severity_order(states: list[str]) -> list[int]:
    from neuronasv.analyse.states import STATES

    def sev(s: str) -> int:
        return STATES.index(s) if s in STATES else len(STATES)

    return sorted(range(len(states)), key=lambda i: (sev(states[i]), i))


def _row_meta(gs: GroupSeries, g: Group, v: View, cps: CPIndex, col: dict[str, int],
              pos: int) -> dict[str, Any]:  # fmt: skip
    md = g.machine
    r = gs.md_rows[pos]
    meta: dict[str, Any] = {
        "label": gs.labels[pos],
        "unit": gs.units[pos],
        "axis": axis_of(gs.units[pos]),
        # the totals' charts are tall (about 5 ticks), each op's small (about 3)
        "y": _band_axis(gs, pos, 5 if r is not None and r in g.totals else 3),
        # quartiles recorded (an exact count has none): the chart draws the band
        "band": bool(np.isfinite(gs.q1[pos]).any()),
    }
    if r is None:  # a stack's "other" layer: drawn, never a chart of its own
        meta.update({"kind": "other", "total": False, "state": "", "marks": [], "y": None})
        return meta
    s = md.series[r]
    f = v.finding(r)
    state = v.states[r]
    c = v.compared.get(r)
    marks: list[dict[str, Any]] = [
        {"index": col[cp.commit_after], "kind": cp.kind}
        for cp in cps.get(cp_key(md.name, s.series), [])
        if cp.commit_after in col
    ]
    if v.newest.doc is not None and f is not None and state in _NEWEST_MARKS:
        marks.append({"index": len(md.commits) - 1, "kind": state_style(state)})
    kind = ("module" if module_series_path(s.series.op) is not None
            else "op" if s.series.op is not None
            else "total" if g.trace_key is not None else "series")  # fmt: skip
    words = state_words(f) if f is not None else ""
    meta.update(
        {
            "kind": kind,
            "total": r in g.totals,
            "state": state,
            "badge": badge_text(state),
            "style": state_style(state),
            "change": c.change if c is not None else "",
            "words": words,
            "note": (
                f"{gs.labels[pos].strip()} against the parent commit: {words}"
                if state in _FLAGGED and words
                else ""
            ),
            "noise": noise_badge_data(v.noise[r]),
            "peak": _peak_text(f),
            "marks": marks,
            "benchmark": s.series.benchmark,
            "params": list(s.series.params),
            "compared": _compared_meta(c),
        }
    )
    return meta


def _compared_meta(c: Any) -> dict[str, Any] | None:
    if c is None:
        return None
    return {
        "baseIndex": c.base_col,
        "headIndex": c.head_col,
        "base": c.base_label,
        "head": c.head_label,
        "change": c.change,
        "source": c.source,
        "sourceText": c.source_text,
        "rawBase": c.raw_base,
        "rawHead": c.raw_head,
    }


def _peak_text(f: Any) -> str:
    """``80 % of peak (compute)`` of an op at the newest commit (vs its parent), or ""."""
    if f is None or f.series.op is None:
        return ""
    from neuronasv.report.causes import of_peak

    return str(of_peak(f.roofline_base, f.roofline_head, f.roofline_bound))


def _cp_meta(gs: GroupSeries, g: Group, cps: CPIndex, col: dict[str, int]) -> list[Any]:
    """The change points the page marks: the row, the commit's index, kind, ack, reason."""
    md = g.machine
    out = []
    for pos, r in enumerate(gs.md_rows):
        if r is None:
            continue
        for c in cps.get(cp_key(md.name, md.series[r].series), []):
            if c.commit_after in col:
                out.append(
                    {"row": pos, "index": col[c.commit_after], "kind": c.kind,
                     "ack": c.acknowledged, "reason": c.reason}
                )  # fmt: skip
    return out


def _totals_meta(g: Group) -> list[dict[str, Any]]:
    """The group's total charts: device time, and each exact metric counted (the titles are
    the registry's)."""
    titled = [(g.total, DEVTIME.total_title)]
    titled += [(r, by_name(m).total_title) for m, r in g.exact_totals.items()]
    return [{"row": g.rows.index(r), "title": title} for r, title in titled if r is not None]


def _order_meta(gs: GroupSeries, g: Group, rows: list[dict[str, Any]]) -> list[int]:
    """The per-op rows (totals left out), the most severe state first."""
    shown = [p for p, r in enumerate(gs.md_rows) if r is not None and r not in g.totals]
    return [shown[i] for i in _severity_order([rows[p]["state"] for p in shown])]


def _trace_meta(
    g: Group, opts: PublishOptions, copied: set[str] | None
) -> tuple[list[list[Any]], str | None]:
    """``[commit index, path]`` of each commit's trace of this group that the page can link
    (a trace URL is set, or this publish copied the file), and the URL template."""
    trace_url = opts.trace_url
    if trace_url is None and copied:
        # The copies this publish made; workload pages live at m/<machine>/<page>.html.
        trace_url = "../../traces/{path}"
    traces: list[list[Any]] = []
    if g.trace_key is None:
        return traces, trace_url
    md = g.machine
    for j in sorted(md.traces):
        p = md.traces[j].get(g.trace_key)
        if p and (opts.trace_url is not None or (copied is not None and p in copied)):
            traces.append([j, p])
    return traces, trace_url


def page_meta(gs: GroupSeries, g: Group, v: View, cps: CPIndex, opts: PublishOptions,
              copied: set[str] | None) -> dict[str, Any]:  # fmt: skip
    """The JSON the workload page's script reads (besides the data files)."""
    md = g.machine
    col = {c: i for i, c in enumerate(md.commits)}
    rows = [_row_meta(gs, g, v, cps, col, pos) for pos in range(len(gs.md_rows))]
    stacks = [
        {"title": st.title, "layers": [{"row": p, "colour": c} for p, c in st.layers],
         "y": _stack_axis(gs, st)}
        for st in gs.stacks
    ]  # fmt: skip
    traces, trace_url = _trace_meta(g, opts, copied)
    nw = v.newest
    return {
        "id": g.gid,
        "machine": md.name,
        "title": g.title,
        "n": len(md.commits),
        "rows": rows,
        "totals": _totals_meta(g),
        "stacks": stacks,
        "order": _order_meta(gs, g, rows),
        "changePoints": _cp_meta(gs, g, cps, col),
        "newest": (
            {"index": len(md.commits) - 1, "parent": nw.parent} if nw.doc is not None else None
        ),
        "envChanges": [
            {"index": j, "changes": [[k, b or "", a or ""] for k, b, a in diff]}
            for j, diff in md.env_changes()
        ],
        "traces": traces,
        "commitUrl": opts.commit_url,
        "traceUrl": trace_url,
    }


def _chart_section(title: str, node_id: str) -> str:
    return f'<section><h2>{h(title)}</h2><div id="{node_id}" class="chart"></div></section>'


def workload_page(
    g: Group,
    gs: GroupSeries,
    v: View,
    cps: CPIndex,
    opts: PublishOptions,
    n_chunks: int,
    copied: set[str] | None = None,
) -> str:
    md = g.machine
    meta = page_meta(gs, g, v, cps, opts, copied)
    lead = g.lead
    badge = ""
    if lead is not None:
        c = v.compared.get(lead)
        ch = c.change if c is not None else ""
        nz = noise_badge_data(v.noise[lead])
        badge = (
            f" {state_badge(v.states[lead])}"
            + (f' <span class="chg">{h(ch)} vs parent</span>' if ch else "")
            + f' <span class="nz nz-{h(nz["cls"])}" title="{h(nz["title"])}">{h(nz["text"])}</span>'
        )
    chunks = [f"{g.slug}/c{k:05d}.js" for k in range(n_chunks)]
    sections = (
        "".join(
            _chart_section(t["title"], f"chart-total-{i}") for i, t in enumerate(meta["totals"])
        )
        or "<section><p>No workload total in this group; see the series below.</p></section>"
    )
    stacks = "".join(
        _chart_section(st["title"], f"chart-stack-{i}") for i, st in enumerate(meta["stacks"])
    )
    body = (
        f"<h1>{h(g.title)} <small>on {h(md.name)}</small>{badge}</h1>"
        '<p class="hint">Median per commit with the interquartile band, from asv\'s result of'
        " each commit's run; the newest commit and its parent are drawn at the comparison's"
        " values (the numbers of the PR comment and the index), marked by a ring. Red lines:"
        " regressions (dashed: the newest commit's suspect regression against its parent),"
        f" dashed amber: more work or {_MORE_WORDS} at the newest commit, green:"
        " improvements, dashed purple: environment changes; a series measured once is a"
        " point. Each metric has its own charts, never another's axis. Drag to zoom,"
        " double-click to reset, click a commit for details.</p>"
        + sections
        + '<section id="details" class="details"><em>Click a commit on a chart.</em></section>'
        + stacks
        + '<section><h2>Per-op series</h2><div id="ops" class="grid"></div></section>'
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
