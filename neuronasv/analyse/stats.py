"""Pure statistics for verdicts: no I/O, numpy/scipy only.

* :func:`mann_whitney_p` — two-sided Mann–Whitney U (scipy; exact for small samples without
  ties, normal approximation with tie correction otherwise).
* :func:`bootstrap_ratio_ci` — percentile bootstrap CI of median(head)/median(base), seeded.
* :func:`noise` — IQR/median, the noise figure torch.utils.benchmark warns about above 10 %.
* :func:`holm` / :func:`benjamini_hochberg` — multiple-comparison adjusted p-values. The
  verdicts use Holm (see ``neuronasv.analyse.pairwise``): it bounds the probability of
  *any* false alarm in one comparison, without assuming the series are independent (the
  op series of one workload share their samples).
* :func:`round_log_ratios`, :func:`moderated_t` — the rounds test:
  the unit of replication is the *run*, so base and head measured in R interleaved rounds
  give R log-ratios of medians per series, tested with a moderated t statistic whose
  variance borrows strength from a prior (Smyth 2004, limma's ``eBayes``).
* :func:`noise_floor`, :func:`floor_k` — the between-run noise floor of a series learned
  from its history, and how many floors a single-run change must exceed.
"""

from __future__ import annotations

import functools
import math
import zlib
from collections.abc import Sequence

import numpy as np
from scipy import stats as _sps

from neuronasv.samples import median

__all__ = [
    "benjamini_hochberg",
    "bootstrap_ratio_ci",
    "capped",
    "floor_k",
    "holm",
    "mann_whitney_many",
    "mann_whitney_p",
    "moderated_t",
    "noise_floor",
    "round_levels",
    "round_log_ratios",
    "same_level_log_ratios",
    "seed_for",
]


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


#: Samples per side the bootstrap draws at once (rows x samples): bounds its working set
#: at ~16 MB of indices plus as much for the gathered values, whatever the sample count.
BOOTSTRAP_BLOCK = 2_000_000
#: Most samples a series is judged on. Beyond it the series is judged on this many evenly
#: spaced order statistics of its samples (deterministic; the quantiles, median included,
#: move by at most 1/10,000 of the distribution): asv's default records 10-100 samples, a
#: results file with 10^6 (14 MB, under the size caps) would otherwise need ~16 GB in the
#: bootstrap and minutes in the rank test.
MAX_SAMPLES = 10_000


def capped(values: Sequence[float], cap: int = MAX_SAMPLES) -> tuple[float, ...]:
    """``values`` as a tuple, or ``cap`` evenly spaced order statistics of them when there
    are more (the smallest and largest kept)."""
    if len(values) <= cap:
        return tuple(values)
    v = np.sort(np.asarray(values, dtype=float))
    idx = np.round(np.linspace(0.0, v.size - 1.0, cap)).astype(np.int64)
    return tuple(float(x) for x in v[idx])


