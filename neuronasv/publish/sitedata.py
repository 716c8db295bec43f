"""The site's columnar view of a history: one value matrix per machine.

``model.History`` holds one ``Point`` object per (series, commit) with its samples: right
for analysis, but 10,000 commits × 1,000 series is ten million objects (≈10 GiB). The site
needs only median and quartiles per (series, commit), so it keeps them as numpy arrays
(``value`` float64, ``q25``/``q75`` float32; NaN = no value): ≈160 MB at that size.

Two producers: :func:`neuronasv.publish.scan.scan_results` (straight from a results
folder, cached per file) and :func:`from_history` (from a loaded ``model.History``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from neuronasv.model import History, SeriesId, WorkloadProfile

__all__ = ["MachineData", "SeriesInfo", "SiteData", "from_history", "op_modules_of"]


@dataclass(frozen=True)
class SeriesInfo:
    """Identity of one row of a machine's matrices."""

    env_name: str
    series: SeriesId
    unit: str

    @property
    def key(self) -> tuple[str, str, tuple[str, ...]]:
        return (self.env_name, self.series.benchmark, self.series.params)


@dataclass
class MachineData:
    """Everything the site shows for one machine.

    Attributes:
        name: asv machine name.
        commits: commit order, oldest first (only commits with results on this machine).
        dates: commit date per commit, ms since the epoch (0 = unknown).
        series: one entry per matrix row.
        value: (series, commits) medians; NaN where absent or failed.
        q25, q75: (series, commits) quartiles (NaN where unknown).
        fingerprints: commit index -> environment fingerprint (from sidecars).
        traces: commit index -> {workload key: trace path} (from sidecars).
        op_modules: (workload, shape, dtype, op) -> the module path holding most of that
            op's time, from the newest profiles (:func:`op_modules_of`): the site nests
            op rows beneath their module's row. Empty: ops follow the module rows.
    """

    name: str
    commits: list[str]
    dates: np.ndarray
    series: list[SeriesInfo]
    value: np.ndarray
    q25: np.ndarray
    q75: np.ndarray
    fingerprints: dict[int, Mapping[str, str]] = field(default_factory=dict)
    traces: dict[int, Mapping[str, str]] = field(default_factory=dict)
    op_modules: dict[tuple[str, str, str, str], str] = field(default_factory=dict)

    def env_changes(self) -> list[tuple[int, list[tuple[str, str | None, str | None]]]]:
        """(commit index, [(key, before, after)]) wherever the fingerprint changed."""
        out: list[tuple[int, list[tuple[str, str | None, str | None]]]] = []
        prev: Mapping[str, str] | None = None
        for i in sorted(self.fingerprints):
            fp = self.fingerprints[i]
            if prev is not None and fp != prev:
                keys = sorted(set(fp) | set(prev))
                diff = [(k, prev.get(k), fp.get(k)) for k in keys if prev.get(k) != fp.get(k)]
                out.append((i, diff))
            prev = fp
        return out

    def latest_fingerprint(self) -> Mapping[str, str]:
        return self.fingerprints[max(self.fingerprints)] if self.fingerprints else {}


@dataclass
class SiteData:
    """All machines, plus the problems met while reading."""

    machines: list[MachineData]
    load_errors: list[str] = field(default_factory=list)


def op_modules_of(profiles: Iterable[WorkloadProfile]) -> dict[tuple[str, str, str, str], str]:
    """(workload, shape, dtype, op) -> the module path with the largest share of the op."""
    out: dict[tuple[str, str, str, str], str] = {}
    for p in profiles:
        for o in p.ops:
            if o.modules:
                top = max(o.modules.items(), key=lambda kv: (kv[1], kv[0]))[0]
                out[(p.name, p.shape, p.dtype, o.op)] = top
    return out


def from_history(history: History) -> SiteData:
    """Columnar view of a loaded ``model.History`` (quartiles from samples when present)."""
    by_machine: dict[str, list[int]] = {}
    for i, s in enumerate(history.series):
        by_machine.setdefault(s.machine, []).append(i)
    order = {c: i for i, c in enumerate(history.commits)}
    machines: list[MachineData] = []
    for name in sorted(by_machine):
        rows = [history.series[i] for i in by_machine[name]]
        commit_set = {p.commit for s in rows for p in s.points}
        commits = sorted(commit_set, key=lambda c: order.get(c, len(order)))
        col = {c: i for i, c in enumerate(commits)}
        n, m = len(rows), len(commits)
        value = np.full((n, m), np.nan)
        q25 = np.full((n, m), np.nan, dtype=np.float32)
        q75 = np.full((n, m), np.nan, dtype=np.float32)
        dates = np.zeros(m, dtype=np.int64)
        for r, s in enumerate(rows):
            for p in s.points:
                j = col[p.commit]
                if p.date:
                    dates[j] = p.date
                if p.value is None or not math.isfinite(p.value):
                    continue
                value[r, j] = p.value
                if p.samples:
                    lo, hi = np.percentile(np.asarray(p.samples), [25, 75])
                    q25[r, j], q75[r, j] = lo, hi
        fps = {
            col[c]: fp
            for (mach, c), fp in history.fingerprints.items()
            if mach == name and c in col
        }
        newest = history.profiles.get((name, commits[-1]), ()) if commits else ()
        machines.append(
            MachineData(
                name=name,
                commits=commits,
                dates=dates,
                series=[SeriesInfo(s.env_name, s.series, s.unit) for s in rows],
                value=value,
                q25=q25,
                q75=q75,
                fingerprints=fps,
                op_modules=op_modules_of(newest),
            )
        )
    return SiteData(machines=machines, load_errors=list(history.load_errors))
