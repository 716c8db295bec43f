"""``regressions``: change points over the stored history and the newest commit against its
parent (``neuronasv regressions``; the command's help tells the method).

:func:`regressions_per_machine` is the one place the per-machine analysis is orchestrated:
the ``analyse`` and ``bisect`` workflow steps and ``publish --detect`` each want one
document per machine, each from that machine's history alone.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from neuronasv.errors import NeuronasvError, ResultsError, UsageError
from neuronasv.steps.common import Acks, Report, acks_of, now, report_of, results_folder
from neuronasv.steps.common import warn_load_errors as _warn

if TYPE_CHECKING:
    from neuronasv.analyse.acks import Acknowledgement
    from neuronasv.analyse.changepoints import CPSettings
    from neuronasv.model import ChangePoint, FindingsDocument, History
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
        workers: processes parsing results files (None: CPUs, at most 8).
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
    workers: int | None = None


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
            print(f"warning: change-point cache not written: {why}", file=sys.stderr)
    if caches:
        reused = sum(c.reused for c in caches.values())
        total = reused + sum(c.searched for c in caches.values())
        print(f"change points: {total - reused} of {total} search windows searched"
              f" ({reused} unchanged, from the cache)", file=sys.stderr)  # fmt: skip
    return found


def _with_culprits(
    doc: FindingsDocument, commits: Sequence[str], rdir: str, git: Git | None
) -> FindingsDocument:
    """The change points with the bisections stored beside the results (and the culprit of
    a one-commit range when there is git: its comparison reads just the two commits)."""
    from neuronasv.analyse.culprits import attach_culprits
    from neuronasv.store.bisections import load_bisections
    from neuronasv.store.history import load_history

    machines = sorted({cp.machine for cp in doc.change_points})
    records, errors = load_bisections(rdir, machines or None)
    for err in errors[:10]:
        print(f"warning: skipped bisection record: {err}", file=sys.stderr)
    parent = None if git is None else (lambda c: git.resolve(f"{c}^"))
    subject = None if git is None else git.subject

    def pair(before: str, after: str, machine: str) -> History:
        return load_history(rdir, machine=machine, git=git, commits=(before, after))

    return attach_culprits(
        doc, records, commits, pair=pair, first_parent=parent, subject=subject
    )


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
    cache_dir = opts.cache_dir
    columns = load_columns(
        rdir,
        machine=opts.machine,
        git=git,
        cache=ColumnsDiskCache(cache_dir) if cache_dir else None,
        layouts_dir=os.path.join(cache_dir, "layouts") if cache_dir else None,
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
    found = _change_points(columns, settings, acks, cache_dir)
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
    return _with_culprits(doc, columns.commits, rdir, git)


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
            print(f"regressions of {machine} skipped: {exc.message}", file=sys.stderr)
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
