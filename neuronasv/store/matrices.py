"""The arrays of the column reader (:mod:`neuronasv.store.columns`), numpy only; no file is
read here: a file's quartile column (:func:`quartile`), and one machine's files as
(series x commits) matrices.

``store.columns`` places each file's values on its rows (the series, in key order) and
its commit's column; this module fills the matrices (:func:`fill`), checks the loader's
rule on time and memory values (:func:`check_positive`) and marks the exact counts
that were not deterministic (:func:`mark_unstable`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

import numpy as np

from neuronasv.errors import CorruptResultsError
from neuronasv.model import SeriesId

__all__ = ["FileArrays", "Matrices", "check_positive", "fill", "mark_unstable", "quartile"]

#: (values, measured, anypoint, q25, q75); see :func:`fill`.
Matrices = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


class FileArrays(Protocol):
    """What the matrices read of a parsed file (``store.columns.FileColumns``)."""

    commit: str
    values: np.ndarray
    failed: np.ndarray
    q25: np.ndarray
    q75: np.ndarray
    fingerprint: dict[str, str] | None
    unstable: dict[tuple[str, str, str], tuple[str, ...]]


_A = TypeVar("_A", bound=FileArrays)


def fill(
    files: Sequence[_A],
    rows_of: Callable[[_A], np.ndarray],
    ccol: Mapping[str, int],
    shape: tuple[int, int],
) -> Matrices:
    """``(values, measured, anypoint, q25, q75)``: series x commits, each file's values in
    its commit's column on the rows ``rows_of`` gives (later files win), where a value was
    measured, per row whether it has a point anywhere (a row that is NaN, skipped, in
    every file is no series), and asv's quartiles.

    Filled commit by commit into (commits x series) arrays, one contiguous row per file,
    then transposed once: writing each file's values down a column of a (series x commits)
    matrix touches a cache line per value (this step took twice as long). A cell is
    written by one file at most (one file per run, and a row is one environment's), so
    "has a point" is read off the filled matrix, plus the rows of failed values.
    """
    n, m = shape
    values_t = np.full((m, n), np.nan)
    q25_t = np.full((m, n), np.nan, dtype=np.float32)
    q75_t = np.full((m, n), np.nan, dtype=np.float32)
    failed = np.zeros(n, dtype=bool)
    for f in files:
        idx = rows_of(f)
        j = ccol[f.commit]
        values_t[j, idx] = f.values
        q25_t[j, idx] = f.q25
        q75_t[j, idx] = f.q75
        if f.failed.any():
            failed[idx[f.failed]] = True
    values = np.ascontiguousarray(values_t.T)
    del values_t
    measured = ~np.isnan(values)
    anypoint = measured.any(axis=1) | failed
    q25, q75 = np.ascontiguousarray(q25_t.T), np.ascontiguousarray(q75_t.T)
    return values, measured, anypoint, q25, q75


def check_positive(
    machine: str,
    commits: Sequence[str],
    benchmarks: Sequence[str],
    units: Sequence[str],
    values: np.ndarray,
) -> None:
    """The loader's check: no value <= 0 in a time or memory series (the first such series
    in key order, its first such commit, named as the loader names them).

    Raises:
        CorruptResultsError: names the benchmark, the machine, the commit and the value.
    """
    timed = np.array([u in ("seconds", "bytes") for u in units], dtype=bool)
    if not timed.any():
        return
    with np.errstate(invalid="ignore"):
        bad = (values <= 0.0) & timed[:, None]
    if not bad.any():
        return
    r = int(np.flatnonzero(bad.any(axis=1))[0])
    j = int(np.flatnonzero(bad[r])[0])
    raise CorruptResultsError(
        f"results of {benchmarks[r]} on {machine} at {commits[j][:12]}: a value in"
        f" {units[r]} must be > 0, got {float(values[r, j])!r}"
    )


def mark_unstable(
    files: Sequence[FileArrays],
    ccol: Mapping[str, int],
    exact: Sequence[tuple[int, SeriesId]],
    out: np.ndarray,
) -> None:
    """Where an exact series' count was not counted twice alike (``exact.counted_twice_alike``
    with the series' own identity: the resolved one, as the loader's ``Series`` has it).

    ``exact``: (row, identity) of each series whose pass counts it twice.
    """
    # per commit, the last file with a sidecar (the loader keeps that file's profiles)
    last: dict[str, FileArrays] = {}
    for f in files:
        if f.fingerprint is not None:
            last[f.commit] = f
    for f in last.values():
        if not f.unstable:
            continue
        j = ccol[f.commit]
        for r, sid in exact:
            targets = f.unstable.get(sid.config)  # type: ignore[arg-type]
            if targets is not None and (not targets or (sid.op or "total") in targets):
                out[r, j] = True


# what a quartile cell may hold (str: the JSON decode's NaN/infinity markers, which
# numpy reads as those floats)
_PLAIN = {float, int, type(None), str}


def _floats(cells: list[Any]) -> np.ndarray | None:
    try:
        out = np.array(cells, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    return out if out.shape == (len(cells),) else None


def quartile(rows: list[Any], at: int | None, sizes: list[int]) -> np.ndarray:
    """One of asv's quartile columns over a file's rows (``at``: its index in a row;
    ``sizes``: each row's values), as float32: NaN where a row has
    no such cell, or a cell that is not a list of ``n`` numbers (a quartile is drawn,
    never judged: a bad one is left out, not an error)."""
    n = sum(sizes)
    if at is None:
        return np.full(n, np.nan, dtype=np.float32)
    flat: list[Any] = []
    for row, k in zip(rows, sizes, strict=True):
        cell = row[at] if len(row) > at else None
        if isinstance(cell, list) and len(cell) == k and set(map(type, cell)) <= _PLAIN:
            flat += cell
        else:
            flat += [None] * k
    out = _floats(flat)
    if out is None:  # a cell of text that is no number: that row's cells are NaN
        parts = [np.full(k, np.nan) if (got := _floats(flat[i : i + k])) is None else got
                 for i, k in zip(np.cumsum([0, *sizes[:-1]]).tolist(), sizes, strict=True)]
        out = np.concatenate(parts) if parts else np.zeros(0)
    return out.astype(np.float32)
