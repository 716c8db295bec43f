"""Write the static history site: index, one page per workload, regressions, feeds.

Layout of ``out``::

    index.html              every series per machine: latest value, sparkline, state
    regressions.html/.json/.atom
    assets/                 uPlot (MIT, vendored, 51 kB) + site.css/js
    m/<machine>/<group>.html          workload page (metadata embedded as JSON)
    m/<machine>/<group>/cNNNNN.js     data, CHUNK commits per file: NASV.chunk(<strict JSON>)

Why ``.js`` data files: browsers refuse ``fetch()`` of ``file://`` URLs, but load
``<script src>`` from disk, so a page works opened from the file system and on Pages.
The payload inside is strict JSON (``allow_nan=False``) with values as integers times a
per-series scale (5 significant digits): smaller and several times faster to write than
float text.

Incremental: a chunk holds a fixed commit range, so a new commit changes only the last
chunk of each group. Each written file's input digest (the exact arrays and commits it is
made of) is kept in ``.neuronasv-manifest.json``; a file whose digest is unchanged and
still on disk is not rendered again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from importlib import resources
from typing import Any

import numpy as np

from neuronasv.analyse.rowstate import ensure_states
from neuronasv.analyse.states import (
    ALARMS,
    STATES,
    Coverage,
    change_text,
    coverage_of,
    series_state,
)
from neuronasv.errors import UsageError
from neuronasv.fileio import confined_path, is_temp_of, write_atomic
from neuronasv.format import format_delta_pct, format_value, pct_number
from neuronasv.model import ChangePoint, Finding, FindingsDocument, SeriesId
from neuronasv.model.profile import module_series_path
from neuronasv.publish import render
from neuronasv.publish.feeds import atom_feed, regressions_json
from neuronasv.publish.render import h, script_json, sparkline_svg
from neuronasv.publish.sitedata import MachineData, SiteData
from neuronasv.report.rowwords import state_words
from neuronasv.samples import NOISE_THRESHOLD

__all__ = [
    "CHUNK",
    "PublishOptions",
    "PublishReport",
    "check_site_folder",
    "noise_levels",
    "publish_site",
    "series_states",
]

CHUNK = 1000  # commits per data file
_FORMAT = "site-1"  # part of every digest: bump when the output format changes
_MANIFEST = ".neuronasv-manifest.json"
# What a site folder may hold before the manifest exists (a run that stopped early).
_OWN_BEFORE_MANIFEST = frozenset({".neuronasv-cache", _MANIFEST + ".tmp"})
# The only files a clean-up may delete: data chunks as _chunk_js names them.
_CHUNK_PATH = re.compile(r"m/[A-Za-z0-9._-]+/[A-Za-z0-9._-]+/c[0-9]{5}\.js")
_CHUNK_HEAD = b"NASV.chunk("
_ASSETS = ("uPlot.iife.min.js", "uPlot.min.css", "uPlot.LICENSE", "site.css", "site.js")
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
class PublishReport:
    """What a publish did (printed by the command; used by tests and the bench)."""

    written: list[str] = field(default_factory=list)
    skipped: int = 0
    pages: int = 0
    series: int = 0


@dataclass
class _Group:
    machine: MachineData
    gid: str
    title: str
    slug: str
    rows: list[int]
    total: int | None
    trace_key: str | None


def _slug(text: str, key: str) -> str:
    base = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")[:60] or "x"
    return f"{base}-{hashlib.sha1(key.encode(), usedforsecurity=False).hexdigest()[:8]}"


def _groups(md: MachineData) -> list[_Group]:
    by: dict[tuple[Any, ...], list[int]] = {}
    for r, s in enumerate(md.series):
        sid = s.series
        key = (
            (s.env_name, "w", sid.workload, sid.shape, sid.dtype)
            if sid.workload
            else (s.env_name, "b", sid.benchmark)
        )
        by.setdefault(key, []).append(r)
    envs = {s.env_name for s in md.series}
    out: list[_Group] = []
    for key, rows in sorted(by.items(), key=lambda kv: [str(x) for x in kv[0]]):
        sid = md.series[rows[0]].series
        if key[1] == "w":
            title = " ".join(x for x in (sid.workload, sid.shape, sid.dtype) if x)
            trace_key = f"{sid.workload}[{sid.shape},{sid.dtype}]"
            total = next((r for r in rows if md.series[r].series.op is None), None)
        else:
            title, trace_key, total = sid.benchmark, None, None
        if len(envs) > 1:
            title += f" ({key[0]})"
        rows.sort(key=lambda r: (r != total, *_row_order(md, md.series[r].series)))
        gid = json.dumps([md.name, *[str(x) for x in key]])
        out.append(_Group(md, gid, title, _slug(title, gid), rows, total, trace_key))
    return out


def _module_of(md: MachineData, sid: SeriesId) -> str | None:
    """The module a row sits under: a module's own path, an op's main module, or None."""
    path = module_series_path(sid.op)
    if path is not None:
        return path
    if sid.op is None or sid.workload is None:
        return None
    return md.op_modules.get((sid.workload, sid.shape or "", sid.dtype or "", sid.op))


def _row_order(md: MachineData, sid: SeriesId) -> tuple[Any, ...]:
    """Module rows in tree order, each followed by the ops mostly in it; then the rest."""
    path = _module_of(md, sid)
    is_module = module_series_path(sid.op) is not None
    if path is None or (not is_module and not path):
        return (1, (), 0, sid.op or "", sid.params)
    return (0, tuple(path.split(".")), int(not is_module), sid.op or "", sid.params)


def _row_label(md: MachineData, r: int, g: _Group) -> str:
    sid = md.series[r].series
    if g.trace_key is not None:
        path = module_series_path(sid.op)
        if path is not None:  # a module: indented by its depth, ▸ marks it
            return "\u2003" * path.count(".") + f"▸ {path}"
        module = _module_of(md, sid)
        if module:  # an op nested beneath its module
            return "\u2003" * (module.count(".") + 1) + (sid.op or "")
        return sid.op or "total"
    return ", ".join(sid.params) or sid.benchmark


def _cp_key(machine: str, sid: SeriesId) -> tuple[str, str, tuple[str, ...]]:
    return (machine, sid.benchmark, sid.params)


CPIndex = Mapping[tuple[str, str, tuple[str, ...]], list[ChangePoint]]


@dataclass
class _Newest:
    """One machine's newest-commit check, matched to the site's rows."""

    doc: FindingsDocument | None
    by_key: dict[tuple[str, str, tuple[str, ...]], Finding]
    parent: int | None  # commit index of the parent on this machine
    note: str  # why there is no check ("" when there is one)

    def finding(self, machine: str, sid: SeriesId) -> Finding | None:
        return self.by_key.get(_cp_key(machine, sid))


def _newest_for(md: MachineData, docs: list[FindingsDocument]) -> _Newest:
    """The check of ``md``'s newest commit among ``docs`` (compare or history documents)."""
    notes = []
    for doc in docs:
        nw = doc.settings.get("newest")
        if isinstance(nw, dict) and not nw.get("checked") and nw.get("note"):
            if any(c.machine == md.name for c in coverage_of(doc)):
                notes.append(str(nw["note"]))  # regressions said why it did not compare
            continue
        if doc.base is None or doc.head is None or doc.head.machine != md.name:
            continue
        if doc.mode == "history" and not (isinstance(nw, dict) and nw.get("checked")):
            continue
        if not md.commits or doc.head.commit != md.commits[-1]:
            notes.append(
                f"the findings compare {doc.head.commit[:12]}, not the newest commit here"
                f" ({md.commits[-1][:12] if md.commits else 'none'}): not shown"
            )
            continue
        by_key = {_cp_key(md.name, f.series): f for f in doc.findings}
        parent = md.commits.index(doc.base.commit) if doc.base.commit in md.commits else None
        return _Newest(doc, by_key, parent, "")
    if not notes:
        notes.append(
            "no comparison of the newest commit with its parent in the findings"
            if docs
            else "no findings given"
        )
    return _Newest(None, {}, None, "; ".join(notes))


