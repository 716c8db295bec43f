"""The one reader of asv's results format (``api_version`` 2): files, rows, sidecars, units.

One reader of a results folder uses it: the column reader (``store/columns.py``: each
file parsed once into the column model, which ``load_columns`` makes matrices of and
``store/history.load_history`` points), and the run stage reads its own files with it
(``run/asvrun.py``). The format is decided once, here:

* **one listing** (:func:`result_paths`): every ``*.json`` below the folder except the
  top level and asv's ``machine.json``/``benchmarks.json``, walked as asv walks it. A
  results folder that does not exist is a :class:`~neuronasv.errors.ResultsError` (exit
  5) naming it — before, the loader returned an empty history (a typo in
  ``--results-dir`` looked like "no results yet") while the scan raised; a machine with
  no folder yet is simply empty;
* **one header check** (:meth:`AsvResultsReader.header`): one version check with one
  message, the required fields, the machine (``params.machine``, else the folder name),
  the environment (``env_name``, else from the file name) and **one date parse**
  (:func:`asv_date`);
* **one row shape** (:meth:`AsvResultsReader.parse_row`): parameter combinations, the
  value count, samples; failed (``null``) and skipped (``NaN``) values;
* **one reading of a param** (:func:`param_value`): asv writes each param as the
  ``repr`` of its value; the run stage (``run/asvrun.py``) reads the workload's shape,
  dtype and op back from them with it;
* **one sidecar read** (:meth:`AsvResultsReader.read_sidecar`) with one warning wording
  ("sidecar ignored: ..."; the asv names are then used), and **one ``unquote``** for
  params written without asv's repr quotes (:meth:`AsvResultsReader.series_map`);
* **one unit decision** (:func:`unit_for`): asv's ``benchmarks.json`` unit, else
  seconds for a benchmark a sidecar maps (neuronasv device time, stored in seconds),
  else the unit asv implies by the name's prefix. Before, the scan skipped the middle
  rule and labelled sidecar-mapped series with a prefix asv does not know ``unit``.

Caches belong to an :class:`AsvResultsReader` (one per load, or one per parser worker
process), never to the module: every commit of a suite repeats the same series list and
the same parameter lists, so each distinct one is validated once and shared; memo keys
are serial numbers the reader hands out (never object ids, which are reused).

Speed: JSON goes through msgspec with a NaN pre-pass (:func:`decode_asv_json`, in
:mod:`neuronasv.store.asvjson`, re-exported here); sidecar series lists are validated once
per distinct byte string; see docs/publishing.md.
"""

from __future__ import annotations

import ast
import dataclasses
import itertools
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from neuronasv.errors import (
    CorruptResultsError,
    NeuronasvError,
    ResultsError,
    SchemaVersionError,
)
from neuronasv.metrics import by_prefix
from neuronasv.model import RunSidecar, SeriesId
from neuronasv.model._codec import (
    MAX_MAGNITUDE,
    in_range,
)
from neuronasv.store.asvjson import (
    JSON_DECODER,
    SIDECAR_HEAD_DECODER,
    SIDECAR_HEAD_FIELDS,
    asv_float,
    decode_asv_json,
)
from neuronasv.store.layout import BENCHMARKS_FILE, METADATA_FILES, RESULT_SUFFIX, sidecar_path
from neuronasv.units import is_exact, value_problem

__all__ = [
    "ASV_API_VERSION",
    "Q25_COLUMN",
    "Q75_COLUMN",
    "AsvResultsReader",
    "Header",
    "Row",
    "SeriesMap",
    "asv_date",
    "asv_float",
    "benchmark_units",
    "decode_asv_json",
    "default_unit",
    "param_value",
    "quartile_index",
    "result_paths",
    "unit_for",
    "unquote",
]

ASV_API_VERSION = 2
# asv's result columns of the interquartile range (the site draws its band)
Q25_COLUMN = "stats_q_25"
Q75_COLUMN = "stats_q_75"


