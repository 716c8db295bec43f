"""Device state recorded with the canary: NVML via a stand-in ``pynvml``, the CPU for real."""

from __future__ import annotations

import types
from typing import Any

import pytest

from neuronasv.measure.backends import get_backend
from neuronasv.measure.backends.cuda import CudaBackend, nvml_state
from neuronasv.measure.canary import CanaryRun
from neuronasv.measure.device_state import collect_device_state, cpu_state, host_reading
from neuronasv.model.sidecar import MachineReading


class NVMLError(Exception):
    pass


def _pynvml(ecc_supported: bool = True) -> types.ModuleType:
    nv = types.ModuleType("pynvml")
    calls: list[str] = []
    nv.calls = calls  # type: ignore[attr-defined]
    nv.NVML_CLOCK_SM, nv.NVML_CLOCK_MEM = 1, 2  # type: ignore[attr-defined]
    nv.nvmlInit = lambda: calls.append("init")  # type: ignore[attr-defined]
    nv.nvmlShutdown = lambda: calls.append("shutdown")  # type: ignore[attr-defined]

    def by_bus(bus: str) -> str:
        calls.append(f"bus {bus}")
        return "h"

    nv.nvmlDeviceGetHandleByPciBusId = by_bus  # type: ignore[attr-defined]
    nv.nvmlDeviceGetHandleByIndex = lambda i: "h"  # type: ignore[attr-defined]
    nv.nvmlDeviceGetClockInfo = lambda h, c: {1: 1275, 2: 3201}[c]  # type: ignore[attr-defined]
    nv.nvmlDeviceGetMaxClockInfo = lambda h, c: 1980  # type: ignore[attr-defined]
    nv.nvmlDeviceGetCurrentClocksEventReasons = lambda h: 0x40 | 0x4  # type: ignore[attr-defined]
    nv.nvmlDeviceGetPerformanceState = lambda h: 0  # type: ignore[attr-defined]
    nv.nvmlDeviceGetTemperature = lambda h, s: 87  # type: ignore[attr-defined]
    nv.nvmlDeviceGetPowerUsage = lambda h: 612_345  # type: ignore[attr-defined]
    nv.nvmlDeviceGetEnforcedPowerLimit = lambda h: 700_000  # type: ignore[attr-defined]

    def ecc(h: Any, kind: int, counter: int) -> int:
        if not ecc_supported:
            raise NVMLError("Not Supported")
        return {1: 2, 0: 17}[kind]

    nv.nvmlDeviceGetTotalEccErrors = ecc  # type: ignore[attr-defined]
    return nv


def test_nvml_state_decodes_clocks_throttle_reasons_and_ecc() -> None:
    nv = _pynvml()
    got = nvml_state(importer=lambda name: nv, pci_bus_id="00000000:65:00.0")
    assert got == {
        "nvml": "ok",
        "sm_clock_mhz": "1275",
        "sm_clock_max_mhz": "1980",
        "mem_clock_mhz": "3201",
        "throttle_reasons": "sw_power_cap,hw_thermal_slowdown",
        "pstate": "P0",
        "temperature_c": "87",
        "power_w": "612",
        "power_limit_w": "700",
        "ecc_uncorrected_volatile": "2",
        "ecc_corrected_volatile": "17",
    }
    assert nv.calls == ["init", "bus 00000000:65:00.0", "shutdown"]  # type: ignore[attr-defined]


def test_unsupported_queries_are_left_out_and_absence_is_said() -> None:
    nv = _pynvml(ecc_supported=False)
    del nv.nvmlDeviceGetCurrentClocksEventReasons  # an older nvidia-ml-py
    nv.nvmlDeviceGetCurrentClocksThrottleReasons = lambda h: 0  # type: ignore[attr-defined]
    got = nvml_state(importer=lambda name: nv)
    assert "ecc_uncorrected_volatile" not in got and got["throttle_reasons"] == "none"

    def missing(name: str) -> types.ModuleType:
        raise ImportError("No module named 'pynvml'")

    assert nvml_state(importer=missing) == {"nvml": "not installed (pip install nvidia-ml-py)"}
    broken = _pynvml()
    broken.nvmlInit = lambda: (_ for _ in ()).throw(NVMLError("Driver Not Loaded"))  # type: ignore[attr-defined]
    assert nvml_state(importer=lambda n: broken) == {"nvml": "init failed: Driver Not Loaded"}


