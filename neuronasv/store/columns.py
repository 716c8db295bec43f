"""The history as value matrices: what change points need, for long histories.

:func:`neuronasv.store.history.load_history` makes a ``Point`` (with samples) per value:
right for comparing two commits, too heavy for change points over a whole history — 10,000
commits × 1,000 series is ten million objects (gigabytes, and a minute making them).
:func:`load_columns` reads the same files with the same reader and the same rules into one
float matrix per machine (series × commits):

* per results file (:class:`FileColumns`): its values as one array in the order of a
  *layout* (its (benchmark, params, sidecar ``SeriesId``) entries; layouts repeat from
  commit to commit and are kept once, by content hash), whether each value failed, the
  sidecar's fingerprint and which counts its counting pass found not deterministic;
* the rows are parsed and checked by :meth:`AsvResultsReader.parse` exactly as the loader
  parses them (a file the loader cannot read is a load error here too, named the same);
* the loader's rules when the files are put together: one results file per run
  (:func:`neuronasv.store.runs.one_file_per_run`), git's commit order, a series' identity
  from the latest sidecar naming it where it has a value, the one unit decision, no
  value <= 0 for a time or memory series;
* an optional per-file cache (:class:`ColumnsCache`, on disk
  :class:`neuronasv.store.histcache.ColumnsDiskCache`), and files to parse are parsed in
  worker processes when there are many.

``tests/store/test_columns.py`` holds the matrices to ``load_history``'s points.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import logging
import os
from collections.abc import Iterable, Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from neuronasv.errors import CorruptResultsError, NeuronasvError
from neuronasv.fileio import confined_path, read_regular, write_atomic
from neuronasv.gcpause import no_cyclic_gc
from neuronasv.metrics import IN_SIDECAR, by_unit
from neuronasv.model import Point, Series, SeriesId
from neuronasv.store.asvresults import (
    AsvResultsReader,
    Row,
    benchmark_units,
    quartile_index,
    result_paths,
    unit_for,
)
from neuronasv.store.filecolumns import (
    FileColumns,
    Layout,
    Unstable,
    content_digest,
    decode_file,
    encode_file,
)
from neuronasv.store.git import Git
from neuronasv.store.matrices import check_positive, fill, mark_unstable, quartile
from neuronasv.store.runs import commits_in_order, one_file_per_run

__all__ = [
    "ColumnSeries",
    "Columns",
    "ColumnsCache",
    "FileColumns",
    "Layouts",
    "MachineColumns",
    "content_digest",
    "load_columns",
    "parse_columns",
]

log = logging.getLogger(__name__)


_PASS_COUNTED = IN_SIDECAR  # counted into sidecars by their pass


# -- layouts -------------------------------------------------------------------------


def layout_json(layout: Layout) -> list[Any]:
    return [[b, list(p), sid.to_json() if sid else None] for b, p, sid in layout]


def layout_from_json(data: Any, source: str) -> Layout:
    return tuple(
        (str(b), tuple(str(x) for x in p), SeriesId.from_json(s, source) if s else None)
        for b, p, s in data
    )


def layout_id(layout: Layout) -> str:
    """A layout's content hash (its entries, in order)."""
    raw = json.dumps(layout_json(layout), separators=(",", ":"), sort_keys=True)
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


#: A stored layout (its series' identities) is far below this.
MAX_LAYOUT_BYTES = 64 << 20


