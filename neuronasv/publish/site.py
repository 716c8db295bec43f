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
import json
import math
import multiprocessing as mp
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from datetime import datetime, timezone
from functools import partial
from typing import Any

import numpy as np

from neuronasv.analyse.states import Coverage, coverage_of, series_state
from neuronasv.keys import profile_key
from neuronasv.metrics import by_unit
from neuronasv.model import ChangePoint, FindingsDocument, SeriesId
from neuronasv.model.profile import module_series_path
from neuronasv.publish.compared import Compared, compared_of
from neuronasv.publish.feeds import atom_feed, regressions_json
from neuronasv.publish.output import (
    CHUNK,
    PublishReport,
    Writer,
    check_site_folder,
    chunk_count,
    chunk_js,
    copy_assets,
    copy_traces,
    is_own_chunk,
)
from neuronasv.publish.pages import (
    CPIndex,
    Group,
    Newest,
    PublishOptions,
    View,
    cp_key,
    index_page,
    module_of,
    regressions_page,
    slug,
)
from neuronasv.publish.render import h
from neuronasv.publish.sitedata import MachineData, SiteData
from neuronasv.publish.workload import group_series, workload_page

__all__ = [
    "CHUNK",
    "PublishOptions",
    "PublishReport",
    "check_site_folder",
    "noise_levels",
    "publish_site",
    "series_states",
]


def _groups(md: MachineData) -> list[Group]:
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
    out: list[Group] = []
    for key, rows in sorted(by.items(), key=lambda kv: [str(x) for x in kv[0]]):
        sid = md.series[rows[0]].series
        total = None
        exact: dict[str, int] = {}
        if key[1] == "w":
            title = " ".join(x for x in sid.config if x)
            trace_key = profile_key(*sid.config)
            # one total per axis: device time, and each exact metric counted
            totals = [r for r in rows if md.series[r].series.op is None]
            for r in totals:
                metric = by_unit(md.series[r].unit)
                if metric is not None:
                    exact.setdefault(metric.name, r)
            total = next((r for r in totals if r not in exact.values()), None)
        else:
            title, trace_key = sid.benchmark, None
        if len(envs) > 1:
            title += f" ({key[0]})"
        lead = [total, *exact.values()]
        rows.sort(
            key=lambda r: (
                lead.index(r) if r in lead else len(lead),
                *_row_order(md, md.series[r].series),
            )
        )
        gid = json.dumps([md.name, *[str(x) for x in key]])
        out.append(Group(md, gid, title, slug(title, gid), rows, total, trace_key, exact))
    return out


def _row_order(md: MachineData, sid: SeriesId) -> tuple[Any, ...]:
    """Module rows in tree order, each followed by the ops mostly in it; then the rest."""
    path = module_of(md, sid)
    is_module = module_series_path(sid.op) is not None
    if path is None or (not is_module and not path):
        return (1, (), 0, sid.op or "", sid.params)
    return (0, tuple(path.split(".")), int(not is_module), sid.op or "", sid.params)


def _newest_for(md: MachineData, docs: list[FindingsDocument]) -> Newest:
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
        by_key = {cp_key(md.name, f.series): f for f in doc.findings}
        parent = md.commits.index(doc.base.commit) if doc.base.commit in md.commits else None
        return Newest(doc, by_key, parent, "")
    if not notes:
        notes.append(
            "no comparison of the newest commit with its parent in the findings"
            if docs
            else "no findings given"
        )
    return Newest(None, {}, None, "; ".join(notes))


def compared_rows(md: MachineData, newest: Newest) -> dict[int, Compared]:
    """Row -> the newest commit's comparison as printed, for rows the comparison has."""
    if newest.doc is None or not md.commits:
        return {}
    head_col = len(md.commits) - 1
    out: dict[int, Compared] = {}
    for r, s in enumerate(md.series):
        f = newest.finding(md.name, s.series)
        if f is None:
            continue

        raw = [
            float(md.value[r, j]) if j is not None else math.nan
            for j in (newest.parent, head_col)
        ]
        out[r] = compared_of(
            f, newest.parent, head_col,
            *(x if math.isfinite(x) else None for x in raw),
        )  # fmt: skip
    return out


