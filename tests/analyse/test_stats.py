"""Sample cap and bounded-memory bootstrap (pure, seeded)."""

from __future__ import annotations

import numpy as np

from neuronasv.analyse import stats


def test_bootstrap_in_blocks_draws_exactly_as_one_block(monkeypatch) -> None:
    """The blocked bootstrap (bounded memory) gives the CI the one-block draw gave."""
    rng = np.random.default_rng(7)
    base, head = rng.lognormal(0, 0.1, 57), rng.lognormal(0.05, 0.1, 41)
    whole = stats.bootstrap_ratio_ci(base, head, seed=11)
    monkeypatch.setattr(stats, "BOOTSTRAP_BLOCK", 57 * 3 + 5)  # blocks of 3 and of 4 rows
    assert stats.bootstrap_ratio_ci(base, head, seed=11) == whole


def test_samples_beyond_the_cap_are_evenly_spaced_order_statistics() -> None:
    values = list(range(1, 100_002))[::-1]  # 100,001 values, reversed
    got = stats.capped(values, cap=1001)
    assert len(got) == 1001 and got[0] == 1 and got[-1] == 100_001
    assert got[500] == 50_001  # the median survives
    assert list(got) == sorted(got)
    assert stats.capped([3.0, 1.0], cap=5) == (3.0, 1.0)  # under the cap: untouched


def _reference_ci(base: np.ndarray, head: np.ndarray, seed: int) -> tuple[float, float]:
    """The former one-block bootstrap with ``np.median``, verbatim."""
    rng = np.random.default_rng(seed)
    ma = np.median(base[rng.integers(0, base.size, size=(2000, base.size))], axis=1)
    mb = np.median(head[rng.integers(0, head.size, size=(2000, head.size))], axis=1)
    tail = (1.0 - 0.95) / 2.0 * 100.0
    lo, hi = np.percentile(mb / ma, [tail, 100.0 - tail])
    return float(lo), float(hi)


def test_bootstrap_is_the_former_np_median_bootstrap_bit_for_bit() -> None:
    rng = np.random.default_rng(5)
    for na, nb in [(10, 10), (7, 12), (1, 3), (50, 49)]:
        base, head = rng.lognormal(0, 0.1, na), rng.lognormal(0.02, 0.1, nb)
        assert stats.bootstrap_ratio_ci(base, head, seed=na) == _reference_ci(base, head, na)
