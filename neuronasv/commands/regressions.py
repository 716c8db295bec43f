"""``neuronasv regressions``: change points over the stored history, open ones first, and
the newest commit against its parent.

A change point is *open* when it is a regression still in effect at the latest commit.
Change points cannot see a shift at the newest commit (one point after it), so the newest
commit is also compared with its parent (git's first parent, else the previous measured
commit) as ``neuronasv compare`` does: ``suspect`` regressions; with ``--report``, the
compare/confirm document of that pair (what the PR comment shows) is used instead, and
its confirmed regressions read ``confirmed``. Fewer than 4 commits: the output says
"too few commits for change points (have N, need 4)".

The whole history is read as value matrices (one float per series and commit, not a
point object each) and searched in array passes. With ``--cache-dir`` both are cached
there (the per-push job keeps the folder between runs): a run after one more commit
parses one results file and searches the windows that commit touches. A cache entry is
used only when the files it came from hash the same and the values it was searched in
are identical, so a stale or damaged cache costs time, never an answer. The newest
commit's comparison reads its results and its parent's, the noise floors of the whole
history, and for device health the sidecars of the machine's last 100 commits that have
one (the whole history's, as ``compare`` reads them, when it is shorter).
A change point names its culprit when ``neuronasv bisect`` narrowed its range (the
records beside the results) or when its range is one first-parent commit.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import logging
import os
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from neuronasv.commands.args import (
    acks_from_args,
    add_acks_arg,
    add_out_arg,
    add_results_args,
    command_parser,
    existing_file,
    finite_nonnegative,
    int_at_least,
    output_dir,
    pvalue,
    results_folder,
    write_output,
)
from neuronasv.errors import ResultsError, UsageError
from neuronasv.store.git import git_for

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from neuronasv.analyse.acks import Acknowledgement
    from neuronasv.analyse.changepoints import CPSettings
    from neuronasv.analyse.culprits import Wanted
    from neuronasv.model import ChangePoint, FindingsDocument, History, SeriesId
    from neuronasv.store.columns import Columns
    from neuronasv.store.git import Git

#: Change-point defaults, as ``analyse.changepoints.CPSettings`` has them (the parser is
#: built without importing numpy; ``tests/commands`` checks they agree).
WINDOW, MAX_PVALUE, MIN_MAGNITUDE = 50, 0.001, 0.02

__all__ = ["add_parser", "run"]


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = command_parser(
        subparsers, "regressions", description=__doc__,
        exits={
            0: None,
            2: None,
            5: "files that cannot be read are listed and skipped; only when nothing can be read",
        },
    )  # fmt: skip
    add_results_args(
        p,
        machine_help="only this asv machine's history (default: every machine, each on its own)",
    )
    p.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text (open regressions first) or json (a findings document for publish/issues)",
    )
    p.add_argument(
        "--window",
        type=int_at_least(8),
        default=WINDOW,
        help="commits per sliding search window, at least 8 (the method needs a few points"
        f" on each side of a change; default {WINDOW})",
    )
    p.add_argument(
        "--max-pvalue",
        type=pvalue,
        default=MAX_PVALUE,
        help=f"largest p-value of a reported change, in (0, 1] (default {MAX_PVALUE})",
    )
    p.add_argument(
        "--min-magnitude",
        type=finite_nonnegative,
        default=MIN_MAGNITUDE,
        help="smallest relative shift reported, >= 0 (0.02 = 2 %%)",
    )
    p.add_argument("--open", action="store_true", help="text: only open regressions")
    add_acks_arg(p)
    add_out_arg(p)
    p.add_argument(
        "--report",
        type=existing_file,
        metavar="FINDINGS.json",
        help="compare/confirm document (JSON) of the newest commit vs its parent: its"
        " verdicts and confirmations are the newest commit's state (default: compare here)",
    )
    p.add_argument(
        "--cache-dir",
        type=output_dir,
        default=None,
        help="keep parsed results files and searched windows here, so the next run reads and"
        " searches only what changed (default: no cache; a folder inside the results folder"
        " should start with a dot, which readers and `store push` skip)",
    )
    p.add_argument(
        "--workers",
        type=int_at_least(1),
        default=None,
        help="processes parsing results files (default: CPUs, at most 8)",
    )
    p.set_defaults(func=run)


def _newest_machine(machines: Sequence[str], machine: str | None) -> str | None:
    if machine is not None:
        return machine
    return machines[0] if len(machines) == 1 else None


def _change_points(
    columns: Columns,
    settings: CPSettings,
    acks: Sequence[Acknowledgement],
    cache_dir: str | None,
) -> list[ChangePoint]:
    """Every machine's change points in one batch, each machine's windows cached."""
    from neuronasv.analyse.changepoints import change_points, column_series
    from neuronasv.store.histcache import WindowCache

    rows = [r for mc in columns.machines for r in column_series(mc)]
    caches = {
        mc.name: WindowCache(cache_dir, mc.name, settings.window, settings.max_pvalue).load()
        for mc in columns.machines
        if cache_dir is not None
    }
    known = [caches[r.machine].known(r.key, r.values) for r in rows] if caches else None

    def searched(i: int, per: dict[int, tuple[int, ...]]) -> None:
        r = rows[i]
        caches[r.machine].record(r.key, r.values, per, reused=len(known[i]) if known else 0)

    found = change_points(
        rows, settings, columns.fingerprints, acks=acks, known=known,
        searched=searched if caches else None,
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
    cache_dir: str | None,
    workers: int | None,
) -> FindingsDocument:
    """The change points with the bisections stored beside the results (and the culprit of
    a one-commit range when there is git: its comparison reads just the two commits)."""
    from neuronasv.analyse.culprits import attach_culprits
    from neuronasv.store.bisections import load_bisections

    machines = sorted({cp.machine for cp in doc.change_points})
    records, errors = load_bisections(rdir, machines or None)
    for err in errors[:10]:
        log.warning(f"skipped bisection record: {err}")
    parent = None if git is None else (lambda c: git.resolve(f"{c}^"))
    subject = None if git is None else git.subject
    n_workers = workers if workers is not None else min(os.cpu_count() or 1, 8)

    def explainer(wanted: Sequence[Wanted]) -> list[dict[str, Any]]:
        return explanations(wanted, rdir, git, cache_dir, n_workers)

    return attach_culprits(
        doc, records, commits, explainer=explainer, first_parent=parent, subject=subject
    )


def explanations(
    wanted: Sequence[Wanted],
    rdir: str,
    git: Git | None,
    cache_dir: str | None,
    workers: int,
) -> list[dict[str, Any]]:
    """Each one-commit change point's explanation: one comparison per distinct pair (from
    ``cache_dir`` when its files hash the same; the others spread over ``workers``
    processes when there are a few)."""
    from neuronasv import __version__
    from neuronasv.store.asvresults import result_paths
    from neuronasv.store.histcache import ExplanationCache
    from neuronasv.store.history import FilesByCommit

    groups: dict[tuple[str, str, str], list[int]] = {}
    for i, w in enumerate(wanted):
        groups.setdefault(w.pair, []).append(i)
    out: list[dict[str, Any]] = [{} for _ in wanted]
    cache = ExplanationCache(cache_dir, __version__) if cache_dir is not None else None
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


def run(args: argparse.Namespace) -> int:
    from neuronasv.analyse.changepoints import CPSettings, history_document
    from neuronasv.analyse.newest import measured_in, newest_for_columns, with_newest
    from neuronasv.store.columns import load_columns
    from neuronasv.store.histcache import ColumnsDiskCache

    git = git_for(args.repo)
    rdir = results_folder(args)
    cache_dir = args.cache_dir
    columns = load_columns(
        rdir,
        machine=args.machine,
        git=git,
        cache=ColumnsDiskCache(cache_dir) if cache_dir else None,
        layouts_dir=os.path.join(cache_dir, "layouts") if cache_dir else None,
        workers=args.workers,
    )
    _warn(columns.load_errors)
    if not any(mc.series for mc in columns.machines):
        detail = "; ".join(columns.load_errors[:3])
        raise ResultsError(f"no readable results under {rdir}" + (f": {detail}" if detail else ""))
    report = None
    if args.report:
        from neuronasv.report.load import load_findings  # the report package: only if needed

        report = load_findings(args.report)
    created = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    acks = acks_from_args(args)
    machines = [mc.name for mc in columns.machines if mc.series]
    newest = None
    nm = _newest_machine(machines, args.machine)
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
    settings = CPSettings(args.window, args.max_pvalue, args.min_magnitude)
    found = _change_points(columns, settings, acks, cache_dir)
    doc = history_document(
        found,
        latest=columns.commits[-1] if columns.commits else None,
        head_machine=args.machine or (machines[0] if len(machines) == 1 else ""),
        fingerprints=columns.fingerprints,
        settings=settings,
        load_errors=columns.load_errors,
        created=created,
    )
    shown = [args.machine] if args.machine is not None else machines
    counts = {m: len(measured_in(mc)) if (mc := columns.machine(m)) else 0 for m in shown}
    doc = with_newest(doc, counts, newest)
    doc = _with_culprits(doc, columns.commits, rdir, git, cache_dir, args.workers)
    if args.format == "json":
        text = doc.dumps()
    else:
        from neuronasv.report.tables import history_text

        text = history_text(doc, only_open=args.open)
    write_output(text, args.out)
    return 0


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


def _warn(errors: Sequence[str], limit: int = 10) -> None:
    """Results files that could not be read, on stderr (the rest were loaded)."""
    for err in errors[:limit]:
        log.warning(f"skipped: {err}")
    if len(errors) > limit:
        log.warning(f"... and {len(errors) - limit} more")
