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