class Layouts:
    """Layouts by id: in memory, and as ``<directory>/<id>.json`` when given one.

    A stored layout is read back only when its content hashes to its name, so a damaged
    or foreign file is a miss (the results file is parsed again), never a wrong layout (the
    name comes from a signed entry: :class:`neuronasv.store.histcache.ColumnsDiskCache`).
    Only a regular file of at most :data:`MAX_LAYOUT_BYTES` is read; one is written only
    where the folder is no symbolic link.
    """

    def __init__(self, directory: str | None = None) -> None:
        self.directory = directory
        self.mem: dict[str, Layout] = {}

    def add(self, lid: str, layout: Layout) -> None:
        if lid in self.mem:
            return
        self.mem[lid] = layout
        if self.directory:
            try:
                root = os.path.realpath(os.path.dirname(self.directory))
                name = os.path.basename(self.directory)
                path = confined_path(root, (name, lid + ".json"), create=True)
                if path is not None and not os.path.lexists(path):
                    write_atomic(path, json.dumps(layout_json(layout), separators=(",", ":")))
            except OSError:
                pass  # not kept: the next run parses a file of this layout again

    def get(self, lid: str) -> Layout | None:
        got = self.mem.get(lid)
        if got is not None or not self.directory:
            return got
        path = os.path.join(self.directory, lid + ".json")
        try:
            layout = layout_from_json(json.loads(read_regular(path, MAX_LAYOUT_BYTES)), path)
        except (OSError, ValueError, TypeError, RecursionError, NeuronasvError):
            return None
        if layout_id(layout) != lid:
            return None
        self.mem[lid] = layout
        return layout


# -- one file ------------------------------------------------------------------------

class ColumnsParser:
    """Results files -> :class:`FileColumns`; owns its reader and layout memo (no globals).

    Args:
        points: also keep what the point view needs (``load_history``): each value's
            samples, the sidecar itself and asv's identity of the run (never cached).
        digests: compute each file's content digest (what a cache entry is checked by;
            not needed without a cache).
    """

    def __init__(self, *, points: bool = False, digests: bool = True) -> None:
        self.points = points
        self.digests = digests
        self.reader = AsvResultsReader()
        self._layouts: dict[tuple[tuple[int, ...], int], tuple[str, Layout]] = {}
        self.sent: set[str] = set()  # layout ids already handed to the receiving process

    def parse(self, path: str, machine: str | None = None) -> tuple[FileColumns, Layout]:
        """One results file and its sidecar, every value and sample checked.

        ``machine``: the machine's name when the file names none (default: its folder's).

        Raises:
            CorruptResultsError: not JSON, truncated, wrong types, missing keys, a bad value.
            SchemaVersionError: an asv results ``version`` other than 2.
            OSError: the file cannot be read.
        """
        reader = self.reader
        raw, data, marked = reader.read_json(path)
        h = reader.header(data, path, marked, machine)
        rows = [reader.parse_row(n, row, h.columns, path, marked) for n, row in h.results.items()]
        i25, i75 = quartile_index(h.columns)
        sizes = [len(r[1]) for r in rows]
        cells = list(h.results.values())
        # The op tables are validated as the loader validates them (a sidecar whose
        # tables are damaged is ignored, with the loader's warning; ~1 % of a parse)
        sc, smap, warning, sc_raw = reader.read_sidecar(path)
        values, failed, samples = _flatten(rows, self.points)
        got = self._layout(rows, smap)
        fc = FileColumns(
            path=path,
            machine=h.machine,
            commit=h.commit,
            env_name=h.env_name,
            date=h.date,
            layout_id=got[0],
            values=np.array(values, dtype=np.float64),
            failed=np.array(failed, dtype=bool),
            fingerprint=dict(sc.fingerprint) if sc is not None else None,
            unstable=_unstable(sc.profiles) if sc is not None else {},
            warnings=[warning] if warning else [],
            digest=content_digest(raw, sc_raw) if self.digests else "",
            q25=quartile(cells, i25, sizes),
            q75=quartile(cells, i75, sizes),
            traces=dict(sc.traces) if sc is not None else {},
        )
        if self.points:
            fc.samples, fc.sidecar, fc.asv_env = samples, sc, h.asv_env
        return fc, got[1]

    def _layout(self, rows: list[Row], smap: Any) -> tuple[str, Layout]:
        """A file's layout and its id, made once per distinct (rows' combinations, the
        sidecar's series map): the reader's serials of both key the memo."""
        memo = (tuple(r[6] for r in rows), smap.key if smap is not None else -1)
        got = self._layouts.get(memo)
        if got is None:
            layout: Layout = tuple(
                (b, p, smap.get(b, p) if smap is not None else None)
                for b, combos, *_rest in rows
                for p in combos
            )
            got = (layout_id(layout), layout)
            if len(self._layouts) > 64:
                self._layouts.clear()
            self._layouts[memo] = got
        return got


