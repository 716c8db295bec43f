"""What the asv plugin stores of a profile is the one profile → series mapping (issue 28).

The suite's payload (``suite/feed.py``, once ``store/suite.py``) had its own copy of the
mapping (the last of a repeated op name won, while confirm and ``compare --round-*`` read
the first from profile documents).
"""

from __future__ import annotations

import pytest

from neuronasv.analyse.profile_samples import profile_samples
from neuronasv.model import ProfileDocument
from neuronasv.model.profile import ModuleProfile
from neuronasv.suite.feed import series_payload
from tests.builders import op, profile


def test_the_stored_series_are_the_series_confirm_reads_back() -> None:
    prof = profile(
        "rmsnorm.naive",
        op("aten::mul", 2.0, 4.0),
        op("aten::add", 1.0, 1.0),
        op("aten::mul", 9.0, 9.0),  # a repeated name: the first is the series
        times=(10.0, 12.0),
        modules=(
            ModuleProfile("", (10.0, 12.0), (0.0, 0.0)),  # the root is the total
            ModuleProfile("block.mlp", (6.0, 8.0), (3.0, 5.0)),
        ),
    )
    payload = series_payload(prof)
    assert payload["total"] == pytest.approx([10e-6, 12e-6])
    assert payload["ops"] == {
        "aten::mul": pytest.approx([2e-6, 4e-6]),
        "aten::add": pytest.approx([1e-6, 1e-6]),
        "module:block.mlp": pytest.approx([6e-6, 8e-6]),
    }
    # ... exactly what the analysis reads back from the same profile's document
    doc = ProfileDocument(backend="cpu", workloads=(prof,))
    read = {k[3]: v for k, v in profile_samples(doc).items()}
    assert read.pop(None) == payload["total"]
    assert read == payload["ops"]
