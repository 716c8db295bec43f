"""Device-health canary: readings from a real kernel (judged by analyse/health)."""

from __future__ import annotations

import itertools

import pytest

from neuronasv.errors import UsageError
from neuronasv.measure.backends import get_backend
from neuronasv.measure.canary import CANARY_KERNELS, CanaryRun

NAME = CANARY_KERNELS["cpu"].name("cpu")


def test_canary_run_times_the_real_kernel_on_the_cpu() -> None:
    backend = get_backend("cpu")
    run = CanaryRun(backend, repeats=3)
    with pytest.raises(UsageError, match="before start"):
        run.finish()
    run.start()
    got = run.finish()
    assert got.name == NAME
    assert len(got.start_us) == len(got.end_us) == 3
    assert all(t > 0 for t in (*got.start_us, *got.end_us))
    # An injected clock makes the timing itself deterministic.
    ticks = itertools.count()
    fixed = CanaryRun(backend, repeats=2, clock=lambda: next(ticks) * 0.001)
    fixed.start()
    assert fixed.finish().start_us == pytest.approx((1000.0, 1000.0))
