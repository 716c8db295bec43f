"""The CUDA backend: CPU + CUDA activities, device time from the CUDA kernels (CUPTI).

Everything CUDA-specific is here: the datasheet roofs of the GPUs the table knows and the
key a device model maps to, the canary's kernel, the fingerprint's driver probe, the
device state through NVML, and how the device looks present without importing torch.

Device state (around each canary reading): NVML through ``nvidia-ml-py`` (module
``pynvml``), imported lazily and optional: SM and memory clocks with their maxima, the
clock-event (throttle) reasons decoded to names, performance state, temperature, power
draw and limit, volatile ECC error counts. Without the package the state says ``nvml: not
installed`` and nothing else fails; each query the GPU does not support is left out.
Unverified on a GPU from this repository's CI: the NVML calls are tested against a
stand-in ``pynvml`` module.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.util
import os
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any

from neuronasv.measure.backends.base import Backend, Runner
from neuronasv.measure.canary import CanaryKernel
from neuronasv.measure.peaks import Peak, published_peak

if TYPE_CHECKING:
    from torch.profiler import ProfilerActivity

__all__ = ["DATASHEET", "THROTTLE_REASONS", "CudaBackend", "cuda_peak_key", "nvml_state"]

_H100_SRC = (
    "NVIDIA H100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h100/): "
    "BF16 tensor TFLOPS listed with sparsity, halved here for dense; FP32 is the non-tensor "
    "figure (PyTorch keeps TF32 matmul off by default)"
)
_H200_SRC = (
    "NVIDIA H200 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h200/): "
    "4.8 TB/s HBM3e; BF16 tensor TFLOPS listed with sparsity, halved here for dense"
)

#: Whole-GPU published peaks (dense), keyed by short name.
DATASHEET: dict[str, Peak] = {
    # SXM5: 3.35 TB/s, 1,979 BF16 sparse -> 989.5 dense, 67 FP32.
    "h100-sxm": published_peak("h100-sxm", 3350, 989.5, 67, _H100_SRC),
    # PCIe: 2.0 TB/s, 1,513 BF16 sparse -> 756.5 dense, 51 FP32.
    "h100-pcie": published_peak("h100-pcie", 2000, 756.5, 51, _H100_SRC),
    # NVL: 3.9 TB/s, 1,671 BF16 sparse -> 835.5 dense, 60 FP32.
    "h100-nvl": published_peak("h100-nvl", 3900, 835.5, 60, _H100_SRC),
    # H200 SXM: same GH100 compute as H100 SXM, 4.8 TB/s.
    "h200-sxm": published_peak("h200-sxm", 4800, 989.5, 67, _H200_SRC),
    # H200 NVL: 4.8 TB/s, 1,671 BF16 sparse -> 835.5 dense, 60 FP32.
    "h200-nvl": published_peak("h200-nvl", 4800, 835.5, 60, _H200_SRC),
}


def cuda_peak_key(device_model: str) -> str | None:
    """The datasheet entry (:data:`DATASHEET`) of a device model:
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


#: NVML clock-event reason bits (nvml.h ``nvmlClocksEventReason*``; same values as the
#: older ``nvmlClocksThrottleReason*``), named as nvidia-smi names them.
THROTTLE_REASONS: tuple[tuple[int, str], ...] = (
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clock_setting"),
)

Importer = Callable[[str], ModuleType]


def _decode_reasons(mask: int) -> str:
    names = [name for bit, name in THROTTLE_REASONS if mask & bit]
    rest = mask & ~sum(bit for bit, _ in THROTTLE_REASONS)
    if rest:
        names.append(f"0x{rest:x}")
    return ",".join(names) or "none"


def _cuda_pci_bus_id(device_index: int | None) -> str | None:
    """The NVML PCI bus id of the current CUDA device (CUDA_VISIBLE_DEVICES-proof)."""
    try:
        import torch

        idx = torch.cuda.current_device() if device_index is None else device_index
        props = torch.cuda.get_device_properties(idx)
        bus = getattr(props, "pci_bus_id", None)
        dev = getattr(props, "pci_device_id", None)
        dom = getattr(props, "pci_domain_id", 0)
        if bus is None or dev is None:
            return None
        return f"{int(dom):08X}:{int(bus):02X}:{int(dev):02X}.0"
    except Exception:
        return None


