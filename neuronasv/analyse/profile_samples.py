"""Samples out of profile documents: the one reader of a ``ProfileDocument``'s numbers.

``neuronasv profile --json`` writes a :class:`~neuronasv.model.ProfileDocument`; the
confirmation re-measures with it (:mod:`neuronasv.analyse.confirm`) and ``compare
--round-base/--round-head`` judges rounds from such documents. Both read the samples here
(issue 15: the two had their own copies). Pure: the documents are loaded by the caller
(``neuronasv.report.load.load_profile``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from neuronasv.analyse.floors import FloorKey, floor_key
from neuronasv.model import ProfileDocument, SeriesId

__all__ = ["Rounds", "SampleKey", "paired_rounds", "profile_samples", "samples_from_profile"]

#: ``(workload, shape, dtype, op)``; ``op`` None is the workload's total device time.
SampleKey = tuple[str, str, str, "str | None"]

#: ``floor_key(series) -> (base rounds, head rounds)``, each round a list of samples.
Rounds = dict[FloorKey, tuple[list[list[float]], list[list[float]]]]


def profile_samples(doc: ProfileDocument, unit: str = "seconds") -> dict[SampleKey, list[float]]:
    """Every series' samples in ``doc``: the totals, each op's self device time and each
    module's inclusive time (``module:<path>``, :mod:`neuronasv.measure.modules`), by
    :meth:`~neuronasv.model.WorkloadProfile.series_samples` (the one profile → series
    mapping; ``unit="seconds"``, the asv series unit, converts from microseconds). When a
    document holds the same (workload, shape, dtype) twice, the first profile counts.
    """
    out: dict[SampleKey, list[float]] = {}
    for w in doc.workloads:
        if (w.name, w.shape, w.dtype, None) in out:
            continue
        for op, xs in w.series_samples(unit).items():
            out[(w.name, w.shape, w.dtype, op)] = xs
    return out


def samples_from_profile(
    doc: ProfileDocument, series: Iterable[SeriesId], unit: str = "seconds"
) -> dict[SeriesId, list[float]]:
    """Samples per series from a profile document (µs -> the series unit); series the
    document does not hold are left out."""
    found = profile_samples(doc, unit)
    out: dict[SeriesId, list[float]] = {}
    for sid in series:
        key = (sid.workload or "", sid.shape, sid.dtype, sid.op)
        if sid.workload is not None and key in found:
            out[sid] = found[key]
    return out


def paired_rounds(base: Sequence[ProfileDocument], head: Sequence[ProfileDocument]) -> Rounds:
    """``floor_key -> (base rounds, head rounds)`` from profile documents paired in order.

    Round ``i`` is ``base[i]`` against ``head[i]``. A series missing from a round is
    unusable from then on on that side (its rounds would no longer pair): it keeps only
    the rounds before the gap.

    Raises:
        ValueError: ``base`` and ``head`` differ in length (the caller says which option).
    """
    if len(base) != len(head):
        raise ValueError(f"{len(base)} base rounds but {len(head)} head rounds")
    out: Rounds = {}
    for i, docs in enumerate(zip(base, head, strict=True)):
        for side, doc in enumerate(docs):
            for (name, shape, dtype, op), xs in profile_samples(doc).items():
                key = floor_key(SeriesId("", (), name, shape, dtype, op))
                got = out.setdefault(key, ([], []))[side]
                if len(got) == i:  # absent in an earlier round: unusable
                    got.append(xs)
    return out