def _number(v: Any, where: str, source: str, bound: str | None = None) -> float | None:
    """A float in range (:func:`neuronasv.model._codec.in_range`: finite, at most 1e18 in
    magnitude, and ``bound``), None for null, NaN passed through (asv's "skipped");
    anything else is corrupt."""
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise CorruptResultsError(f"{source}: {where} is not a number: {v!r}"[:300])
    if v != v:
        return math.nan
    if v.__class__ is float and math.isinf(v):
        raise CorruptResultsError(f"{source}: {where} is infinite")
    if bound is not None and is_exact(bound):  # an exact metric's unit: its own range
        problem = value_problem(bound, v)
        if problem:
            raise CorruptResultsError(f"{source}: {where}: {problem}"[:300])
        return float(v)
    if not in_range(v, bound):
        raise CorruptResultsError(
            f"{source}: {where} is out of range: {v!r} (must be"
            f" {'> 0 and ' if bound else ''}at most {MAX_MAGNITUDE:.0e} in magnitude)"[:300]
        )
    return float(v)


def value_bound(benchmark: str) -> str | None:
    """What a result of ``benchmark`` must be beyond finite: ``"positive"`` for times and
    memory (asv's ``time_``/``timeraw_``/``mem_``/``peakmem_`` and neuronasv's
    ``devtime_``), an exact metric's unit for its series (its registry entry's ``bound``,
    ``whole`` and ``signed``: :func:`neuronasv.units.value_problem`),
    nothing for ``track_`` and other benchmarks (any finite value)."""
    unit = default_unit(benchmark)
    if is_exact(unit):
        return unit
    return "positive" if unit != "unit" else None


def asv_date(v: Any, marked: bool) -> int | None:
    """asv's ``date`` (ms since the epoch) as an int; None when absent or not a finite number."""
    v = asv_float(v, marked)
    if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
        return int(v)
    return None


def unquote(p: str) -> str:
    """A param without asv's repr quotes (``'a'`` -> ``a``); sidecars may write either."""
    return p[1:-1] if len(p) >= 2 and p[0] == p[-1] and p[0] in "'\"" else p


def param_value(text: str) -> str:
    """An asv param as the ``str`` of its value: asv writes params as ``repr`` strings
    (``"'4x512'"`` -> ``4x512``). Text that is no Python literal (or one too deep or
    unhashable to evaluate) is returned as it is."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
        return text
    return str(value)


def default_unit(benchmark: str) -> str:
    """The unit asv implies by a benchmark's prefix (``time_`` -> seconds, ...)."""
    leaf = benchmark.rsplit(".", 1)[-1]
    if leaf.startswith(("time_", "devtime_", "timeraw_")):
        return "seconds"
    metric = by_prefix(leaf)  # an exact metric's series (instr_, alloc_): the plugin's unit
    if metric is not None and metric.exact:
        return metric.unit
    if leaf.startswith(("mem_", "peakmem_")):
        return "bytes"
    return "unit"


def unit_for(benchmark: str, units: Mapping[str, str], mapped: bool) -> str:
    """The one unit decision: ``benchmarks.json``, else seconds when a sidecar maps the
    benchmark (the plugin stores device time in seconds), else asv's prefix rule.

    An exact metric's unit goes with its prefix both ways (``Metric.unit`` and
    ``Metric.prefix``; the values of such a series are checked as counts,
    :func:`value_bound`): its series always carry it, and ``benchmarks.json`` cannot make
    another series one."""
    unit = default_unit(benchmark)
    if is_exact(unit):
        return unit
    got = units.get(benchmark)
    if got is not None and not is_exact(got):
        return got
    return "seconds" if mapped else unit


def benchmark_units(results_dir: str) -> dict[str, str]:
    """benchmark -> unit from asv's ``benchmarks.json`` (empty when absent/unreadable)."""
    path = os.path.join(results_dir, BENCHMARKS_FILE)
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {
        k: str(v["unit"])
        for k, v in data.items()
        if isinstance(v, dict) and isinstance(v.get("unit"), str)
    }


def quartile_index(columns: list[str]) -> tuple[int | None, int | None]:
    """Where asv's interquartile columns (``stats_q_25``, ``stats_q_75``) are in a file's
    ``result_columns`` (None: the file has no such column)."""
    return (
        columns.index(Q25_COLUMN) if Q25_COLUMN in columns else None,
        columns.index(Q75_COLUMN) if Q75_COLUMN in columns else None,
    )