def series_states(md: MachineData, cps: CPIndex, newest: _Newest | None = None) -> list[str]:
    """State per row (:func:`neuronasv.analyse.newest.series_state`): ``regression`` (open
    change point), ``confirmed``/``suspect`` (the newest commit against its parent),
    ``failed``, ``acknowledged``, ``improved``, ``ok``. Noise is a level
    (:func:`noise_levels`), not a state."""
    out: list[str] = []
    for s in md.series:
        f = newest.finding(md.name, s.series) if newest is not None else None
        out.append(series_state(cps.get(_cp_key(md.name, s.series), []), f))
    return out


def noise_levels(md: MachineData) -> list[float | None]:
    """Per row: median IQR/median over its last 10 values (None without quartiles)."""
    out: list[float | None] = []
    for r in range(len(md.series)):
        v = md.value[r]
        idx = np.flatnonzero(np.isfinite(v))[-10:]
        level = None
        if idx.size:
            with np.errstate(invalid="ignore", divide="ignore"):
                rel = (md.q75[r, idx] - md.q25[r, idx]) / v[idx]
            rel = rel[np.isfinite(rel)]
            if rel.size:
                level = float(np.median(rel))
        out.append(level)
    return out


def _noise_badge(level: float | None) -> str:
    if level is None:
        return '<span class="nz nz-none" title="no quartiles recorded">–</span>'
    cls = "low" if level < QUIET else ("mid" if level < NOISE_THRESHOLD else "high")
    pct = pct_number(level)
    return (
        f'<span class="nz nz-{cls}" title="noise: within-run IQR/median, median of the last'
        f' 10 commits">IQR {pct} %</span>'
    )