def _flatten(
    rows: list[Row], points: bool
) -> tuple[list[float], list[bool], list[tuple[float, ...]] | None]:
    """A file's parsed rows as one list of values (NaN for a failure), whether each
    failed, and (``points``) each value's samples."""
    values: list[float] = []
    failed: list[bool] = []
    samples: list[tuple[float, ...]] | None = [] if points else None
    for _b, combos, vals, smp, _ver, clean, _ckey in rows:
        if samples is not None:
            samples += smp if smp is not None else [()] * len(combos)
        if clean:
            values += vals  # type: ignore[arg-type]
            failed += [False] * len(combos)
        else:
            values += [float("nan") if v is None else v for v in vals]
            failed += [v is None for v in vals]
    return values, failed, samples


def _unstable(profiles: Iterable[Any]) -> Unstable:
    """The non-deterministic counts among a sidecar's (the last profile of a
    configuration wins, as in ``changepoints``' index of them)."""
    counts = {(p.name, p.shape, p.dtype): p.counted for p in profiles if p.counted}
    return {k: tuple(c.unstable) for k, c in counts.items() if not c.deterministic}


def parse_columns(path: str) -> tuple[FileColumns, Layout]:
    """One file with a parser of its own (see :meth:`ColumnsParser.parse`)."""
    return ColumnsParser().parse(path)


class ColumnsCache(Protocol):
    """What :func:`load_columns` needs from a per-file cache
    (:class:`neuronasv.store.histcache.ColumnsDiskCache`)."""

    def get(self, path: str) -> FileColumns | None: ...

    def put(self, path: str, parsed: FileColumns) -> None: ...

    def flush(self) -> None: ...


# -- the folder ----------------------------------------------------------------------


@dataclass(frozen=True)
class ColumnSeries:
    """One row of a machine's matrix (the loader's ``Series`` without its points)."""

    env_name: str
    series: SeriesId
    unit: str

    def key(self, machine: str) -> tuple[str, str, str, tuple[str, ...]]:
        return (machine, self.env_name, self.series.benchmark, self.series.params)


@dataclass
class MachineColumns:
    """One machine's history as matrices.

    Attributes:
        commits: the commits with a results file on this machine, in history order.
        series: one per row, sorted by (env, benchmark, params) as the loader sorts them.
        values: (series, commits) float64; NaN where the series has no value there
            (skipped, failed, or no results file).
        measured: (series, commits) True where the loader has a point with a value
            (neither skipped nor failed; infinities included).
        unstable: (series, commits) True where a counting pass found the
            series' target not deterministic (the change-point search leaves it out).
        sidecars: commit -> the results file whose sidecar the loader keeps for it (the
            last readable one by path; ``History.profiles``), in history order.
        dates: per commit asv's date (ms since the epoch; the earliest of its files, 0
            when none says).
        q25, q75: (series, commits) asv's interquartile range (float32; NaN where none).
        traces: per commit the sidecars' trace paths (workload key -> path).
    """

    name: str
    commits: list[str]
    series: list[ColumnSeries]
    values: np.ndarray
    measured: np.ndarray
    unstable: np.ndarray
    sidecars: dict[str, str] = field(default_factory=dict)
    dates: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    q25: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))
    q75: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))
    traces: dict[str, dict[str, str]] = field(default_factory=dict)


@dataclass
class Columns:
    """Every machine of a results folder, plus what could not be read."""

    machines: list[MachineColumns]
    commits: list[str]
    fingerprints: dict[tuple[str, str], Mapping[str, str]]
    load_errors: list[str] = field(default_factory=list)

    def machine(self, name: str) -> MachineColumns | None:
        return next((m for m in self.machines if m.name == name), None)


# Worker processes of the pool: one parser each, made by the initializer.
_worker: ColumnsParser | None = None


def _init_worker(digests: bool) -> None:
    global _worker
    _worker = ColumnsParser(digests=digests)


def _parse_job(path: str) -> tuple[str, bytes | None, Any, str | None]:
    assert _worker is not None, "the pool's initializer makes the parser"
    return _job(_worker, path)