def result_paths(results_dir: str, machine: str | None = None) -> list[str]:
    """Every results file under ``results_dir`` (only ``machine``'s folder when given), sorted.

    Raises:
        ResultsError: ``results_dir`` does not exist or is not a folder (exit 5).
    """
    if not os.path.isdir(results_dir):
        what = "is not a folder" if os.path.exists(results_dir) else "does not exist"
        raise ResultsError(
            f"results folder {results_dir} {what}",
            hint="pass --results-dir, or run `neuronasv run` first",
        )
    root = results_dir if machine is None else os.path.join(results_dir, machine)
    out: list[str] = []
    if not os.path.isdir(root):
        return out  # a machine with no results yet
    top = os.path.abspath(results_dir)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))  # e.g. .traces
        if os.path.abspath(dirpath) == top:
            continue  # top level holds benchmarks.json, not results
        for fn in sorted(filenames):
            if fn.endswith(RESULT_SUFFIX) and fn not in METADATA_FILES:
                out.append(os.path.join(dirpath, fn))
    return out


# One benchmark row of one file, before it becomes points:
# (benchmark, parameter combinations, values, samples per value or None, version, clean,
# combinations key). A value is a finite float, None (failed) or NaN (skipped: no point
# at all). The combinations tuple is shared by every file with the same row, and its key
# (a serial of the reader, never reused) names it in the caller's memos.
Row = tuple[
    str,
    tuple[tuple[str, ...], ...],
    list["float | None"],
    "list[tuple[float, ...]] | None",
    "str | None",
    bool,  # clean: every value a finite float (no failure, nothing skipped)
    int,
]


@dataclass(frozen=True)
class Header:
    """What a results file says about itself (checked by :meth:`AsvResultsReader.header`)."""

    machine: str
    commit: str
    env_name: str
    date: int | None
    columns: list[str]
    results: dict[str, Any]
    asv_env: dict[str, str] = dataclasses.field(default_factory=dict)


def asv_identity(data: Mapping[str, Any], env_name: str) -> dict[str, str]:
    """What asv recorded about the run's environment: its name, the python, the
    requirements and the environment variables (canonical JSON text for the last two).

    Compared when neither side has a neuronasv fingerprint (plain asv results): equal
    identities on one machine are comparable. A field of the wrong type reads as absent.
    """
    out = {"env_name": env_name}
    py = data.get("python")
    if isinstance(py, str):
        out["python"] = py
    for key in ("requirements", "env_vars"):
        v = data.get(key)
        if isinstance(v, dict):
            out[key] = json.dumps(v, sort_keys=True, default=str)
    return out


class SeriesMap:
    """(benchmark, params) -> the sidecar's ``SeriesId``, params with or without quotes.

    ``key`` is a serial of the reader that built it: maps of the same series list share
    one map and one key.
    """

    __slots__ = ("by_params", "key")

    def __init__(self, series: tuple[SeriesId, ...], key: int) -> None:
        by: dict[tuple[str, tuple[str, ...]], SeriesId] = {}
        for s in series:
            by[(s.benchmark, s.params)] = s
            by.setdefault((s.benchmark, tuple(unquote(p) for p in s.params)), s)
        self.by_params = by
        self.key = key

    def get(self, benchmark: str, params: tuple[str, ...]) -> SeriesId | None:
        by = self.by_params
        sid = by.get((benchmark, params))
        if sid is None and by:
            sid = by.get((benchmark, tuple(unquote(x) for x in params)))
        return sid


_NO_SAMPLES = itertools.repeat(())
_FLOAT = {float}
_LIST = {list}
# Memo entries kept per reader before it starts over (a pathological folder of thousands
# of distinct suites must not grow a reader without bound).
_MEMO_LIMIT = 100_000


def _opt(v: Any) -> str | None:
    return None if v is None else str(v)


def _check_version(version: Any, p: str) -> None:
    """asv's ``api_version`` 2, else one message: not asv at all, older or newer.

    Raises:
        CorruptResultsError: no ``version`` field.
        SchemaVersionError: any version other than 2.
    """
    if version == ASV_API_VERSION:
        return
    if version is None:
        raise CorruptResultsError(f"{p}: no asv 'version' field: not an asv results file")
    hint = (
        "run `asv update` to convert old results"
        if isinstance(version, int) and version < ASV_API_VERSION
        else "this file was written by a newer asv"
    )
    raise SchemaVersionError(
        f"{p}: asv results api_version {version!r} is not supported (reads 2; {hint})"
    )


