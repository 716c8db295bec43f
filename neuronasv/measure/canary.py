"""Device-health canary: a fixed reference kernel timed at the start and end of a run.

A benchmark slowdown means "the code got slower" only if the device ran as fast as it
usually does. The canary is a fixed kernel — one square matmul (compute) and one large
copy (memory bandwidth), sizes fixed per backend, inputs fixed — whose time depends on the
device and not on the code under test. It is timed a few times before a workload runs and
again after (:class:`CanaryRun`), giving a :class:`~neuronasv.model.CanaryReading`.

The readings are judged by :mod:`neuronasv.analyse.health` (per run, against the machine's
other runs, with a threshold designed against measured noise; it withholds a comparison's
verdicts and says why).

Each backend names its kernel (``Backend.canary_kernel``, in its own file of
:mod:`neuronasv.measure.backends`). Each reading also carries the device state around it
(``Backend.device_state``, through :func:`neuronasv.measure.device_state.collect_device_state`):
clocks, throttle reasons, ECC via NVML on CUDA, the load on the CPU.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from neuronasv.errors import UsageError
from neuronasv.model.profile import CanaryReading
from neuronasv.units import US

__all__ = [
    "CanaryKernel",
    "CanaryRun",
    "build_canary",
    "time_canary",
]


@dataclass(frozen=True)
class CanaryKernel:
    """The reference kernel for one backend.

    Attributes:
        matmul_n: size of the square matmul (``n x n @ n x n``).
        copy_mib: MiB copied device-to-device per call (read + write = 2x this).
        dtype: dtype of both.
    """

    matmul_n: int
    copy_mib: int
    dtype: str

    def name(self, backend: str) -> str:
        """Stable identity: readings of different kernels are never compared."""
        return f"canary.{backend}.mm{self.matmul_n}-{self.dtype}+copy{self.copy_mib}MiB"


class Backend(Protocol):
    """What the canary asks of a backend (``neuronasv.measure.backends.Backend``, whose
    classes name their :class:`CanaryKernel`)."""

    name: str
    device: str

    @property
    def canary_kernel(self) -> CanaryKernel | None: ...

    def synchronize(self) -> None: ...

    def device_state(self) -> dict[str, str]: ...

    def measured_state(self) -> dict[str, str]: ...


def _kernel_for(backend: Backend) -> CanaryKernel:
    """The backend's kernel, each sized so one call takes ~1-10 ms: long enough to time
    with a wall clock after a synchronise, short enough that 2 x 5 calls per workload cost
    well under a second."""
    if backend.canary_kernel is None:
        raise UsageError(f"no canary kernel for backend {backend.name!r}")
    return backend.canary_kernel


def build_canary(backend: Backend) -> tuple[str, Callable[[], object]]:
    """``(name, step)``: the backend's canary kernel with fixed inputs on its device."""
    import torch

    kernel = _kernel_for(backend)
    dtype = getattr(torch, kernel.dtype)
    gen = torch.Generator(device="cpu").manual_seed(1234)
    n = kernel.matmul_n
    a = torch.randn(n, n, generator=gen).to(dtype).to(backend.device)
    b = torch.randn(n, n, generator=gen).to(dtype).to(backend.device)
    elems = kernel.copy_mib * 2**20 // torch.empty((), dtype=dtype).element_size()
    src = torch.ones(elems, dtype=dtype).to(backend.device)
    dst = torch.empty_like(src)

    def step() -> object:
        c = torch.mm(a, b)
        dst.copy_(src)
        return c

    return kernel.name(backend.name), step


def time_canary(
    backend: Backend,
    *,
    repeats: int = 5,
    warmup: int = 2,
    clock: Callable[[], float] = time.perf_counter,
    step: Callable[[], object] | None = None,
) -> tuple[float, ...]:
    """Wall-clock µs of ``repeats`` canary calls, each bracketed by device synchronisation."""
    if repeats < 1:
        raise UsageError(f"canary repeats must be at least 1, got {repeats}")
    if step is None:
        _, step = build_canary(backend)
    for _ in range(warmup):
        step()
    backend.synchronize()
    out: list[float] = []
    for _ in range(repeats):
        t0 = clock()
        step()
        backend.synchronize()
        out.append((clock() - t0) / US)
    return tuple(out)


class CanaryRun:
    """Time the canary at the start and end of a run.

    Usage::

        run = CanaryRun(backend)
        run.start()
        ...  # the workload
        reading = run.finish()
    """

    def __init__(
        self,
        backend: Backend,
        *,
        repeats: int = 5,
        clock: Callable[[], float] = time.perf_counter,
        state: Callable[[Backend], dict[str, str]] | None = None,
    ) -> None:
        self.backend = backend
        self.repeats = repeats
        self.clock = clock
        self.name, self._step = build_canary(backend)
        self._start: tuple[float, ...] | None = None
        if state is None:
            from neuronasv.measure.device_state import collect_device_state

            state = collect_device_state
        self._state_fn = state
        self._state: dict[str, str] = {}

    def _record_state(self, when: str) -> None:
        try:
            got = self._state_fn(self.backend)
        except Exception as exc:  # the state explains; it must never fail a measurement
            got = {"error": f"{type(exc).__name__}: {exc}"}
        self._state.update({f"{when}.{k}": str(v) for k, v in got.items()})

    def start(self) -> None:
        self._record_state("start")
        self._start = time_canary(
            self.backend, repeats=self.repeats, clock=self.clock, step=self._step
        )

    def finish(self) -> CanaryReading:
        if self._start is None:
            raise UsageError("CanaryRun.finish() called before start()")
        end = time_canary(
            self.backend, repeats=self.repeats, warmup=0, clock=self.clock, step=self._step
        )
        self._record_state("end")
        try:  # what the backend read from its own captures (Neuron: throttle, versions)
            measured = self.backend.measured_state()
        except Exception as exc:  # the state explains; it must never fail a measurement
            measured = {"measured_state_error": f"{type(exc).__name__}: {exc}"}
        self._state.update({f"end.{k}": str(v) for k, v in measured.items()})
        return CanaryReading(
            name=self.name, start_us=self._start, end_us=end, device_state=dict(self._state)
        )
