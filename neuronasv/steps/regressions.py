"""``regressions``: change points over the stored history and the newest commit against its
parent (``neuronasv regressions``; the command's help tells the method).

:func:`regressions_per_machine` is the one place the per-machine analysis is orchestrated:
the ``analyse`` and ``bisect`` workflow steps and ``publish --detect`` each want one
document per machine, each from that machine's history alone.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from neuronasv.errors import NeuronasvError, ResultsError, UsageError
from neuronasv.steps.common import Acks, Report, acks_of, now, report_of, results_folder
from neuronasv.steps.common import warn_load_errors as _warn

if TYPE_CHECKING:
    from neuronasv.analyse.acks import Acknowledgement
    from neuronasv.analyse.changepoints import CPSettings, Mapper
    from neuronasv.analyse.culprits import Wanted
    from neuronasv.model import ChangePoint, FindingsDocument, History, SeriesId
    from neuronasv.store.cachekey import CacheKey
    from neuronasv.store.columns import Columns
    from neuronasv.store.git import Git

__all__ = [
    "MAX_PVALUE",
    "MIN_MAGNITUDE",
    "WINDOW",
    "RegressionsOptions",
    "machines_in",
    "newest_loader",
    "regressions",
    "regressions_per_machine",
]

log = logging.getLogger(__name__)

#: Change-point defaults, as ``analyse.changepoints.CPSettings`` has them (the parser is
#: built without importing numpy; ``tests/commands`` checks they agree).
WINDOW, MAX_PVALUE, MIN_MAGNITUDE = 50, 0.001, 0.02


@dataclass(frozen=True)
class RegressionsOptions:
    """What ``neuronasv regressions`` searches (each field is the flag of the same name).

    Attributes:
        results_dir: asv results folder (None: the repository config's).
        repo: the git checkout (commit order, first parents); None: the results alone.
        machine: only this machine's history (None: every machine, each on its own).
        window, max_pvalue, min_magnitude: the change-point search's settings.
        acks: acknowledgements (a file; None: the checkout's).
        report: the compare/confirm document of the newest commit vs its parent.
        cache_dir: keep parsed files and searched windows here (None: no cache).
        cache_key_file: the key file signing its entries (None: beside ``cache_dir``;
            store/cachekey.py), never inside it.
        workers: processes parsing results files, searching change points and comparing
            one-commit pairs (None: CPUs, at most 8).
    """

    results_dir: str | None = None
    repo: str | None = "."
    machine: str | None = None
    window: int = WINDOW
    max_pvalue: float = MAX_PVALUE
    min_magnitude: float = MIN_MAGNITUDE
    acks: Acks = None
    report: Report | None = None
    cache_dir: str | None = None
    cache_key_file: str | None = None
    workers: int | None = None


def _newest_machine(machines: Sequence[str], machine: str | None) -> str | None:
    if machine is not None:
        return machine
    return machines[0] if len(machines) == 1 else None


def _workers(workers: int | None) -> int:
    """Worker processes: as given, else the CPUs, at most 8."""
    return workers if workers is not None else min(os.cpu_count() or 1, 8)


@contextlib.contextmanager
def _pool(workers: int) -> Iterator[Mapper | None]:
    """A process pool's ``map`` over ``workers`` processes (None for one worker)."""
    if workers <= 1:
        yield None
        return
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=workers) as pool:
        yield lambda fn, jobs: list(pool.map(fn, jobs))


def _change_points(
    columns: Columns,
    settings: CPSettings,
    acks: Sequence[Acknowledgement],
    cache: tuple[str, CacheKey] | None,
    workers: int,
) -> list[ChangePoint]:
    """Every machine's change points in one batch, each machine's windows cached; the
    search spread over ``workers`` processes (the same answers)."""
    from neuronasv.analyse.changepoints import change_points, column_series
    from neuronasv.store.histcache import WindowCache

    rows = [r for mc in columns.machines for r in column_series(mc)]
    caches = {
        mc.name: WindowCache(cache[0], mc.name, settings.window, settings.max_pvalue, cache[1])
        for mc in columns.machines
        if cache is not None
    }
    for c in caches.values():
        c.load()
    known = [caches[r.machine].known(r.key, r.values) for r in rows] if caches else None

    def searched(i: int, per: dict[int, tuple[int, ...]]) -> None:
        r = rows[i]
        caches[r.machine].record(r.key, r.values, per, reused=len(known[i]) if known else 0)

    with _pool(workers) as mapper:
        found = change_points(
            rows, settings, columns.fingerprints, acks=acks, known=known,
            searched=searched if caches else None, mapper=mapper,
        )  # fmt: skip
    for c in caches.values():
        why = c.save()
        if why:
            log.warning(f"change-point cache not written: {why}")
    if caches:
        reused = sum(c.reused for c in caches.values())
        total = reused + sum(c.searched for c in caches.values())
        log.info(f"change points: {total - reused} of {total} search windows searched"
                 f" ({reused} unchanged, from the cache)")  # fmt: skip
    return found


def _with_culprits(
    doc: FindingsDocument,
    commits: Sequence[str],
    rdir: str,
    git: Git | None,
    cache: tuple[str, CacheKey] | None,
    workers: int | None,
) -> FindingsDocument:
    """The change points with the bisections stored beside the results (and the culprit of
    a one-commit range when there is git: its comparison reads just the two commits)."""
    from neuronasv.analyse.culprits import attach_culprits
    from neuronasv.store.bisections import load_bisections, named_commits

    machines = sorted({cp.machine for cp in doc.change_points})
    records, errors = load_bisections(rdir, machines or None)
    # A record's commits must be the repository's (every one it names), or without one
    # the history's (its range's ends): a record is untrusted data (store/bisections.py).
    named = [named_commits(r) if git is not None else {r.result.lo, r.result.hi}
             for r in records]  # fmt: skip
    known = git.known_commits(set().union(*named)) if git is not None else set(commits)
    believed = []
    for r, names in zip(records, named, strict=True):
        missing = sorted(names - known)
        if missing:
            where = "repository" if git is not None else "history"
            errors.append(f"the record of {r.series.label!r} on {r.machine} names"
                          f" {len(missing)} commit(s) not in the {where}"
                          f" ({', '.join(m[:12] for m in missing[:3])})")  # fmt: skip
        else:
            believed.append(r)
    records = believed
    for err in errors[:10]:
        log.warning(f"skipped bisection record: {err}")
    parent = None if git is None else (lambda c: git.resolve(f"{c}^"))
    subject = None if git is None else git.subject
    n_workers = _workers(workers)

    def explainer(wanted: Sequence[Wanted]) -> list[dict[str, Any]]:
        return explanations(wanted, rdir, git, cache, n_workers)

    return attach_culprits(
        doc, records, commits, explainer=explainer, first_parent=parent, subject=subject
    )


def explanations(
    wanted: Sequence[Wanted],
    rdir: str,
    git: Git | None,
    cache_at: tuple[str, CacheKey] | None,
    workers: int,
) -> list[dict[str, Any]]:
    """Each one-commit change point's explanation: one comparison per distinct pair (from
    the cache folder when its files hash the same and the entry's MAC verifies; the others
    spread over ``workers`` processes when there are a few)."""
    from neuronasv import __version__
    from neuronasv.store.asvresults import result_paths
    from neuronasv.store.histcache import ExplanationCache
    from neuronasv.store.history import FilesByCommit

    groups: dict[tuple[str, str, str], list[int]] = {}
    for i, w in enumerate(wanted):
        groups.setdefault(w.pair, []).append(i)
    out: list[dict[str, Any]] = [{} for _ in wanted]
    cache = ExplanationCache(cache_at[0], __version__, cache_at[1]) if cache_at else None
    keys: dict[int, str] = {}
    todo: list[tuple[_Job, list[int]]] = []
    # one listing per machine: a pair's files are looked up, not listed again
    listing = {m: FilesByCommit(result_paths(rdir, m)) for m in {p[0] for p in groups}}
    for pair, idx in groups.items():
        files = tuple(listing[pair[0]].of(pair[1:]))
        missing = idx
        if cache is not None:
            digests = cache.digests(files)
            missing = []
            for i in idx:
                keys[i] = cache.key(pair, wanted[i].series.to_json(), digests)
                got = cache.get(keys[i])
                if got is None:
                    missing.append(i)
                else:
                    out[i] = got
        if missing:
            todo.append(((pair, tuple(wanted[i].series for i in missing), files), missing))
    done = _explain_jobs([job for job, _ in todo], rdir, git, workers)
    for (_job, idx), whys in zip(todo, done, strict=True):
        for i, why in zip(idx, whys, strict=True):
            out[i] = why
            if cache is not None:
                cache.put(keys[i], why)
    if cache is not None:
        cache.prune()
        made, pairs = len(todo), len(groups)
        log.info(f"culprits: {made} of {pairs} one-commit comparisons made"
                 f" ({pairs - made} unchanged, from the cache)")  # fmt: skip
    return out


#: ((machine, parent, commit), the series to keep, the results files to read)
_Job = tuple[tuple[str, str, str], tuple["SeriesId", ...], tuple[str, ...]]
_pair_source: tuple[str, Git | None] | None = None


def _init_explainer(rdir: str, git: Git | None) -> None:
    global _pair_source
    _pair_source = (rdir, git)


def _explain_job(job: _Job) -> list[dict[str, Any]]:
    """One pair's comparison, kept to each asked-for series (in a worker, or here)."""
    from neuronasv.analyse.culprits import explain_pair
    from neuronasv.store.history import load_history

    assert _pair_source is not None, "the pool's initializer sets the results folder"
    rdir, git = _pair_source
    (machine, parent, commit), series, files = job
    history = load_history(rdir, machine=machine, git=git, commits=(parent, commit), paths=files)
    return explain_pair(history, parent, commit, machine, series)


def _explain_jobs(
    jobs: Sequence[_Job], rdir: str, git: Git | None, workers: int
) -> list[list[dict[str, Any]]]:
    """:func:`_explain_job` of each job, in order: in ``workers`` processes when there are
    at least 4 jobs (each one loads two results files and compares them), else here."""
    n = min(workers, len(jobs))
    if n > 1 and len(jobs) >= 4:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(
            max_workers=n, initializer=_init_explainer, initargs=(rdir, git)
        ) as pool:
            return list(pool.map(_explain_job, jobs))
    _init_explainer(rdir, git)
    return [_explain_job(j) for j in jobs]


def regressions(opts: RegressionsOptions) -> FindingsDocument:
    """The history document: change points (open regressions first), the newest commit
    against its parent, culprits where bisections or one-commit ranges name them."""
    from neuronasv.analyse.changepoints import CPSettings, history_document
    from neuronasv.analyse.newest import measured_in, newest_for_columns, with_newest
    from neuronasv.store.columns import load_columns
    from neuronasv.store.git import git_for
    from neuronasv.store.histcache import ColumnsDiskCache

    git = git_for(opts.repo)
    rdir = results_folder(opts.results_dir, opts.repo)
    cache = _cache(opts.cache_dir, opts.cache_key_file)
    columns = load_columns(
        rdir,
        machine=opts.machine,
        git=git,
        cache=ColumnsDiskCache(*cache) if cache else None,
        layouts_dir=os.path.join(cache[0], "layouts") if cache else None,
        workers=opts.workers,
    )
    _warn(columns.load_errors)
    if not any(mc.series for mc in columns.machines):
        detail = "; ".join(columns.load_errors[:3])
        raise ResultsError(f"no readable results under {rdir}" + (f": {detail}" if detail else ""))
    report = report_of(opts.report) if opts.report is not None else None
    created = now()
    acks = acks_of(opts.acks, opts.repo)
    machines = [mc.name for mc in columns.machines if mc.series]
    newest = None
    nm = _newest_machine(machines, opts.machine)
    if nm is not None:
        newest = newest_for_columns(
            columns, nm, git, newest_loader(rdir, nm, git), report=report, acks=acks,
            created=created,
        )  # fmt: skip
    if report is not None and newest is None:
        raise UsageError(
            "--report: no newest commit to match it with"
            + (" (several machines: pass --machine)" if nm is None else " (one commit only)")
        )
    settings = CPSettings(opts.window, opts.max_pvalue, opts.min_magnitude)
    found = _change_points(columns, settings, acks, cache, _workers(opts.workers))
    doc = history_document(
        found,
        latest=columns.commits[-1] if columns.commits else None,
        head_machine=opts.machine or (machines[0] if len(machines) == 1 else ""),
        fingerprints=columns.fingerprints,
        settings=settings,
        load_errors=columns.load_errors,
        created=created,
    )
    shown = [opts.machine] if opts.machine is not None else machines
    counts = {m: len(measured_in(mc)) if (mc := columns.machine(m)) else 0 for m in shown}
    doc = with_newest(doc, counts, newest)
    return _with_culprits(doc, columns.commits, rdir, git, cache, opts.workers)


def _cache(cache_dir: str | None, key_file: str | None) -> tuple[str, CacheKey] | None:
    """``--cache-dir`` and the key that signs its entries (store/cachekey.py), or None: no
    cache asked for, or no key to be had (said once; the run goes on without it)."""
    from neuronasv.store.cachekey import cache_key

    if not cache_dir:
        return None
    try:
        os.makedirs(cache_dir, exist_ok=True)
    except OSError as exc:
        log.warning(f"--cache-dir {cache_dir} not used: {exc.strerror or exc}")
        return None
    key, where = cache_key(cache_dir, key_file)
    if key is None:
        log.warning(f"--cache-dir {cache_dir} not used: {where}")
        return None
    log.debug(f"--cache-dir {cache_dir}: entries signed with the key of {where}")
    return cache_dir, key


def machines_in(results_dir: str) -> list[str]:
    """The machines of a results folder: its folders holding asv's ``machine.json``."""
    from neuronasv.store.layout import MACHINE_FILE

    return sorted(p.parent.name for p in Path(results_dir).glob(f"*/{MACHINE_FILE}"))


def regressions_per_machine(
    opts: RegressionsOptions, machines: Sequence[str], *, skip_failing: bool = False
) -> dict[str, FindingsDocument]:
    """One :func:`regressions` document per machine (``opts.machine`` is ignored), each
    from that machine's history alone, the newest commit compared on it.

    ``skip_failing``: a machine whose analysis fails is named on stderr with its error and
    left out (the bisect step goes on with the others); otherwise the error propagates.
    """
    out: dict[str, FindingsDocument] = {}
    for machine in machines:
        try:
            out[machine] = regressions(dataclasses.replace(opts, machine=machine))
        except NeuronasvError as exc:
            if not skip_failing:
                raise
            log.warning(f"regressions of {machine} skipped: {exc.message}")
    return out


def newest_loader(
    rdir: str, machine: str, git: Git | None
) -> Callable[[Collection[str], Mapping[str, str]], History]:
    """The newest check's history: the points of the pair, and the sidecar profiles
    (device health's canary readings) of ``sidecars`` (commit -> results file)."""
    from neuronasv.store.history import load_history, sidecar_profiles

    def load(pair: Collection[str], sidecars: Mapping[str, str]) -> History:
        h = load_history(rdir, machine=machine, git=git, commits=pair)
        context = {c: p for c, p in sidecars.items() if c not in pair}
        return dataclasses.replace(h, profiles={**sidecar_profiles(machine, context),
                                                **h.profiles})  # fmt: skip

    return load