def series_states(md: MachineData, cps: CPIndex, newest: Newest | None = None) -> list[str]:
    """State per row (:func:`neuronasv.analyse.newest.series_state`): ``regression`` (open
    change point), ``confirmed``/``suspect`` (the newest commit against its parent),
    ``failed``, ``acknowledged``, ``improved``, ``ok``. Noise is a level
    (:func:`noise_levels`), not a state."""
    out: list[str] = []
    for s in md.series:
        f = newest.finding(md.name, s.series) if newest is not None else None
        out.append(series_state(cps.get(cp_key(md.name, s.series), []), f))
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


def _cp_index(hist_docs: Sequence[FindingsDocument]) -> CPIndex:
    """The history documents' change points by series (machine, benchmark, params)."""
    cps: dict[tuple[str, str, tuple[str, ...]], list[ChangePoint]] = {}
    for d in hist_docs:
        for cp in d.change_points:
            cps.setdefault(cp_key(cp.machine, cp.series), []).append(cp)
    return cps


def _views(data: SiteData, docs: list[FindingsDocument], cps: CPIndex) -> list[View]:
    """Each machine's view: groups, states, noise, newest check, coverage, comparisons."""
    hist_docs = [d for d in docs if d.mode == "history"]
    recorded = {c.machine: c for d in hist_docs for c in coverage_of(d)}
    views = []
    for md in data.machines:
        newest = _newest_for(md, docs)
        coverage = recorded.get(md.name, Coverage(md.name, len(md.commits))) if hist_docs else None
        views.append(
            View(md, _groups(md), series_states(md, cps, newest), noise_levels(md), newest,
                 coverage, compared_rows(md, newest))
        )  # fmt: skip
    return views


def _write_machine(
    w: Writer, v: View, cps: CPIndex, options: PublishOptions, copied: set[str] | None,
    workers: int,
) -> dict[tuple[str, str, tuple[str, ...]], str]:  # fmt: skip
    """Write one machine's workload pages and their data chunks (a chunk whose digest is
    unchanged is kept); returns each series' page."""
    md = v.md
    mslug = slug(md.name, md.name)
    n_chunks = chunk_count(len(md.commits))
    page_for: dict[tuple[str, str, tuple[str, ...]], str] = {}
    targets: list[tuple[str, list[tuple[str, str]]]] = []  # page, its stale chunks
    jobs: list[Callable[[], tuple[list[str], str]]] = []
    for g in v.groups:
        rel_page = f"m/{mslug}/{g.slug}.html"
        for r in g.rows:
            page_for[cp_key(md.name, md.series[r].series)] = rel_page
        gs = group_series(g, v)
        stale: list[tuple[str, str]] = []
        makes: list[Callable[[], str]] = []
        for k in range(n_chunks):
            rel = f"m/{mslug}/{g.slug}/c{k:05d}.js"
            digest, make = chunk_js(g, gs, k)
            if not w.fresh(rel, digest):
                stale.append((rel, digest))
                makes.append(make)
        targets.append((rel_page, stale))
        page = partial(workload_page, g, gs, v, cps, options, n_chunks, copied)
        jobs.append(partial(_render_group, makes, page))
    for (rel_page, stale), (texts, page_text) in zip(
        targets, _rendered(jobs, workers), strict=True
    ):
        for (rel, digest), text in zip(stale, texts, strict=True):
            w.write(rel, text, digest)
        w.write(rel_page, page_text)
        w.report.pages += 1
    w.report.series += len(md.series)
    return page_for


def _render_group(makes: list[Callable[[], str]], page: Callable[[], str]) -> tuple[list[str], str]:
    """One workload's stale data files and its page, as text."""
    return [m() for m in makes], page()


#: The render jobs forked worker processes read (set only while their pool runs).
_JOBS: list[Callable[[], tuple[list[str], str]]] = []


def _run_job(i: int) -> tuple[list[str], str]:
    return _JOBS[i]()


def _rendered(
    jobs: list[Callable[[], tuple[list[str], str]]], workers: int
) -> Iterator[tuple[list[str], str]]:
    """Each job's text, in order. With ``workers`` > 1, several workloads and Linux (fork;
    elsewhere missing or unsafe with system frameworks), in forked processes: they inherit
    the matrices and views (nothing is pickled but the text coming back), and this process
    writes each group's files as they arrive. Otherwise (``--workers 1``, a small site,
    another system) here, one after another."""
    global _JOBS
    n = min(workers, len(jobs))
    if n < 2 or len(jobs) < _MIN_FORKED_JOBS or not sys.platform.startswith("linux"):
        yield from (job() for job in jobs)
        return
    _JOBS = jobs
    try:
        with ProcessPoolExecutor(max_workers=n, mp_context=mp.get_context("fork")) as pool:
            yield from pool.map(_run_job, range(len(jobs)))
    finally:
        _JOBS = []


