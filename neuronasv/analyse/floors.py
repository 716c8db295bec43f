"""Per-series between-run noise floors learned from history (pure, no I/O).

Two profiling runs of the *same* code differ by more than their within-run sample spread
(process start, memory layout, clock, neighbours). A single-run PR comparison cannot see
that variance, so its within-run test (Mann–Whitney) resolves run-to-run shifts as
"significant". The floor puts a number on it per series: the robust spread of the
log-ratio between consecutive main-branch commits' values, skipping pairs that straddle a
change point (:func:`neuronasv.analyse.stats.noise_floor`). Uses:

* single-run verdicts: a change must exceed ``k x floor`` (``k`` from alpha and the
  number of series, :func:`neuronasv.analyse.stats.floor_k`) besides the rule's minimum
  effect;
* rounds verdicts: the floor is the prior variance of the per-round log-ratio, worth
  ``0.37 x pairs`` degrees of freedom (the MAD's efficiency).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from neuronasv.analyse import stats
from neuronasv.analyse.changepoints import CPSettings, detect_many
from neuronasv.format import format_pct
from neuronasv.model import History, SeriesId

__all__ = [
    "FLOOR_WINDOW",
    "MIN_FLOOR_PAIRS",
    "FloorKey",
    "NoiseFloor",
    "floor_key",
    "floors_of",
    "noise_floors",
]

#: Fewer consecutive pairs than this give no floor (a MAD of 4 values is a guess).
MIN_FLOOR_PAIRS = 5
#: Only the latest commits count: the floor should describe the runner as it is now.
FLOOR_WINDOW = 60

FloorKey = tuple[object, ...]


@dataclass(frozen=True)
class NoiseFloor:
    """Between-run noise of one series.

    Attributes:
        sd: robust sd of the log-ratio between two runs of the same code (0.03 = 3 %).
        pairs: consecutive commit pairs it was estimated from.
    """

    sd: float
    pairs: int

    @property
    def df(self) -> float:
        """Degrees of freedom the floor is worth as a prior variance (MAD efficiency)."""
        return stats.MAD_EFFICIENCY * self.pairs

    def describe(self) -> str:
        return f"{format_pct(self.sd)} from {self.pairs} main-branch run pairs"


def floor_key(sid: SeriesId) -> FloorKey:
    """Identity of a series across sources (asv results, profile documents)."""
    if sid.workload is not None:
        return ("w", sid.workload, sid.shape, sid.dtype, sid.op)
    return ("b", sid.benchmark, sid.params)


def noise_floors(
    history: History,
    machine: str,
    *,
    exclude: Iterable[str] = (),
    window: int = FLOOR_WINDOW,
    cp_settings: CPSettings | None = None,
) -> dict[FloorKey, NoiseFloor]:
    """Floors of every series of ``machine`` with enough history.

    Args:
        history: the loader's output (main-branch results).
        machine: whose runs.
        exclude: commits to leave out (the PR head: its change is what is being judged).
        window: latest points per series used.
        cp_settings: change-point settings (default: ``regressions``' own); pairs
            straddling a change point are skipped.

    Returns:
        ``floor_key(series) -> NoiseFloor``; series with fewer than
        :data:`MIN_FLOOR_PAIRS` usable pairs are absent.
    """
    skip = set(exclude)
    rows: list[tuple[SeriesId, list[float]]] = []
    for s in history.series:
        if s.machine == machine:
            vals = [p.value for p in s.points if p.commit not in skip and p.value is not None]
            rows.append((s.series, vals))
    return floors_of(rows, window=window, cp_settings=cp_settings)


def floors_of(
    rows: Iterable[tuple[SeriesId, Sequence[float]]],
    *,
    window: int = FLOOR_WINDOW,
    cp_settings: CPSettings | None = None,
) -> dict[FloorKey, NoiseFloor]:
    """:func:`noise_floors` of series given as ``(identity, values in commit order)``
    (one machine's; the excluded commits and missing values already left out)."""
    cps = cp_settings or CPSettings()
    kept: list[tuple[SeriesId, list[float]]] = []
    for sid, values in rows:
        vals = [v for v in values if v > 0.0][-window:]
        if len(vals) >= MIN_FLOOR_PAIRS + 1:
            kept.append((sid, vals))
    # every series' change points in one batch (they are only skipped pairs here)
    found = detect_many([v for _sid, v in kept], cps)
    out: dict[FloorKey, NoiseFloor] = {}
    for (sid, vals), raw in zip(kept, found, strict=True):
        got = stats.noise_floor(vals, [c.index for c in raw])
        if got is None or got[1] < MIN_FLOOR_PAIRS:
            continue
        key = floor_key(sid)
        prev = out.get(key)
        # Several environments of one series: keep the widest (the conservative choice).
        if prev is None or got[0] > prev.sd:
            out[key] = NoiseFloor(got[0], got[1])
    return out
