"""Device state around a canary reading: what explains a slow device.

Recorded by :class:`~neuronasv.measure.canary.CanaryRun` at the start and the end of each
reading (``start.*`` / ``end.*`` keys of ``CanaryReading.device_state``) and named in the
"verdicts withheld" reason (:mod:`neuronasv.analyse.health`).

* **CUDA**: NVML through ``nvidia-ml-py`` (module ``pynvml``), imported lazily and
  optional: SM and memory clocks with their maxima, the clock-event (throttle) reasons
  decoded to names, performance state, temperature, power draw and limit, volatile ECC
  error counts. Without the package the state says ``nvml: not installed`` and nothing
  else fails. Each query that the GPU does not support is left out.
* **CPU**: the 1-minute load average and the current frequency of CPU 0 (``/proc`` and
  ``/sys``), which on a shared runner explain most slow runs.
* **Neuron**: nothing queried per reading (neuron-monitor is a daemon, not a query); the
  device profile of the cycles just measured carries the throttle fields and the tool and
  trace versions, which the canary adds to its end state as ``end.neuron.<field>``
  (``Backend.measured_state``, :mod:`neuronasv.measure.neuron_capture`); the runtime and
  driver versions are in the fingerprint.

Values are strings; keys absent when unknown. Unverified on a GPU from this repository's
CI: the NVML calls are tested against a stand-in ``pynvml`` module.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from neuronasv import env
from neuronasv.measure.backends import backend_class
from neuronasv.model.sidecar import MachineReading

__all__ = [
    "THROTTLE_REASONS",
    "collect_device_state",
    "cpu_state",
    "host_reading",
    "nvml_state",
]

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


def cpu_state(root: str = "/") -> dict[str, str]:
    """Load average and CPU 0's current frequency (absent keys when unreadable)."""
    out: dict[str, str] = {}
    with contextlib.suppress(OSError, IndexError):
        out["loadavg_1m"] = Path(root, "proc/loadavg").read_text().split()[0]
    try:
        khz = int(Path(root, "sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq").read_text())
        out["cpu0_mhz"] = str(khz // 1000)
    except (OSError, ValueError):
        pass
    return out


def collect_device_state(
    backend_name: str,
    *,
    importer: Importer = importlib.import_module,
    cuda_device: int | None = None,
) -> dict[str, str]:
    """The state worth recording for ``backend_name`` (``cpu``, ``cuda``, ``neuron``)."""
    if env.NO_DEVICE_STATE.read():
        return {}
    cls = backend_class(backend_name)
    source = cls.device_state_source if cls else ""
    if source == "nvml":
        return nvml_state(importer=importer, pci_bus_id=_cuda_pci_bus_id(cuda_device))
    if source == "host":
        return cpu_state()
    return {}


def _cpu_clocks(root: str) -> list[float]:
    """Every CPU's current clock in MHz: cpufreq where the kernel has it, else the ``cpu
    MHz`` lines of ``/proc/cpuinfo`` (a VM often has only those); empty when neither."""
    out: list[float] = []
    cpus = Path(root, "sys/devices/system/cpu")
    for f in sorted(cpus.glob("cpu[0-9]*/cpufreq/scaling_cur_freq")):
        with contextlib.suppress(OSError, ValueError):
            out.append(int(f.read_text()) / 1000.0)
    if out:
        return out
    with contextlib.suppress(OSError):
        for line in Path(root, "proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "cpu MHz":
                with contextlib.suppress(ValueError):
                    out.append(float(value))
    return out


def host_reading(root: str = "/") -> MachineReading:
    """The host now: load averages, the CPUs' mean clock and the CPU count, each None (0)
    when unreadable; never raises (it explains a run, it must not fail one).

    ``neuronasv run`` records one before each commit's pre-pass and one after its asv
    run (``RunSidecar.state``), on every backend: a shared runner's load explains a run
    whose every series moved together (:mod:`neuronasv.analyse.runnershift`)."""
    loads: list[float | None] = [None, None, None]
    with contextlib.suppress(OSError, ValueError, IndexError):
        fields = Path(root, "proc/loadavg").read_text().split()
        loads = [float(x) for x in fields[:3]]
    clocks = [c for c in _cpu_clocks(root) if c > 0]
    cpus = 0
    with contextlib.suppress(OSError, ValueError):
        online = Path(root, "sys/devices/system/cpu/online").read_text().strip()
        for part in online.split(","):
            lo, _, hi = part.partition("-")
            cpus += int(hi or lo) - int(lo) + 1
    return MachineReading(
        load_1m=loads[0],
        load_5m=loads[1],
        load_15m=loads[2],
        cpu_mhz=sum(clocks) / len(clocks) if clocks else None,
        cpus=cpus,
    )
