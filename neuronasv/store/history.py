"""The history loader: an asv results folder (plus neuronasv sidecars) -> ``model.History``.

This is the only I/O of the Analyse stage. It reads asv's own format (``api_version`` 2,
``result_columns``/``results`` rows, see ``asv/results.py``) directly rather than through
``asv.results.Results.load`` so that every problem becomes a reason that names the file
and the field, and one bad file never stops the rest from loading.

Layout read: ``<results_dir>/<machine>/<hash8>-<env>.json`` (``machine.json`` and
``benchmarks.json`` are metadata, not results), an optional sidecar next to each results
file (``model.sidecar_path``) and an optional ``<results_dir>/benchmarks.json`` for units.

Missing values, explicitly:
  * asv writes ``null`` for a benchmark (or one parameter combination) that *failed*:
    it becomes a :class:`Point` with ``value=None`` and no samples (verdict "failed").
  * asv writes ``NaN`` for a combination that was *skipped / not applicable* (our plugin
    returns NaN for an op absent in that commit): no point at all (verdict new/removed).
  * NaN samples inside a sample list are dropped (asv's ``is_different`` does the same).

Commit order comes from git when ``repo`` is given (one ``git rev-list --topo-order
--all``, see :meth:`neuronasv.store.git.Git.commit_order`), else from asv's commit
dates (then the hash).

Speed (this loader also feeds ``compare``/``regressions`` on long histories): JSON goes
through msgspec with a NaN pre-pass (:func:`decode_asv_json`), sidecar series lists are
validated once per distinct list (:func:`read_sidecar_bytes`), and ``load_history``
resolves series identities once per distinct row; see docs/publishing.md for figures.
"""

from __future__ import annotations

import dataclasses
import gc
import itertools
import json
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import msgspec

from neuronasv.errors import CorruptResultsError, NeuronasvError, SchemaVersionError, StoreError
from neuronasv.model import History, Point, RunSidecar, Series, SeriesId, sidecar_path
from neuronasv.model._codec import check_strings
from neuronasv.model.profile import WorkloadProfile
from neuronasv.store.asvconf import results_dir_for
from neuronasv.store.git import Git

__all__ = [
    "ASV_API_VERSION",
    "HistoryCache",
    "ParsedEntry",
    "ParsedFile",
    "asv_float",
    "benchmark_units",
    "decode_asv_json",
    "default_results_dir",
    "default_unit",
    "load_history",
    "missing_results_error",
    "parse_result_file",
    "read_sidecar_bytes",
    "resolve_commit",
    "stat_key",
]

ASV_API_VERSION = 2
_METADATA_FILES = frozenset({"machine.json", "benchmarks.json"})

class HistoryCache(Protocol):
    """What ``load_history`` needs from a per-file cache (Publish supplies a disk one)."""

    def get(self, path: str, stat_key: tuple[int, ...]) -> ParsedFile | None: ...

    def put(self, path: str, stat_key: tuple[int, ...], parsed: ParsedFile) -> None: ...


@dataclass(frozen=True)
class ParsedEntry:
    """One (benchmark, parameter combination) of one results file.

    ``value`` None with ``failed`` True: asv recorded a failure. Skipped/NaN combinations
    are not represented at all.
    """

    benchmark: str
    params: tuple[str, ...]
    value: float | None
    samples: tuple[float, ...] = ()
    failed: bool = False
    version: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark,
            "params": list(self.params),
            "value": self.value,
            "samples": list(self.samples),
            "failed": self.failed,
            "version": self.version,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ParsedEntry:
        return cls(
            benchmark=str(data["benchmark"]),
            params=tuple(str(p) for p in data["params"]),
            value=None if data["value"] is None else float(data["value"]),
            samples=tuple(float(s) for s in data["samples"]),
            failed=bool(data["failed"]),
            version=None if data.get("version") is None else str(data["version"]),
        )