#: Fewer workloads than this render in this process (a pool's start costs more).
_MIN_FORKED_JOBS = 8


_HEX = re.compile(r"[0-9a-f]{4,40}")


def _commit_link(commit_url: str | None, c: str) -> str:
    """A commit as short code, linked when the site has a commit URL template and ``c`` is
    a hash (hex digits only: a record's text never reaches a URL)."""
    if commit_url and _HEX.fullmatch(c):
        return (
            f'<a href="{h(commit_url.replace("{commit}", c))}">'
            f"<code>{h(c[:12])}</code></a>"
        )
    return f"<code>{h(c[:12])}</code>"


def _write_regressions(
    w: Writer,
    data: SiteData,
    docs: list[FindingsDocument],
    views: Sequence[View],
    page_for: dict[tuple[str, str, tuple[str, ...]], str],
    options: PublishOptions,
) -> None:
    """``regressions.html``, ``.json`` and the Atom feed (:func:`_feed_doc`)."""
    base = options.base_url.rstrip("/") + "/" if options.base_url else ""

    def page_of(cp: ChangePoint) -> str | None:
        return page_for.get(cp_key(cp.machine, cp.series))

    hist = any(d.mode == "history" for d in docs)
    doc = _feed_doc(docs, data.load_errors)
    commit_link = partial(_commit_link, options.commit_url)
    w.write(
        "regressions.html",
        regressions_page(doc if hist else None, views, page_of, page_for, commit_link),
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


def _drop_stale(w: Writer, outdir: str) -> None:
    """Drop data files of groups/chunks that no longer exist (kept nothing stale); the
    manifest is only a list of candidates: a file is deleted only when it is one of our
    chunks by name, location and content (a planted manifest cannot point elsewhere)."""
    for rel in sorted(set(w.old) - set(w.new)):
        if is_own_chunk(outdir, rel):
            with contextlib.suppress(OSError):
                os.remove(os.path.join(outdir, rel))


_DEFAULT_OPTIONS = PublishOptions()


def publish_site(
    data: SiteData,
    out: str | os.PathLike[str],
    *,
    findings: FindingsDocument | Sequence[FindingsDocument] | None = None,
    options: PublishOptions = _DEFAULT_OPTIONS,
    workers: int | None = None,
) -> PublishReport:
    """Write (or update) the site for ``data`` under ``out``.

    Args:
        data: columnar history (from :func:`~neuronasv.publish.scan.scan_results`).
        out: output folder (created); ``index.html`` lands at its root.
        findings: ``neuronasv regressions`` documents (change points, coverage and the
            newest commit against its parent; one per machine, or one for all) and/or
            compare/confirm documents of a machine's newest commit. None: no states.
        options: links and titles.
        workers: processes rendering the workload pages and data files (default: CPUs,
            at most 8; 1 = in this process). What is written does not depend on it.
    """
    outdir = os.fspath(out)
    check_site_folder(outdir)
    os.makedirs(outdir, exist_ok=True)
    report = PublishReport()
    w = Writer(outdir, report)
    copy_assets(w)
    docs = list(_as_list(findings))  # every row carries its state (findings schema 4)
    cps = _cp_index([d for d in docs if d.mode == "history"])
    views = _views(data, docs, cps)
    copied = copy_traces(w, data, options.traces_dir) if options.traces_dir else None
    page_for: dict[tuple[str, str, tuple[str, ...]], str] = {}
    n_workers = workers if workers is not None else min(os.cpu_count() or 1, 8)
    for v in views:
        page_for.update(_write_machine(w, v, cps, options, copied, n_workers))
    commit_link = partial(_commit_link, options.commit_url)
    w.write("index.html", index_page(data, views, cps, options, commit_link))
    _write_regressions(w, data, docs, views, page_for, options)
    _drop_stale(w, outdir)
    w.close()
    return report
