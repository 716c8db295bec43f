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

Commit order comes from git when ``repo`` is given (``git rev-list --topo-order`` over
the commits that have results), else from asv's commit dates (then the hash, for ties).
"""

from __future__ import annotations

import itertools
import json
import math
import os
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from neuronasv.errors import CorruptResultsError, NeuronasvError, SchemaVersionError, StoreError
from neuronasv.model import History, Point, RunSidecar, Series, SeriesId, sidecar_path
from neuronasv.model.profile import WorkloadProfile

__all__ = [
    "ASV_API_VERSION",
    "HistoryCache",
    "ParsedEntry",
    "ParsedFile",
    "default_results_dir",
    "git_commit_order",
    "git_runner_for",
    "load_history",
    "parse_result_file",
    "resolve_commit",
    "stat_key",
]

ASV_API_VERSION = 2
_METADATA_FILES = frozenset({"machine.json", "benchmarks.json"})

GitRunner = Callable[[Sequence[str]], str]


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


def _is_nan(v: Any) -> bool:
    return isinstance(v, float) and math.isnan(v)


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


def _read_json(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except UnicodeDecodeError as exc:
        raise CorruptResultsError(f"{path}: not UTF-8 text ({exc.reason})") from exc
    if not text.strip():
        raise CorruptResultsError(f"{path}: empty file")
    try:
        # asv writes bare NaN, which Python's json accepts; handled value by value below.
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CorruptResultsError(
            f"{path}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno});"
            " the file may be truncated"
        ) from exc


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
    p = os.fspath(path)
    data = _read_json(p)
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
    date = data.get("date")
    date = int(date) if isinstance(date, (int, float)) and not isinstance(date, bool) else None

    entries: list[ParsedEntry] = []
    for name, row in results.items():
        entries.extend(_parse_row(name, row, columns, p))

    sidecar: RunSidecar | None = None
    warnings: list[str] = []
    sc_path = sidecar_path(p)
    if os.path.exists(sc_path):
        try:
            with open(sc_path, encoding="utf-8") as fh:
                sidecar = RunSidecar.loads(fh.read(), source=sc_path)
        except (NeuronasvError, OSError, UnicodeDecodeError) as exc:
            # The asv results are still usable without the sidecar; say so, lose nothing.
            warnings.append(f"{sc_path}: sidecar ignored: {exc}")
    return ParsedFile(
        path=p,
        machine=mach,
        commit=commit,
        env_name=env_name,
        date=date,
        entries=tuple(entries),
        sidecar=sidecar,
        warnings=tuple(warnings),
    )


def _parse_row(name: str, row: Any, columns: list[str], source: str) -> list[ParsedEntry]:
    where = f"benchmark {name!r}"
    if not isinstance(row, list):
        raise CorruptResultsError(f"{source}: {where}: row must be a list")
    cols = dict(zip(columns, row, strict=False))  # asv drops trailing None columns
    result = cols.get("result")
    params = cols.get("params") or []
    samples = cols.get("samples")
    version = cols.get("version")
    if not isinstance(params, list) or not all(isinstance(x, list) for x in params):
        raise CorruptResultsError(f"{source}: {where}: params must be a list of lists")
    combos = [tuple(str(v) for v in c) for c in itertools.product(*params)] if params else [()]
    if result is None:
        # The whole benchmark failed (asv compresses an all-None list to None).
        return [ParsedEntry(name, c, None, failed=True, version=_opt(version)) for c in combos]
    if not isinstance(result, list):
        # Non-parameterised benchmarks may hold a bare scalar in hand-written files.
        result = [result]
    if len(result) != len(combos):
        raise CorruptResultsError(
            f"{source}: {where}: {len(result)} results for {len(combos)} parameter combinations"
        )
    if samples is not None and (not isinstance(samples, list) or len(samples) != len(combos)):
        raise CorruptResultsError(f"{source}: {where}: samples do not match the parameters")
    out: list[ParsedEntry] = []
    for i, (combo, raw) in enumerate(zip(combos, result, strict=True)):
        value = _number(raw, f"{where} result[{i}]", source)
        if value is not None and math.isnan(value):
            continue  # skipped / not applicable in this commit
        s: tuple[float, ...] = ()
        if samples is not None and samples[i] is not None:
            if not isinstance(samples[i], list):
                raise CorruptResultsError(f"{source}: {where} samples[{i}] must be a list")
            vals = [_number(x, f"{where} samples[{i}]", source) for x in samples[i]]
            s = tuple(v for v in vals if v is not None and not math.isnan(v))
        out.append(ParsedEntry(name, combo, value, s, failed=value is None, version=_opt(version)))
    return out


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


def _default_git(repo: str) -> GitRunner:
    def run(args: Sequence[str]) -> str:
        proc = subprocess.run(
            ["git", "-C", repo, *args], capture_output=True, text=True, check=False
        )
        if proc.returncode != 0:
            raise StoreError(f"git {' '.join(args[:2])} failed in {repo}: {proc.stderr.strip()}")
        return proc.stdout

    return run


def git_commit_order(commits: Iterable[str], git: GitRunner) -> list[str]:
    """Order ``commits`` oldest first by git history; unknown commits are left out.

    Args:
        commits: full hashes.
        git: runs ``git <args>`` in the repository and returns stdout.
    """
    wanted = sorted(set(commits))
    if not wanted:
        return []
    known: list[str] = []
    for c in wanted:
        try:
            git(["cat-file", "-e", f"{c}^{{commit}}"])
            known.append(c)
        except StoreError:
            continue
    if not known:
        return []
    out = git(["rev-list", "--topo-order", "--reverse", *known])
    wanted_set = set(known)
    return [line for line in out.split() if line in wanted_set]


def _units(results_dir: str) -> dict[str, str]:
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


def _default_unit(benchmark: str) -> str:
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
    git: GitRunner | None = None,
) -> History:
    """Load every results file under ``results_dir`` into a :class:`History`.

    Args:
        results_dir: asv results folder (``<machine>/<hash8>-<env>.json`` below it).
        machine: only this machine's folder.
        repo: a git repository (work tree or git dir) giving the commit order.
        cache: optional per-file cache (``get(path, stat_key)``/``put(path, stat_key, parsed)``).
        git: injected git runner (tests); default runs ``git -C repo``.

    Returns:
        The history; unreadable files are listed in ``load_errors`` as ``"path: reason"``.
    """
    rdir = os.fspath(results_dir)
    errors: list[str] = []
    parsed: list[ParsedFile] = []
    for path in _iter_result_paths(rdir, machine):
        try:
            key = stat_key(path)
            pf = cache.get(path, key) if cache is not None else None
            if pf is None:
                pf = parse_result_file(path)
                if cache is not None:
                    cache.put(path, key, pf)
        except (NeuronasvError, OSError) as exc:
            msg = str(exc)
            errors.append(msg if msg.startswith(path) else f"{path}: {msg}")
            continue
        if machine is not None and pf.machine != machine:
            continue
        errors.extend(pf.warnings)
        parsed.append(pf)

    dates: dict[str, int] = {}
    for pf in parsed:
        if pf.date is not None:
            dates[pf.commit] = min(dates.get(pf.commit, pf.date), pf.date)
    all_commits = {pf.commit for pf in parsed}
    ordered: list[str] = []
    if repo is not None or git is not None:
        runner = git or _default_git(os.fspath(repo))  # type: ignore[arg-type]
        try:
            ordered = git_commit_order(all_commits, runner)
        except StoreError as exc:
            errors.append(f"commit order: {exc}; falling back to asv commit dates")
    rest = sorted(all_commits - set(ordered), key=lambda c: (dates.get(c, 0), c))
    commits = ordered + rest  # commits git does not know go last, by date
    order = {c: i for i, c in enumerate(commits)}

    units = _units(rdir)
    fingerprints: dict[tuple[str, str], Mapping[str, str]] = {}
    profiles: dict[tuple[str, str], tuple[WorkloadProfile, ...]] = {}
    points: dict[tuple[str, str, str, tuple[str, ...]], list[Point]] = {}
    ids: dict[tuple[str, str, str, tuple[str, ...]], SeriesId] = {}
    # Series a sidecar maps are neuronasv device time, stored by the plugin in seconds.
    mapped: set[str] = set()
    for pf in sorted(parsed, key=lambda f: (order[f.commit], f.path)):
        smap = _series_map(pf.sidecar)
        if pf.sidecar is not None:
            fingerprints[(pf.machine, pf.commit)] = dict(pf.sidecar.fingerprint)
            profiles[(pf.machine, pf.commit)] = pf.sidecar.profiles
        for e in pf.entries:
            k = (pf.machine, pf.env_name, e.benchmark, e.params)
            sid = smap.get((e.benchmark, e.params)) or smap.get(
                (e.benchmark, tuple(_unquote(p) for p in e.params))
            )
            if sid is not None:
                mapped.add(e.benchmark)
            if sid is not None or k not in ids:
                ids[k] = sid or SeriesId(e.benchmark, e.params)
            points.setdefault(k, []).append(
                Point(
                    commit=pf.commit,
                    order=order[pf.commit],
                    value=e.value,
                    samples=e.samples,
                    date=pf.date,
                )
            )
    series = tuple(
        Series(
            machine=k[0],
            env_name=k[1],
            series=ids[k],
            unit=units.get(k[2], "seconds" if k[2] in mapped else _default_unit(k[2])),
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


def default_results_dir(root: str | os.PathLike[str] = ".") -> str:
    """``results_dir`` from ``<root>/asv.conf.json`` (asv's default ``results`` otherwise)."""
    r = os.fspath(root)
    conf = os.path.join(r, "asv.conf.json")
    try:
        with open(conf, encoding="utf-8") as fh:
            text = fh.read()
    except OSError:
        return os.path.join(r, "results")
    # asv allows // comments in asv.conf.json; drop whole-line ones before parsing.
    lines = [ln for ln in text.splitlines() if not ln.lstrip().startswith("//")]
    try:
        data = json.loads("\n".join(lines))
    except ValueError:
        return os.path.join(r, "results")
    rd = data.get("results_dir", "results") if isinstance(data, dict) else "results"
    return os.path.join(r, str(rd))


def resolve_commit(ref: str, history: History, git: GitRunner | None = None) -> str:
    """A commit-ish (branch, tag, full or prefix hash) -> the full hash that has results.

    Git resolves it when a runner is given; otherwise (or when git does not know it) a
    unique prefix of a commit in ``history`` is accepted.

    Raises:
        UsageError: unknown or ambiguous.
    """
    from neuronasv.errors import UsageError

    if git is not None:
        try:
            full = git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"]).strip()
        except StoreError:
            full = ""
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


def git_runner_for(repo: str | os.PathLike[str]) -> GitRunner | None:
    """A git runner for ``repo`` when it is a git work tree or git dir, else None."""
    r = os.fspath(repo)
    if os.path.isdir(os.path.join(r, ".git")) or os.path.isfile(os.path.join(r, "HEAD")):
        return _default_git(r)
    proc = subprocess.run(
        ["git", "-C", r, "rev-parse", "--git-dir"], capture_output=True, text=True, check=False
    )
    return _default_git(r) if proc.returncode == 0 else None
