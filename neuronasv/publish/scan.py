"""Results folder -> :class:`~neuronasv.publish.sitedata.SiteData`, fast and cached per file.

Why not ``store.history.load_history``: it builds a ``Point`` per value (with samples)
for analysis — ~6 s and 210 MB at 1,000 commits × 1,000 series, ten times that at
10,000 commits. The site needs medians and quartiles only, so this reader keeps one
float row per file:

* per results file: asv's ``result``/``stats_q_25``/``stats_q_75`` columns as arrays, in the
  order of a *layout* (the file's (benchmark, params) keys and their sidecar ``SeriesId``);
  layouts repeat from commit to commit, so they are stored once, by content hash;
* the one asv results reader (``store.asvresults.AsvResultsReader``, the loader's):
  the same listing, header checks, row shapes, sidecar reading, unit rule and errors;
  JSON through msgspec with asv's bare NaN handled; a sidecar's series list validated
  once per distinct list, its op tables skipped. Only the values are read here (no
  samples), into numpy;
* a :class:`~neuronasv.publish.cache.ParseCache` keeps each file's row on disk: a publish
  after one new commit parses one file; parser processes write their own entries;
* files that must be parsed are parsed in a process pool;
* commit order from one ``git rev-list --topo-order --all`` (``Git.commit_order``;
  commits git does not know go last, by asv's commit date, as in the loader).

Semantics follow the loader: asv ``null`` (failed) and ``NaN`` (not applicable) both
become NaN here (no point drawn); a sidecar that cannot be read is a warning, and the
series then keep their asv names. The one difference: samples are not read, so a file
whose only fault is in its samples is drawn here and listed as unreadable by the loader.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import math
import os
from collections.abc import Iterable, Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from neuronasv.errors import CorruptResultsError, NeuronasvError, StoreError
from neuronasv.fileio import write_atomic
from neuronasv.model import SeriesId
from neuronasv.publish.cache import Codec, ParseCache, digest_bytes
from neuronasv.publish.sitedata import MachineData, SeriesInfo, SiteData
from neuronasv.store.asvresults import (
    Q25_COLUMN,
    Q75_COLUMN,
    AsvResultsReader,
    benchmark_units,
    result_paths,
    stat_key,
    unit_for,
)
from neuronasv.store.git import Git, git_for

__all__ = ["Summary", "git_order", "parse_summary", "scan_results", "summary_cache"]

log = logging.getLogger(__name__)

Layout = tuple[tuple[str, tuple[str, ...], "SeriesId | None"], ...]


@dataclass
class Summary:
    """What one results file (+ sidecar) gives the site: one value per layout key."""

    machine: str
    commit: str
    env_name: str
    date: int | None
    layout_id: str
    value: np.ndarray  # float64
    q25: np.ndarray  # float32
    q75: np.ndarray  # float32
    fingerprint: dict[str, str] | None
    traces: dict[str, str]
    warnings: list[str]


def _encode(s: Summary) -> bytes:
    head = {
        "machine": s.machine,
        "commit": s.commit,
        "env_name": s.env_name,
        "date": s.date,
        "layout": s.layout_id,
        "n": int(s.value.size),
        "fingerprint": s.fingerprint,
        "traces": s.traces,
        "warnings": s.warnings,
    }
    return (
        json.dumps(head, separators=(",", ":")).encode()
        + b"\n"
        + s.value.astype("<f8").tobytes()
        + s.q25.astype("<f4").tobytes()
        + s.q75.astype("<f4").tobytes()
    )


def _decode(b: bytes) -> Summary:
    head_raw, _, arr = b.partition(b"\n")
    h = json.loads(head_raw)
    n = int(h["n"])
    if len(arr) != n * 16:
        raise ValueError("payload size")
    return Summary(
        machine=str(h["machine"]),
        commit=str(h["commit"]),
        env_name=str(h["env_name"]),
        date=h["date"],
        layout_id=str(h["layout"]),
        value=np.frombuffer(arr, "<f8", n, 0),
        q25=np.frombuffer(arr, "<f4", n, n * 8),
        q75=np.frombuffer(arr, "<f4", n, n * 12),
        fingerprint=h["fingerprint"],
        traces=h["traces"],
        warnings=list(h["warnings"]),
    )


SUMMARY_CODEC: Codec[Summary] = Codec("publish.Summary", 1, _encode, _decode)


def summary_cache(directory: str | os.PathLike[str]) -> ParseCache[Summary]:
    """The disk cache the scan uses (entries under ``directory/publish.Summary``)."""
    return ParseCache(directory, SUMMARY_CODEC)


# -- layouts -------------------------------------------------------------------------


def _layout_json(layout: Layout) -> list[Any]:
    return [[b, list(p), sid.to_json() if sid else None] for b, p, sid in layout]


def _layout_from_json(data: Any, source: str) -> Layout:
    return tuple(
        (str(b), tuple(str(x) for x in p), SeriesId.from_json(s, source) if s else None)
        for b, p, s in data
    )


def _layout_id(layout: Layout) -> str:
    raw = json.dumps(_layout_json(layout), separators=(",", ":"), sort_keys=True)
    return hashlib.blake2b(raw.encode(), digest_size=12).hexdigest()


class _Layouts:
    """Layouts by id: in memory, and under ``<cache>/layouts`` when there is a cache."""

    def __init__(self, directory: str | None) -> None:
        self.directory = directory
        self.mem: dict[str, Layout] = {}

    def add(self, lid: str, layout: Layout) -> None:
        if lid in self.mem:
            return
        self.mem[lid] = layout
        if self.directory:
            os.makedirs(self.directory, exist_ok=True)
            path = os.path.join(self.directory, lid + ".json")
            if not os.path.exists(path):
                write_atomic(path, json.dumps(_layout_json(layout), separators=(",", ":")))

    def get(self, lid: str) -> Layout | None:
        if lid in self.mem:
            return self.mem[lid]
        if not self.directory:
            return None
        path = os.path.join(self.directory, lid + ".json")
        try:
            with open(path, encoding="utf-8") as fh:
                layout = _layout_from_json(json.load(fh), path)
        except (OSError, ValueError, TypeError, NeuronasvError):
            return None
        self.mem[lid] = layout
        return layout


# -- parsing one file ----------------------------------------------------------------

_PLAIN = {float, int, type(None), str}  # np.float64 takes these (str: NaN markers only)


def _num(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return math.nan
    return float(v)


def _floats(values: Any, n: int) -> np.ndarray:
    """asv's per-combination list as float64 (None/NaN/non-numbers -> NaN), length ``n``."""
    if not isinstance(values, list) or len(values) != n:
        return np.full(n, np.nan)
    try:
        # None -> NaN; the reader's "nan"/"inf"/"-inf" marker strings -> their floats
        out = np.array(values, dtype=np.float64)
        if out.shape == (n,):
            return out
    except (TypeError, ValueError):
        pass
    return np.array([_num(v) for v in values], dtype=np.float64)