def _ints(a: np.ndarray, scale: float) -> list[int | None]:
    q = np.rint(a.astype(np.float64) / scale)
    bad = ~np.isfinite(q)
    lst: list[int | None] = np.where(bad, 0, q).astype(np.int64).tolist()
    for i in np.flatnonzero(bad).tolist():
        lst[i] = None
    return lst


def _scale(a: np.ndarray) -> float:
    fin = np.abs(a[np.isfinite(a)])
    fin = fin[fin > 0]
    if not fin.size:
        return 1.0
    return float(10.0 ** (math.floor(math.log10(float(np.median(fin)))) - 4))


class _Writer:
    """Writes files under ``out`` unless their recorded input digest is unchanged."""

    def __init__(self, out: str, report: PublishReport) -> None:
        self.out = out
        self.report = report
        self.path = os.path.join(out, _MANIFEST)
        try:
            with open(self.path, encoding="utf-8") as fh:
                old = json.load(fh)
            self.old: dict[str, str] = old if isinstance(old, dict) else {}
        except (OSError, ValueError):
            self.old = {}
        self.new: dict[str, str] = {}
        self.root = os.path.realpath(out)
        if not os.path.exists(self.path):
            # Mark the folder as the site's before anything else lands in it, so a run
            # that stops half-way leaves a folder the next publish recognises.
            self._dump({})

    def _dump(self, manifest: Mapping[str, str]) -> None:
        write_atomic(self.path, json.dumps(dict(manifest), sort_keys=True))

    def fresh(self, rel: str, digest: str) -> bool:
        """True (and remembered) when ``rel`` on disk already has this digest."""
        if self.old.get(rel) == digest and os.path.exists(os.path.join(self.out, rel)):
            self.new[rel] = digest
            self.report.skipped += 1
            return True
        return False

    def write(self, rel: str, text: str | bytes, digest: str | None = None) -> None:
        path = os.path.join(self.out, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        parent = os.path.realpath(os.path.dirname(path))
        if os.path.commonpath([self.root, parent]) != self.root:
            raise UsageError(f"refusing to write {rel}: its folder leads outside {self.out}")
        data = text.encode("utf-8") if isinstance(text, str) else text
        write_atomic(path, data)
        self.report.written.append(rel)
        if digest is not None:
            self.new[rel] = digest

    def close(self) -> None:
        self._dump(self.new)


def _chunk_js(g: _Group, k: int) -> tuple[str, Callable[[], str]]:
    """(digest, render) of chunk ``k`` of group ``g``; rendering is deferred."""
    md = g.machine
    lo_c, hi_c = k * CHUNK, min(len(md.commits), (k + 1) * CHUNK)
    rows = np.asarray(g.rows)
    v, q1, q3 = md.value[rows, lo_c:hi_c], md.q25[rows, lo_c:hi_c], md.q75[rows, lo_c:hi_c]
    hsh = hashlib.blake2b(digest_size=16)
    hsh.update(f"{_FORMAT}\x00{g.gid}\x00{k}\x00".encode())
    hsh.update("\n".join(md.commits[lo_c:hi_c]).encode())
    for arr in (md.dates[lo_c:hi_c], v, q1, q3):
        hsh.update(np.ascontiguousarray(arr).tobytes())

    def make() -> str:
        scales = [_scale(v[i]) for i in range(len(rows))]
        data = {
            "start": lo_c,
            "commits": [c[:12] for c in md.commits[lo_c:hi_c]],
            "dates": md.dates[lo_c:hi_c].tolist(),
            "scale": scales,
            "v": [_ints(v[i], s) for i, s in enumerate(scales)],
            "lo": [_ints(q1[i], s) for i, s in enumerate(scales)],
            "hi": [_ints(q3[i], s) for i, s in enumerate(scales)],
        }
        return f"NASV.chunk({script_json(g.gid)},{script_json(data)});\n"

    return hsh.hexdigest(), make


def _latest(v: np.ndarray) -> float | None:
    idx = np.flatnonzero(np.isfinite(v))
    return float(v[idx[-1]]) if idx.size else None


@dataclass
class _View:
    """Everything one machine's pages show, computed once."""

    md: MachineData
    groups: list[_Group]
    states: list[str]
    noise: list[float | None]
    newest: _Newest
    coverage: Coverage | None  # None: no change-point findings given

    def finding(self, r: int) -> Finding | None:
        return self.newest.finding(self.md.name, self.md.series[r].series)


def _severity(state: str) -> int:
    return STATES.index(state) if state in STATES else len(STATES)


def _state_badge(state: str) -> str:
    return f'<span class="st st-{h(state)}">{h(state)}</span>'


def _newest_html(v: _View, commit_link: Callable[[str], str]) -> str:
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


#: What a trace path from a sidecar may look like to be copied or linked: plain folder and
#: file names (``<machine>/<hash8>/<stem>.json.gz``), nothing that climbs or hides.
_TRACE_PART = r"[A-Za-z0-9_][A-Za-z0-9._+@-]{0,199}"
_TRACE_PATH = re.compile(rf"{_TRACE_PART}(/{_TRACE_PART}){{0,7}}")


def _copy_traces(w: _Writer, data: SiteData, traces_dir: str) -> set[str]:
    """Copy every trace a sidecar names from ``traces_dir`` into the site's ``traces/``.

    Returns the paths copied (or already there unchanged). A path that is not plain
    (:data:`_TRACE_PATH`), a missing file or a path through a symbolic link is skipped.
    """
    root = os.path.realpath(traces_dir)
    done: set[str] = set()
    for md in data.machines:
        for per_commit in md.traces.values():
            for rel in per_commit.values():
                if rel in done or not _TRACE_PATH.fullmatch(rel) or ".." in rel.split("/"):
                    continue
                # No symbolic link anywhere below the store is followed (fileio).
                src = confined_path(root, tuple(rel.split("/")))
                if src is None or not os.path.isfile(src):
                    continue
                st = os.stat(src)
                digest = f"trace\x00{st.st_size}\x00{st.st_mtime_ns}"
                dest = f"traces/{rel}"
                if not w.fresh(dest, digest):
                    with open(src, "rb") as fh:
                        w.write(dest, fh.read(), digest)
                done.add(rel)
    return done


def _peak_text(f: Finding | None) -> str:
    """``80 % of peak (compute)`` of an op at the newest commit (vs its parent), or ""."""
    if f is None or f.series.op is None:
        return ""
    from neuronasv.report.causes import of_peak

    return of_peak(f.roofline_base, f.roofline_head, f.roofline_bound)


def _workload_page(
    g: _Group,
    v: _View,
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
        for c in cps.get(_cp_key(md.name, s.series), []):
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


def _series_row(v: _View, r: int, label: str, cps: CPIndex, col: Mapping[str, int], *,
                cls: str, extra: str = "", badge: str | None = None) -> str:  # fmt: skip
    md = v.md
    s = md.series[r]
    vals = md.value[r]
    tail = vals[-120:]
    off = len(vals) - len(tail)
    mine = [
        c
        for c in cps.get(_cp_key(md.name, s.series), [])
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


def _group_html(v: _View, g: _Group, href: str, cps: CPIndex, col: Mapping[str, int]) -> str:
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


def _index_page(
    data: SiteData,
    views: Sequence[_View],
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
        mslug = _slug(md.name, md.name)
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


def _regressions_page(
    doc: FindingsDocument | None,
    views: Sequence[_View],
    page_of: Callable[[ChangePoint], str | None],
    page_for: Mapping[tuple[str, str, tuple[str, ...]], str],
    commit_link: Callable[[str], str],
) -> str:
    newest_rows = []
    for v in views:
        nw = v.newest
        if nw.doc is None or nw.doc.base is None or nw.doc.head is None:
            continue
        for r, st in enumerate(v.states):
            f = v.finding(r)
            if f is None or st not in ("confirmed", "suspect", "more-work", "failed"):
                continue
            key = _cp_key(v.md.name, f.series)
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
    newest_html = (
        "<h2>Newest commit vs its parent</h2>" + notes
        + (
            '<table class="series"><thead><tr><th>state</th><th>series</th><th>machine</th>'
            "<th>change</th><th>commits</th></tr></thead>"
            f"<tbody>{''.join(t[2] for t in newest_rows)}</tbody></table>"
            if newest_rows
            else ""
        )
    )  # fmt: skip
    if doc is None:
        body = (
            "<h1>Regressions</h1><p>No change-point findings were given: run "
            "<code>neuronasv regressions --format json &gt; findings.json</code> and publish with "
            "<code>--findings findings.json</code>"
            " (or <code>--detect</code> for small histories).</p>" + newest_html
        )
        return render.page("Regressions", body, root="", scripts=["assets/site.js"])
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
            f"<td>{h(cp.reason)}{ack}</td></tr>"
        )
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


def check_site_folder(out: str | os.PathLike[str]) -> None:
    """Refuse to publish into a folder that holds files no ``neuronasv publish`` wrote.

    A folder is the site's when it does not exist yet, is empty, or holds the manifest an
    earlier publish left there. Anything else (a checkout, a folder with its own
    ``index.html``) would have files overwritten or deleted: :class:`UsageError`.
    """
    path = os.fspath(out)
    if not os.path.exists(path):
        return
    if not os.path.isdir(path):
        raise UsageError(f"--out {path} exists and is not a folder")
    if os.path.isfile(os.path.join(path, _MANIFEST)):
        return
    names = os.listdir(path)
    foreign = sorted(n for n in names if n not in _OWN_BEFORE_MANIFEST)
    foreign = [n for n in foreign if not is_temp_of(n, _MANIFEST)]  # a write cut short
    if foreign:
        shown = ", ".join(foreign[:5]) + (" ..." if len(foreign) > 5 else "")
        raise UsageError(
            f"--out {path} holds files neuronasv publish did not write ({shown});"
            " refusing to overwrite or delete them",
            hint="publish into a new or empty folder (or one an earlier publish wrote)",
        )


def _is_own_chunk(outdir: str, rel: str) -> bool:
    """True when ``rel`` (a manifest key) is one of our data chunks inside ``outdir``."""
    if not _CHUNK_PATH.fullmatch(rel):
        return False
    root = os.path.realpath(outdir)
    path = os.path.realpath(os.path.join(outdir, rel))
    if os.path.commonpath([root, path]) != root or os.path.islink(os.path.join(outdir, rel)):
        return False
    try:
        with open(path, "rb") as fh:
            return fh.read(len(_CHUNK_HEAD)) == _CHUNK_HEAD
    except OSError:
        return False


def _copy_assets(w: _Writer) -> None:
    pkg = resources.files("neuronasv.publish") / "assets"
    for name in _ASSETS:
        data = (pkg / name).read_bytes()
        digest = hashlib.blake2b(data, digest_size=16).hexdigest()
        rel = f"assets/{name}"
        if not w.fresh(rel, digest):
            w.write(rel, data, digest)


def _as_list(
    findings: FindingsDocument | Sequence[FindingsDocument] | None,
) -> list[FindingsDocument]:
    if findings is None:
        return []
    if isinstance(findings, FindingsDocument):
        return [findings]
    return list(findings)


def _feed_doc(docs: list[FindingsDocument], load_errors: Sequence[str]) -> FindingsDocument:
    """``regressions.json``: the one history document as given; several: merged."""
    hist = [d for d in docs if d.mode == "history"]
    if len(hist) == 1:
        return hist[0]
    if not hist:
        return FindingsDocument(
            mode="history", base=None, head=None, load_errors=tuple(load_errors)
        )
    # several machines: change points, coverage and load errors of all; the newest-commit
    # comparisons stay per machine in the HTML (a finding carries no machine name)
    return replace(
        hist[0],
        base=None,
        head=None,
        findings=(),
        change_points=tuple(c for d in hist for c in d.change_points),
        load_errors=tuple(e for d in hist for e in d.load_errors),
        settings={
            **hist[0].settings,
            "coverage": [c.to_json() for d in hist for c in coverage_of(d)],
            "newest": {"checked": False, "note": "several documents: see each machine's page"},
        },
    )


def publish_site(
    data: SiteData,
    out: str | os.PathLike[str],
    *,
    findings: FindingsDocument | Sequence[FindingsDocument] | None = None,
    options: PublishOptions = PublishOptions(),
) -> PublishReport:
    """Write (or update) the site for ``data`` under ``out``.

    Args:
        data: columnar history (from :func:`~neuronasv.publish.scan.scan_results`).
        out: output folder (created); ``index.html`` lands at its root.
        findings: ``neuronasv regressions`` documents (change points, coverage and the
            newest commit against its parent; one per machine, or one for all) and/or
            compare/confirm documents of a machine's newest commit. None: no states.
        options: links and titles.
    """
    outdir = os.fspath(out)
    check_site_folder(outdir)
    os.makedirs(outdir, exist_ok=True)
    report = PublishReport()
    w = _Writer(outdir, report)
    _copy_assets(w)
    docs = [ensure_states(d) for d in _as_list(findings)]  # documents older than row states
    hist_docs = [d for d in docs if d.mode == "history"]
    cps: dict[tuple[str, str, tuple[str, ...]], list[ChangePoint]] = {}
    for d in hist_docs:
        for cp in d.change_points:
            cps.setdefault(_cp_key(cp.machine, cp.series), []).append(cp)
    recorded = {c.machine: c for d in hist_docs for c in coverage_of(d)}
    views = []
    for md in data.machines:
        newest = _newest_for(md, docs)
        coverage = recorded.get(md.name, Coverage(md.name, len(md.commits))) if hist_docs else None
        views.append(
            _View(md, _groups(md), series_states(md, cps, newest), noise_levels(md), newest,
                  coverage)
        )  # fmt: skip
    copied = _copy_traces(w, data, options.traces_dir) if options.traces_dir else None
    page_for: dict[tuple[str, str, tuple[str, ...]], str] = {}
    for v in views:
        md = v.md
        mslug = _slug(md.name, md.name)
        n_chunks = max(1, math.ceil(len(md.commits) / CHUNK))
        for g in v.groups:
            rel_page = f"m/{mslug}/{g.slug}.html"
            for r in g.rows:
                page_for[_cp_key(md.name, md.series[r].series)] = rel_page
            for k in range(n_chunks):
                rel = f"m/{mslug}/{g.slug}/c{k:05d}.js"
                digest, make = _chunk_js(g, k)
                if not w.fresh(rel, digest):
                    w.write(rel, make(), digest)
            w.write(rel_page, _workload_page(g, v, cps, options, n_chunks, copied))
            report.pages += 1
        report.series += len(md.series)

    base = options.base_url.rstrip("/") + "/" if options.base_url else ""

    def page_of(cp: ChangePoint) -> str | None:
        return page_for.get(_cp_key(cp.machine, cp.series))

    def commit_link(c: str) -> str:
        if options.commit_url:
            return (
                f'<a href="{h(options.commit_url.replace("{commit}", c))}">'
                f"<code>{h(c[:12])}</code></a>"
            )
        return f"<code>{h(c[:12])}</code>"

    w.write("index.html", _index_page(data, views, cps, options, commit_link))
    doc = _feed_doc(docs, data.load_errors)
    w.write(
        "regressions.html",
        _regressions_page(doc if hist_docs else None, views, page_of, page_for, commit_link),
    )
    w.write("regressions.json", regressions_json(doc))
    dates = {
        (md.name, c): int(d)
        for md in data.machines
        for c, d in zip(md.commits, md.dates.tolist(), strict=False)
        if d
    }
    w.write(
        "regressions.atom",
        atom_feed(
            doc,
            feed_url=(base or "urn:neuronasv:") + "regressions.atom",
            site_url=(base or "") + "index.html",
            page_url=lambda cp: (base + p) if (p := page_of(cp)) else None,
            commit_dates=dates,
            now=options.now or datetime.now(timezone.utc),
            title=f"{options.title}: regressions",
        ),
    )
    # drop data files of groups/chunks that no longer exist (kept nothing stale); the
    # manifest is only a list of candidates: a file is deleted only when it is one of our
    # chunks by name, location and content (a planted manifest cannot point elsewhere)
    for rel in sorted(set(w.old) - set(w.new)):
        if _is_own_chunk(outdir, rel):
            with contextlib.suppress(OSError):
                os.remove(os.path.join(outdir, rel))
    w.close()
    return report
