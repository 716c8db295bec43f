"""What every backend tells the profiler: device, activities, sync, profiler config."""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torch.profiler import ProfilerActivity

    from neuronasv.measure.peaks import Peak

__all__ = ["Backend", "TraceHook"]

#: ``on_trace_ready`` callable: receives the ``torch.profiler.profile`` object.
TraceHook = Callable[[Any], None]


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
        counts_instructions: the exact axis (callgrind instruction counts) is taken here;
            on an accelerator device time is the metric.
        default_samples: samples per process when confirm or bisect are not told (an
            accelerator's round-to-round noise is mostly the median's sampling error).
        device_time_note: what "device time" is here, said beside the backend's name in a
            comment ("" = the device's own clock, nothing to say).
        device_state_source: where :mod:`neuronasv.measure.device_state` reads the state
            worth recording: ``"host"`` (governor, turbo), ``"nvml"``, or ``""`` (none).
        runs_nki: NKI kernels run here (Trainium).
        device_time_origin: where an accelerator's device time comes from, in the words
            ``neuronasv profile`` prints.
        replays_captures: ``neuronasv profile --from-capture`` reads this backend's
            capture folders offline.
    """

    name: str = ""
    device: str = "cpu"
    device_time_is_cpu: bool = False
    min_warmup: int = 3
    per_step_samples: bool = True
    roof_is_calibrated: bool = False
    accelerator: bool = True
    counts_instructions: bool = False
    default_samples: int = 30
    device_time_note: str = ""
    device_state_source: str = ""
    runs_nki: bool = False
    device_time_origin: str = "the profiler's device activity"
    replays_captures: bool = False

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

    def roof(
        self, fingerprint: Mapping[str, str], *, env: Mapping[str, str], calibration: Peak | None
    ) -> Peak | None:
        """The roof of "of peak" here (:mod:`neuronasv.measure.peaks`), None when unknown:
        then no view shows a fraction. ``calibration`` is the machine's calibrated roof for
        a backend that has one (:attr:`roof_is_calibrated`)."""
        return None

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
