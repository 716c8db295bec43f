"""Pure statistics for verdicts: no I/O, numpy/scipy only.

* :func:`mann_whitney_p` — two-sided Mann–Whitney U (scipy; exact for small samples without
  ties, normal approximation with tie correction otherwise).
* :func:`bootstrap_ratio_ci` — percentile bootstrap CI of median(head)/median(base), seeded.
* :func:`noise` — IQR/median, the noise figure torch.utils.benchmark warns about above 10 %.
* :func:`holm` / :func:`benjamini_hochberg` — multiple-comparison adjusted p-values. The
  verdicts use Holm (see ``neuronasv.analyse.pairwise``): it bounds the probability of
  *any* false alarm in one comparison, without assuming the series are independent (the
  op series of one workload share their samples).
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence

import numpy as np
from scipy import stats as _sps

__all__ = [
    "benjamini_hochberg",
    "bootstrap_ratio_ci",
    "holm",
    "mann_whitney_many",
    "mann_whitney_p",
    "median",
    "noise",
    "seed_for",
]


def median(samples: Sequence[float]) -> float:
    """Median of a non-empty sequence."""
    return float(np.median(np.asarray(samples, dtype=float)))


def noise(samples: Sequence[float]) -> float | None:
    """IQR/median of ``samples`` (None when fewer than 2 samples or a zero median)."""
    if len(samples) < 2:
        return None
    a = np.asarray(samples, dtype=float)
    med = float(np.median(a))
    if med == 0.0:
        return None
    q75, q25 = np.percentile(a, [75, 25])
    return float((q75 - q25) / abs(med))


EXACT_MAX = 50  # exact null distribution up to this many samples a side (no ties)


def _method(a: np.ndarray, b: np.ndarray) -> str:
    """Exact p-values when there are no ties and samples are few, else normal + tie
    correction; decided per series so a verdict never depends on its neighbours."""
    ties = np.unique(np.concatenate([a, b])).size < a.size + b.size
    return "exact" if not ties and max(a.size, b.size) <= EXACT_MAX else "asymptotic"


def mann_whitney_p(base: Sequence[float], head: Sequence[float]) -> float:
    """Two-sided Mann–Whitney U p-value; 1.0 when every value is identical."""
    return mann_whitney_many([(base, head)])[0]


def mann_whitney_many(pairs: Sequence[tuple[Sequence[float], Sequence[float]]]) -> list[float]:
    """Two-sided Mann–Whitney U p-values for many (base, head) pairs.

    Same result as one ``scipy.stats.mannwhitneyu`` call per pair, but pairs of equal
    sizes and method are batched into one vectorised call (scipy's per-call overhead
    dominates suites with hundreds of op series).
    """
    out = [1.0] * len(pairs)
    groups: dict[tuple[int, int, str], list[int]] = {}
    arrays = []
    for i, (base, head) in enumerate(pairs):
        a = np.asarray(base, dtype=float)
        b = np.asarray(head, dtype=float)
        if a.size == 0 or b.size == 0:
            raise ValueError("both sides need samples")
        arrays.append((a, b))
        if np.all(a == a[0]) and np.all(b == a[0]):
            continue  # all identical: no evidence of a difference
        groups.setdefault((a.size, b.size, _method(a, b)), []).append(i)
    for (_, _, method), idx in groups.items():
        xa = np.stack([arrays[i][0] for i in idx])
        xb = np.stack([arrays[i][1] for i in idx])
        res = _sps.mannwhitneyu(xa, xb, alternative="two-sided", method=method, axis=1)
        for i, p in zip(idx, np.atleast_1d(res.pvalue), strict=True):
            out[i] = float(p)
    return out


def seed_for(*parts: str) -> int:
    """A stable seed from text (a series label), so results never depend on series order."""
    return zlib.crc32("\x1f".join(parts).encode("utf-8"))


def bootstrap_ratio_ci(
    base: Sequence[float],
    head: Sequence[float],
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, float] | None:
    """Percentile bootstrap CI of ``median(head) / median(base)``.

    Both sides are resampled independently with replacement. Deterministic for a given
    ``seed``. None when a side is empty or a resampled base median is 0.
    """
    a = np.asarray(base, dtype=float)
    b = np.asarray(head, dtype=float)
    if a.size == 0 or b.size == 0:
        return None
    rng = np.random.default_rng(seed)
    ma = np.median(a[rng.integers(0, a.size, size=(resamples, a.size))], axis=1)
    mb = np.median(b[rng.integers(0, b.size, size=(resamples, b.size))], axis=1)
    if np.any(ma == 0.0):
        return None
    r = mb / ma
    tail = (1.0 - confidence) / 2.0 * 100.0
    lo, hi = np.percentile(r, [tail, 100.0 - tail])
    return float(lo), float(hi)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm–Bonferroni step-down adjusted p-values (same order as given)."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    out = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        adj = min(1.0, (m - rank) * pvalues[i])
        running = max(running, adj)  # monotone: never smaller than an earlier step
        out[i] = running
    return out


def benjamini_hochberg(pvalues: Sequence[float]) -> list[float]:
    """Benjamini–Hochberg step-up adjusted p-values (q-values), same order as given."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i], reverse=True)
    out = [0.0] * m
    running = 1.0
    for k, i in enumerate(order):
        rank = m - k
        running = min(running, pvalues[i] * m / rank)
        out[i] = min(1.0, running)
    return out


def is_finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)
