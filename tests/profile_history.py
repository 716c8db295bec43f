"""A two-commit ``History`` from two workload profiles, as ``neuronasv run`` records it:
one asv series per name (the total, ``module:<path>`` and op series, in seconds, from the
profiles' samples) and the profiles as the sidecars."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

import numpy as np

from neuronasv.analyse.profile_samples import profile_samples
from neuronasv.model import History, Point, ProfileDocument, Series, SeriesId, WorkloadProfile


def history_from_profiles(
    base: WorkloadProfile,
    head: WorkloadProfile,
    names: Iterable[str | None],
    series_id: Callable[[str | None], SeriesId],
    *,
    commits: tuple[str, str],
    machine: str,
    fingerprint: Mapping[str, str],
) -> History:
    key = (base.name, base.shape, base.dtype)
    series = []
    for name in names:
        pts = []
        for order, (commit, prof) in enumerate(zip(commits, (base, head), strict=True)):
            xs = tuple(profile_samples(ProfileDocument(prof.backend, (prof,)))[(*key, name)])
            pts.append(Point(commit, order, float(np.median(xs)), xs))
        series.append(Series(machine, "existing-py", series_id(name), "seconds", tuple(pts)))
    return History(
        series=tuple(series),
        commits=commits,
        fingerprints={(machine, c): dict(fingerprint) for c in commits},
        profiles={(machine, commits[0]): (base,), (machine, commits[1]): (head,)},
    )
