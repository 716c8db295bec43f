"""The CPU backend: the CPU is the device, so "device time" is the ops' self CPU time."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from neuronasv import env
from neuronasv.measure.backends.base import Backend, Runner
from neuronasv.measure.canary import CanaryKernel
from neuronasv.measure.device_state import cpu_state
from neuronasv.metrics import names as metric_names

if TYPE_CHECKING:
    from torch.profiler import ProfilerActivity

    from neuronasv.measure.peaks import Peak

__all__ = ["CPU_THREADS_ENV", "CpuBackend", "cpu_threads"]

CPU_THREADS_ENV = env.CPU_THREADS.name


def cpu_threads() -> int:
    """Intra-op threads for CPU measurements: ``$NEURONASV_CPU_THREADS``, default 1.

    One thread by default because on a shared or small runner torch's default (one thread
    per core) oversubscribes: measured here on 2 busy cores, the transformer block took
    289 ms per iteration with 2 threads against 18.6 ms with one, and the compiled RMSNorm
    13-50 ms against 0.12 ms. Both would be noise, not signal.
    """
    return env.CPU_THREADS.read()


class CpuBackend(Backend):
    """Runs workloads on the host CPU; device time = self CPU time of each op."""

    name = "cpu"
    device = "cpu"
    device_time_is_cpu = True
    min_warmup = 3
    roof_is_calibrated = True
    accelerator = False
    #: The host is the device: every metric, the host-only ones too.
    counts = frozenset(metric_names())
    default_samples = 10
    device_time_note = "device time = CPU self time"
    #: Last for ``auto``: always available.
    auto_order = 90
    #: Sized so one call takes ~1-10 ms (:mod:`neuronasv.measure.canary`).
    canary_kernel = CanaryKernel(matmul_n=256, copy_mib=16, dtype="float32")

    @classmethod
    def detected_without_torch(cls) -> bool:
        return True

    def fingerprint_fields(self, common: Mapping[str, str], *, run: Runner) -> dict[str, str]:
        """The CPU is the device: its model is the device model."""
        return {"device_model": common["cpu_model"]}

    def device_state(self) -> dict[str, str]:
        """The host's load and CPU 0's clock (:func:`~neuronasv.measure.device_state.cpu_state`):
        on a shared runner they explain most slow runs."""
        return cpu_state()

    def compile_skip_reason(self) -> str | None:
        """Inductor needs a C++ compiler on the CPU."""
        cxx = os.environ.get("CXX") or "g++"
        if shutil.which(cxx) is None and shutil.which("c++") is None:
            return f"torch.compile on the CPU needs a C++ compiler ({cxx} not found on PATH)"
        return None

    def activities(self) -> list[ProfilerActivity]:
        from torch.profiler import ProfilerActivity

        return [ProfilerActivity.CPU]

    def synchronize(self) -> None:
        # CPU ops are synchronous: nothing is queued.
        return None

    @contextlib.contextmanager
    def measuring(self) -> Iterator[None]:
        import torch

        before = torch.get_num_threads()
        torch.set_num_threads(cpu_threads())
        try:
            yield
        finally:
            torch.set_num_threads(before)

    def roof(
        self, fingerprint: Mapping[str, str], *, env: Mapping[str, str], calibration: Peak | None
    ) -> Peak | None:
        """The machine's calibration (``calibration``, else the file ``NEURONASV_PEAK_FILE``
        names: ``neuronasv run`` points it at the machine's record), never a measurement of
        its own; None without one, or when it was measured with other threads than the
        suite's (``NEURONASV_CPU_THREADS``): a 1-thread roof is no 2-thread roof."""
        from neuronasv.env import CPU_THREADS, PEAK_FILE
        from neuronasv.measure.calibration import read_calibration

        if calibration is None:
            path = PEAK_FILE.read(env)
            calibration = read_calibration(path) if path else None
        if calibration is None or calibration.threads != CPU_THREADS.read(env):
            return None
        return calibration

    def describe(self) -> dict[str, str]:
        import torch

        return {
            "backend": self.name,
            "torch": torch.__version__,
            "threads": str(cpu_threads()),
        }

    def is_available(self) -> bool:
        return True
