"""The one home of sample statistics (median, quantiles, IQR/median, the noise limit)."""

from __future__ import annotations

import math
import statistics
import sys

import numpy as np
import pytest

from neuronasv import samples


@pytest.mark.parametrize(
    "values",
    [[3.0], [2.0, 1.0], [5.0, 1.0, 4.0], [0.1, 0.7, 0.2, 0.9], list(np.linspace(1, 2, 17))],
)
def test_median_and_quantiles_agree_with_numpy_and_the_stdlib(values: list[float]) -> None:
    assert samples.median(values) == statistics.median(values)
    assert samples.median(values) == pytest.approx(float(np.median(values)), rel=1e-15)
    s = sorted(values)
    for q in (0.0, 0.25, 0.5, 0.75, 1.0):
        assert samples.quantile(s, q) == pytest.approx(float(np.quantile(s, q)), rel=1e-12)


def test_noise_is_iqr_over_median() -> None:
    assert samples.noise([1.0, 2.0, 3.0, 4.0, 5.0]) == pytest.approx(2.0 / 3.0)
    values = [10.0, 10.5, 11.0, 9.0, 10.2, 30.0]
    q75, q25 = np.quantile(values, [0.75, 0.25])
    assert samples.noise(values) == pytest.approx((q75 - q25) / np.median(values))
    assert samples.noise([5.0]) is None  # one sample: no spread to speak of
    assert samples.noise([0.0, 0.0, 0.0]) is None  # zero median: no ratio
    assert samples.noise(iter([1.0, 1.0])) == 0.0  # any iterable


def test_empty_input_is_refused() -> None:
    with pytest.raises(ValueError, match="empty"):
        samples.median([])
    with pytest.raises(ValueError, match="empty"):
        samples.quantile([], 0.5)


def test_the_noise_threshold_is_ten_percent_and_used_by_every_stage() -> None:
    assert samples.NOISE_THRESHOLD == 0.10
    from neuronasv.analyse import pairwise
    from neuronasv.measure import profiling
    from neuronasv.publish import pages

    for module in (pairwise, profiling, pages):
        assert module.NOISE_THRESHOLD is samples.NOISE_THRESHOLD  # type: ignore[attr-defined]
    assert pairwise.Settings().to_json()["noise_warn"] == samples.NOISE_THRESHOLD


def test_it_needs_nothing_but_the_standard_library() -> None:
    import subprocess

    code = (
        "import sys; import neuronasv.samples as s; s.noise([1.0, 2.0]);"
        "bad = {'numpy', 'scipy', 'torch'} & set(sys.modules); assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    assert not math.isnan(samples.median([1.0, 2.0]))
