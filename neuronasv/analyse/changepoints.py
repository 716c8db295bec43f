"""History mode: change points over a branch's commits (pure).

Method: the core of Apache Otava (formerly Hunter) — e-divisive means with a t-test:

1. **Candidates.** Over sliding windows of ``window`` points (stride ``window // 2``), the
   split that maximises the e-divisive energy statistic (Matteson & James 2014, alpha = 1)
   is tested with Welch's t-test between the two sides; if ``p < 10 × max_pvalue``
   (Otava's relaxed first pass: "weak" change points) it is kept
   and both sides are split again (binary segmentation).
   Unlike Otava, a split leaving fewer than 5 points on a side pays a Bonferroni factor
   for the positions searched: the split is data-selected, and without it short edge
   segments pass by chance (see :func:`neuronasv.analyse.edivisive.edge_penalty`).
2. **Pruning.** Over the whole series, each candidate is re-tested against its neighbouring
   segments; the weakest one (largest p, or a relative change of means below
   ``min_magnitude``) is dropped and the rest re-tested, until all pass. Duplicates found
   by overlapping windows fall out here.

Both passes run for every series of a history at once, in array passes
(:mod:`neuronasv.analyse.edivisive`: ~50x faster than one ``scipy.stats.ttest_ind`` call
per split, with the same change points). :func:`detect_history` takes the candidates of
windows whose values it was given (``known``, from the history cache of ``neuronasv
regressions``) instead of searching them again.

Why not a library: ``apache-otava`` pins numpy 2.2 / scipy < 1.17 and pulls database and
Slack clients (it is our oracle in ``bench/eval_detection.py``, in its own venv);
``ruptures`` offers PELT/binary segmentation with penalties, not p-values, and the report
needs a p-value per change. The core is ~200 lines in ``edivisive``.

A change point is **open** when it is a regression whose shift is still in effect at the
latest commit: the last segment's level is at least half the shift above the old level.
When the environment fingerprint changed between the two commits around a change point,
the change lists those keys and the reason names them (likely cause).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, overload

import numpy as np

from neuronasv.analyse.acks import Acknowledgement, match_ack
from neuronasv.analyse.edivisive import RawChange, prune, window_candidates, windows
from neuronasv.analyse.envdiff import env_changes
from neuronasv.analyse.exact import (
    count_delta,
    counted_twice_alike,
    is_exact,
    target_name,
)
from neuronasv.analyse.states import MIN_POINTS  # fewer points: detect() does not run
from neuronasv.format import format_delta_pct, p_text
from neuronasv.model import (
    ChangePoint,
    FindingsDocument,
    History,
    Point,
    RunRef,
    Series,
    SeriesId,
)
from neuronasv.model.counts import PassCounts

if TYPE_CHECKING:
    from neuronasv.store.columns import MachineColumns

__all__ = [
    "MIN_POINTS",
    "CPSettings",
    "RawChange",
    "SeriesValues",
    "WindowCache",
    "change_points",
    "column_series",
    "detect",
    "detect_history",
    "detect_many",
    "history_document",
    "series_values",
    "settings_for",
]


@dataclass(frozen=True)
class CPSettings:
    """Change-point settings (Otava's names; defaults: window 50, p 0.001)."""

    window: int = 50
    max_pvalue: float = 0.001
    min_magnitude: float = 0.02

    def to_json(self) -> dict[str, Any]:
        return {
            "method": "e-divisive means + Welch t-test (Apache Otava core)",
            "window": self.window,
            "max_pvalue": self.max_pvalue,
            "min_magnitude": self.min_magnitude,
            "open": "regression still at least half in effect at the latest commit",
        }


#: Per series: window start -> the candidates that window's search accepted, for values
#: known to be the ones searched (see :func:`detect_many`).
WindowCache = Mapping[int, tuple[int, ...]]


#: ``mapper(function, jobs)``: the function's result of each job, in order — the builtin
#: ``map`` in effect by default; a process pool's ``map`` where the command has workers.
Mapper = Callable[[Callable[[Any], Any], Sequence[Any]], Iterable[Any]]

#: Series of one pass group split in this many chunks for a mapper (each series is searched
#: and pruned on its own, so the chunks give the answers of one batch, bit for bit).
CHUNKS = 8
_MIN_SPLIT = 256  # fewer series than this: one batch (a pool's transfer costs more)


_Job = tuple[tuple[Sequence[Any], ...], tuple[Any, ...]]  # (per-series slices, shared)


def _window_chunk(job: _Job) -> Any:
    (values, skip), (w, p) = job
    return window_candidates(values, w, p, skip=skip)


def _prune_chunk(job: _Job) -> Any:
    (values, cands, mins), (p,) = job
    return prune(values, cands, p, mins)


def _chunked(
    mapper: Mapper | None,
    fn: Callable[[_Job], Any],
    per_series: tuple[Sequence[Any], ...],
    shared: tuple[Any, ...],
) -> list[Any]:
    """``fn`` over the series of ``per_series`` (parallel lists): one call, or
    :data:`CHUNKS` calls through ``mapper``, their results joined in order."""
    n = len(per_series[0])
    if mapper is None or n < _MIN_SPLIT:
        return list(fn((per_series, shared)))
    bounds = [n * k // CHUNKS for k in range(CHUNKS + 1)]
    jobs = [(tuple(c[a:b] for c in per_series), shared) for a, b in itertools.pairwise(bounds)]
    return [x for part in mapper(fn, jobs) for x in part]


def detect_many(
    values: Sequence[Sequence[float] | np.ndarray],
    settings: Sequence[CPSettings] | CPSettings = CPSettings(),
    *,
    known: Sequence[WindowCache] | None = None,
    searched: Callable[[int, dict[int, tuple[int, ...]]], None] | None = None,
    mapper: Mapper | None = None,
) -> list[list[RawChange]]:
    """Change points of many value sequences (oldest first), in array passes.

    Args:
        values: per series, one value per commit, no gaps (drop missing values before).
        settings: one for all, or one per series.
        known: per series, candidates of windows whose values are unchanged since they
            were searched (window start -> candidates); those windows are not searched.
        searched: called per series with every window's candidates (known ones
            included), for the caller's cache.
        mapper: spreads the window pass and the pruning of many series over chunks
            (:data:`Mapper`); the same answers as without.

    Returns:
        Per series, its change points sorted by index, each with its p-value and the
        means around it.
    """
    xs = [np.asarray(v, dtype=float) for v in values]
    sts = [settings] * len(xs) if isinstance(settings, CPSettings) else list(settings)
    out: list[list[RawChange]] = [[] for _ in xs]
    for (w, p), idx in _pass_groups(xs, sts).items():
        cands = _group_candidates(xs, idx, w, p, known, searched, mapper)
        vals = [xs[i] for i in idx]
        mins = [sts[i].min_magnitude for i in idx]
        got = _chunked(mapper, _prune_chunk, (vals, cands, mins), (p,))
        for i, g in zip(idx, got, strict=True):
            out[i] = g
    return out


def _pass_groups(
    xs: Sequence[np.ndarray], sts: Sequence[CPSettings]
) -> dict[tuple[int, float], list[int]]:
    """The series long enough to search, grouped by what the first pass depends on
    (window, max_pvalue); min_magnitude matters only to the pruning."""
    groups: dict[tuple[int, float], list[int]] = {}
    for i, (x, st) in enumerate(zip(xs, sts, strict=True)):
        if x.size >= MIN_POINTS:
            groups.setdefault((max(8, st.window), st.max_pvalue), []).append(i)
    return groups


def _group_candidates(
    xs: Sequence[np.ndarray],
    idx: Sequence[int],
    w: int,
    p: float,
    known: Sequence[WindowCache] | None,
    searched: Callable[[int, dict[int, tuple[int, ...]]], None] | None,
    mapper: Mapper | None = None,
) -> list[set[int]]:
    """Per series of one pass group, every window's accepted candidates: the cached ones of
    windows that still exist (``known``), the others searched now; each series' windows are
    reported to ``searched``."""
    have = [dict(known[i]) if known is not None else {} for i in idx]
    valid = [{s for s, _e in windows(xs[i].size, w)} for i in idx]
    have = [{s: c for s, c in h.items() if s in ok} for h, ok in zip(have, valid, strict=True)]
    vals = [xs[i] for i in idx]
    skips = [sorted(h) for h in have]
    found = _chunked(mapper, _window_chunk, (vals, skips), (w, p))
    cands: list[set[int]] = []
    for i, h, f in zip(idx, have, found, strict=True):
        per = {**h, **f}
        if searched is not None:
            searched(i, per)
        cands.append({c for cs in per.values() for c in cs})
    return cands


def detect(values: Sequence[float], settings: CPSettings = CPSettings()) -> list[RawChange]:
    """Change points of one value sequence (oldest first).

    Args:
        values: one value per commit, no gaps (drop missing values before).
        settings: window, max p-value, min magnitude.

    Returns:
        Change points sorted by index, each with its p-value and the means around it.
    """
    return detect_many([values], settings)[0]


#: (machine, commit, workload, shape, dtype) -> that configuration's pass counts.
_Counts = dict[tuple[str, str, str | None, str | None, str | None], PassCounts]


def _pass_counts(history: History) -> _Counts:
    """Every sidecar's pass counts, indexed once for the whole history."""
    return {
        (machine, commit, p.name, p.shape, p.dtype): p.counted
        for (machine, commit), profiles in history.profiles.items()
        for p in profiles
        if p.counted is not None
    }


@dataclass(frozen=True)
class SeriesValues:
    """One series as change points are looked for in it: its kept points, in order.

    Attributes:
        commits: the commit of each value.
        values: finite values, one per commit of ``commits`` (float64).
    """

    machine: str
    env_name: str
    series: SeriesId
    unit: str
    commits: Sequence[str]
    values: np.ndarray

    @property
    def key(self) -> tuple[str, str, str, tuple[str, ...]]:
        return (self.machine, self.env_name, self.series.benchmark, self.series.params)


class _Picked(Sequence[str]):
    """``[commits[i] for i in index]`` without making the list (10,000 commits × 1,000
    series is ten million references; a change point reads two of them)."""

    def __init__(self, commits: Sequence[str], index: np.ndarray) -> None:
        self._commits = commits
        self._index = index

    def __len__(self) -> int:
        return int(self._index.size)

    @overload
    def __getitem__(self, i: int) -> str: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[str]: ...

    def __getitem__(self, i: int | slice) -> str | Sequence[str]:
        if isinstance(i, slice):
            return [self._commits[j] for j in self._index[i].tolist()]
        return self._commits[int(self._index[i])]


def column_series(mc: MachineColumns) -> list[SeriesValues]:
    """One machine's matrices (:func:`neuronasv.store.columns.load_columns`) as
    :class:`SeriesValues`: the same points :func:`series_values` keeps from a ``History``
    (finite values; an exact count the pass found not deterministic left out)."""
    keep = np.isfinite(mc.values) & ~mc.unstable
    out = []
    for i, s in enumerate(mc.series):
        idx = np.flatnonzero(keep[i])
        out.append(
            SeriesValues(
                mc.name, s.env_name, s.series, s.unit, _Picked(mc.commits, idx), mc.values[i, idx]
            )
        )
    return out


def _points(s: Series, counts: _Counts) -> list[Point]:
    """The points change points are looked for in.

    A count is exact: a step of any size is a fact (a level that does not
    move has no variance, so the t-test separates it at any size; :func:`settings_for`),
    and a point whose count the pass found not deterministic (its sidecar names the
    target) is left out.
    """
    pts = [p for p in s.points if p.value is not None and math.isfinite(p.value)]
    if not is_exact(s.unit):
        return pts
    sid, target = s.series, target_name(s.series)
    return [
        p for p in pts
        if counted_twice_alike(
            counts.get((s.machine, p.commit, sid.workload, sid.shape, sid.dtype)), target
        )
    ]  # fmt: skip


def series_values(history: History, machine: str | None = None) -> list[SeriesValues]:
    """Every series of ``history`` (of ``machine``) as :class:`SeriesValues`."""
    counts = _pass_counts(history)
    out = []
    for s in history.series:
        if machine is None or s.machine == machine:
            pts = _points(s, counts)
            out.append(
                SeriesValues(
                    s.machine,
                    s.env_name,
                    s.series,
                    s.unit,
                    tuple(p.commit for p in pts),
                    np.array([p.value for p in pts], dtype=float),
                )
            )
    return out


def settings_for(unit: str, settings: CPSettings) -> CPSettings:
    """The settings a series of ``unit`` is searched with: an exact count's change of any
    size is reported (no minimum magnitude)."""
    return replace(settings, min_magnitude=0.0) if is_exact(unit) else settings


def _reason(s: SeriesValues, rc: RawChange, ratio: float, before_c: str, after_c: str) -> str:
    between = f"between {before_c[:8]} and {after_c[:8]}"
    if is_exact(s.unit):
        delta = count_delta(s.series.op or "whole step", rc.before, rc.after)
        return f"exact: {delta} {between}"
    return f"{format_delta_pct(ratio)} {between} (t-test {p_text(rc.p_value)})"


def _series_changes(
    s: SeriesValues,
    raw: Sequence[RawChange],
    fingerprints: Mapping[tuple[str, str], Mapping[str, str]],
    acks: Sequence[Acknowledgement],
) -> list[ChangePoint]:
    """The change points of one series (:func:`change_points`)."""
    out: list[ChangePoint] = []
    last_level = raw[-1].after if raw else 0.0
    for rc in raw:
        before_c, after_c = s.commits[rc.index - 1], s.commits[rc.index]
        ratio = rc.after / rc.before if rc.before else math.inf
        kind = "regression" if ratio > 1.0 else "improvement"
        still = rc.before and (last_level - rc.before) / (rc.after - rc.before) >= 0.5
        fb = fingerprints.get((s.machine, before_c))
        fa = fingerprints.get((s.machine, after_c))
        envs = env_changes(fb, fa) if fb is not None and fa is not None else ()
        reason = _reason(s, rc, ratio, before_c, after_c)
        if envs:
            named = ", ".join(f"{e.key} {e.before} → {e.after}" for e in envs)
            reason += f"; coincides with an environment change ({named}): likely the cause"
        ack = match_ack(acks, s.series, after_c)
        out.append(
            ChangePoint(
                series=s.series,
                machine=s.machine,
                commit_before=before_c,
                commit_after=after_c,
                index=rc.index,
                before=rc.before,
                after=rc.after,
                ratio=ratio,
                p_value=rc.p_value,
                unit=s.unit,
                kind=kind,  # type: ignore[arg-type]
                open=kind == "regression" and bool(still),
                env_changes=envs,
                acknowledged=ack.reason if ack else None,
                reason=reason,
            )
        )
    return out


def change_points(
    rows: Sequence[SeriesValues],
    settings: CPSettings,
    fingerprints: Mapping[tuple[str, str], Mapping[str, str]],
    *,
    acks: Iterable[Acknowledgement] = (),
    known: Sequence[WindowCache] | None = None,
    searched: Callable[[int, dict[int, tuple[int, ...]]], None] | None = None,
    mapper: Mapper | None = None,
) -> list[ChangePoint]:
    """The change points of every row, sorted open first, then by magnitude.

    Args:
        rows: the series (:func:`series_values`, or a columnar loader's).
        settings: detection settings (per row through :func:`settings_for`).
        fingerprints: ``(machine, commit) -> fingerprint`` (environment changes named).
        acks: acknowledgements (matched against ``commit_after``).
        known, searched: the window cache hooks of :func:`detect_many`, per row.
        mapper: :func:`detect_many`'s (the same answers, spread).
    """
    ack_list = list(acks)
    raw = detect_many(
        [r.values for r in rows],
        [settings_for(r.unit, settings) for r in rows],
        known=known,
        searched=searched,
        mapper=mapper,
    )
    out: list[ChangePoint] = []
    for r, got in zip(rows, raw, strict=True):
        if got:
            out += _series_changes(r, got, fingerprints, ack_list)
    out.sort(key=lambda c: (not c.open, -abs(c.ratio - 1.0), c.series.label))
    return out


def history_document(
    found: Sequence[ChangePoint],
    *,
    latest: str | None,
    head_machine: str,
    fingerprints: Mapping[tuple[str, str], Mapping[str, str]],
    settings: CPSettings,
    load_errors: Sequence[str] = (),
    created: str = "",
) -> FindingsDocument:
    """The history findings document of :func:`change_points`' output; ``head`` is the
    latest commit (on ``head_machine``: "" when several machines)."""
    head = (
        RunRef(
            commit=latest,
            machine=head_machine,
            fingerprint=dict(fingerprints.get((head_machine, latest), {})),
        )
        if latest
        else None
    )
    return FindingsDocument(
        mode="history",
        base=None,
        head=head,
        change_points=tuple(found),
        settings=settings.to_json(),
        load_errors=tuple(load_errors),
        created=created,
    )


def detect_history(
    history: History,
    *,
    machine: str | None = None,
    settings: CPSettings = CPSettings(),
    acks: Iterable[Acknowledgement] = (),
    created: str = "",
) -> FindingsDocument:
    """Change points of every series of a history (mode ``history``).

    Args:
        history: from the loader (points in commit order).
        machine: only this machine.
        settings: detection settings.
        acks: acknowledgements (matched against ``commit_after``).
        created: timestamp to record.

    Returns:
        A findings document whose ``change_points`` are sorted open first, then by
        magnitude; ``head`` is the latest commit.
    """
    found = change_points(
        series_values(history, machine), settings, history.fingerprints, acks=acks
    )
    return history_document(
        found,
        latest=history.commits[-1] if history.commits else None,
        head_machine=machine or (history.machines[0] if len(history.machines) == 1 else ""),
        fingerprints=history.fingerprints,
        settings=settings,
        load_errors=history.load_errors,
        created=created,
    )
