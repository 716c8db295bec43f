"""Results folder -> :class:`~neuronasv.publish.sitedata.SiteData`, fast and cached per file.

Why not ``store.history.load_history``: it builds a ``Point`` per value (with samples)
for analysis — ~6 s and 210 MB at 1,000 commits × 1,000 series, ten times that at
10,000 commits. The site needs medians and quartiles only, so this reader keeps one
float row per file:

* per results file: asv's ``result``/``stats_q_25``/``stats_q_75`` columns as arrays, in the
  order of a *layout* (the file's (benchmark, params) keys and their sidecar ``SeriesId``);
  layouts repeat from commit to commit, so they are stored once, by content hash;
* JSON through the loader's fast path (``store.history.decode_asv_json``: msgspec with
  asv's bare NaN handled; sidecars via ``read_sidecar_bytes``, whose series list is
  validated once per distinct list and whose op tables are skipped);
* a :class:`~neuronasv.publish.cache.ParseCache` keeps each file's row on disk: a publish
  after one new commit parses one file; parser processes write their own entries;
* files that must be parsed are parsed in a process pool;
* commit order from one ``git rev-list --topo-order --all`` (``Git.commit_order``;
  commits git does not know go last, by asv's commit date, as in the loader).

Semantics follow the loader: asv ``null`` (failed) and ``NaN`` (not applicable) both
become NaN here (no point drawn); a sidecar that cannot be read is a warning, and the
series then keep their asv names.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from neuronasv.errors import CorruptResultsError, NeuronasvError, SchemaVersionError, StoreError
from neuronasv.model import SeriesId, sidecar_path
from neuronasv.publish.cache import Codec, ParseCache, digest_bytes
from neuronasv.publish.sitedata import MachineData, SeriesInfo, SiteData
from neuronasv.store.git import Git, git_for
from neuronasv.store.history import (
    asv_float,
    benchmark_units,
    decode_asv_json,
    default_unit,
    read_sidecar_bytes,
    stat_key,
)

__all__ = ["Summary", "git_order", "parse_summary", "scan_results", "summary_cache"]

_METADATA = frozenset({"machine.json", "benchmarks.json"})
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
                tmp = f"{path}.{os.getpid()}.tmp"
                with open(tmp, "w", encoding="utf-8") as fh:
                    json.dump(_layout_json(layout), fh, separators=(",", ":"))
                os.replace(tmp, path)

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

# Per-process memo: sidecar series list (by the loader's serial for that list) -> key
# map; every commit of a suite has the same list, so it is built once per process.
_SMAP_MEMO: dict[int, dict[tuple[str, tuple[str, ...]], SeriesId]] = {}
_LAYOUT_MEMO: dict[tuple[tuple[tuple[str, tuple[str, ...]], ...], int], tuple[str, Layout]] = {}
_ONE_OFF = itertools.count(-2, -1)
# benchmark -> (params as written, combinations, layout keys): commits repeat them
_COMBOS: dict[str, tuple[list[Any], list[tuple[str, ...]], list[tuple[str, tuple[str, ...]]]]] = {}


def _unquote(p: str) -> str:
    return p[1:-1] if len(p) >= 2 and p[0] == p[-1] and p[0] in "'\"" else p


def _num(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return math.nan
    return float(v)


def _floats(values: Any, n: int) -> np.ndarray:
    """asv's per-combination list as float64 (None/NaN/non-numbers -> NaN), length ``n``."""
    if not isinstance(values, list) or len(values) != n:
        return np.full(n, np.nan)
    try:
        # None -> NaN; the loader's "nan"/"inf"/"-inf" marker strings -> their floats
        out = np.array(values, dtype=np.float64)
        if out.shape == (n,):
            return out
    except (TypeError, ValueError):
        pass
    return np.array([_num(v) for v in values], dtype=np.float64)


