"""The chunk labeller's sort-free unique (publish/output.py) against numpy's."""

from __future__ import annotations

import numpy as np
import pytest

from neuronasv.publish.output import _unique_small


@pytest.mark.parametrize("seed", range(20))
def test_unique_small_is_numpys_unique(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 5000))
    a = rng.integers(0, n, int(rng.integers(0, 4000)))
    want = np.unique(a, return_index=True, return_inverse=True)
    got = _unique_small(a, n)
    for w, g in zip(want, got, strict=True):
        np.testing.assert_array_equal(w.ravel(), g)