def _boot_medians(x: np.ndarray, rng: np.random.Generator, resamples: int) -> np.ndarray:
    """Medians of ``resamples`` resamples of ``x``, drawn in blocks of at most
    :data:`BOOTSTRAP_BLOCK` values (the same draws, in the same order, as one block)."""
    rows = max(1, BOOTSTRAP_BLOCK // x.size)
    out = np.empty(resamples)
    for start in range(0, resamples, rows):
        k = min(rows, resamples - start)
        # The median by a full sort of each row: the values np.median gives (the middle
        # one, or the two middle ones' mean), 4x faster on the short rows asv records.
        s = np.sort(x[rng.integers(0, x.size, size=(k, x.size))], axis=1)
        h = x.size // 2
        out[start : start + k] = s[:, h] if x.size % 2 else (s[:, h - 1] + s[:, h]) / 2.0
    return out


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
    ``seed``. None when a side is empty or a resampled base median is 0. Memory is bounded
    by :data:`BOOTSTRAP_BLOCK` per block, not by ``resamples x samples``.
    """
    a = np.asarray(base, dtype=float)
    b = np.asarray(head, dtype=float)
    if a.size == 0 or b.size == 0:
        return None
    rng = np.random.default_rng(seed)
    ma = _boot_medians(a, rng, resamples)
    mb = _boot_medians(b, rng, resamples)
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


# --- between-run variance: rounds and noise floors ----------------------------------------

#: Robust-scale constant: 1.4826 x median(|x|) estimates the sd of a centred normal.
MAD_K = 1.4826
#: Efficiency of the MAD relative to the sd (Gaussian): a MAD from n values carries about
#: as much information as an sd from 0.37 n, which is the df a floor is worth as a prior.
MAD_EFFICIENCY = 0.37
#: Smallest noise floor (0.05 %): no run-to-run spread is credibly below it (an H200 shows
#: 0.1–0.2 %), and a floor of 0 would call any quantum of timer resolution a change.
MIN_FLOOR = 5e-4
#: Largest prior df (d0 -> infinity means "every series has the prior variance").
MAX_PRIOR_DF = 1000.0


def round_log_ratios(
    base_rounds: Sequence[Sequence[float]], head_rounds: Sequence[Sequence[float]]
) -> np.ndarray:
    """``log(median(head_r) / median(base_r))`` for each paired round ``r``.

    Rounds pair in order (ABAB: round r of base was measured next to round r of head, so
    a slow drift cancels within the pair); extra rounds on one side are ignored.

    Raises:
        ValueError: an empty round or a median that is not positive.
    """
    r = min(len(base_rounds), len(head_rounds))
    out = np.empty(r)
    for i in range(r):
        if len(base_rounds[i]) == 0 or len(head_rounds[i]) == 0:
            raise ValueError("every round needs samples")
        mb, mh = median(base_rounds[i]), median(head_rounds[i])
        if mb <= 0.0 or mh <= 0.0:
            raise ValueError("round medians must be positive for a log-ratio")
        out[i] = math.log(mh / mb)
    return out


def round_levels(rounds: Sequence[Sequence[float]]) -> float:
    """The geometric mean of the rounds' medians: ``exp(mean(log(median(r))))``.

    The rounds' estimate of one side (:class:`~neuronasv.model.Estimate`): for paired
    rounds, head's level / base's level is exactly ``exp(mean(d))`` of
    :func:`round_log_ratios`, the ratio the rounds test judges.

    Raises:
        ValueError: no rounds, an empty round, or a median that is not positive.
    """
    if not rounds:
        raise ValueError("no rounds")
    logs = []
    for r in rounds:
        if len(r) == 0:
            raise ValueError("every round needs samples")
        m = median(r)
        if m <= 0.0:
            raise ValueError("round medians must be positive for a log-ratio")
        logs.append(math.log(m))
    return math.exp(math.fsum(logs) / len(logs))


def moderated_t(
    d: Sequence[float], prior_var: float = 0.0, prior_df: float = 0.0
) -> tuple[float, float, float, float]:
    """Moderated one-sample t test of ``mean(d) == 0`` (two-sided).

    ``s~^2 = (d0 s0^2 + (R-1) s^2) / (d0 + R - 1)`` with ``t = mean / sqrt(s~^2 / R)`` on
    ``d0 + R - 1`` degrees of freedom. With ``prior_df`` 0 this is Student's t.

    Returns:
        ``(mean, standard error, df, p)``; p is 1.0 when there is no variance estimate
        (one round and no prior) or no spread at all.
    """
    x = np.asarray(d, dtype=float)
    r = x.size
    if r == 0:
        raise ValueError("need at least one round")
    mean = float(x.mean())
    own_df = r - 1
    s2 = float(x.var(ddof=1)) if r > 1 else 0.0
    df = prior_df + own_df
    if df <= 0:
        return mean, math.inf, 0.0, 1.0
    var = (prior_df * prior_var + own_df * s2) / df
    if var <= 0.0:
        return mean, 0.0, df, 1.0 if mean == 0.0 else 0.0
    se = math.sqrt(var / r)
    p = float(2.0 * _sps.t.sf(abs(mean) / se, df))
    return mean, se, df, p


@functools.lru_cache(maxsize=4096)
def t_quantile(q: float, df: float) -> float:
    """Student's t quantile (the normal one for df beyond :data:`MAX_PRIOR_DF`); cached:
    every series of a comparison asks for the same few (scipy's ``ppf`` costs ~0.2 ms)."""
    return float(_sps.norm.ppf(q) if df >= MAX_PRIOR_DF else _sps.t.ppf(q, df))


def same_level_log_ratios(
    values: Sequence[float], breaks: Sequence[int] = ()
) -> np.ndarray | None:
    """``log(v[i] / v[i-1])`` for consecutive values, without the pairs that straddle a
    change point (``breaks`` = indices of the first point of a new level); None for fewer
    than 3 values or a value that is not finite and positive."""
    v = np.asarray(values, dtype=float)
    if v.size < 3 or np.any(~np.isfinite(v)) or np.any(v <= 0.0):
        return None
    lr = np.diff(np.log(v))
    keep = np.ones(lr.size, dtype=bool)
    for b in breaks:
        if 1 <= b <= lr.size:
            keep[b - 1] = False
    return lr[keep]


def noise_floor(values: Sequence[float], breaks: Sequence[int] = ()) -> tuple[float, int] | None:
    """Between-run noise floor of a series from its values in commit order.

    The floor is a robust sd of the log-ratio between consecutive commits' values
    (``1.4826 * median(|log(v[i] / v[i-1])|)``, centred at zero: on main most commits
    change nothing), skipping pairs that straddle a change point (``breaks`` = indices of
    the first point of a new level). It is the spread of "same code, another run", the
    same quantity as the spread of a single-run PR comparison's log-ratio under no change.

    Returns:
        ``(floor, pairs used)``; None with fewer than 2 usable pairs or non-positive values.
    """
    lr = same_level_log_ratios(values, breaks)
    if lr is None or lr.size < 2:
        return None
    floor = MAD_K * float(np.median(np.abs(lr)))
    if floor == 0.0:
        # Quantised timings (a 1.50 µs op that reads 1.50 in most runs and 1.54 in one)
        # give a MAD of 0: the rare jumps are the noise then, so take their RMS.
        floor = float(np.sqrt(np.mean(lr**2)))
    return max(floor, MIN_FLOOR), int(lr.size)


def floor_k(alpha: float, m: int, df: float | None = None) -> float:
    """How many floors a single-run change must exceed: the ``1 - alpha / (2 m)`` quantile.

    Under no change a single-run comparison's log-ratio is about normal with sd = floor;
    requiring ``|log-ratio| > k floor`` on each of ``m`` series keeps the chance of any
    false alarm in the comparison at or below ``alpha`` (Bonferroni; conservative when the
    series' run offsets are correlated). The floor is itself estimated, from ``df``
    degrees of freedom, so the quantile is Student's t on ``df`` (a prediction interval);
    normal when ``df`` is None. ``alpha`` 0.01, 58 series: k = 3.8 (normal), 4.6 (df 22,
    60 commits of history).
    """
    q = 1.0 - alpha / (2.0 * max(1, m))
    return t_quantile(q, MAX_PRIOR_DF if df is None else max(df, 1.0))
