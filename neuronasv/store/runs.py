"""The folder-level rules of a results folder read as runs: one results file per run, and
git's commit order (asv's commit dates for commits git does not know).

Both views of the one column reader put their files together by these rules
(:func:`neuronasv.store.columns.load_columns`' matrices and
:func:`neuronasv.store.history.load_history`'s points); they live apart from both so
neither imports the other for them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, TypeVar

from neuronasv.errors import ResultsError, StoreError
from neuronasv.store.git import Git
from neuronasv.store.layout import is_result_file_name

__all__ = ["RunFile", "commits_in_order", "one_file_per_run"]


class RunFile(Protocol):
    """What the folder-level rules read of a parsed results file (the loader's rows, or
    ``store.columns``' arrays)."""

    @property
    def path(self) -> str: ...

    @property
    def machine(self) -> str: ...

    @property
    def commit(self) -> str: ...

    @property
    def env_name(self) -> str: ...

    @property
    def date(self) -> int | None: ...


_F = TypeVar("_F", bound=RunFile)


def commits_in_order(
    parsed: Sequence[RunFile],
    repo: str | os.PathLike[str] | None,
    git: Git | None,
    errors: list[str],
) -> list[str]:
    """The commits of ``parsed`` in git's order; those git does not know last, by date."""
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
    return ordered + rest


def _is_asv_name(rec: RunFile) -> bool:
    """Is ``rec`` at asv's own path for its run: ``<machine>/<hash8>-<env>.json``?"""
    return is_result_file_name(rec.path, rec.machine, rec.commit, rec.env_name)


def one_file_per_run(parsed: Sequence[_F]) -> list[_F]:
    """One results file per (machine, commit, environment), or an error naming them all.

    asv writes exactly one file per run, at ``<machine>/<hash8>-<env>.json``. A second
    file for the same run (a stale copy under another name, a folder copied aside) would
    otherwise be merged or picked silently, and its old values could decide a verdict:
    nothing says which one is current. So a duplicate is an error naming every file of
    the run, unless it is byte-identical (a plain copy): then one is used and nothing is
    lost.

    Raises:
        ResultsError: two or more different files for one run.
    """
    groups: dict[tuple[str, str, str], list[_F]] = {}
    for rec in parsed:
        groups.setdefault((rec.machine, rec.commit, rec.env_name), []).append(rec)
    dropped: set[str] = set()
    for (mach, commit, env), recs in groups.items():
        if len(recs) < 2:
            continue
        recs = sorted(recs, key=lambda r: (not _is_asv_name(r), r.path))
        if _same_bytes([r.path for r in recs]):
            dropped.update(r.path for r in recs[1:])
            continue
        names = ", ".join(sorted(r.path for r in recs))
        raise ResultsError(
            f"{len(recs)} different results files for one run (machine {mach!r}, commit"
            f" {commit[:12]}, environment {env!r}): {names}",
            hint="keep the one asv wrote (<machine>/<hash8>-<env>.json) and remove the rest",
        )
    return [r for r in parsed if r.path not in dropped]


def _same_bytes(paths: Sequence[str]) -> bool:
    try:
        first = Path(paths[0]).read_bytes()
        return all(Path(p).read_bytes() == first for p in paths[1:])
    except OSError:
        return False
