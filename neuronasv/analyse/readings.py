"""Exact readings of one series at one commit, from its stored sidecar (pure).

The bisection's exact axes (:func:`neuronasv.analyse.bisect.exact_search`) compare one
reading per commit for equality:

- an exact metric of the registry (:mod:`neuronasv.metrics`): the series' count per
  iteration from the configuration's counts (:meth:`WorkloadProfile.counts`; an op the
  commit does not run reads "not run": that is a fact too). A count its pass found not
  deterministic is no reading (the probe is skipped, never guessed). A metric whose
  counts the sidecar does not carry (memory: its values are only in the asv results) is
  read from its own series' stored value, when all its samples repeat it;
- ``work``: the work evidence of the untimed pass — the op's calls per iteration and its
  input signature (``"<calls>×<dtypes and shapes>"``), every op's for a total, the ops
  issued in the module for a module series. Exact, identical on every run of the same code.

Both come from the sidecar profiles a run stores (``History.profiles``), so a commit with
stored results costs nothing.
"""

from __future__ import annotations

import hashlib
import json

from neuronasv.analyse.bisect import Reading
from neuronasv.analyse.exact import counted_twice_alike, repeats_exactly, target_name
from neuronasv.format import format_calls_per_iter, format_count, plural
from neuronasv.metrics import Metric, by_name
from neuronasv.model import History, SeriesId, WorkloadProfile
from neuronasv.model.culprit import Axis
from neuronasv.model.profile import module_series_path

__all__ = ["ends_differ", "profile_of", "reading_at", "stored_readings"]


def profile_of(
    history: History, machine: str, commit: str, series: SeriesId
) -> WorkloadProfile | None:
    """The sidecar profile of the series' configuration at ``commit`` (None: not stored)."""
    for p in history.profiles.get((machine, commit), ()):
        if (p.name, p.shape, p.dtype) == series.config:
            return p
    return None


def _counted(p: WorkloadProfile, series: SeriesId, metric: Metric) -> Reading | None:
    counts = p.counts(metric.name)
    target = target_name(series)
    if counts is None or not counted_twice_alike(counts, target):
        return None
    n = counts.get(series.op)
    if n is None:
        return Reading("not run", 0.0, f"{series.op} not run (no {metric.unit})")
    return Reading(float(n), float(n), f"{format_count(n)} {metric.title}")


def _work(p: WorkloadProfile, series: SeriesId) -> Reading | None:
    path = module_series_path(series.op)
    entries: list[tuple[object, ...]]
    if series.op is None:
        entries = sorted((o.op, o.calls_per_iter, o.signature) for o in p.ops)
        words = f"{plural(len(entries), 'op')} with their calls and input shapes"
    elif path is not None:
        entries = sorted(
            (o.op, tuple(o.module_signatures.get(path, ()))) for o in p.ops
            if o.module_signatures.get(path)
        )  # fmt: skip
        words = f"{plural(len(entries), 'op')} issued in {path or 'the root'}"
    else:
        op = next((o for o in p.ops if o.op == series.op), None)
        if op is None:
            return Reading("not run", None, f"{series.op} not run")
        entries = [(op.op, op.calls_per_iter, op.signature)]
        shapes = "; ".join(op.signature[:2]) + (" …" if len(op.signature) > 2 else "")
        words = f"{format_calls_per_iter(op.calls_per_iter)} calls" + (
            f" ({shapes})" if shapes else ""
        )
    if not entries and series.op is None:
        return None  # no work evidence recorded (the untimed pass did not run)
    digest = hashlib.sha256(json.dumps(entries, default=list).encode()).hexdigest()[:16]
    return Reading(digest, None, words)


def _stored_value(
    history: History, machine: str, commit: str, series: SeriesId, metric: Metric
) -> Reading | None:
    """An exact metric the sidecar profile carries no counts of (memory): the value of the
    metric's own series for ``series``' configuration and op at ``commit``, from the asv
    results, when every sample repeats it (samples that differ: no reading, as a count not
    deterministic). An op absent where the metric was measured for its configuration
    reads "not run"; nothing of the metric stored there: None."""
    measured = False
    for s in history.series:
        sid = s.series
        if s.machine != machine or sid.metric != metric.name or sid.config != series.config:
            continue
        pt = next((p for p in s.points if p.commit == commit), None)
        if pt is None:
            continue
        measured = True
        if sid.op != series.op:
            continue
        if pt.value is None or not repeats_exactly(pt):
            return None
        n = pt.value
        return Reading(float(n), float(n), f"{format_count(n)} {metric.title}")
    if not measured:
        return None
    return Reading("not run", 0.0, f"{series.op} not run (no {metric.unit})")


def reading_at(
    history: History, machine: str, commit: str, series: SeriesId, axis: Axis
) -> Reading | None:
    """The exact reading of ``series`` at ``commit`` on ``axis`` (``work``, or an exact
    metric of :mod:`neuronasv.metrics`: the sidecar's counts, else the metric's own stored
    series; None: nothing readable stored)."""
    if axis != "work" and not by_name(axis).sidecar_key:  # its values: the asv results only
        return _stored_value(history, machine, commit, series, by_name(axis))
    p = profile_of(history, machine, commit, series)
    if p is None:
        return None
    return _work(p, series) if axis == "work" else _counted(p, series, by_name(axis))


def ends_differ(
    history: History, machine: str, series: SeriesId, axis: Axis, good: str, bad: str
) -> tuple[Reading, Reading] | None:
    """The two ends' readings on exact ``axis`` when both are stored and they differ (the
    evidence ``--axis auto`` decides by), else None."""
    a = reading_at(history, machine, good, series, axis)
    b = reading_at(history, machine, bad, series, axis)
    if a is None or b is None or a.value == b.value:
        return None
    return a, b


def stored_readings(
    history: History, machine: str, series: SeriesId, axis: Axis, commits: list[str]
) -> dict[str, Reading]:
    """Readings of the commits whose stored results on ``machine`` hold one.

    A commit stored without one (another ``--bench``, the metric not asked for, a count not
    deterministic) is left out: the search measures it if it needs it.
    """
    out: dict[str, Reading] = {}
    for c in commits:
        r = reading_at(history, machine, c, series, axis)
        if r is not None:
            out[c] = r
    return out