def _column(cells: list[Any], sizes: list[int], dtype: type) -> np.ndarray:
    """Concatenated per-row lists (rows whose cell is unusable -> NaN) as one array."""
    flat: list[Any] = []
    ok = True
    for cell, n in zip(cells, sizes, strict=True):
        if isinstance(cell, list) and len(cell) == n:
            flat.extend(cell)
        else:
            flat.extend(itertools.repeat(None, n))
    try:
        out = np.array(flat, dtype=np.float64)
        ok = out.shape == (len(flat),)
    except (TypeError, ValueError):
        ok = False
    if not ok:  # something odd in some row (a nested list, a string): row by row
        parts = [_floats(c, n) for c, n in zip(cells, sizes, strict=True)]
        out = np.concatenate(parts) if parts else np.zeros(0)
    return out.astype(dtype, copy=False)


def _read_sidecar(
    path: str,
) -> tuple[
    dict[tuple[str, tuple[str, ...]], SeriesId],
    int,
    dict[str, str] | None,
    dict[str, str],
    str | None,
    bytes,
]:
    """(key map, its serial, fingerprint, traces, warning, raw bytes) of ``path``'s sidecar."""
    spath = sidecar_path(path)
    try:
        with open(spath, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        return {}, -1, None, {}, None, b""
    except OSError as exc:
        return {}, -1, None, {}, f"{spath}: sidecar unreadable ({exc}); asv names used", b""
    try:
        sc, serial = read_sidecar_bytes(raw, spath, profiles=False)
    except (NeuronasvError, UnicodeDecodeError) as exc:
        return {}, -1, None, {}, f"{spath}: sidecar unreadable ({exc}); asv names used", raw
    smap = _SMAP_MEMO.get(serial) if serial >= 0 else None
    if smap is None:
        smap = {}
        for s in sc.series:
            smap[(s.benchmark, s.params)] = s
            smap.setdefault((s.benchmark, tuple(_unquote(p) for p in s.params)), s)
        if serial >= 0:
            if len(_SMAP_MEMO) > 64:
                _SMAP_MEMO.clear()
            _SMAP_MEMO[serial] = smap
        else:
            serial = next(_ONE_OFF)  # a list read the slow way: never reused as a memo key
    return smap, serial, dict(sc.fingerprint), dict(sc.traces), None, raw


def parse_summary(path: str, layouts: _Layouts | None = None) -> tuple[Summary, Layout, str]:
    """Parse one asv results file (and its sidecar) into a :class:`Summary` and its layout.

    Returns:
        ``(summary, layout, digest)``; ``digest`` is the content digest of the results
        file and sidecar as read (:func:`neuronasv.publish.cache.digest_bytes`).

    Raises:
        CorruptResultsError: not JSON, or not an asv results file.
        SchemaVersionError: an asv results ``version`` other than 2.
    """
    with open(path, "rb") as fh:
        raw = fh.read()
    doc, _marked = decode_asv_json(raw, path)  # markers are floats to numpy; see _floats
    if not isinstance(doc, dict):
        raise CorruptResultsError(f"{path}: expected a JSON object")
    if doc.get("version") != 2:
        raise SchemaVersionError(f"{path}: asv results version {doc.get('version')!r} (expected 2)")
    commit, env_name = doc.get("commit_hash"), doc.get("env_name")
    columns, results = doc.get("result_columns"), doc.get("results")
    if not isinstance(commit, str) or not isinstance(env_name, str):
        raise CorruptResultsError(f"{path}: commit_hash and env_name must be strings")
    if not isinstance(columns, list) or not isinstance(results, dict) or "result" not in columns:
        raise CorruptResultsError(f"{path}: result_columns/results missing or malformed")
    params = doc["params"] if isinstance(doc.get("params"), dict) else {}
    machine = str(params.get("machine") or os.path.basename(os.path.dirname(path)))
    date = asv_float(doc.get("date"), _marked)
    date = (
        int(date)
        if isinstance(date, (int, float)) and not isinstance(date, bool) and math.isfinite(date)
        else None
    )
    ci = {c: i for i, c in enumerate(columns)}
    i_res, i_prm = ci["result"], ci.get("params", -1)
    i_lo, i_hi = ci.get("stats_q_25", -1), ci.get("stats_q_75", -1)

    keys: list[tuple[str, tuple[str, ...]]] = []
    sizes: list[int] = []
    res_cells: list[Any] = []
    lo_cells: list[Any] = []
    hi_cells: list[Any] = []
    for name, row in results.items():
        if not isinstance(row, list):
            raise CorruptResultsError(f"{path}: results[{name!r}] must be a list")
        nrow = len(row)
        res = row[i_res] if i_res < nrow else None
        prm = (row[i_prm] if 0 <= i_prm < nrow else None) or []
        seen = _COMBOS.get(name)
        if seen is not None and seen[0] == prm:
            combos, pairs = seen[1], seen[2]
        else:
            if not isinstance(prm, list) or not all(isinstance(p, list) for p in prm):
                raise CorruptResultsError(f"{path}: results[{name!r}] params malformed")
            combos = list(itertools.product(*[[str(x) for x in p] for p in prm])) if prm else [()]
            pairs = [(name, combo) for combo in combos]
            # memo only all-string params: a list equal to those is the same strings
            # (1 == True == 1.0 would otherwise share combos whose str() differ)
            if all(isinstance(x, str) for p in prm for x in p):
                if len(_COMBOS) > 100_000:
                    _COMBOS.clear()
                _COMBOS[name] = (prm, combos, pairs)
        n = len(combos)
        res = res if isinstance(res, list) else [res] * n
        if len(res) != n:
            raise CorruptResultsError(
                f"{path}: results[{name!r}] has {len(res)} values for {n} parameter sets"
            )
        keys.extend(pairs)
        sizes.append(n)
        res_cells.append(res)
        lo_cells.append(row[i_lo] if 0 <= i_lo < nrow else None)
        hi_cells.append(row[i_hi] if 0 <= i_hi < nrow else None)

    smap, sig, fingerprint, traces, warn, sc_raw = _read_sidecar(path)
    memo_key = (tuple(keys), sig)
    got = _LAYOUT_MEMO.get(memo_key)
    if got is None:
        layout: Layout = tuple(
            (b, p, smap.get((b, p)) or smap.get((b, tuple(_unquote(x) for x in p))))
            for b, p in keys
        )
        got = (_layout_id(layout), layout)
        if len(_LAYOUT_MEMO) > 64:
            _LAYOUT_MEMO.clear()
        _LAYOUT_MEMO[memo_key] = got
    lid, layout = got
    if layouts is not None:
        layouts.add(lid, layout)
    summary = Summary(
        machine=machine,
        commit=commit,
        env_name=env_name,
        date=date,
        layout_id=lid,
        value=_column(res_cells, sizes, np.float64),
        q25=_column(lo_cells, sizes, np.float32),
        q75=_column(hi_cells, sizes, np.float32),
        fingerprint=fingerprint,
        traces=traces,
        warnings=[warn] if warn else [],
    )
    return summary, layout, digest_bytes(raw, sc_raw)


# Per worker process: layout ids already handed back (each layout, 1,000 SeriesIds,
# crosses the process boundary once per worker, not once per file) and the cache the
# worker writes entries to (in parallel, instead of one by one in the parent).
_SENT: set[str] = set()
_WORKER_CACHE: dict[str, ParseCache[Summary]] = {}


def _parse_worker(
    job: tuple[str, tuple[int, ...], str | None],
) -> tuple[str, bytes | None, Any, str | None]:
    """Process-pool entry: (path, encoded summary, layout JSON if new here, error).

    ``job`` is (path, stat key, cache directory or None); with a cache directory the
    worker stores the entry itself. ``pool.map`` keeps input order, so a layout a worker
    sent with an earlier file has reached the parent before any later file that refers
    to it.
    """
    path, key, cache_dir = job
    try:
        s, layout, digest = parse_summary(path)
    except (NeuronasvError, OSError) as exc:
        msg = str(exc)
        return path, None, None, msg if msg.startswith(path) else f"{path}: {msg}"
    payload = _encode(s)
    if cache_dir is not None:
        cache = _WORKER_CACHE.get(cache_dir)
        if cache is None:
            cache = _WORKER_CACHE[cache_dir] = ParseCache(cache_dir, SUMMARY_CODEC)
        cache.put_encoded(path, key, payload, digest)
    fresh = s.layout_id not in _SENT
    _SENT.add(s.layout_id)
    return path, payload, _layout_json(layout) if fresh else None, None


# -- the folder ----------------------------------------------------------------------


def _result_paths(results_dir: str, machine: str | None) -> list[str]:
    out: list[str] = []
    try:
        names = sorted(os.listdir(results_dir))
    except FileNotFoundError:
        raise CorruptResultsError(f"{results_dir}: results folder not found") from None
    for m in names:
        mdir = os.path.join(results_dir, m)
        if (machine is not None and m != machine) or not os.path.isdir(mdir):
            continue
        for fn in sorted(os.listdir(mdir)):
            if fn.endswith(".json") and fn not in _METADATA:
                out.append(os.path.join(mdir, fn))
    return out


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
    progress: Callable[[str], None] | None = None,
) -> SiteData:
    """Read every results file under ``results_dir`` into per-machine matrices.

    Args:
        results_dir: asv results folder.
        machine: only this machine.
        repo: git repository giving the commit order (else asv's commit dates).
        cache: per-file cache (see :func:`summary_cache`); None parses everything.
        workers: processes for files that must be parsed (default: CPUs, at most 8;
            1 = in this process).
        progress: called with one line per stage.
    """
    rdir = os.fspath(results_dir)
    say = progress or (lambda _m: None)
    layouts = _Layouts(os.path.join(cache.directory, "layouts") if cache else None)
    errors: list[str] = []
    summaries: list[Summary] = []
    todo: list[tuple[str, tuple[int, ...]]] = []
    for path in _result_paths(rdir, machine):
        key = stat_key(path)
        s = cache.get(path, key) if cache is not None else None
        if s is not None and layouts.get(s.layout_id) is not None:
            summaries.append(s)
        else:
            todo.append((path, key))
    say(f"{len(summaries)} results files from cache, {len(todo)} to parse")
    _SENT.clear()  # in-process parsing: this scan's layouts store starts empty
    n_workers = workers if workers is not None else min(os.cpu_count() or 1, 8)
    base = cache.base if cache is not None else None
    jobs = [(p, k, base) for p, k in todo]
    results: Iterable[tuple[str, bytes | None, Any, str | None]]
    if n_workers > 1 and len(todo) >= 64:
        with ProcessPoolExecutor(max_workers=n_workers) as pool:
            results = list(pool.map(_parse_worker, jobs, chunksize=16))
    else:
        results = (_parse_worker(j) for j in jobs)
    for path, payload, layout_json, err in results:
        if err is not None or payload is None:
            errors.append(err or f"{path}: unreadable")
            continue
        s = _decode(payload)
        if layouts.get(s.layout_id) is None:
            if layout_json is None:  # pragma: no cover - see _parse_worker
                errors.append(f"{path}: layout {s.layout_id} lost between processes")
                continue
            layouts.add(s.layout_id, _layout_from_json(layout_json, path))
        if cache is not None:
            cache.stats.writes += 1  # the worker wrote the entry
        summaries.append(s)
    for s in summaries:
        errors.extend(s.warnings)
    by_machine: dict[str, list[Summary]] = {}
    for s in summaries:
        if machine is None or s.machine == machine:
            by_machine.setdefault(s.machine, []).append(s)
    order: dict[str, int] = {}
    if repo is not None and by_machine:
        try:
            wanted = {s.commit for ss in by_machine.values() for s in ss}
            order = {c: i for i, c in enumerate(git_order(os.fspath(repo), wanted))}
        except CorruptResultsError as exc:
            errors.append(f"commit order: {exc}; falling back to asv commit dates")
    unit_of = benchmark_units(rdir)
    machines = [
        _assemble(name, by_machine[name], layouts, order, unit_of, errors)
        for name in sorted(by_machine)
    ]
    return SiteData(machines=machines, load_errors=errors)


def _assemble(
    name: str,
    summaries: list[Summary],
    layouts: _Layouts,
    order: Mapping[str, int],
    unit_of: Mapping[str, str],
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
                    SeriesInfo(s.env_name, sid or SeriesId(b, p), unit_of.get(b, default_unit(b)))
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