def _job(parser: ColumnsParser, path: str) -> tuple[str, bytes | None, Any, str | None]:
    """(path, encoded columns, the layout if new to the receiver, error) of one file;
    ``pool.map`` keeps order, so a layout arrives before any later file naming it."""
    try:
        fc, layout = parser.parse(path)
    except (NeuronasvError, OSError) as exc:
        msg = str(exc)
        return path, None, None, msg if msg.startswith(path) else f"{path}: {msg}"
    fresh = fc.layout_id not in parser.sent
    parser.sent.add(fc.layout_id)
    return path, encode_file(fc), layout if fresh else None, None


def _read_all(
    paths: list[str],
    cache: ColumnsCache | None,
    layouts: Layouts,
    workers: int,
    errors: dict[str, str],
) -> dict[str, FileColumns]:
    """Every readable file's columns, by path; why the others could not be read, by path."""
    got: dict[str, FileColumns] = {}
    todo: list[str] = []
    for path in paths:
        fc = cache.get(path) if cache is not None else None
        if fc is not None and fc.path == path and layouts.get(fc.layout_id) is not None:
            got[path] = fc
        else:
            todo.append(path)
    results: Iterable[tuple[str, bytes | None, Any, str | None]]
    with contextlib.ExitStack() as stack:
        if workers > 1 and len(todo) >= 64:
            pool = stack.enter_context(ProcessPoolExecutor(
                max_workers=workers, initializer=_init_worker, initargs=(cache is not None,)))
            results = pool.map(_parse_job, todo, chunksize=16)  # taken as each comes
        else:
            parser = ColumnsParser(digests=cache is not None)
            results = (_job(parser, p) for p in todo)
        for path, payload, layout, err in results:
            if err is not None or payload is None:
                errors[path] = err or f"{path}: unreadable"
                continue
            fc = decode_file(payload, verified=True)  # this run's parser's bytes
            if layout is not None:
                layouts.add(fc.layout_id, layout)
            if cache is not None:
                cache.put(path, fc)
            got[path] = fc
    return got


def load_columns(
    results_dir: str | os.PathLike[str],
    *,
    machine: str | None = None,
    repo: str | os.PathLike[str] | None = None,
    git: Git | None = None,
    cache: ColumnsCache | None = None,
    layouts_dir: str | None = None,
    workers: int | None = None,
) -> Columns:
    """Every results file under ``results_dir`` as per-machine matrices.

    Args:
        results_dir: asv results folder.
        machine: only this machine's folder.
        repo, git: the commit order, as for ``load_history``.
        cache: per-file cache of :class:`FileColumns`; ``layouts_dir`` keeps their layouts.
        workers: processes parsing files that are not cached (default: CPUs, at most 8).

    One DEBUG line per stage (this module's logger).

    Raises:
        ResultsError: ``results_dir`` does not exist, or two different files for one run.
        CorruptResultsError: a time or memory value <= 0 (as ``load_history``).
    """
    rdir = os.fspath(results_dir)
    paths = result_paths(rdir, machine)
    layouts = Layouts(layouts_dir)
    n_workers = workers if workers is not None else min(os.cpu_count() or 1, 8)
    unreadable: dict[str, str] = {}
    got = _read_all(paths, cache, layouts, n_workers, unreadable)
    if cache is not None:
        cache.flush()  # this run's entries found by the next one
    log.debug("%d results files read", len(got))
    errors: list[str] = []
    files: list[FileColumns] = []
    for path in paths:  # the loader's order of messages: by path, as read
        if path in unreadable:
            errors.append(unreadable[path])
            continue
        f = got[path]
        if machine is None or f.machine == machine:
            errors.extend(f.warnings)
            files.append(f)
    files = one_file_per_run(files)
    order = commits_in_order(files, repo, git, errors)
    with no_cyclic_gc():
        return _assemble(rdir, files, order, layouts, errors)