def _required_fields(data: dict[str, Any], p: str) -> tuple[str, list[str], dict[str, Any]]:
    """``(commit_hash, result_columns, results)`` of a results document, each checked.

    Raises:
        CorruptResultsError: a field missing or of the wrong type.
    """
    for key in ("commit_hash", "results", "result_columns"):
        if key not in data:
            raise CorruptResultsError(f"{p}: field {key!r} is missing")
    commit = data["commit_hash"]
    if not isinstance(commit, str) or not commit:
        raise CorruptResultsError(f"{p}: commit_hash must be a non-empty string")
    columns = data["result_columns"]
    if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
        raise CorruptResultsError(f"{p}: result_columns must be a list of names")
    if "result" not in columns:
        raise CorruptResultsError(f"{p}: result_columns has no 'result' column")
    results = data["results"]
    if not isinstance(results, dict):
        raise CorruptResultsError(f"{p}: results must be an object")
    return commit, columns, results


def _machine_name(data: dict[str, Any], p: str, machine: str | None) -> str:
    """``params.machine``, else ``machine`` (the caller's), else the file's folder name.

    Raises:
        CorruptResultsError: ``params`` is not an object.
    """
    params_env = data.get("params") or {}
    if not isinstance(params_env, dict):
        raise CorruptResultsError(f"{p}: params must be an object")
    mach = params_env.get("machine")
    if not isinstance(mach, str) or not mach:
        mach = machine or os.path.basename(os.path.dirname(os.path.abspath(p)))
    return mach


def _env_name(data: dict[str, Any], p: str) -> str:
    """``env_name``, else the part of the file name after the commit (asv's naming)."""
    env_name = data.get("env_name")
    if not isinstance(env_name, str):
        env_name = os.path.basename(p)[:-5].split("-", 1)[-1] if p.endswith(".json") else ""
    return env_name


def _fast_clean(result: list[Any], bound: str | None) -> bool:
    """Whether a result list is all finite floats in range, checked at C speed (the common
    case); False sends it to the slow path, which checks each value and names a bad one."""
    if bound is not None and is_exact(bound):
        return False
    if set(map(type, result)) != _FLOAT or not math.isfinite(sum(result)):
        return False
    if max(map(abs, result)) > MAX_MAGNITUDE:
        return False
    return not (bound and min(result) <= 0.0)


def _checked_values(
    result: list[Any], where: str, source: str, bound: str | None, marked: bool
) -> list[float | None]:
    """Each result value checked (:func:`_number`), named by its index when it is bad."""
    return [
        _number(asv_float(raw, marked), f"{where} result[{i}]", source, bound)
        for i, raw in enumerate(result)
    ]


def _checked_samples(
    samples: list[Any],
    values: list[float | None],
    where: str,
    source: str,
    marked: bool,
    bound: str | None = "positive",
) -> list[tuple[float, ...]]:
    """Per combination its samples, checked (a time's > 0, an exact metric's in its own
    range); none for a failed or skipped (NaN) value."""
    out: list[tuple[float, ...]] = []
    for i, smp in enumerate(samples):
        v = values[i]
        if smp is None or (v is not None and v != v):
            out.append(())  # skipped (NaN) values have no point, so no samples
            continue
        if not isinstance(smp, list):
            raise CorruptResultsError(f"{source}: {where} samples[{i}] must be a list")
        vals = [
            _number(asv_float(x, marked), f"{where} samples[{i}]", source,
                    bound if bound is not None and is_exact(bound) else "positive")
            for x in smp
        ]
        out.append(tuple(v for v in vals if v is not None and not math.isnan(v)))
    return out


