"""Device state around a canary reading, and the host's state beside each run.

Recorded by :class:`~neuronasv.measure.canary.CanaryRun` at the start and the end of each
reading (``start.*`` / ``end.*`` keys of ``CanaryReading.device_state``) and named in the
"verdicts withheld" reason (:mod:`neuronasv.analyse.health`). What each backend reads is
its own (``Backend.device_state``, in its file of :mod:`neuronasv.measure.backends`):

* **CUDA**: NVML (clocks, throttle reasons, temperature, power, ECC;
  ``backends/cuda.py``).
* **CPU**: the 1-minute load average and the current frequency of CPU 0 (``/proc`` and
  ``/sys``, :func:`cpu_state` here: the host's), which on a shared runner explain most
  slow runs.
* **Neuron**: nothing queried per reading (neuron-monitor is a daemon, not a query); the
  device profile of the cycles just measured carries the throttle fields and the tool and
  trace versions, which the canary adds to its end state as ``end.neuron.<field>``
  (``Backend.measured_state``, :mod:`neuronasv.measure.neuron_capture`); the runtime and
  driver versions are in the fingerprint.

Values are strings; keys absent when unknown.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Protocol

from neuronasv import env
from neuronasv.model.sidecar import MachineReading

__all__ = ["HasDeviceState", "collect_device_state", "cpu_state", "host_reading"]


class HasDeviceState(Protocol):
    """What :func:`collect_device_state` asks of a backend
    (``neuronasv.measure.backends.Backend``, which imports this module's readers)."""

    def device_state(self) -> dict[str, str]: ...

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


def collect_device_state(backend: HasDeviceState) -> dict[str, str]:
    """The state worth recording for ``backend`` (its ``device_state``), nothing under
    ``NEURONASV_NO_DEVICE_STATE``."""
    if env.NO_DEVICE_STATE.read():
        return {}
    return backend.device_state()


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