@dataclass(frozen=True)
class ParsedFile:
    """Everything one results file (and its sidecar) contributes to the history.

    Attributes:
        path: the results file.
        machine: asv machine name (``params.machine``, else the folder name).
        commit: full commit hash.
        env_name: asv environment name.
        date: commit date in ms since the epoch (asv's ``date``), None if absent.
        entries: one per (benchmark, params) that has a value or failed.
        sidecar: the neuronasv sidecar, None for plain asv results.
        warnings: non-fatal problems ("sidecar unreadable: ..."), reported as load errors.
    """

    path: str
    machine: str
    commit: str
    env_name: str
    date: int | None
    entries: tuple[ParsedEntry, ...]
    sidecar: RunSidecar | None = None
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """Plain-JSON form for disk caches (``from_json`` reads it back)."""
        return {
            "path": self.path,
            "machine": self.machine,
            "commit": self.commit,
            "env_name": self.env_name,
            "date": self.date,
            "entries": [e.to_json() for e in self.entries],
            "sidecar": self.sidecar.to_json() if self.sidecar else None,
            "warnings": list(self.warnings),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ParsedFile:
        sc = data.get("sidecar")
        return cls(
            path=str(data["path"]),
            machine=str(data["machine"]),
            commit=str(data["commit"]),
            env_name=str(data["env_name"]),
            date=None if data.get("date") is None else int(data["date"]),
            entries=tuple(ParsedEntry.from_json(e) for e in data["entries"]),
            sidecar=RunSidecar.from_json(sc, data["path"]) if sc is not None else None,
            warnings=tuple(str(w) for w in data.get("warnings", [])),
        )


def _number(v: Any, where: str, source: str) -> float | None:
    """A finite float, None for null, NaN passed through; anything else is corrupt."""
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise CorruptResultsError(f"{source}: {where} is not a number: {v!r}")
    f = float(v)
    if math.isinf(f):
        raise CorruptResultsError(f"{source}: {where} is infinite")
    return f


# -- fast JSON ---------------------------------------------------------------------
#
# Parsing dominates every load (asv results: ~140 kB of floats per commit at 1,000
# series; sidecars: ~230 kB, mostly the series list). ``msgspec`` decodes 5-7x faster
# than the stdlib, but like every strict parser it rejects asv's bare ``NaN`` and
# ``Infinity``. So a byte pre-pass turns those tokens, outside strings only, into the
# strings below, which the readers map back (``numpy`` also reads them as floats).
# Anything unusual (a backslash anywhere, the marker strings already present, any
# msgspec error) takes the stdlib path instead: same values, same error messages.

_NONFINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
_BARE = re.compile(rb"-Infinity|Infinity|NaN")
_MARK = {b"NaN": b'"nan"', b"Infinity": b'"inf"', b"-Infinity": b'"-inf"'}
_JSON = msgspec.json.Decoder()


def _mark_nonfinite(raw: bytes) -> bytes | None:
    """``raw`` with bare NaN/Infinity (outside strings) as marker strings; None: use stdlib.

    Without backslashes a ``"`` always opens or closes a string, so a token is outside
    every string exactly when the number of quotes before it is even.
    """
    if b"NaN" not in raw and b"Infinity" not in raw:
        return raw
    if b"\\" in raw or b'"nan"' in raw or b'"inf"' in raw or b'"-inf"' in raw:
        return None
    out: list[bytes] = []
    last = 0  # end of the previous token
    quotes = 0  # quotes before ``last``
    for m in _BARE.finditer(raw):
        start = m.start()
        quotes += raw.count(b'"', last, start)
        if quotes % 2 == 0:
            out.append(raw[last:start])
            out.append(_MARK[m.group()])
        else:
            out.append(raw[last : m.end()])
        last = m.end()
    out.append(raw[last:])
    return b"".join(out)


def decode_asv_json(raw: bytes, source: str) -> tuple[Any, bool]:
    """Decode an asv JSON document (bare ``NaN``/``Infinity`` allowed, as asv writes).

    Returns:
        ``(data, marked)``: when ``marked`` is True, non-finite numbers appear in
        ``data`` as the strings ``"nan"``, ``"inf"``, ``"-inf"`` (see
        :func:`asv_float`); otherwise as Python floats, exactly as ``json.loads``.

    Raises:
        CorruptResultsError: not UTF-8, empty, or not valid JSON (names ``source``).
    """
    fast = _mark_nonfinite(raw)
    if fast is not None:
        try:
            return _JSON.decode(fast), fast is not raw
        except (msgspec.DecodeError, msgspec.ValidationError):
            pass  # the stdlib decides, and words the error (lone surrogates land here too)
        except RecursionError:
            raise CorruptResultsError(f"{source}: JSON nested too deeply") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorruptResultsError(f"{source}: not UTF-8 text ({exc.reason})") from exc
    if not text.strip():
        raise CorruptResultsError(f"{source}: empty file")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CorruptResultsError(
            f"{source}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno});"
            " the file may be truncated"
        ) from exc
    except RecursionError:
        raise CorruptResultsError(f"{source}: JSON nested too deeply") from None
    check_strings(data, source)  # e.g. a lone surrogate in a benchmark or op name
    return data, False


def asv_float(v: Any, marked: bool) -> Any:
    """A value from :func:`decode_asv_json` with the marker strings mapped back to floats."""
    if marked and v.__class__ is str and v in _NONFINITE:
        return _NONFINITE[v]
    return v


class _SidecarHead(msgspec.Struct):
    """A sidecar with its bulky lists left undecoded (``msgspec.Raw``)."""

    kind: Any = msgspec.UNSET
    schema_version: Any = msgspec.UNSET
    machine: Any = msgspec.UNSET
    commit_hash: Any = msgspec.UNSET
    env_name: Any = msgspec.UNSET
    created: Any = msgspec.UNSET
    fingerprint: Any = msgspec.UNSET
    traces: Any = msgspec.UNSET
    failures: Any = msgspec.UNSET
    series: msgspec.Raw = msgspec.Raw(b"[]")
    profiles: msgspec.Raw = msgspec.Raw(b"[]")


_HEAD = msgspec.json.Decoder(_SidecarHead)
_HEAD_FIELDS = tuple(f for f in _SidecarHead.__struct_fields__ if f not in ("series", "profiles"))
# Every commit of a suite carries the same series list: validate it once per distinct
# byte string (compared by ``==``, memcmp speed) and share the SeriesId tuple. The
# serial tells callers' own memos which list they saw (ids of freed tuples get reused).
_SERIES_MEMO: list[tuple[bytes, tuple[SeriesId, ...], int]] = []
_SERIAL = itertools.count()


def _series_from_raw(raw: bytes, source: str) -> tuple[tuple[SeriesId, ...], int] | None:
    for known, series, serial in _SERIES_MEMO:
        if known == raw:
            return series, serial
    data = _JSON.decode(raw)
    if not isinstance(data, list):
        return None
    series = tuple(SeriesId.from_json(s, source) for s in data)
    serial = next(_SERIAL)
    _SERIES_MEMO.insert(0, (raw, series, serial))
    del _SERIES_MEMO[8:]
    return series, serial


def read_sidecar_bytes(raw: bytes, source: str, *, profiles: bool = True) -> tuple[RunSidecar, int]:
    """A sidecar from its bytes, fast; ``(sidecar, serial of its series list)``.

    Same validation and errors as ``RunSidecar.loads`` (it is the fallback for anything
    unusual). With ``profiles=False`` the op tables are skipped, not validated (the
    site does not show them).

    Raises:
        NeuronasvError: as ``RunSidecar.loads``.
        UnicodeDecodeError: not UTF-8.
    """
    try:
        head = _HEAD.decode(raw)
        doc = {f: v for f in _HEAD_FIELDS if (v := getattr(head, f)) is not msgspec.UNSET}
        got = _series_from_raw(bytes(head.series), source)
        profs: Any = _JSON.decode(head.profiles) if profiles else []
        if got is not None and isinstance(profs, list):
            sc = RunSidecar.from_json({**doc, "profiles": profs, "series": []}, source)
            return dataclasses.replace(sc, series=got[0]), got[1]
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        pass
    sc = RunSidecar.loads(raw.decode("utf-8"), source=source)
    return sc, -1


# One benchmark row of one file, before it becomes ParsedEntry/Point objects:
# (benchmark, parameter combinations, values, samples per value or None, version, clean).
# A value is a finite float, None (failed) or NaN (skipped: no point at all). The
# combinations list is shared by every file with the same row (see ``_combos``).
_Row = tuple[
    str,
    list[tuple[str, ...]],
    list["float | None"],
    "list[tuple[float, ...]] | None",
    "str | None",
    bool,  # clean: every value a finite float (no failure, nothing skipped)
]


@dataclass
class _Rec:
    """A parsed file as ``load_history`` keeps it until commit order is known (lean)."""

    path: str
    machine: str
    commit: str
    env_name: str
    date: int | None
    rows: list[_Row]
    sidecar: RunSidecar | None
    warnings: tuple[str, ...]

    @classmethod
    def of(cls, pf: ParsedFile, interned: dict[Any, list[tuple[str, ...]]]) -> _Rec:
        """From a cached ParsedFile; ``interned`` shares the one-combination lists."""

        def one(e: ParsedEntry) -> list[tuple[str, ...]]:
            got = interned.get((e.benchmark, e.params))
            return (
                got if got is not None else interned.setdefault((e.benchmark, e.params), [e.params])
            )

        return cls(
            pf.path,
            pf.machine,
            pf.commit,
            pf.env_name,
            pf.date,
            [
                (e.benchmark, one(e), [e.value], [e.samples], e.version, e.value is not None)
                for e in pf.entries
            ],
            pf.sidecar,
            pf.warnings,
        )

    def parsed(self) -> ParsedFile:
        return ParsedFile(
            path=self.path,
            machine=self.machine,
            commit=self.commit,
            env_name=self.env_name,
            date=self.date,
            entries=tuple(
                ParsedEntry(b, c, v, s, failed=v is None, version=ver)
                for b, combos, values, samples, ver, _clean in self.rows
                for c, v, s in zip(combos, values, samples or _NO_SAMPLES, strict=False)
                if v is None or v == v
            ),
            sidecar=self.sidecar,
            warnings=self.warnings,
        )


def parse_result_file(path: str | os.PathLike[str], *, machine: str | None = None) -> ParsedFile:
    """Parse one asv results file and its sidecar (no git, no other files).

    Args:
        path: ``<results>/<machine>/<hash8>-<env>.json``.
        machine: fallback machine name when the file has none (default: its folder name).

    Returns:
        The parsed file.

    Raises:
        CorruptResultsError: not JSON, truncated, wrong types, missing keys.
        SchemaVersionError: an asv ``version`` other than 2.
    """
    return _parse(os.fspath(path), machine).parsed()


def _parse(p: str, machine: str | None = None) -> _Rec:
    with open(p, "rb") as fh:
        raw = fh.read()
    data, marked = decode_asv_json(raw, p)
    if not isinstance(data, dict):
        raise CorruptResultsError(f"{p}: expected a JSON object, got {type(data).__name__}")
    version = data.get("version")
    if version != ASV_API_VERSION:
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
    params_env = data.get("params") or {}
    if not isinstance(params_env, dict):
        raise CorruptResultsError(f"{p}: params must be an object")
    mach = params_env.get("machine")
    if not isinstance(mach, str) or not mach:
        mach = machine or os.path.basename(os.path.dirname(os.path.abspath(p)))
    env_name = data.get("env_name")
    if not isinstance(env_name, str):
        env_name = os.path.basename(p)[:-5].split("-", 1)[-1] if p.endswith(".json") else ""
    date = asv_float(data.get("date"), marked)
    date = (
        int(date)
        if isinstance(date, (int, float)) and not isinstance(date, bool) and math.isfinite(date)
        else None
    )

    rows: list[_Row] = []
    for name, row in results.items():
        rows.append(_parse_row(name, row, columns, p, marked))

    sidecar: RunSidecar | None = None
    warnings: list[str] = []
    sc_path = sidecar_path(p)
    try:
        with open(sc_path, "rb") as fh:
            sc_raw = fh.read()
    except FileNotFoundError:
        sc_raw = None
    except OSError as exc:
        warnings.append(f"{sc_path}: sidecar ignored: {exc}")
        sc_raw = None
    if sc_raw is not None:
        try:
            sidecar = read_sidecar_bytes(sc_raw, sc_path)[0]
        except (NeuronasvError, UnicodeDecodeError) as exc:
            # The asv results are still usable without the sidecar; say so, lose nothing.
            warnings.append(f"{sc_path}: sidecar ignored: {exc}")
    return _Rec(p, mach, commit, env_name, date, rows, sidecar, tuple(warnings))


# benchmark -> (params as written, parameter combinations): every commit repeats them.
_COMBOS: dict[str, tuple[list[Any], list[tuple[str, ...]]]] = {}


def _combos(name: str, params: list[Any]) -> list[tuple[str, ...]]:
    seen = _COMBOS.get(name)
    if seen is not None and seen[0] == params:
        return seen[1]
    combos: list[tuple[str, ...]] = (
        [tuple(str(v) for v in c) for c in itertools.product(*params)] if params else [()]
    )
    # Memo only all-string params (asv writes reprs): a list equal to those is the same
    # strings, whereas 1 == True == 1.0 would share combinations whose str() differ.
    if all(isinstance(v, str) for p in params for v in p):
        if len(_COMBOS) > 100_000:
            _COMBOS.clear()
        _COMBOS[name] = (params, combos)
    return combos


def _parse_row(name: str, row: Any, columns: list[str], source: str, marked: bool) -> _Row:
    where = f"benchmark {name!r}"
    if not isinstance(row, list):
        raise CorruptResultsError(f"{source}: {where}: row must be a list")
    cols = dict(zip(columns, row, strict=False))  # asv drops trailing None columns
    result = cols.get("result")
    params = cols.get("params") or []
    samples = cols.get("samples")
    version = _opt(cols.get("version"))
    if not isinstance(params, list) or not set(map(type, params)) <= _LIST:
        raise CorruptResultsError(f"{source}: {where}: params must be a list of lists")
    combos = _combos(name, params)
    if result is None:
        # The whole benchmark failed (asv compresses an all-None list to None).
        return (name, combos, [None] * len(combos), None, version, False)
    if not isinstance(result, list):
        # Non-parameterised benchmarks may hold a bare scalar in hand-written files.
        result = [result]
    if len(result) != len(combos):
        raise CorruptResultsError(
            f"{source}: {where}: {len(result)} results for {len(combos)} parameter combinations"
        )
    if samples is not None and (not isinstance(samples, list) or len(samples) != len(combos)):
        raise CorruptResultsError(f"{source}: {where}: samples do not match the parameters")
    values: list[float | None]
    clean = set(map(type, result)) == _FLOAT and math.isfinite(sum(result))
    if clean:
        values = result  # all finite floats (the common case), checked at C speed
    else:
        values = [
            _number(asv_float(raw, marked), f"{where} result[{i}]", source)
            for i, raw in enumerate(result)
        ]
    if samples is None:
        return (name, combos, values, None, version, clean)
    out: list[tuple[float, ...]] = []
    for i, smp in enumerate(samples):
        v = values[i]
        if smp is None or (v is not None and v != v):
            out.append(())  # skipped (NaN) values have no point, so no samples
            continue
        if not isinstance(smp, list):
            raise CorruptResultsError(f"{source}: {where} samples[{i}] must be a list")
        vals = [_number(asv_float(x, marked), f"{where} samples[{i}]", source) for x in smp]
        out.append(tuple(v for v in vals if v is not None and not math.isnan(v)))
    return (name, combos, values, out, version, clean)


_NO_SAMPLES = itertools.repeat(())
_FLOAT = {float}
_LIST = {list}


def _opt(v: Any) -> str | None:
    return None if v is None else str(v)


def stat_key(path: str) -> tuple[int, ...]:
    """Cache key of a results file and its sidecar: (mtime_ns, size) of each (0s if absent)."""
    out: list[int] = []
    for p in (path, sidecar_path(path)):
        try:
            st = os.stat(p)
            out += [st.st_mtime_ns, st.st_size]
        except FileNotFoundError:
            out += [0, 0]
    return tuple(out)


def _iter_result_paths(results_dir: str, machine: str | None) -> Iterable[str]:
    root = results_dir if machine is None else os.path.join(results_dir, machine)
    if not os.path.isdir(root):
        return
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        if os.path.abspath(dirpath) == os.path.abspath(results_dir):
            continue  # top level holds benchmarks.json, not results
        for fn in sorted(filenames):
            if fn.endswith(".json") and fn not in _METADATA_FILES:
                yield os.path.join(dirpath, fn)


def benchmark_units(results_dir: str) -> dict[str, str]:
    """benchmark -> unit from asv's ``benchmarks.json`` (empty when absent/unreadable)."""
    path = os.path.join(results_dir, "benchmarks.json")
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


def default_unit(benchmark: str) -> str:
    """The unit asv implies by a benchmark's prefix (``time_`` -> seconds, ...)."""
    leaf = benchmark.rsplit(".", 1)[-1]
    if leaf.startswith(("time_", "devtime_", "timeraw_")):
        return "seconds"
    if leaf.startswith(("mem_", "peakmem_")):
        return "bytes"
    return "unit"


def _series_map(sidecar: RunSidecar | None) -> dict[tuple[str, tuple[str, ...]], SeriesId]:
    if sidecar is None:
        return {}
    out: dict[tuple[str, tuple[str, ...]], SeriesId] = {}
    for s in sidecar.series:
        out[(s.benchmark, s.params)] = s
        # Tolerate params written without asv's repr quotes ('a' vs a).
        out.setdefault((s.benchmark, tuple(_unquote(p) for p in s.params)), s)
    return out


def _unquote(p: str) -> str:
    return p[1:-1] if len(p) >= 2 and p[0] == p[-1] and p[0] in "'\"" else p


def load_history(
    results_dir: str | os.PathLike[str],
    *,
    machine: str | None = None,
    repo: str | os.PathLike[str] | None = None,
    cache: HistoryCache | None = None,
    git: Git | None = None,
) -> History:
    """Load every results file under ``results_dir`` into a :class:`History`.

    Args:
        results_dir: asv results folder (``<machine>/<hash8>-<env>.json`` below it).
        machine: only this machine's folder.
        repo: a git repository (work tree or git dir) giving the commit order.
        cache: optional per-file cache (``get(path, stat_key)``/``put(path, stat_key, parsed)``).
        git: the git gateway for ``repo`` (injected in tests; default ``Git(repo)``).

    Returns:
        The history; unreadable files are listed in ``load_errors`` as ``"path: reason"``.
    """
    # A history is millions of small objects (a Point per value) and no cycles: the
    # cyclic collector would rescan them over and over while they are made (~30 % of
    # the load time at 1,000 commits x 1,000 series). Off while loading, then as before.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _load_history(results_dir, machine, repo, cache, git)
    finally:
        if was_enabled:
            gc.enable()


def _load_history(
    results_dir: str | os.PathLike[str],
    machine: str | None,
    repo: str | os.PathLike[str] | None,
    cache: HistoryCache | None,
    git: Git | None,
) -> History:
    rdir = os.fspath(results_dir)
    errors: list[str] = []
    parsed: list[_Rec] = []
    interned: dict[Any, list[tuple[str, ...]]] = {}
    for path in _iter_result_paths(rdir, machine):
        try:
            if cache is None:
                rec = _parse(path)
            else:
                key = stat_key(path)
                pf = cache.get(path, key)
                if pf is None:
                    rec = _parse(path)
                    cache.put(path, key, rec.parsed())
                else:
                    rec = _Rec.of(pf, interned)
        except (NeuronasvError, OSError) as exc:
            msg = str(exc)
            errors.append(msg if msg.startswith(path) else f"{path}: {msg}")
            continue
        if machine is not None and rec.machine != machine:
            continue
        errors.extend(rec.warnings)
        parsed.append(rec)
    parsed = _one_file_per_run(parsed, errors)

    dates: dict[str, int] = {}
    for rec in parsed:
        if rec.date is not None:
            dates[rec.commit] = min(dates.get(rec.commit, rec.date), rec.date)
    all_commits = {rec.commit for rec in parsed}
    ordered: list[str] = []
    if repo is not None or git is not None:
        gw = git or Git(os.fspath(repo))  # type: ignore[arg-type]
        try:
            ordered = gw.commit_order(all_commits)
        except StoreError as exc:
            errors.append(f"commit order: {exc}; falling back to asv commit dates")
    rest = sorted(all_commits - set(ordered), key=lambda c: (dates.get(c, 0), c))
    commits = ordered + rest  # commits git does not know go last, by date
    order = {c: i for i, c in enumerate(commits)}

    units = benchmark_units(rdir)
    fingerprints: dict[tuple[str, str], Mapping[str, str]] = {}
    profiles: dict[tuple[str, str], tuple[WorkloadProfile, ...]] = {}
    points: dict[tuple[str, str, str, tuple[str, ...]], list[Point]] = {}
    ids: dict[tuple[str, str, str, tuple[str, ...]], SeriesId] = {}
    # Series a sidecar maps are neuronasv device time, stored by the plugin in seconds.
    mapped: set[str] = set()
    smaps: dict[int, dict[tuple[str, tuple[str, ...]], SeriesId]] = {}
    # (machine, env, row, combinations, series map) -> per combination its point list,
    # plus the (key, SeriesId) pairs the sidecar names: files repeat their rows, so the
    # identity work runs once per distinct row, not once per value.
    memo: dict[
        tuple[str, str, str, int, int], tuple[list[list[Point]], list[Any], list[Any], Any]
    ] = {}
    last_named: dict[tuple[str, str, str], list[Any]] = {}
    parsed.sort(key=lambda r: (order[r.commit], r.path))
    for rec in parsed:
        sc = rec.sidecar
        smap: dict[tuple[str, tuple[str, ...]], SeriesId] = {}
        if sc is not None:
            fingerprints[(rec.machine, rec.commit)] = dict(sc.fingerprint)
            profiles[(rec.machine, rec.commit)] = sc.profiles
            # sidecars of one suite share one series tuple (read_sidecar_bytes): map it once
            got = smaps.get(id(sc.series))
            smap = got if got is not None else smaps.setdefault(id(sc.series), _series_map(sc))
        o, commit, date = order[rec.commit], rec.commit, rec.date
        for bench, combos, values, samples, _ver, clean in rec.rows:
            mk = (rec.machine, rec.env_name, bench, id(combos), id(smap))
            row = memo.get(mk)
            if row is None:
                lists: list[list[Point]] = []
                named: list[tuple[tuple[str, str, str, tuple[str, ...]], SeriesId | None]] = []
                for params in combos:
                    k = (rec.machine, rec.env_name, bench, params)
                    sid = smap.get((bench, params)) if smap else None
                    if sid is None and smap:
                        sid = smap.get((bench, tuple(_unquote(x) for x in params)))
                    if sid is None and k not in ids:
                        ids[k] = SeriesId(bench, params)
                    named.append((k, sid))
                    lists.append(points.setdefault(k, []))
                every = [(k2, s2) for k2, s2 in named if s2 is not None]
                # (the memo holds ``combos``, so its id cannot be reused by another list)
                row = memo[mk] = (lists, named if every else [], every, combos)
            lists, named, every, _ = row
            if named:
                # Later sidecars win (a series gains its identity), for values present.
                # A clean row names all of ``every``; that is a no-op when the same list
                # was the last one applied to this benchmark (nothing overrode it since).
                group = (rec.machine, rec.env_name, bench)
                if not clean:
                    hits = [
                        (k, sid)
                        for (k, sid), v in zip(named, values, strict=False)
                        if sid is not None and (v is None or v == v)
                    ]
                    if hits:
                        mapped.add(bench)
                        ids.update(hits)
                        last_named[group] = hits
                elif last_named.get(group) is not every:
                    mapped.add(bench)
                    ids.update(every)
                    last_named[group] = every
            if clean and samples is None:
                for pts, v in zip(lists, values, strict=False):
                    pts.append(Point(commit, o, v, (), date))
                continue
            for pts, v, smp in zip(lists, values, samples or _NO_SAMPLES, strict=False):
                if v is None or v == v:  # NaN: skipped in this commit, no point
                    pts.append(Point(commit, o, v, smp, date))
        rec.rows = []  # free as we go: the points now hold the values
    points = {k: v for k, v in points.items() if v}
    series = tuple(
        Series(
            machine=k[0],
            env_name=k[1],
            series=ids[k],
            unit=units.get(k[2], "seconds" if k[2] in mapped else default_unit(k[2])),
            points=tuple(pts),
        )
        for k, pts in sorted(points.items())
    )
    return History(
        series=series,
        commits=tuple(commits),
        fingerprints=fingerprints,
        load_errors=tuple(errors),
        profiles=profiles,
    )


def _is_asv_name(rec: _Rec) -> bool:
    """Is ``rec`` at asv's own path for its run: ``<machine>/<hash8>-<env>.json``?"""
    folder, name = os.path.split(os.path.abspath(rec.path))
    return name == f"{rec.commit[:8]}-{rec.env_name}.json" and os.path.basename(folder) == (
        rec.machine
    )


def _one_file_per_run(parsed: Sequence[_Rec], errors: list[str]) -> list[_Rec]:
    """One results file per (machine, commit, environment); the rest named in ``errors``.

    asv writes exactly one file per run, at ``<machine>/<hash8>-<env>.json``. A second
    file for the same run (a stale copy under another name, a folder copied aside) would
    otherwise be merged silently, and its old values could decide a verdict. Rule: when
    exactly one of them sits at asv's own path, that one is used and the others are
    ignored; otherwise none is used (nothing says which is current). Either way a load
    error names every file involved, so a comparison that used the pick also says so.
    """
    groups: dict[tuple[str, str, str], list[_Rec]] = {}
    for rec in parsed:
        groups.setdefault((rec.machine, rec.commit, rec.env_name), []).append(rec)
    dropped: set[int] = set()
    for (mach, commit, env), recs in groups.items():
        if len(recs) < 2:
            continue
        recs = sorted(recs, key=lambda r: r.path)
        names = ", ".join(r.path for r in recs)
        what = (
            f"{len(recs)} results files for one run (machine {mach!r}, commit {commit[:12]},"
            f" environment {env!r}): {names}"
        )
        own = [r for r in recs if _is_asv_name(r)]
        if len(own) == 1:
            errors.append(
                f"{what}; using {own[0].path} (asv's own file name for that run) and ignoring"
                " the other" + ("s" if len(recs) > 2 else "") + "; remove the stale copy"
            )
            dropped.update(id(r) for r in recs if r is not own[0])
        else:
            errors.append(
                f"{what}; none of them is used, since not exactly one is at asv's own path"
                f" <machine>/<hash8>-<env>.json; keep one and remove the rest"
            )
            dropped.update(id(r) for r in recs)
    return [r for r in parsed if id(r) not in dropped]


def default_results_dir(root: str | os.PathLike[str] | None = ".") -> str:
    """``results_dir`` of ``<root>/asv.conf.json``; see ``store.asvconf.results_dir_for``."""
    return results_dir_for(root)


def resolve_commit(ref: str, history: History, git: Git | None = None) -> str:
    """A commit-ish (branch, tag, full or prefix hash) -> the full hash that has results.

    Git resolves it when a gateway is given; otherwise (or when git does not know it) a
    unique prefix of a commit in ``history`` is accepted.

    Raises:
        UsageError: unknown or ambiguous.
    """
    from neuronasv.errors import UsageError

    if git is not None:
        full = git.resolve(ref)
        if full:
            return full
    low = ref.lower()
    hits = [c for c in history.commits if c.lower().startswith(low)]
    if len(hits) == 1:
        return hits[0]
    if len(hits) > 1:
        raise UsageError(f"{ref!r} is ambiguous: {', '.join(h[:12] for h in hits[:5])}")
    raise UsageError(
        f"no results for {ref!r}"
        + ("" if git is not None else " (no git repository to resolve names; give a hash)"),
        hint="run `neuronasv run` for that commit, or check --results-dir and --machine",
    )


def missing_results_error(
    history: History, results_dir: str, ref: str, commit: str | None = None
) -> NeuronasvError | None:
    """Why ``ref`` (resolved to ``commit`` when known) has no results, as the error to raise.

    None when the history holds results for it. Otherwise, when a results file of that
    commit (file names start with its first 8 hex digits) could not be read, a
    :class:`CorruptResultsError` naming the file and the reason (exit 5); else a
    :class:`~neuronasv.errors.UsageError` saying there are no results and how to make them.
    """
    from neuronasv.errors import UsageError

    if commit is not None and commit in history.commits:
        return None
    key = (commit or ref).lower()[:8]
    if re.fullmatch(r"[0-9a-f]{8}", key):
        bad = [
            e
            for e in history.load_errors
            if os.path.basename(e.split(": ", 1)[0]).startswith(key + "-")
            and not e.split(": ", 1)[0].endswith(".neuronasv")
        ]
        if bad:
            return CorruptResultsError(
                f"the results of {ref!r} cannot be read: {bad[0]}"
                + (f" (and {len(bad) - 1} more file(s))" if len(bad) > 1 else ""),
                hint=f"measure it again with `neuronasv run {ref}`, or restore the file",
            )
    name = f"{ref!r} ({commit[:12]})" if commit and not commit.startswith(ref) else repr(ref)
    return UsageError(
        f"no results for {name} under {results_dir}",
        hint=f"measure it first: `neuronasv run {ref}` (or check --results-dir and --machine)",
    )
