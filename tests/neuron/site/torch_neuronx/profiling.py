"""Stand-in ``torch_neuronx.profiling`` (tests only): ``NeuronConfig``, ``ProfileMode``,
``NeuronProfiler`` as how-to-profile-workload.rst documents them.

``NeuronProfiler(cfg).export_trace(prof)`` writes what one runtime session leaves
(profile-artifacts.rst): ``<profile_output_dir>/<instance-id>_pid_<pid>/<timestamp>/`` with
the NEFFs of the ops the cycle ran (eager: one per op), ``profile_nc_0_session_0.ntff``
(DEVICE mode; the stand-in record of tests/neuron/ntff.py), ``ntrace.pb`` and
``trace_info.pb`` (RUNTIME mode; empty) and the framework ``trace.json``.

Assumed, unverified: the session holds exactly the executions of the cycle's active
iterations (as many as the profiler's events name ops that ran on the device), and
``correlate_device_time`` is accepted and dropped (``**kwargs``), as the audit expects of
the C++ session's option registry.
"""

from __future__ import annotations

import enum
import itertools
import os
import sys
import time
from typing import Any

from torch._C._profiler import _ExperimentalConfig

from torch_neuronx import _device

_ROOT = os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
)
if _ROOT not in sys.path:
    sys.path.append(_ROOT)

from tests.neuron import ntff  # noqa: E402

_SESSION = itertools.count()


class ProfileMode(enum.Enum):
    DEVICE = "device"
    RUNTIME = "runtime"
    CPU_UTIL = "cpu_util"
    HOST_MEMORY = "host_memory"


#: The options the C++ session knows (the audit: ``createNeuronConfigRegistry``).
_REGISTRY = ("max_events_per_nc", "capture_enabled_for_nc", "host_memory", "profile_output_dir")


class NeuronConfig(_ExperimentalConfig):
    """Options travel to the session as Kineto's ``custom_profiler_config`` string
    (``key:value``), where an unknown key is dropped (the audit's reading of the source)."""

    def __init__(
        self,
        modes: list[ProfileMode] | None = None,
        profile_output_dir: str = "./output",
        capture_enabled_for_nc: str = "0",
        max_events_per_nc: int | None = None,
        neff_cache_dir: str | None = None,
        precache_node_info: bool = True,
        **options: Any,  # what the C++ session does not know is dropped
    ) -> None:
        known = {"max_events_per_nc": max_events_per_nc, "profile_output_dir": profile_output_dir,
                 "capture_enabled_for_nc": capture_enabled_for_nc}  # fmt: skip
        text = ",".join(f"{k}:{v}" for k, v in known.items() if k in _REGISTRY and v is not None)
        super().__init__(custom_profiler_config=text)
        self.modes = list(modes or [ProfileMode.DEVICE, ProfileMode.RUNTIME])
        self.profile_output_dir = profile_output_dir
        self.capture_enabled_for_nc = capture_enabled_for_nc
        self.max_events_per_nc = max_events_per_nc
        self.neff_cache_dir = neff_cache_dir


def _ran_on_device(prof: Any) -> int:
    names = {f"aten::{k.split('.')[0]}" for k in _device.KERNELS}
    return sum(1 for e in prof.events() if e.name in names)


class NeuronProfiler:
    def __init__(self, cfg: NeuronConfig) -> None:
        self.cfg = cfg

    def export_trace(self, prof: Any) -> None:
        n = _ran_on_device(prof)
        ran = _device.LOG[-n:] if n else []
        _device.LOG.clear()
        stamp = time.strftime("%Y%m%dT%H%M%S") + f"{next(_SESSION):06d}"
        folder = os.path.join(self.cfg.profile_output_dir, f"i-0standin_pid_{os.getpid()}", stamp)
        os.makedirs(folder, exist_ok=True)
        if ProfileMode.DEVICE in self.cfg.modes:
            rec = ntff.Record()
            # NEFF names from the work's signature, network name = the file's stem (how
            # TorchNeuron names its eager graphs is not documented).
            by_sig = {}
            t = 0
            for op, numel, sig in ran:
                neff = ntff.neff_name(op, sig)
                by_sig[neff] = neff[: -len(".neff")]
                e = ntff.execution(op, numel, t, neff=neff, in_bytes=numel * 4)
                rec.executions.append(e)
                t = e.end + ntff.GAP_NS
            ntff.write_session(folder, rec, by_sig if self.cfg.neff_cache_dir else {})
        else:
            for pb in ("ntrace.pb", "trace_info.pb"):
                open(os.path.join(folder, pb), "wb").close()
        prof.export_chrome_trace(os.path.join(folder, "trace.json"))