def nvml_state(
    *,
    importer: Importer = importlib.import_module,
    pci_bus_id: str | None = None,
    index: int = 0,
) -> dict[str, str]:
    """Clocks, throttle reasons, temperature, power and ECC of one GPU via NVML.

    Args:
        importer: imports ``pynvml`` (injected in tests).
        pci_bus_id: the GPU's PCI bus id (preferred: indices differ under
            ``CUDA_VISIBLE_DEVICES``); else ``index``.
        index: NVML device index when the bus id is unknown.
    """
    try:
        nv = importer("pynvml")
    except ImportError:
        return {"nvml": "not installed (pip install nvidia-ml-py)"}
    except Exception as exc:  # a broken install reads as "unavailable"
        return {"nvml": f"import failed: {type(exc).__name__}"}
    try:
        nv.nvmlInit()
    except Exception as exc:
        return {"nvml": f"init failed: {exc}"}
    out: dict[str, str] = {"nvml": "ok"}
    try:
        if pci_bus_id:
            handle = nv.nvmlDeviceGetHandleByPciBusId(pci_bus_id)
        else:
            handle = nv.nvmlDeviceGetHandleByIndex(index)
    except Exception as exc:
        nv.nvmlShutdown()
        return {"nvml": f"no handle for the GPU: {exc}"}

    def q(key: str, fn: Callable[[], Any], fmt: Callable[[Any], str] = str) -> None:
        # NVMLError_NotSupported and friends: leave the key out.
        with contextlib.suppress(Exception):
            out[key] = fmt(fn())

    c = lambda name, default: getattr(nv, name, default)  # noqa: E731
    sm, mem = c("NVML_CLOCK_SM", 1), c("NVML_CLOCK_MEM", 2)
    q("sm_clock_mhz", lambda: nv.nvmlDeviceGetClockInfo(handle, sm))
    q("sm_clock_max_mhz", lambda: nv.nvmlDeviceGetMaxClockInfo(handle, sm))
    q("mem_clock_mhz", lambda: nv.nvmlDeviceGetClockInfo(handle, mem))
    reasons = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
        nv, "nvmlDeviceGetCurrentClocksThrottleReasons", None
    )
    if reasons is not None:
        q("throttle_reasons", lambda: reasons(handle), lambda m: _decode_reasons(int(m)))
    q("pstate", lambda: nv.nvmlDeviceGetPerformanceState(handle), lambda p: f"P{int(p)}")
    q("temperature_c", lambda: nv.nvmlDeviceGetTemperature(handle, c("NVML_TEMPERATURE_GPU", 0)))
    q("power_w", lambda: nv.nvmlDeviceGetPowerUsage(handle), lambda mw: f"{mw / 1000:.0f}")
    q(
        "power_limit_w",
        lambda: nv.nvmlDeviceGetEnforcedPowerLimit(handle),
        lambda mw: f"{mw / 1000:.0f}",
    )
    volatile = c("NVML_VOLATILE_ECC", 0)
    for key, kind in (
        ("ecc_uncorrected_volatile", c("NVML_MEMORY_ERROR_TYPE_UNCORRECTED", 1)),
        ("ecc_corrected_volatile", c("NVML_MEMORY_ERROR_TYPE_CORRECTED", 0)),
    ):
        q(key, functools.partial(nv.nvmlDeviceGetTotalEccErrors, handle, kind, volatile))
    with contextlib.suppress(Exception):
        nv.nvmlShutdown()
    return out


class CudaBackend(Backend):
    """Runs workloads on ``cuda`` (device 0 unless ``index`` says otherwise)."""

    name = "cuda"
    device = "cuda"
    device_time_is_cpu = False
    min_warmup = 5
    auto_order = 20
    canary_kernel = CanaryKernel(matmul_n=4096, copy_mib=512, dtype="bfloat16")
    datasheet = DATASHEET

    @classmethod
    def detected_without_torch(cls) -> bool:
        """An NVIDIA device node exists."""
        return os.path.exists("/dev/nvidiactl") or os.path.exists("/dev/nvidia0")

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

    @classmethod
    def roof_key(cls, fingerprint: Mapping[str, str]) -> str | None:
        """The datasheet's entry of the fingerprint's ``device_model`` (None: not in it)."""
        return cuda_peak_key(fingerprint.get("device_model", ""))

    def fingerprint_fields(self, common: Mapping[str, str], *, run: Runner) -> dict[str, str]:
        """The driver (``nvidia-smi``) and the GPU's name."""
        query = ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]
        return {
            "driver": run(query) or "none",
            "device_model": self.describe().get("device_model", "none"),
        }

    def device_state(self, importer: Importer = importlib.import_module) -> dict[str, str]:
        """This GPU's state through NVML (:func:`nvml_state`), found by its PCI bus id
        (device ``cuda``: the current device)."""
        return nvml_state(
            importer=importer, pci_bus_id=_cuda_pci_bus_id(self.index if self.index else None)
        )

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