def _column(cells: list[Any], sizes: list[int], dtype: type) -> np.ndarray | None:
    """Concatenated per-row lists (a row whose cell is not a list of ``n`` -> NaN).

    None when a value is not a plain number (``None``, a NaN marker): the caller decides.
    """
    flat: list[Any] = []
    for cell, n in zip(cells, sizes, strict=True):
        if isinstance(cell, list) and len(cell) == n:
            flat.extend(cell)
        else:
            flat.extend(itertools.repeat(None, n))
    if not set(map(type, flat)) <= _PLAIN:
        return None
    try:
        out = np.array(flat, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    if out.shape != (len(flat),):
        return None
    return out.astype(dtype, copy=False)


def _lenient(cells: list[Any], sizes: list[int], dtype: type) -> np.ndarray:
    """Row by row: a cell that is not a list of numbers becomes NaNs (quartile columns)."""
    parts = [_floats(c, n) for c, n in zip(cells, sizes, strict=True)]
    return (np.concatenate(parts) if parts else np.zeros(0)).astype(dtype, copy=False)


class SummaryParser:
    """Results files -> :class:`Summary` rows; owns its reader and memos (no globals).

    One per scan in this process, or one per worker process of the scan's pool (set up by
    the pool's initializer), so a worker hands each layout (1,000 SeriesIds) back once.
    """

    def __init__(self, cache_dir: str | None = None) -> None:
        self.reader = AsvResultsReader()
        self.cache = ParseCache(cache_dir, SUMMARY_CODEC) if cache_dir is not None else None
        # (combination keys of the rows, series map key) -> (layout id, layout)
        self._layouts: dict[tuple[tuple[int, ...], int], tuple[str, Layout]] = {}
        self.sent: set[str] = set()  # layout ids already handed back

    def parse(self, path: str, layouts: _Layouts | None = None) -> tuple[Summary, Layout, str]:
        """Parse one asv results file (and its sidecar) into a :class:`Summary` and its layout.

        The header, row shapes and sidecar are checked by the one reader
        (:class:`~neuronasv.store.asvresults.AsvResultsReader`), with the loader's errors.
        Values that are not plain numbers are checked the loader's way too (a string or a
        boolean value is an error, not a NaN); samples are not read here.

        Returns:
            ``(summary, layout, digest)``; ``digest`` is the content digest of the results
            file and sidecar as read (:func:`neuronasv.publish.cache.digest_bytes`).

        Raises:
            CorruptResultsError: not JSON, or not an asv results file.
            SchemaVersionError: an asv results ``version`` other than 2.
        """
        reader = self.reader
        raw, doc, marked = reader.read_json(path)  # markers are floats to numpy
        h = reader.header(doc, path, marked)
        names: list[str] = []
        combos_of: list[tuple[tuple[str, ...], ...]] = []
        ckeys: list[int] = []
        sizes: list[int] = []
        res_cells: list[Any] = []
        lo_cells: list[Any] = []
        hi_cells: list[Any] = []
        for name, row in h.results.items():
            cols, combos, ckey, res = reader.row_shape(name, row, h.columns, path)
            names.append(name)
            combos_of.append(combos)
            ckeys.append(ckey)
            sizes.append(len(combos))
            res_cells.append(res)
            lo_cells.append(cols.get(Q25_COLUMN))
            hi_cells.append(cols.get(Q75_COLUMN))
        value = _column(res_cells, sizes, np.float64)
        if value is None:  # something other than numbers: the loader's checks, its errors
            for name, row in h.results.items():
                reader.parse_row(name, row, h.columns, path, marked)
            value = _lenient(res_cells, sizes, np.float64)
        q25 = _column(lo_cells, sizes, np.float32)
        q75 = _column(hi_cells, sizes, np.float32)

        sidecar, smap, warn, sc_raw = reader.read_sidecar(path, profiles=False)
        memo_key = (tuple(ckeys), smap.key if smap is not None else -1)
        got = self._layouts.get(memo_key)
        if got is None:
            layout: Layout = tuple(
                (b, p, smap.get(b, p) if smap is not None else None)
                for b, combos in zip(names, combos_of, strict=True)
                for p in combos
            )
            got = (_layout_id(layout), layout)
            if len(self._layouts) > 64:
                self._layouts.clear()
            self._layouts[memo_key] = got
        lid, layout = got
        if layouts is not None:
            layouts.add(lid, layout)
        summary = Summary(
            machine=h.machine,
            commit=h.commit,
            env_name=h.env_name,
            date=h.date,
            layout_id=lid,
            value=value,
            q25=q25 if q25 is not None else _lenient(lo_cells, sizes, np.float32),
            q75=q75 if q75 is not None else _lenient(hi_cells, sizes, np.float32),
            fingerprint=dict(sidecar.fingerprint) if sidecar is not None else None,
            traces=dict(sidecar.traces) if sidecar is not None else {},
            warnings=[warn] if warn else [],
        )
        return summary, layout, digest_bytes(raw, sc_raw)

    def job(
        self, job: tuple[str, tuple[int, ...], str | None]
    ) -> tuple[str, bytes | None, Any, str | None]:
        """(path, encoded summary, layout JSON if new to the receiver, error) of one file.

        ``job`` is (path, stat key, cache directory or None); with a cache directory the
        entry is stored here (in the worker, in parallel, instead of one by one in the
        parent). ``pool.map`` keeps input order, so a layout sent with an earlier file
        has reached the parent before any later file that refers to it.
        """
        path, key, cache_dir = job
        try:
            s, layout, digest = self.parse(path)
        except (NeuronasvError, OSError) as exc:
            msg = str(exc)
            return path, None, None, msg if msg.startswith(path) else f"{path}: {msg}"
        payload = _encode(s)
        if cache_dir is not None:
            if self.cache is None or self.cache.base != cache_dir:
                self.cache = ParseCache(cache_dir, SUMMARY_CODEC)
            self.cache.put_encoded(path, key, payload, digest)
        fresh = s.layout_id not in self.sent
        self.sent.add(s.layout_id)
        return path, payload, _layout_json(layout) if fresh else None, None


def parse_summary(path: str, layouts: _Layouts | None = None) -> tuple[Summary, Layout, str]:
    """One file with a parser of its own (see :meth:`SummaryParser.parse`)."""
    return SummaryParser().parse(path, layouts)


# The pool's worker processes: one parser each, made by the initializer (a worker's
# state lives in the worker process; the scanning process never touches it).
_worker: SummaryParser | None = None


def _init_worker() -> None:
    global _worker
    _worker = SummaryParser()


def _parse_in_worker(
    job: tuple[str, tuple[int, ...], str | None],
) -> tuple[str, bytes | None, Any, str | None]:
    assert _worker is not None, "the pool's initializer makes the parser"
    return _worker.job(job)


# -- the folder ----------------------------------------------------------------------


def git_order(repo: str, commits: Iterable[str], git: Git | None = None) -> list[str]:
    """``commits`` oldest first by git (:meth:`Git.commit_order`); unknown: left out."""
    gw = git or git_for(repo)
    if gw is None:
        raise CorruptResultsError(f"{repo}: not a git repository")
    try:
        return gw.commit_order(commits)
    except StoreError as exc:
        raise CorruptResultsError(str(exc)) from exc


def scan_results(
    results_dir: str | os.PathLike[str],
    *,
    machine: str | None = None,
    repo: str | os.PathLike[str] | None = None,
    cache: ParseCache[Summary] | None = None,
    workers: int | None = None,
) -> SiteData:
    """Read every results file under ``results_dir`` into per-machine matrices.

    Args:
        results_dir: asv results folder.
        machine: only this machine.
        repo: git repository giving the commit order (else asv's commit dates).
        cache: per-file cache (see :func:`summary_cache`); None parses everything.
        workers: processes for files that must be parsed (default: CPUs, at most 8;
            1 = in this process).

    One INFO line per stage (this module's logger).
    """
    rdir = os.fspath(results_dir)
    layouts = _Layouts(os.path.join(cache.directory, "layouts") if cache else None)
    errors: list[str] = []
    summaries = _summaries(rdir, machine, cache, layouts, workers, errors)
    for s in summaries:
        errors.extend(s.warnings)
    by_machine: dict[str, list[Summary]] = {}
    for s in summaries:
        if machine is None or s.machine == machine:
            by_machine.setdefault(s.machine, []).append(s)
    order = _commit_order(repo, by_machine, errors)
    unit_of = benchmark_units(rdir)
    # benchmarks a sidecar names are neuronasv device time, in seconds (asvresults.unit_for)
    mapped = {
        b
        for lid in {s.layout_id for ss in by_machine.values() for s in ss}
        for b, _p, sid in (layouts.get(lid) or ())
        if sid is not None
    }
    machines = [
        _assemble(name, by_machine[name], layouts, order, unit_of, mapped, errors)
        for name in sorted(by_machine)
    ]
    return SiteData(machines=machines, load_errors=errors)


def _summaries(
    rdir: str,
    machine: str | None,
    cache: ParseCache[Summary] | None,
    layouts: _Layouts,
    workers: int | None,
    errors: list[str],
) -> list[Summary]:
    """Every results file's summary: from the cache when fresh, else parsed (in worker
    processes when there are many); unreadable files go to ``errors``."""
    summaries: list[Summary] = []
    todo: list[tuple[str, tuple[int, ...]]] = []
    for path in result_paths(rdir, machine):  # ResultsError when the folder is missing
        key = stat_key(path)
        s = cache.get(path, key) if cache is not None else None
        if s is not None and layouts.get(s.layout_id) is not None:
            summaries.append(s)
        else:
            todo.append((path, key))
    log.info("%d results files from cache, %d to parse", len(summaries), len(todo))
    n_workers = workers if workers is not None else min(os.cpu_count() or 1, 8)
    base = cache.base if cache is not None else None
    jobs = [(p, k, base) for p, k in todo]
    results: Iterable[tuple[str, bytes | None, Any, str | None]]
    if n_workers > 1 and len(todo) >= 64:
        with ProcessPoolExecutor(max_workers=n_workers, initializer=_init_worker) as pool:
            results = list(pool.map(_parse_in_worker, jobs, chunksize=16))
    else:
        results = map(SummaryParser().job, jobs)
    for path, payload, layout_json, err in results:
        if err is not None or payload is None:
            errors.append(err or f"{path}: unreadable")
            continue
        s = _decode(payload)
        if layouts.get(s.layout_id) is None:
            if layout_json is None:  # pragma: no cover - see SummaryParser.job
                errors.append(f"{path}: layout {s.layout_id} lost between processes")
                continue
            layouts.add(s.layout_id, _layout_from_json(layout_json, path))
        if cache is not None:
            cache.stats.writes += 1  # the worker wrote the entry
        summaries.append(s)
    return summaries


def _commit_order(
    repo: str | os.PathLike[str] | None,
    by_machine: Mapping[str, list[Summary]],
    errors: list[str],
) -> dict[str, int]:
    """Commit -> position in git's order (empty without a repo, or when git cannot say)."""
    if repo is None or not by_machine:
        return {}
    try:
        wanted = {s.commit for ss in by_machine.values() for s in ss}
        return {c: i for i, c in enumerate(git_order(os.fspath(repo), wanted))}
    except CorruptResultsError as exc:
        errors.append(f"commit order: {exc}; falling back to asv commit dates")
        return {}


def _assemble(
    name: str,
    summaries: list[Summary],
    layouts: _Layouts,
    order: Mapping[str, int],
    unit_of: Mapping[str, str],
    mapped: set[str],
    errors: list[str],
) -> MachineData:
    dates: dict[str, int] = {}
    for s in summaries:
        if s.date is not None:
            dates[s.commit] = min(dates.get(s.commit, s.date), s.date)
    known = sorted(
        (c for c in dates.keys() | {s.commit for s in summaries} if c in order),
        key=order.__getitem__,
    )
    rest = sorted({s.commit for s in summaries} - set(known), key=lambda c: (dates.get(c, 0), c))
    commits = known + rest
    col = {c: i for i, c in enumerate(commits)}
    summaries.sort(key=lambda s: col[s.commit])

    rows: dict[tuple[str, str, tuple[str, ...]], int] = {}
    info: list[SeriesInfo] = []
    row_idx: dict[tuple[str, str], np.ndarray] = {}
    for s in summaries:
        lk = (s.env_name, s.layout_id)
        if lk in row_idx:
            continue
        layout = layouts.get(s.layout_id)
        if layout is None:  # pragma: no cover - layouts are stored before summaries
            errors.append(f"{name} {s.commit}: layout {s.layout_id} missing from cache")
            continue
        idx = np.empty(len(layout), dtype=np.int64)
        for i, (b, p, sid) in enumerate(layout):
            k = (s.env_name, b, p)
            r = rows.get(k)
            if r is None:
                r = rows[k] = len(info)
                info.append(
                    SeriesInfo(
                        s.env_name, sid or SeriesId(b, p), unit_for(b, unit_of, b in mapped)
                    )
                )
            elif sid is not None:
                # later sidecars win, as in the loader (a series gains its identity)
                info[r] = SeriesInfo(s.env_name, sid, info[r].unit)
            idx[i] = r
        row_idx[lk] = idx
    n, m = len(info), len(commits)
    value = np.full((n, m), np.nan)
    q25 = np.full((n, m), np.nan, dtype=np.float32)
    q75 = np.full((n, m), np.nan, dtype=np.float32)
    fps: dict[int, Mapping[str, str]] = {}
    traces: dict[int, Mapping[str, str]] = {}
    for s in summaries:
        rix = row_idx.get((s.env_name, s.layout_id))
        if rix is None:
            continue
        j = col[s.commit]
        value[rix, j] = s.value
        q25[rix, j] = s.q25
        q75[rix, j] = s.q75
        if s.fingerprint is not None:
            fps[j] = s.fingerprint
        if s.traces:
            traces[j] = {**traces.get(j, {}), **s.traces}
    date_arr = np.array([dates.get(c, 0) for c in commits], dtype=np.int64)
    return MachineData(name, commits, date_arr, info, value, q25, q75, fps, traces)
