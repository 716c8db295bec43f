"""What a backend is: everything that differs by backend, asked of its class.

A backend's knowledge is its one file in this package (``cpu.py``, ``cuda.py``,
``neuron.py``): how the profiler sees its device (activities, sync, profiler config), its
canary kernel, its fingerprint probes, whether it looks installed without importing torch,
its roof (datasheet entries and the key a fingerprint maps to), its device state. The
package finds the backends by subclass (:mod:`neuronasv.measure.backends`); nothing outside
it compares a backend's name, keeps a table keyed by it or checks a backend's class
(``tests/test_backend_knowledge.py``).
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, ClassVar

from neuronasv.metrics import METRICS

if TYPE_CHECKING:
    from torch.profiler import ProfilerActivity

    from neuronasv.measure.canary import CanaryKernel
    from neuronasv.measure.peaks import Peak

__all__ = ["Backend", "Runner", "TraceHook"]

#: ``on_trace_ready`` callable: receives the ``torch.profiler.profile`` object.
TraceHook = Callable[[Any], None]
#: Runs a command for a fingerprint probe: its first stdout line, or None (missing tool,
#: error, timeout); :func:`neuronasv.measure.fingerprint.first_line` by default.
Runner = Callable[[list[str]], str | None]


class Backend(ABC):
    """One place torch code can run and be profiled.

    Attributes:
        name: ``"cpu"``, ``"cuda"`` or ``"neuron"``.
        device: torch device string the workload's tensors go to.
        device_time_is_cpu: True when there is no separate device clock and "device time"
            is the ops' self CPU time (the CPU backend). Every output says so.
        min_warmup: iterations to run before profiling (compile, caches, NEFF loading).
        per_step_samples: the device time of each iteration is on that iteration's host
            events, so a cycle can be split into per-iteration samples
            (:mod:`neuronasv.measure.steps`).
        roof_is_calibrated: the roof of "of peak" is measured on the machine (the CPU:
            ``neuronasv doctor --calibrate``, or the first ``run``), not a datasheet's.
        accelerator: a device beside the host: the suite adds its large shapes, the
            machine's ``cpu`` field names the device too, a demo says which it is.
        counts: the names of the metrics (:mod:`neuronasv.metrics`) taken here: by default
            every metric but a host-only one (``Metric.host_only``: its collector counts
            the host's own work; on an accelerator device time is the metric).
        default_samples: samples per process when confirm or bisect are not told (an
            accelerator's round-to-round noise is mostly the median's sampling error).
        device_time_note: what "device time" is here, said beside the backend's name in a
            comment ("" = the device's own clock, nothing to say).
        auto_order: its place in ``--backend auto``'s order of preference (lower first):
            Neuron, then CUDA, then the CPU (always available).
        runs_nki: NKI kernels run here (Trainium).
        device_time_origin: where an accelerator's device time comes from, in the words
            ``neuronasv profile`` prints.
        replays_captures: ``neuronasv profile --from-capture`` reads this backend's
            capture folders offline.
        compile_backend: the ``torch.compile`` backend on this device.
        canary_kernel: the device-health canary's kernel here
            (:mod:`neuronasv.measure.canary`); None: no canary.
        datasheet: the published roofs of this backend's devices, by table key
            (``NEURONASV_PEAK=<key>`` names one; :func:`roof_key` maps a fingerprint to one).
        fingerprint_extra_keys: fingerprint keys only this backend's fingerprint has.
    """

    name: str = ""
    device: str = "cpu"
    device_time_is_cpu: bool = False
    min_warmup: int = 3
    per_step_samples: bool = True
    roof_is_calibrated: bool = False
    accelerator: bool = True
    counts: ClassVar[frozenset[str]] = frozenset(m.name for m in METRICS if not m.host_only)
    default_samples: int = 30
    device_time_note: str = ""
    auto_order: ClassVar[int] = 50
    runs_nki: bool = False
    device_time_origin: str = "the profiler's device activity"
    replays_captures: bool = False
    compile_backend: ClassVar[str] = "inductor"
    canary_kernel: ClassVar[CanaryKernel | None] = None
    datasheet: ClassVar[Mapping[str, Peak]] = {}
    fingerprint_extra_keys: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def detected_without_torch(cls) -> bool:
        """This backend's runtime looks installed here, judged without importing torch
        (the asv suite's import guesses its backend this way; ``setup_cache`` resolves
        the real one). False by default."""
        return False

    @classmethod
    def uses_device(cls, device: str) -> bool:
        """``device`` (a torch device string, ``cuda:1``) is this backend's device type."""
        return device.partition(":")[0] == cls.device.partition(":")[0]

    @abstractmethod
    def activities(self) -> list[ProfilerActivity]:
        """``torch.profiler.ProfilerActivity`` values to record."""

    @abstractmethod
    def synchronize(self) -> None:
        """Wait until the device has finished all queued work."""

    def profiler_kwargs(self, trace_dir: str | None) -> dict[str, Any]:
        """Extra keyword arguments for ``torch.profiler.profile``.

        May contain ``on_trace_ready`` (a backend's own trace exporter): the profiling core
        calls it from its per-cycle handler instead of passing it on. ``trace_dir`` is the
        folder for this workload's backend-specific trace files (None = none wanted).
        """
        return {}

    def measuring(self) -> AbstractContextManager[None]:
        """Context held while a workload is built, warmed up and profiled.

        The default does nothing; the CPU backend pins torch's intra-op threads there.
        """
        return contextlib.nullcontext()

    @classmethod
    def roof_key(cls, fingerprint: Mapping[str, str]) -> str | None:
        """The key of the device a fingerprint names (a :attr:`datasheet` key, or a chip
        such as ``trn2``); None when it names none this backend knows."""
        return None

    @classmethod
    def named_roof(cls, key: str) -> Peak | None:
        """The roof ``NEURONASV_PEAK=<key>`` names among this backend's (None: not one)."""
        return cls.datasheet.get(key)

    @classmethod
    def roof_aliases(cls) -> tuple[str, ...]:
        """Names :meth:`named_roof` takes beside the :attr:`datasheet` keys."""
        return ()

    def roof(
        self, fingerprint: Mapping[str, str], *, env: Mapping[str, str], calibration: Peak | None
    ) -> Peak | None:
        """The roof of "of peak" here (:mod:`neuronasv.measure.peaks`), None when unknown:
        then no view shows a fraction. ``calibration`` is the machine's calibrated roof for
        a backend that has one (:attr:`roof_is_calibrated`). By default the datasheet's
        entry of the fingerprint's device (:meth:`roof_key`)."""
        key = self.roof_key(fingerprint)
        return self.datasheet.get(key) if key else None

    def fingerprint_fields(self, common: Mapping[str, str], *, run: Runner) -> dict[str, str]:
        """This backend's probes for the environment fingerprint
        (:func:`neuronasv.measure.fingerprint.collect_fingerprint`): the fields it sets
        over the ``common`` ones every backend has (driver, device model, ...), and its
        :attr:`fingerprint_extra_keys`. ``run`` runs a probe's command."""
        return {}

    def device_state(self) -> dict[str, str]:
        """The device's state now, around a canary reading (clocks, throttling, load: what
        explains a slow device); string values, absent keys when unknown. Empty by default
        (:mod:`neuronasv.measure.device_state`)."""
        return {}

    @abstractmethod
    def describe(self) -> dict[str, str]:
        """Versions and device facts for the environment fingerprint (strings only)."""

    @abstractmethod
    def is_available(self) -> bool:
        """True when this backend can run here."""

    def unavailable_reason(self) -> str | None:
        """Why :meth:`is_available` is False (None when available)."""
        return None

    def install_hint(self) -> str | None:
        """What to install or do to make this backend available (None when available)."""
        return None

    def capture_hint(self) -> str | None:
        """What to check when a capture shows no device time (for the CaptureError hint)."""
        return None

    def compile_skip_reason(self) -> str | None:
        """Why ``torch.compile`` cannot run here (None = it can): a missing compiler."""
        return None

    def note_key_averages(self, had_time: bool) -> None:
        """Told, per cycle of an accelerator, whether ``key_averages()`` held device time
        (Neuron reports ``correlate_device_time`` by it). Nothing by default."""
        return None

    def measured_state(self) -> dict[str, str]:
        """Device state the backend read from its own captures (Neuron: the device
        profile's throttle fields and versions, ``neuron.*``), added to the canary's end
        state; empty by default."""
        return {}

    def fallback_cycle(self, trace_dir: str, host: Any) -> Any:
        """A cycle's stats from the backend's own trace files when ``key_averages()`` held
        no device time (``host``: the ``CycleStats`` read from it); None = no fallback.

        Neuron reads the cycle's capture: its NTFFs through neuron-explorer, then its
        ``trace.json`` (:mod:`neuronasv.measure.neuron_capture`).
        """
        return None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} device={self.device!r}>"
