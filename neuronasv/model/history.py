"""Results over commits, as the history loader hands them to analysis and publishing.

Built by ``neuronasv.store.history`` from an asv results folder (plus sidecars); pure
data, no I/O. A ``Series`` is keyed by (machine, environment name, benchmark, params);
its points are in commit order (oldest first).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from neuronasv.model.findings import SeriesId
from neuronasv.model.profile import WorkloadProfile
from neuronasv.model.sidecar import RunState

__all__ = ["History", "Point", "Series"]


@dataclass(frozen=True)
class Point:
    """One commit's measurement of one series.

    Attributes:
        commit: full commit hash.
        order: position in commit order (0 = oldest known commit); gaps are allowed.
        value: asv's reported value (median), None when the benchmark failed or was n/a.
        samples: raw samples when asv recorded them (``--record-samples``), else empty.
        date: commit date in ms since the epoch when known (asv stores it), else None.
    """

    commit: str
    order: int
    value: float | None
    samples: tuple[float, ...] = ()
    date: int | None = None


@dataclass(frozen=True)
class Series:
    """One benchmark/param combination on one machine and environment."""

    machine: str
    env_name: str
    series: SeriesId
    unit: str
    points: tuple[Point, ...]

    @property
    def key(self) -> tuple[str, str, str, tuple[str, ...]]:
        return (self.machine, self.env_name, self.series.benchmark, self.series.params)

    def at(self, commit: str) -> Point | None:
        return next((p for p in self.points if p.commit == commit), None)


@dataclass(frozen=True)
class History:
    """Everything loaded from one results folder.

    Attributes:
        series: every series found.
        commits: commit order, oldest first (from git when available, else asv's dates).
        fingerprints: (machine, commit) -> environment fingerprint, from sidecars.
        load_errors: "path: reason" for every file that could not be read.
        profiles: (machine, commit) -> the sidecar's full op tables (empty without
            sidecars); attribution reads them for per-op deltas and new/removed ops.
        asv_identity: (machine, commit) -> what asv recorded about the environment
            (``env_name``, ``python``, ``requirements``, ``env_vars``): the identity
            plain asv results are compared by when neither side has a fingerprint.
        unreadable_sidecars: (machine, commit) -> why its sidecar could not be read
            (the fingerprint is then unknown because of a bad file, not plain asv).
        run_states: (machine, commit) -> the machine's load and clock at the start and
            end of that run, from its sidecar (schema 2; absent for older sidecars).
    """

    series: tuple[Series, ...]
    commits: tuple[str, ...] = ()
    fingerprints: Mapping[tuple[str, str], Mapping[str, str]] = field(default_factory=dict)
    load_errors: tuple[str, ...] = ()
    profiles: Mapping[tuple[str, str], tuple[WorkloadProfile, ...]] = field(default_factory=dict)
    asv_identity: Mapping[tuple[str, str], Mapping[str, str]] = field(default_factory=dict)
    unreadable_sidecars: Mapping[tuple[str, str], str] = field(default_factory=dict)
    run_states: Mapping[tuple[str, str], RunState] = field(default_factory=dict)

    @property
    def machines(self) -> tuple[str, ...]:
        return tuple(sorted({s.machine for s in self.series}))
