"""Device-health canary: readings from a real kernel (judged by analyse/health)."""

from __future__ import annotations

import itertools

import pytest

from neuronasv.errors import UsageError
from neuronasv.measure.backends import get_backend
from neuronasv.measure.backends.cpu import CpuBackend
from neuronasv.measure.canary import CanaryRun

NAME = "canary.cpu.mm256-float32+copy16MiB"


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


@pytest.mark.parametrize(
    ("backend", "kernel"),
    [
        ("cpu", NAME),
        ("cuda", "canary.cuda.mm4096-bfloat16+copy512MiB"),
        ("neuron", "canary.neuron.mm2048-bfloat16+copy256MiB"),
    ],
)
def test_each_backend_keeps_its_kernel(backend: str, kernel: str) -> None:
    """The kernel is the backend's (its file); readings of different kernels are never
    compared, so a kernel's name is stored data and must not change by moving it."""
    from neuronasv.measure.backends import backend_class

    cls = backend_class(backend)
    assert cls is not None and cls.canary_kernel is not None
    assert cls.canary_kernel.name(backend) == kernel


def test_a_backend_without_a_kernel_has_no_canary() -> None:
    class Kernelless(CpuBackend):
        canary_kernel = None

    with pytest.raises(UsageError, match="no canary kernel for backend 'cpu'"):
        CanaryRun(Kernelless())
