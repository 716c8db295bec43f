"""The history loader: an asv results folder (plus neuronasv sidecars) -> ``model.History``.

This is the only I/O of the Analyse stage. It reads asv's own format (``api_version`` 2,
``result_columns``/``results`` rows, see ``asv/results.py``) directly rather than through
``asv.results.Results.load`` so that every problem becomes a reason that names the file
and the field, and one bad file never stops the rest from loading.

Layout read: ``<results_dir>/<machine>/<hash8>-<env>.json`` (``machine.json`` and
``benchmarks.json`` are metadata, not results), an optional sidecar next to each results
file (``store.layout.sidecar_path``) and an optional ``<results_dir>/benchmarks.json`` for units.
The format itself (listing, header, rows, sidecars, units) is read by
:class:`neuronasv.store.asvresults.AsvResultsReader`; each file is parsed once into the
column model (:class:`neuronasv.store.columns.ColumnsParser`, with its samples and
sidecar kept) and its rows placed and named by the same code as ``load_columns``'
matrices (:func:`neuronasv.store.columns.machine_points`): this module adds the
folder-level rules (one file per run, commit order) and what a run says beside its
values (fingerprints, op tables, run states, asv's identity).

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
through msgspec with a NaN pre-pass (``asvresults.decode_asv_json``), sidecar series
lists are validated once per distinct list (the reader's memo), and series identities
are resolved once per distinct layout; see docs/publishing.md for figures.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from neuronasv.errors import CorruptResultsError, NeuronasvError
from neuronasv.gcpause import no_cyclic_gc
from neuronasv.model import History, RunSidecar, Series
from neuronasv.model.profile import WorkloadProfile
from neuronasv.model.sidecar import RunState
from neuronasv.store.asvconf import results_dir_for
from neuronasv.store.asvresults import (
    AsvResultsReader,
    benchmark_units,
    result_paths,
)
from neuronasv.store.git import Git
from neuronasv.store.layout import SIDECAR_SUFFIX, parse_result_name
from neuronasv.store.runs import RunFile, commits_in_order, one_file_per_run

if TYPE_CHECKING:
    from neuronasv.store.columns import FileColumns, Layouts

__all__ = [
    "FilesByCommit",
    "ParsedEntry",
    "ParsedFile",
    "RunFile",
    "commits_in_order",
    "default_results_dir",
    "load_history",
    "missing_results_error",
    "one_file_per_run",
    "parse_result_file",
    "resolve_commit",
    "sidecar_profiles",
]


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
    asv_env: Mapping[str, str] = field(default_factory=dict)


def parse_result_file(path: str | os.PathLike[str], *, machine: str | None = None) -> ParsedFile:
    """Parse one asv results file and its sidecar (no git, no other files).

    Args:
        path: ``<results>/<machine>/<hash8>-<env>.json``.
        machine: fallback machine name when the file has none (default: its folder name).

    Raises:
        CorruptResultsError: not JSON, truncated, wrong types, missing keys.
        SchemaVersionError: an asv ``version`` other than 2.
    """
    from neuronasv.store.columns import ColumnsParser

    fc, layout = ColumnsParser(points=True, digests=False).parse(os.fspath(path), machine)
    samples = fc.samples or [()] * len(layout)
    return ParsedFile(
        path=fc.path,
        machine=fc.machine,
        commit=fc.commit,
        env_name=fc.env_name,
        date=fc.date,
        entries=tuple(
            ParsedEntry(b, p, None if bad else v, s, failed=bad)
            for (b, p, _sid), v, bad, s in zip(
                layout, fc.values.tolist(), fc.failed.tolist(), samples, strict=True
            )
            if bad or v == v
        ),
        sidecar=fc.sidecar,
        warnings=tuple(fc.warnings),
        asv_env=fc.asv_env,
    )


def load_history(
    results_dir: str | os.PathLike[str],
    *,
    machine: str | None = None,
    repo: str | os.PathLike[str] | None = None,
    git: Git | None = None,
    commits: Collection[str] | None = None,
    paths: Sequence[str] | None = None,
) -> History:
    """Load every results file under ``results_dir`` into a :class:`History`.

    Args:
        results_dir: asv results folder (``<machine>/<hash8>-<env>.json`` below it).
        machine: only this machine's folder.
        repo: a git repository (work tree or git dir) giving the commit order.
        git: the git gateway for ``repo`` (injected in tests; default ``Git(repo)``).
        commits: only the results files of these commits (full hashes): a history of a
            few commits out of a long one, without parsing the rest.
        paths: the results files to read, as :class:`FilesByCommit` finds them in a
            listing made once (default: list ``machine``'s folder now).

    Returns:
        The history; unreadable files are listed in ``load_errors`` as ``"path: reason"``.

    Raises:
        ResultsError: ``results_dir`` does not exist (a machine without results: empty).
    """
    rdir = os.fspath(results_dir)
    wanted = None if commits is None else set(commits)
    if paths is None:
        paths = result_paths(rdir, machine)  # ResultsError when the folder does not exist
        if wanted is not None:
            paths = FilesByCommit(paths).of(wanted)
    with no_cyclic_gc():  # a history is millions of acyclic objects (see no_cyclic_gc)
        return _load_history(rdir, list(paths), machine, repo, git, wanted)


class FilesByCommit:
    """A folder listing's results files, found by commit as :func:`load_history` finds
    them: by asv's file name first; a file named otherwise is parsed to know its commit,
    so it is kept for every commit. Names are read once, however many lookups follow."""

    def __init__(self, paths: Sequence[str]) -> None:
        self._named: dict[str, list[tuple[int, str]]] = {}
        self._unnamed: list[tuple[int, str]] = []
        for i, p in enumerate(paths):
            n = parse_result_name(os.path.basename(p))
            (self._unnamed if n is None else self._named.setdefault(n[0], [])).append((i, p))

    @classmethod
    def in_folder(cls, results_dir: str, machine: str | None = None) -> FilesByCommit:
        """The results files of ``results_dir`` (``machine``'s only when given), listed now.

        Raises:
            ResultsError: ``results_dir`` does not exist.
        """
        return cls(result_paths(results_dir, machine))

    def of(self, commits: Collection[str]) -> list[str]:
        """The files of ``commits`` (full hashes), in the listing's order."""
        hits = list(self._unnamed)
        for prefix in {c[:8] for c in commits}:
            hits += self._named.get(prefix, [])
        return [p for _, p in sorted(hits)]


def _read_files(
    paths: list[str], machine: str | None, errors: list[str], layouts: Layouts
) -> list[FileColumns]:
    """Every results file of ``machine`` (all when None), parsed by the column reader with
    what the points need; an unreadable one goes to ``errors``, its warnings too."""
    from neuronasv.store.columns import ColumnsParser

    parser = ColumnsParser(points=True, digests=False)
    parsed: list[FileColumns] = []
    for path in paths:
        try:
            rec, layout = parser.parse(path)
        except (NeuronasvError, OSError) as exc:
            msg = str(exc)
            errors.append(msg if msg.startswith(path) else f"{path}: {msg}")
            continue
        if machine is not None and rec.machine != machine:
            continue
        layouts.add(rec.layout_id, layout)
        errors.extend(rec.warnings)
        parsed.append(rec)
    return parsed


@dataclass
class _RunInfo:
    """Per ``(machine, commit)`` what its files say beside the values: the sidecar's
    fingerprint and op tables (the last file's win), the first warning of a sidecar that
    could not be read, and asv's identity over its results files."""

    fingerprints: dict[tuple[str, str], Mapping[str, str]] = field(default_factory=dict)
    profiles: dict[tuple[str, str], tuple[WorkloadProfile, ...]] = field(default_factory=dict)
    states: dict[tuple[str, str], RunState] = field(default_factory=dict)
    unreadable: dict[tuple[str, str], str] = field(default_factory=dict)
    asv_envs: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)

    def add(self, rec: FileColumns) -> None:
        run = (rec.machine, rec.commit)
        sc = rec.sidecar
        if sc is not None:
            self.fingerprints[run] = dict(sc.fingerprint)
            self.profiles[run] = sc.profiles
            if sc.state is not None:
                self.states[run] = sc.state
        elif rec.warnings:  # a sidecar was there but could not be read
            self.unreadable.setdefault(run, rec.warnings[0])
        _merge_asv_env(self.asv_envs.setdefault(run, {}), rec.asv_env)


def _load_history(
    rdir: str,
    paths: list[str],
    machine: str | None,
    repo: str | os.PathLike[str] | None,
    git: Git | None,
    wanted: set[str] | None = None,
) -> History:
    from neuronasv.store.columns import Layouts, machine_points

    errors: list[str] = []
    layouts = Layouts()
    parsed = _read_files(paths, machine, errors, layouts)
    if wanted is not None:
        parsed = [r for r in parsed if r.commit in wanted]
    parsed = one_file_per_run(parsed)
    commits = commits_in_order(parsed, repo, git, errors)
    order = {c: i for i, c in enumerate(commits)}

    units = benchmark_units(rdir)
    info = _RunInfo()
    parsed.sort(key=lambda r: (order[r.commit], r.path))
    by_machine: dict[str, list[FileColumns]] = {}
    for rec in parsed:
        info.add(rec)
        by_machine.setdefault(rec.machine, []).append(rec)
    del parsed  # each machine's files are freed once its points are made
    series: list[Series] = []
    for name in sorted(by_machine):
        series += machine_points(name, by_machine.pop(name), order, layouts, units)
    return History(
        series=tuple(series),
        commits=tuple(commits),
        fingerprints=info.fingerprints,
        load_errors=tuple(errors),
        profiles=info.profiles,
        asv_identity=info.asv_envs,
        unreadable_sidecars=info.unreadable,
        run_states=info.states,
    )


def sidecar_profiles(
    machine: str, files: Mapping[str, str]
) -> dict[tuple[str, str], tuple[WorkloadProfile, ...]]:
    """The op tables (device health reads their canary readings) of the sidecars of
    ``files`` (commit -> the results file whose sidecar ``load_history`` keeps for it:
    ``MachineColumns.sidecars``), without reading the results files: ``(machine, commit)
    -> profiles``, keyed as ``load_history`` keys them (by the results file's commit). A
    sidecar that cannot be read now is left out."""
    reader = AsvResultsReader()
    out: dict[tuple[str, str], tuple[WorkloadProfile, ...]] = {}
    for commit, path in files.items():
        sc = reader.read_sidecar(path)[0]
        if sc is not None:
            out[(machine, commit)] = sc.profiles
    return out


def _merge_asv_env(into: dict[str, str], env: Mapping[str, str]) -> None:
    """One commit's asv identity over its results files (one per environment): values of
    several environments joined, so two commits with the same environments compare equal."""
    for k, v in env.items():
        have = into.get(k)
        into[k] = v if have is None or have == v else " | ".join(sorted({*have.split(" | "), v}))


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
            and not e.split(": ", 1)[0].endswith(SIDECAR_SUFFIX)
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