def _assemble(
    rdir: str,
    files: list[FileColumns],
    commits: list[str],
    layouts: Layouts,
    errors: list[str],
) -> Columns:
    col = {c: i for i, c in enumerate(commits)}
    files.sort(key=lambda f: (col[f.commit], f.path))
    units = benchmark_units(rdir)
    fingerprints: dict[tuple[str, str], Mapping[str, str]] = {}
    by_machine: dict[str, list[FileColumns]] = {}
    for f in files:
        by_machine.setdefault(f.machine, []).append(f)
        if f.fingerprint is not None:
            fingerprints[(f.machine, f.commit)] = f.fingerprint
    machines = [
        _machine(name, by_machine[name], col, layouts, units)
        for name in sorted(by_machine)
    ]
    return Columns(machines, commits, fingerprints, errors)


_RowKey = tuple[str, str, tuple[str, ...]]
# per layout entry its row, the (row, SeriesId) pairs its sidecar names, their positions
_Placed = tuple[np.ndarray, list[tuple[int, SeriesId]], np.ndarray]


@dataclass
class _MachineRows:
    """One machine's series rows as its files (in commit order) place them.

    ``rows``: (env, benchmark, params) -> row number, first seen first; ``ids``: each
    row's identity (asv's name until a sidecar names it); ``mapped``: the benchmarks a
    sidecar maps; ``placed``: per (env, layout id) its placement; ``last``: the layout
    and presence of the names applied last.
    """

    rows: dict[_RowKey, int] = field(default_factory=dict)
    ids: dict[int, SeriesId] = field(default_factory=dict)
    mapped: set[str] = field(default_factory=set)
    placed: dict[tuple[str, str], _Placed] = field(default_factory=dict)
    last: tuple[tuple[str, str], bytes] | None = None

    def add(self, f: FileColumns, layouts: Layouts) -> None:
        """Place a file's layout (once per distinct one) and apply its sidecar's names."""
        lk = (f.env_name, f.layout_id)
        placed = self.placed.get(lk)
        if placed is None:
            layout = layouts.get(f.layout_id)
            assert layout is not None, "layouts are stored before their files"
            placed = self.placed[lk] = self._place(f.env_name, layout)
        _idx, named, pos = placed
        if named:
            self._name(f, lk, named, pos)

    def _place(self, env_name: str, layout: Layout) -> _Placed:
        rows, ids = self.rows, self.ids
        idx = np.empty(len(layout), dtype=np.int64)
        named: list[tuple[int, SeriesId]] = []
        at: list[int] = []
        for i, (b, p, sid) in enumerate(layout):
            k = (env_name, b, p)
            r = rows.get(k)
            if r is None:
                r = rows[k] = len(rows)
                ids[r] = SeriesId(b, p)
            idx[i] = r
            if sid is not None:
                named.append((r, sid))
                at.append(i)
        return (idx, named, np.array(at, dtype=np.int64))

    def _name(
        self,
        f: FileColumns,
        lk: tuple[str, str],
        named: list[tuple[int, SeriesId]],
        pos: np.ndarray,
    ) -> None:
        """Later sidecars win (a series gains its identity), where a value is present (a
        failure is present; a NaN, skipped, is not): the loader's rule. The same layout
        and presence as the file applied just before changes nothing."""
        if pos.size == f.values.size:  # every value named (pos is all of them, in order)
            present = ~np.isnan(f.values) | f.failed
        else:
            present = ~np.isnan(f.values[pos]) | f.failed[pos]
        applied = (lk, present.tobytes())
        if applied == self.last:
            return
        self.last = applied
        for (r, sid), ok in zip(named, present.tolist(), strict=True):
            if ok:
                self.ids[r] = sid
                self.mapped.add(sid.benchmark)

    def index(self, f: FileColumns) -> np.ndarray:
        """The row of each of ``f``'s values."""
        return self.placed[(f.env_name, f.layout_id)][0]