class AsvResultsReader:
    """Reads asv results files and sidecars; owns the memos that make a folder fast.

    One reader per column parser (``store/columns.ColumnsParser``: one per load, or one
    per worker process of ``load_columns``): the memos are
    worth it across the files of one folder, and die with the reader.
    """

    def __init__(self) -> None:
        self._serial = itertools.count()
        # distinct sidecar series lists (raw bytes compared by ``==``, memcmp speed)
        self._series: list[tuple[bytes, tuple[SeriesId, ...], SeriesMap | None, int]] = []
        # benchmark -> (params as written, combinations, their key)
        self._combos: dict[str, tuple[list[Any], tuple[tuple[str, ...], ...], int]] = {}

    def new_key(self) -> int:
        """A serial no other object of this reader has (for one-off memo keys)."""
        return next(self._serial)

    # -- one file ----------------------------------------------------------------------

    def read_json(self, path: str) -> tuple[bytes, Any, bool]:
        """``(raw bytes, data, marked)`` of an asv JSON file (see :func:`decode_asv_json`)."""
        with open(path, "rb") as fh:
            raw = fh.read()
        data, marked = decode_asv_json(raw, path)
        return raw, data, marked

    def header(
        self, data: Any, path: str, marked: bool, machine: str | None = None
    ) -> Header:
        """Check a decoded results document; its header.

        Raises:
            CorruptResultsError: not an object, missing/mistyped fields.
            SchemaVersionError: an asv ``version`` other than 2.
        """
        p = path
        if not isinstance(data, dict):
            raise CorruptResultsError(f"{p}: expected a JSON object, got {type(data).__name__}")
        _check_version(data.get("version"), p)
        commit, columns, results = _required_fields(data, p)
        env_name = _env_name(data, p)
        return Header(
            _machine_name(data, p, machine), commit, env_name, asv_date(data.get("date"), marked),
            columns, results, asv_identity(data, env_name),
        )  # fmt: skip

    def combos(self, name: str, params: list[Any]) -> tuple[tuple[tuple[str, ...], ...], int]:
        """A benchmark's parameter combinations (asv's product of its param lists) and key."""
        seen = self._combos.get(name)
        if seen is not None and seen[0] == params:
            return seen[1], seen[2]
        combos: tuple[tuple[str, ...], ...] = (
            tuple(tuple(str(v) for v in c) for c in itertools.product(*params)) if params else ((),)
        )
        key = next(self._serial)
        # Memo only all-string params (asv writes reprs): a list equal to those is the same
        # strings, whereas 1 == True == 1.0 would share combinations whose str() differ.
        if all(isinstance(v, str) for p in params for v in p):
            if len(self._combos) > _MEMO_LIMIT:
                self._combos.clear()
            self._combos[name] = (params, combos, key)
        return combos, key

    def row_shape(
        self, name: str, row: Any, columns: list[str], source: str
    ) -> tuple[dict[str, Any], tuple[tuple[str, ...], ...], int, list[Any] | None]:
        """A row's cells by column, its combinations (and key) and its result list.

        The result is None when the whole benchmark failed (asv compresses an all-None
        list to None), else a list with one value per combination.

        Raises:
            CorruptResultsError: not a list, params not a list of lists, or a value
                count that does not match the combinations.
        """
        where = f"benchmark {name!r}"
        if not isinstance(row, list):
            raise CorruptResultsError(f"{source}: {where}: row must be a list")
        cols = dict(zip(columns, row, strict=False))  # asv drops trailing None columns
        result = cols.get("result")
        params = cols.get("params") or []
        if not isinstance(params, list) or not set(map(type, params)) <= _LIST:
            raise CorruptResultsError(f"{source}: {where}: params must be a list of lists")
        combos, ckey = self.combos(name, params)
        if result is not None:
            if not isinstance(result, list):
                # Non-parameterised benchmarks may hold a bare scalar in hand-written files.
                result = [result]
            if len(result) != len(combos):
                raise CorruptResultsError(
                    f"{source}: {where}: {len(result)} results for {len(combos)} parameter"
                    " combinations"
                )
        return cols, combos, ckey, result

    def parse_row(
        self, name: str, row: Any, columns: list[str], source: str, marked: bool
    ) -> Row:
        """One benchmark row, every value and sample checked.

        Raises:
            CorruptResultsError: names the file, the benchmark and what is wrong.
        """
        where = f"benchmark {name!r}"
        cols, combos, ckey, result = self.row_shape(name, row, columns, source)
        samples = cols.get("samples")
        version = _opt(cols.get("version"))
        if result is None:
            return (name, combos, [None] * len(combos), None, version, False, ckey)
        if samples is not None and (not isinstance(samples, list) or len(samples) != len(combos)):
            raise CorruptResultsError(f"{source}: {where}: samples do not match the parameters")
        bound = value_bound(name)
        clean = _fast_clean(result, bound)
        # all finite floats in range (the common case) are kept as they are, at C speed;
        # else the slow path checks each value and names a bad one
        values = result if clean else _checked_values(result, where, source, bound, marked)
        if samples is None:
            return (name, combos, values, None, version, clean, ckey)
        out = _checked_samples(samples, values, where, source, marked, bound)
        return (name, combos, values, out, version, clean, ckey)

    # -- sidecars ----------------------------------------------------------------------

    def _series_list(self, raw: bytes, source: str) -> tuple[tuple[SeriesId, ...], int] | None:
        for known, series, _smap, key in self._series:
            if known == raw:
                return series, key
        data = JSON_DECODER.decode(raw)
        if not isinstance(data, list):
            return None
        series = tuple(SeriesId.from_json(s, source) for s in data)
        key = next(self._serial)
        self._series.insert(0, (raw, series, None, key))
        del self._series[8:]
        return series, key

    def sidecar_bytes(
        self, raw: bytes, source: str, *, profiles: bool = True
    ) -> tuple[RunSidecar, int]:
        """A sidecar from its bytes, fast; ``(sidecar, key of its series list)``.

        Same validation and errors as ``RunSidecar.loads`` (it is the fallback for
        anything unusual, and its sidecar gets a key of its own). With
        ``profiles=False`` the op tables are skipped, not validated (the site does not
        show them).

        Raises:
            NeuronasvError: as ``RunSidecar.loads``.
            UnicodeDecodeError: not UTF-8.
        """
        try:
            head = SIDECAR_HEAD_DECODER.decode(raw)
            doc = {
                f: v for f in SIDECAR_HEAD_FIELDS if (v := getattr(head, f)) is not msgspec.UNSET
            }
            got = self._series_list(bytes(head.series), source)
            profs: Any = JSON_DECODER.decode(head.profiles) if profiles else []
            if got is not None and isinstance(profs, list):
                sc = RunSidecar.from_json({**doc, "profiles": profs, "series": []}, source)
                return _with_series(sc, got[0]), got[1]
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            pass
        sc = RunSidecar.loads(raw.decode("utf-8"), source=source)
        return sc, next(self._serial)

    def series_map(self, sidecar: RunSidecar, key: int) -> SeriesMap:
        """The (benchmark, params) -> SeriesId map of a sidecar whose series list has ``key``."""
        for i, (raw, series, smap, k) in enumerate(self._series):
            if k == key:
                if smap is None:
                    smap = SeriesMap(series, key)
                    self._series[i] = (raw, series, smap, k)
                return smap
        return SeriesMap(sidecar.series, key)  # a list read the slow way: its own map

    def read_sidecar(
        self, path: str, *, profiles: bool = True
    ) -> tuple[RunSidecar | None, SeriesMap | None, str | None, bytes]:
        """``(sidecar, its series map, warning, raw bytes)`` of results file ``path``.

        No sidecar: ``(None, None, None, b"")``. An unreadable one is a warning, never an
        error: the asv results are still usable without it (their series keep asv's
        names); lose nothing.
        """
        spath = sidecar_path(path)
        try:
            with open(spath, "rb") as fh:
                raw = fh.read()
        except FileNotFoundError:
            return None, None, None, b""
        except OSError as exc:
            return None, None, f"{spath}: sidecar ignored: {exc}", b""
        try:
            sc, key = self.sidecar_bytes(raw, spath, profiles=profiles)
        except (NeuronasvError, UnicodeDecodeError) as exc:
            return None, None, f"{spath}: sidecar ignored: {exc}", raw
        return sc, self.series_map(sc, key), None, raw


def _with_series(sc: RunSidecar, series: tuple[SeriesId, ...]) -> RunSidecar:
    return dataclasses.replace(sc, series=series)