def test_cpu_state_is_read_from_proc(tmp_path: Any) -> None:
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "loadavg").write_text("5.12 4.00 3.00 2/300 123\n")
    assert cpu_state(str(tmp_path)) == {"loadavg_1m": "5.12"}
    assert "loadavg_1m" in cpu_state()  # this machine's own /proc


def test_canary_reading_carries_start_and_end_state(monkeypatch: pytest.MonkeyPatch) -> None:
    states = iter([{"sm_clock_mhz": "1980"}, {"sm_clock_mhz": "1275", "throttle_reasons": "x"}])
    run = CanaryRun(get_backend("cpu"), repeats=1, state=lambda backend: next(states))
    run.start()
    r = run.finish()
    assert r.device_state == {
        "start.sm_clock_mhz": "1980",
        "end.sm_clock_mhz": "1275",
        "end.throttle_reasons": "x",
    }

    def boom(backend: object) -> dict[str, str]:
        raise RuntimeError("nvml exploded")

    run = CanaryRun(get_backend("cpu"), repeats=1, state=boom)
    run.start()
    assert run.finish().device_state["end.error"] == "RuntimeError: nvml exploded"
    monkeypatch.setenv("NEURONASV_NO_DEVICE_STATE", "1")
    assert collect_device_state(get_backend("cpu")) == {}


def test_host_reading_prefers_cpufreq_and_falls_back_to_cpuinfo(tmp_path: Any) -> None:
    """The machine's state beside each run (issue 39): load averages, the CPUs' mean clock
    (cpufreq where the kernel has it, else /proc/cpuinfo as in a VM), the CPU count;
    absent files leave their fields unknown, never an error."""
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "loadavg").write_text("5.12 3.50 1.25 8/126 17256\n")
    (proc / "cpuinfo").write_text("processor\t: 0\ncpu MHz\t\t: 2596.0\n\ncpu MHz\t\t: 2600.0\n")
    cpu = tmp_path / "sys" / "devices" / "system" / "cpu"
    cpu.mkdir(parents=True)
    (cpu / "online").write_text("0-1,4\n")
    got = host_reading(str(tmp_path))
    assert got == MachineReading(5.12, 3.5, 1.25, 2598.0, 3)
    for i, khz in enumerate((1_200_000, 3_000_000)):
        (cpu / f"cpu{i}" / "cpufreq").mkdir(parents=True)
        (cpu / f"cpu{i}" / "cpufreq" / "scaling_cur_freq").write_text(f"{khz}\n")
    assert host_reading(str(tmp_path)).cpu_mhz == 2100.0
    assert host_reading(str(tmp_path / "nowhere")) == MachineReading()
    here = host_reading()  # this machine's own /proc
    assert here.load_1m is not None and here.cpus >= 1


def test_each_backend_reads_its_own_state(monkeypatch: pytest.MonkeyPatch) -> None:
    """The state is the backend's (its file): CUDA's through NVML (a stand-in ``pynvml``
    here, no GPU), the CPU's from the host, Neuron's none per reading."""
    from neuronasv.measure.backends import cuda
    from neuronasv.measure.backends.neuron import NeuronBackend

    monkeypatch.delenv("NEURONASV_NO_DEVICE_STATE", raising=False)
    asked: list[int | None] = []  # torch.cuda is not touched (on a GPU it writes into HOME)
    monkeypatch.setattr(cuda, "_cuda_pci_bus_id", lambda i: asked.append(i) or "0:65:0.0")
    nv = _pynvml()
    got = CudaBackend(index=1).device_state(importer=lambda name: nv)
    assert got["nvml"] == "ok" and got["throttle_reasons"] == "sw_power_cap,hw_thermal_slowdown"
    assert asked == [1] and "bus 0:65:0.0" in nv.calls  # type: ignore[attr-defined]
    CudaBackend().device_state(importer=lambda name: _pynvml())
    assert asked == [1, None]  # device "cuda": the current device
    assert "loadavg_1m" in collect_device_state(get_backend("cpu"))
    assert collect_device_state(NeuronBackend()) == {}