def _machine(
    name: str,
    files: list[FileColumns],
    col: Mapping[str, int],
    layouts: Layouts,
    units: Mapping[str, str],
) -> MachineColumns:
    commits = sorted({f.commit for f in files}, key=col.__getitem__)
    ccol = {c: i for i, c in enumerate(commits)}
    mr = _MachineRows()
    for f in files:
        mr.add(f, layouts)
    keys = sorted(mr.rows, key=lambda k: (k[0], k[1], k[2]))
    perm = np.empty(len(keys), dtype=np.int64)
    for new, k in enumerate(keys):
        perm[mr.rows[k]] = new
    rows = {lk: perm[p[0]] for lk, p in mr.placed.items()}  # per placement, in key order
    values, measured, anypoint, q25, q75 = fill(
        files, lambda f: rows[(f.env_name, f.layout_id)], ccol, (len(keys), len(commits))
    )
    series = [
        ColumnSeries(k[0], mr.ids[mr.rows[k]], unit_for(k[1], units, k[1] in mr.mapped))
        for k in keys
    ]
    if not anypoint.all():
        series = [s for s, ok in zip(series, anypoint.tolist(), strict=True) if ok]
        values, measured = values[anypoint], measured[anypoint]
        q25, q75 = q25[anypoint], q75[anypoint]
    unstable = _checked(name, commits, series, values, files, ccol)
    sidecars = {f.commit: f.path for f in files if f.fingerprint is not None}  # last wins
    sidecars = {c: sidecars[c] for c in commits if c in sidecars}
    dates: dict[str, int] = {}
    traces: dict[str, dict[str, str]] = {}
    for f in files:
        if f.date is not None:
            dates[f.commit] = min(dates.get(f.commit, f.date), f.date)
        if f.traces:
            traces.setdefault(f.commit, {}).update(f.traces)
    return MachineColumns(
        name, commits, series, values, measured, unstable, sidecars,
        np.array([dates.get(c, 0) for c in commits], dtype=np.int64), q25, q75, traces,
    )  # fmt: skip


def _checked(
    name: str,
    commits: list[str],
    series: list[ColumnSeries],
    values: np.ndarray,
    files: list[FileColumns],
    ccol: Mapping[str, int],
) -> np.ndarray:
    """The loader's rule on time and memory values (raises), then where a pass's count
    (``Metric.run_pass``) was not deterministic."""
    units = [s.unit for s in series]
    check_positive(name, commits, [s.series.benchmark for s in series], units, values)
    unstable = np.zeros(values.shape, dtype=bool)
    if any(f.unstable for f in files):
        exact = [(r, s.series) for r, s in enumerate(series) if by_unit(s.unit) in _PASS_COUNTED]
        mark_unstable(files, ccol, exact, unstable)
    return unstable


def machine_points(
    name: str,
    files: list[FileColumns],
    order: Mapping[str, int],
    layouts: Layouts,
    units: Mapping[str, str],
) -> list[Series]:
    """One machine's series as points (the loader's ``History.series``): its files, read
    with ``ColumnsParser(points=True)`` and sorted by (commit order, path), placed by the
    rows and identities :func:`load_columns` gives them. A failed value is a point with no
    value; a skipped one (NaN) is no point; a row with no point is no series.

    Raises:
        CorruptResultsError: a time or memory value <= 0 (the first such series in key
            order, its first such commit).
    """
    mr = _MachineRows()
    for f in files:
        mr.add(f, layouts)
    pts: list[list[Point]] = [[] for _ in range(len(mr.rows))]
    for f in files:
        commit, o, date = f.commit, order[f.commit], f.date
        smp: Iterable[tuple[float, ...]] = f.samples if f.samples is not None else _NONE
        for r, v, bad, s in zip(
            mr.index(f).tolist(), f.values.tolist(), f.failed.tolist(), smp, strict=False
        ):
            if bad:
                pts[r].append(Point(commit, o, None, s, date))
            elif v == v:  # NaN: skipped in this commit, no point
                pts[r].append(Point(commit, o, v, s, date))
    out: list[Series] = []
    for k in sorted(mr.rows):
        r = mr.rows[k]
        if not pts[r]:
            continue
        unit = unit_for(k[1], units, k[1] in mr.mapped)
        if unit in ("seconds", "bytes"):
            bad_at = next((p for p in pts[r] if p.value is not None and p.value <= 0.0), None)
            if bad_at is not None:
                raise CorruptResultsError(
                    f"results of {k[1]} on {name} at {bad_at.commit[:12]}: a value in {unit}"
                    f" must be > 0, got {bad_at.value!r}"
                )
        out.append(Series(name, k[0], mr.ids[r], unit, tuple(pts[r])))
    return out


_NONE = itertools.repeat(())
