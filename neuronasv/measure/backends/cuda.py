"""The CUDA backend: CPU + CUDA activities, device time from the CUDA kernels (CUPTI)."""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from typing import TYPE_CHECKING

from neuronasv.measure.backends.base import Backend
from neuronasv.measure.peaks import PEAKS, Peak

if TYPE_CHECKING:
    from torch.profiler import ProfilerActivity

__all__ = ["CudaBackend", "cuda_peak_key"]


def cuda_peak_key(device_model: str) -> str | None:
    """The datasheet entry (:data:`~neuronasv.measure.peaks.PEAKS`) of a device model:
    ``NVIDIA H100 80GB HBM3`` → ``h100-sxm``, ``... PCIe``, ``... NVL``, ``NVIDIA H200`` →
    ``h200-sxm``; None for a GPU the table lacks."""
    model = device_model.upper()
    for gpu in ("H200", "H100"):
        if gpu in model:
            if "NVL" in model:
                return f"{gpu.lower()}-nvl"
            if "PCIE" in model:
                return f"{gpu.lower()}-pcie" if gpu == "H100" else "h200-nvl"
            return f"{gpu.lower()}-sxm"
    return None


class CudaBackend(Backend):
    """Runs workloads on ``cuda`` (device 0 unless ``index`` says otherwise)."""

    name = "cuda"
    device_time_is_cpu = False
    min_warmup = 5
    device_state_source = "nvml"

    def compile_skip_reason(self) -> str | None:
        """Inductor needs Triton on CUDA."""
        if importlib.util.find_spec("triton") is None:
            return "torch.compile on CUDA needs triton (pip install triton)"
        return None

    def __init__(self, index: int = 0) -> None:
        self.index = index
        self.device = f"cuda:{index}" if index else "cuda"

    def activities(self) -> list[ProfilerActivity]:
        from torch.profiler import ProfilerActivity

        return [ProfilerActivity.CPU, ProfilerActivity.CUDA]

    def synchronize(self) -> None:
        import torch

        torch.cuda.synchronize(self.index)

    def roof(
        self, fingerprint: Mapping[str, str], *, env: Mapping[str, str], calibration: Peak | None
    ) -> Peak | None:
        """The datasheet's roof of the fingerprint's ``device_model`` (None: not in it)."""
        key = cuda_peak_key(fingerprint.get("device_model", ""))
        return PEAKS[key] if key else None

    def describe(self) -> dict[str, str]:
        import torch

        info = {
            "backend": self.name,
            "torch": torch.__version__,
            "cuda": str(torch.version.cuda or "none"),
        }
        if self.is_available():
            info["device_model"] = torch.cuda.get_device_name(self.index)
            cap = torch.cuda.get_device_capability(self.index)
            info["capability"] = f"{cap[0]}.{cap[1]}"
        return info

    def is_available(self) -> bool:
        import torch

        try:
            return bool(torch.cuda.is_available()) and torch.cuda.device_count() > self.index
        except Exception:  # a broken driver must read as "unavailable", not crash doctor
            return False

    def unavailable_reason(self) -> str | None:
        if self.is_available():
            return None
        import torch

        if not torch.version.cuda:
            return f"this torch build ({torch.__version__}) has no CUDA support"
        return "torch has CUDA support but finds no usable GPU (driver or device missing)"

    def install_hint(self) -> str | None:
        if self.is_available():
            return None
        import torch

        if not torch.version.cuda:
            return (
                "install a CUDA build of torch on a machine with an NVIDIA GPU, e.g."
                " `pip install torch` on Linux x86_64 (the default wheel is a CUDA build)"
                " or a wheel from https://download.pytorch.org/whl/cu126"
            )
        return "check `nvidia-smi`; the NVIDIA driver must be installed and a GPU visible"
