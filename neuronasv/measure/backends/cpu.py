"""The CPU backend: the CPU is the device, so "device time" is the ops' self CPU time."""

from __future__ import annotations

from typing import TYPE_CHECKING

from neuronasv.measure.backends.base import Backend

if TYPE_CHECKING:
    from torch.profiler import ProfilerActivity

__all__ = ["CpuBackend"]


class CpuBackend(Backend):
    """Runs workloads on the host CPU; device time = self CPU time of each op."""

    name = "cpu"
    device = "cpu"
    device_time_is_cpu = True
    min_warmup = 3

    def activities(self) -> list[ProfilerActivity]:
        from torch.profiler import ProfilerActivity

        return [ProfilerActivity.CPU]

    def synchronize(self) -> None:
        # CPU ops are synchronous: nothing is queued.
        return None

    def describe(self) -> dict[str, str]:
        import torch

        return {
            "backend": self.name,
            "torch": torch.__version__,
            "threads": str(torch.get_num_threads()),
        }

    def is_available(self) -> bool:
        return True
