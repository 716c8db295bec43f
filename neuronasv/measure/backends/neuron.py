"""The Neuron backend: Trainium2/3 through TorchNeuron (native torch-neuronx, PrivateUse1).

Needs *TorchNeuron*, the PyTorch-native torch-neuronx (PyTorch >= 2.10, Trn2/Trn3, a closed
beta as of Neuron SDK 2.32). The pip/DLAMI torch-neuronx 2.x is PyTorch/XLA-based, has no
``torch_neuronx.profiling`` and no ``neuron`` device, and is reported as such
(:mod:`neuronasv.measure.neuron_build`); trn1 and Inferentia are not supported.

Follows the documented profiling API (aws-neuron-sdk
``tools/neuron-explorer/how-to-profile-workload.rst``)::

    from torch_neuronx.profiling import NeuronConfig, ProfileMode, NeuronProfiler
    cfg = NeuronConfig(modes=[ProfileMode.DEVICE, ProfileMode.RUNTIME],
                       profile_output_dir=DIR, neff_cache_dir=DIR,
                       capture_enabled_for_nc="0",
                       correlate_device_time=True)   # undocumented: only where accepted
    torch.profiler.profile(activities=[CPU, PrivateUse1], experimental_config=cfg,
                           on_trace_ready=NeuronProfiler(cfg).export_trace)

``correlate_device_time`` is in no public doc (one third-party script uses it), and the
public TorchNeuron source's Kineto session hands PyTorch no activities, so
``key_averages()`` holds no device time there. The option is still feature-detected
(signature first, then ``TypeError``) and read back, but it is reported ``unknown`` until a
capture shows device time in ``key_averages()`` (:meth:`NeuronBackend.describe`).

Device time comes from what Neuron documents: when a cycle's ``key_averages()`` has none,
the profiling core asks :meth:`NeuronBackend.fallback_cycle`, which reads the cycle's new
NTFFs with ``neuron-explorer`` (summary-json, then the device profile's engine rows
for the per-op split), then the exported ``trace.json`` (device events, then
``privateuse1_driver`` spans) — :mod:`neuronasv.measure.neuron_capture`. Every op names its
source; a capture with none is a CaptureError listing the sources tried.
``neff_cache_dir`` (documented) makes the NEFFs land beside the NTFFs, so Neuron Explorer
can open the trace folder. Files land in ``DIR/<instance-id>_pid_<pid>/<timestamp>/``.

Also here, as everything Neuron-specific: the Trainium datasheet roofs and one logical
NeuronCore's share of them (the chip a fingerprint names: :func:`neuron_chip`), the
canary's kernel, the fingerprint's probes (driver, runtime, NKI, the tool and trace
versions), and how the device looks present without importing torch. Device state: nothing
is queried per reading (neuron-monitor is a daemon, not a query); the device profile of the
cycles just measured carries the throttle fields and the tool and trace versions, which the
canary adds to its end state as ``end.neuron.<field>`` (:meth:`NeuronBackend.measured_state`).

torch_neuronx is never a dependency. Nothing here is verified on Trainium hardware from
this repository's CI; the configuration logic is tested with stand-in modules
(``@pytest.mark.standin``), and ``neuronasv doctor --neuron-check`` checks every assumption on a
real host.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from neuronasv import env
from neuronasv.errors import BackendUnavailable, UsageError
from neuronasv.measure.backends.base import Backend, Runner
from neuronasv.measure.canary import CanaryKernel
from neuronasv.measure.neuron_build import NATIVE_HINT, detect_neuron_build, what_is_needed
from neuronasv.measure.peaks import Peak, published_peak

if TYPE_CHECKING:
    from torch.profiler import ProfilerActivity

__all__ = [
    "CAPTURE_KEYS",
    "DATASHEET",
    "DEFAULT_MODES",
    "INSTALL_HINT",
    "MODES_ENV",
    "NeuronBackend",
    "build_neuron_config",
    "import_neuron_profiling",
    "instance_type",
    "neuron_chip",
    "neuron_driver",
    "neuron_runtime",
    "neuroncore_peak",
]

#: Profile modes used unless configured otherwise (names of ``ProfileMode`` members).
DEFAULT_MODES: tuple[str, ...] = ("DEVICE", "RUNTIME")
#: Environment variable overriding the modes, e.g. ``RUNTIME`` alone (DEVICE mode reserves
#: ~5 GB of HBM on Trn2) or ``DEVICE,RUNTIME,CPU_UTIL``.
MODES_ENV = env.NEURON_MODES.name

INSTALL_HINT = NATIVE_HINT

log = logging.getLogger(__name__)

_TRN1_SRC = (
    "AWS Neuron docs, Trainium Architecture "
    "(awsdocs-neuron.readthedocs-hosted.com/en/latest/general/arch/neuron-hardware/"
    "trainium.html): "
    "2 NeuronCore-v2 per chip, 190 FP16/BF16 TFLOPS, 47.5 FP32 TFLOPS, 820 GB/s HBM"
)
_TRN2_SRC = (
    "AWS Neuron docs, Trainium2 Architecture "
    "(awsdocs-neuron.readthedocs-hosted.com/en/latest/general/arch/neuron-hardware/"
    "trainium2.html): "
    "8 NeuronCore-v3 per chip, 667 BF16/FP16 TFLOPS, 181 FP32 TFLOPS, 2.9 TB/s HBM"
)

#: Whole-chip published peaks (dense), keyed by chip. The neuron backend's roof is one
#: logical NeuronCore's share (:func:`neuroncore_peak`); the whole-chip entries stay for
#: people who profile a whole chip (``NEURONASV_PEAK=trn2``).
DATASHEET: dict[str, Peak] = {
    "trn1": published_peak("trn1", 820, 190, 47.5, _TRN1_SRC),
    "trn2": published_peak("trn2", 2900, 667, 181, _TRN2_SRC),
}

# Physical NeuronCores per chip, and the default logical-NeuronCore size (LNC): Trn2
# defaults to LNC=2 (two physical cores act as one logical core), Trn1 has no LNC.
_NEURON_CORES = {"trn1": (2, 1), "trn2": (8, 2)}

#: Fingerprint keys only the neuron backend's fingerprint has (the tool and the trace it
#: reads): ``neuron_explorer`` (the tool's ``--version``), ``ntff_version``,
#: ``neuron_profile_runtime`` and ``neuron_compiler`` (the last device profile's
#: Metadata; ``none`` before a capture, e.g. in ``neuronasv run``'s fingerprint, which is
#: taken before the suite runs — each profile's canary state carries them,
#: ``end.neuron.*``): tool/trace skew shows as a changed value, not a crash.
CAPTURE_KEYS: tuple[str, ...] = (
    "neuron_explorer",
    "ntff_version",
    "neuron_profile_runtime",
    "neuron_compiler",
)


def neuroncore_peak(chip: str, lnc: int | None = None) -> Peak:
    """The share of a Trainium chip's peak that one logical NeuronCore can reach.

    Trainium is profiled one NeuronCore at a time (``capture_enabled_for_nc="0"`` and a
    workload on device ``neuron`` runs on one logical NeuronCore), so the chip's figures
    divided by the number of (logical) NeuronCores are the roof a single-core workload can
    actually reach.

    Args:
        chip: ``"trn1"`` or ``"trn2"``.
        lnc: logical NeuronCore size (physical cores per logical core); default is the
            chip's default (Trn1: 1, Trn2: 2). Read it from ``NEURON_LOGICAL_NC_CONFIG``
            when set.

    Returns:
        A :class:`Peak` named e.g. ``"trn2/nc (lnc=2)"``.
    """
    if chip not in _NEURON_CORES:
        raise UsageError(f"unknown Trainium chip {chip!r}; known: {', '.join(_NEURON_CORES)}")
    cores, default_lnc = _NEURON_CORES[chip]
    lnc = default_lnc if lnc is None else lnc
    if lnc < 1 or lnc > cores:
        raise UsageError(f"logical NeuronCore size {lnc} out of range 1..{cores} for {chip}")
    share = lnc / cores
    whole = DATASHEET[chip]
    return Peak(
        name=f"{chip}/nc (lnc={lnc})",
        memory_bytes_per_s=whole.memory_bytes_per_s * share,
        flops_per_s={k: v * share for k, v in whole.flops_per_s.items()},
        source=whole.source + f"; one logical NeuronCore = {lnc}/{cores} of the chip",
    )


def instance_type() -> str | None:
    """The EC2 instance type (Trainium hosts expose it as the DMI product name); None
    when unreadable."""
    try:
        text = Path("/sys/devices/virtual/dmi/id/product_name").read_text().strip()
    except OSError:
        return None
    return text or None


def neuron_driver() -> str | None:
    """The Neuron kernel driver's version (``/sys/module/neuron/version``), None without."""
    try:
        text = Path("/sys/module/neuron/version").read_text().strip()
    except OSError:
        return None
    return text or None


def neuron_runtime(run: Runner) -> str | None:
    """Neuron runtime version from the OS package (Debian/Ubuntu, then RPM)."""
    return run(["dpkg-query", "-W", "-f=${Version}", "aws-neuronx-runtime-lib"]) or run(
        ["rpm", "-q", "--qf", "%{VERSION}", "aws-neuronx-runtime-lib"]
    )


def neuron_chip(fingerprint: Mapping[str, str]) -> str | None:
    """``trn3``/``trn2``/``trn1`` from the fingerprint's device model, instance type or
    platform; None when it names none (a bare "Trainium" says no generation)."""
    text = " ".join(fingerprint.get(k, "") for k in ("device_model", "instance_type", "platform"))
    text = text.lower()
    for gen in ("3", "2", "1"):
        if f"trn{gen}" in text or f"trainium{gen}" in text:
            return f"trn{gen}"
    return None


def import_neuron_profiling() -> tuple[ModuleType | None, str | None]:
    """Import ``torch_neuronx.profiling``; return ``(module, None)`` or ``(None, reason)``.

    The reason names the torch-neuronx flavour found (XLA, placeholder, absent, ...) and
    what the backend needs instead (:func:`neuron_build.what_is_needed`).
    """
    build = detect_neuron_build()
    if not build.usable:
        return None, f"torch_neuronx: {build.flavour} ({build.detail})"
    try:
        module = importlib.import_module("torch_neuronx.profiling")
    except Exception as exc:  # detect imported it once; a second failure is a broken install
        return None, f"importing torch_neuronx.profiling failed: {type(exc).__name__}: {exc}"
    return module, None


def _accepts_kwarg(callable_: Any, name: str) -> bool | None:
    """True/False when the signature says, None when it cannot tell (``**kwargs``, C code)."""
    try:
        params = inspect.signature(callable_).parameters
    except (TypeError, ValueError):
        return None
    if name in params:
        return True
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return None
    return False


def read_back(cfg: Any, name: str) -> str:
    """Whether ``cfg`` holds option ``name`` as set: ``yes``, ``no`` or ``unknown``.

    A config class that takes ``**kwargs`` may drop an option it does not know; reading
    the attribute back tells "taken" from "silently ignored" where the class keeps it.
    """
    for holder in (cfg, getattr(cfg, "__dict__", {})):
        value = holder.get(name, _MISSING) if isinstance(holder, dict) else getattr(
            holder, name, _MISSING
        )
        if value is not _MISSING:
            return "yes" if value else "no"
    return "unknown"


_MISSING = object()


def _try_optional(
    config_cls: Any, kwargs: dict[str, Any], optional: dict[str, Any]
) -> tuple[Any, set[str]]:
    """Build ``config_cls(**kwargs, **optional)``, dropping optional keywords it rejects."""
    extra = {k: v for k, v in optional.items() if _accepts_kwarg(config_cls, k) is not False}
    sure = {k for k in extra if _accepts_kwarg(config_cls, k) is True}
    while True:
        try:
            return config_cls(**kwargs, **extra), set(extra)
        except TypeError as exc:
            # Only an unknown-keyword TypeError means "not supported"; anything else is real.
            rejected = [k for k in extra if k not in sure and k in str(exc)]
            if not rejected:
                raise
            for k in rejected:
                del extra[k]


def build_neuron_config(
    profiling: ModuleType,
    *,
    output_dir: str,
    modes: Sequence[str] = DEFAULT_MODES,
    capture_enabled_for_nc: str = "0",
    max_events_per_nc: int | None = None,
    neff_cache_dir: str | None = None,
) -> tuple[Any, bool]:
    """Build a ``NeuronConfig``; return it and whether device-time correlation is on.

    ``correlate_device_time`` (undocumented) and ``neff_cache_dir`` (documented, but not in
    every build) are passed only where the class accepts them (signature, then
    ``TypeError``). Correlation counts as on when it was passed and not read back as off
    (:func:`read_back`).

    Args:
        profiling: the ``torch_neuronx.profiling`` module (or a stand-in in tests).
        output_dir: ``profile_output_dir`` (``.ntff``, ``trace.json``, ...).
        modes: ``ProfileMode`` member names, e.g. ``("DEVICE", "RUNTIME")``.
        capture_enabled_for_nc: NeuronCores to capture, as the API's string (``"0"``).
        max_events_per_nc: optional cap on recorded events per NeuronCore.
        neff_cache_dir: where the NEFFs go (the trace folder, so Neuron Explorer finds them).

    Raises:
        UsageError: an unknown mode name.
    """
    mode_enum = profiling.ProfileMode
    mode_values = []
    for mode in modes:
        key = mode.strip().upper()
        if not key or not hasattr(mode_enum, key):
            known = [m for m in dir(mode_enum) if m.isupper()]
            raise UsageError(
                f"unknown Neuron profile mode {mode!r} (known: {', '.join(known) or 'none'})"
            )
        mode_values.append(getattr(mode_enum, key))
    kwargs: dict[str, Any] = {
        "modes": mode_values,
        "profile_output_dir": output_dir,
        "capture_enabled_for_nc": capture_enabled_for_nc,
    }
    if max_events_per_nc is not None:
        kwargs["max_events_per_nc"] = max_events_per_nc
    optional: dict[str, Any] = {"correlate_device_time": True}
    if neff_cache_dir is not None:
        optional["neff_cache_dir"] = neff_cache_dir
    cfg, passed = _try_optional(profiling.NeuronConfig, kwargs, optional)
    correlated = "correlate_device_time" in passed and read_back(
        cfg, "correlate_device_time"
    ) != "no"
    return cfg, correlated


def _modes_from_env() -> tuple[str, ...]:
    return env.NEURON_MODES.read() or DEFAULT_MODES


class NeuronBackend(Backend):
    """Runs workloads on device ``neuron`` (one NeuronCore: ``capture_enabled_for_nc``)."""

    name = "neuron"
    device = "neuron"
    device_time_is_cpu = False
    # At least 3: the first calls compile and load the NEFF (field notes).
    min_warmup = 3
    # The device time may come from the cycle's exported trace (fallback_cycle), which has
    # no per-iteration split we have verified: one sample a cycle.
    per_step_samples = False
    runs_nki = True
    #: The ``torch.compile`` backend TorchNeuron registers (``torch._dynamo.list_backends``).
    compile_backend = "neuron"
    device_time_origin = (
        "the Neuron device profile (neuron-explorer on each NTFF), else key_averages()"
    )
    replays_captures = True
    auto_order = 10
    canary_kernel = CanaryKernel(matmul_n=2048, copy_mib=256, dtype="bfloat16")
    datasheet = DATASHEET
    fingerprint_extra_keys = CAPTURE_KEYS

    @classmethod
    def detected_without_torch(cls) -> bool:
        """``torch_neuronx`` is installed (found, not imported)."""
        return importlib.util.find_spec("torch_neuronx") is not None

    def __init__(
        self,
        *,
        modes: Sequence[str] | None = None,
        capture_enabled_for_nc: str = "0",
        max_events_per_nc: int | None = None,
    ) -> None:
        self.modes = tuple(modes) if modes else _modes_from_env()
        self.capture_enabled_for_nc = capture_enabled_for_nc
        self.max_events_per_nc = max_events_per_nc
        self.correlated: bool | None = None  # known after the first NeuronConfig is built
        #: ``yes``/``no``/``unknown``: correlate_device_time read back from the config;
        #: ``not passed`` when the class does not take it.
        self.correlation_read_back: str | None = None
        #: Where device time came from in the last capture (the sources of its ops, the
        #: words of :mod:`neuronasv.measure.neuron_formats`), None before any.
        self.device_time_source: str | None = None
        #: key_averages() held device time in a capture (None: no capture yet).
        self.key_averages_had_time: bool | None = None
        #: The last capture read from the trace folder (:mod:`neuron_capture`).
        self.last_capture: Any = None
        self._probe: tuple[ModuleType | None, str | None] | None = None
        self._tool: tuple[Any, str | None] | None = None
        self._tool_version: str | None = None
        self._warned_tool = False
        self._warned: set[str] = set()
        self._seen_traces: set[str] = set()
        self._seen_ntffs: set[str] = set()

    # -- availability -------------------------------------------------------------------
    def _profiling_module(self) -> tuple[ModuleType | None, str | None]:
        if self._probe is None:
            module, reason = import_neuron_profiling()
            if module is not None:
                reason = self._device_problem()
            self._probe = (module, reason)
        return self._probe

    def _device_problem(self) -> str | None:
        import torch

        backend_name = torch._C._get_privateuse1_backend_name()
        if backend_name == "privateuseone":
            # torch_neuronx normally renames PrivateUse1 itself; a release that does not
            # still needs the name for the "neuron" device string and profiler columns.
            try:
                torch.utils.rename_privateuse1_backend("neuron")
            except RuntimeError as exc:
                return f"cannot name the PrivateUse1 backend 'neuron': {exc}"
        elif backend_name != "neuron":
            return f"PrivateUse1 is registered as {backend_name!r}, not 'neuron'"
        mod = getattr(torch, "neuron", None)
        if mod is None:
            return "torch_neuronx imported but torch.neuron is missing"
        try:
            if hasattr(mod, "is_available") and not mod.is_available():
                return "torch_neuronx is installed but no NeuronCore is visible (neuron-ls)"
            if hasattr(mod, "device_count") and mod.device_count() < 1:
                return "torch_neuronx is installed but no NeuronCore is visible (neuron-ls)"
        except Exception as exc:
            return f"querying Neuron devices failed: {type(exc).__name__}: {exc}"
        return None

    def is_available(self) -> bool:
        module, reason = self._profiling_module()
        return module is not None and reason is None

    def unavailable_reason(self) -> str | None:
        return self._profiling_module()[1]

    def install_hint(self) -> str | None:
        module, reason = self._profiling_module()
        if reason is None:
            return None
        if module is None:
            return what_is_needed(detect_neuron_build()) or INSTALL_HINT
        return "run on a Trn2/Trn3 instance; `neuron-ls` must list the devices"

    def _require(self) -> ModuleType:
        module, reason = self._profiling_module()
        if module is None or reason is not None:
            raise BackendUnavailable(
                f"the neuron backend is unavailable: {reason}", hint=self.install_hint()
            )
        return module

    # -- profiling ------------------------------------------------------------------------
    def activities(self) -> list[ProfilerActivity]:
        from torch.profiler import ProfilerActivity

        return [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]

    def synchronize(self) -> None:
        import torch

        torch.neuron.synchronize()  # type: ignore[attr-defined]

    def neuron_config(self, output_dir: str, profiling: ModuleType | None = None) -> Any:
        """The ``NeuronConfig`` for one capture into ``output_dir``."""
        module = profiling if profiling is not None else self._require()
        cfg, self.correlated = build_neuron_config(
            module,
            output_dir=output_dir,
            modes=self.modes,
            capture_enabled_for_nc=self.capture_enabled_for_nc,
            max_events_per_nc=self.max_events_per_nc,
            neff_cache_dir=output_dir,
        )
        back = read_back(cfg, "correlate_device_time")
        self.correlation_read_back = back if self.correlated or back == "no" else "not passed"
        return cfg

    def profiler_kwargs(
        self, trace_dir: str | None, profiling: ModuleType | None = None
    ) -> dict[str, Any]:
        """``experimental_config`` and the ``NeuronProfiler`` exporter as ``on_trace_ready``.

        The exporter writes the Neuron trace directory; the profiling core calls it every
        cycle (as the documented setup does) before reading ``key_averages()``.
        """
        module = profiling if profiling is not None else self._require()
        output_dir = trace_dir or os.path.join(os.getcwd(), "neuron_profile")
        cfg = self.neuron_config(output_dir, module)
        return {
            "experimental_config": cfg,
            "on_trace_ready": module.NeuronProfiler(cfg).export_trace,
        }

    def capture_hint(self) -> str | None:
        """Why a capture may show no device time, for the CaptureError hint: the sources
        tried and what each gave, then what to check."""
        tried = (
            self.last_capture.tried_line() + "; "
            if self.last_capture is not None
            else ""
        )
        check = (
            "check that ProfileMode.DEVICE is among the modes"
            f" ({MODES_ENV}={','.join(self.modes)}), that capture_enabled_for_nc"
            f"={self.capture_enabled_for_nc!r} is the core the workload ran on and that"
            " neuron-explorer (aws-neuronx-tools) is on PATH; `neuronasv doctor"
            " --neuron-check` reports each"
        )
        why = (
            f" (this NeuronConfig did not take correlate_device_time (read back:"
            f" {self.correlation_read_back}))"
            if self.correlated is False
            else ""
        )
        return f"key_averages: no device time{why}; " + tried + check

    def explorer(self) -> tuple[Any, str | None]:
        """``(Explorer, None)`` or ``(None, why not)``, looked up once."""
        if self._tool is None:
            from neuronasv.measure.neuron_explorer import INSTALL_DIRS, Explorer, find_tool

            path = find_tool()
            self._tool = (
                (Explorer(path), None)
                if path
                else (None, f"not found on PATH nor in {', '.join(INSTALL_DIRS)}")
            )
        return self._tool

    def fallback_cycle(self, trace_dir: str, host: Any) -> Any:
        """The cycle's device time from its capture (:mod:`neuron_capture`) when
        ``key_averages()`` had none: the new NTFFs through neuron-explorer, else the new
        ``trace.json`` files. None when no source gave any (the reading says why)."""
        from neuronasv.measure.neuron_capture import read_new_capture
        from neuronasv.measure.neuron_explorer import profile_format
        from neuronasv.measure.neuron_trace import merge_with_host

        explorer, problem = self.explorer()
        if explorer is None and not self._warned_tool:
            self._warned_tool = True
            log.warning(
                f"neuron-explorer {problem}: Neuron device time cannot be read from the"
                " NTFFs (install aws-neuronx-tools)"
            )
        reading = read_new_capture(
            trace_dir,
            explorer=explorer,
            fmt=profile_format(),
            seen_ntffs=self._seen_ntffs,
            seen_traces=self._seen_traces,
            tool_problem=problem,
        )
        self.last_capture = reading
        for line in reading.warnings:
            if line not in self._warned:  # once a process, not once a cycle
                self._warned.add(line)
                log.warning(line)
        if not reading.times or reading.total_us <= 0:
            return None
        self.device_time_source = " + ".join(dict.fromkeys(reading.sources.values()))
        return merge_with_host(host, reading.times, reading.sources)

    def note_key_averages(self, had_time: bool) -> None:
        """What the profiling core saw in a cycle's ``key_averages()``."""
        if had_time:
            self.key_averages_had_time = True
            self.device_time_source = "key_averages"
        elif self.key_averages_had_time is None:
            self.key_averages_had_time = False

    def measured_state(self) -> dict[str, str]:
        """The last capture's throttle fields and versions (``neuron.*``), for the canary's
        device state; empty before a capture."""
        if self.last_capture is None:
            return {}
        return {**self.last_capture.state, **self.last_capture.versions}

    @classmethod
    def roof_key(cls, fingerprint: Mapping[str, str]) -> str | None:
        """The Trainium generation the fingerprint names (:func:`neuron_chip`)."""
        return neuron_chip(fingerprint)

    @classmethod
    def named_roof(cls, key: str) -> Peak | None:
        """A chip's entry (``trn2``), or one NeuronCore's share of it (``trn2/nc``)."""
        if key.endswith("/nc") and key[:-3] in _NEURON_CORES:
            return neuroncore_peak(key[:-3])
        return cls.datasheet.get(key)

    @classmethod
    def roof_aliases(cls) -> tuple[str, ...]:
        return tuple(f"{chip}/nc" for chip in _NEURON_CORES)

    def fingerprint_fields(self, common: Mapping[str, str], *, run: Runner) -> dict[str, str]:
        """torch-neuronx as the backend found it, the kernel driver, the instance type as
        the device model, the runtime library (OS package), NKI, and the tool and trace
        versions (:data:`CAPTURE_KEYS`)."""
        from neuronasv.measure.fingerprint import dist_version

        described = self.describe()
        fields = {
            "torch_neuronx": described.get("torch_neuronx", common["torch_neuronx"]),
            "driver": neuron_driver() or "none",
            "device_model": instance_type() or "neuron",
            "neuron_runtime": neuron_runtime(run) or "none",
            "nki": dist_version("nki"),
            "torch_neuronx_flavour": described.get("torch_neuronx_flavour", "none"),
        }
        fields.update({key: described.get(key, "none") for key in CAPTURE_KEYS})
        return fields

    def roof(
        self, fingerprint: Mapping[str, str], *, env: Mapping[str, str], calibration: Peak | None
    ) -> Peak | None:
        """One logical NeuronCore's share of the chip's datasheet roof (a profile captures
        NC 0); the logical size from ``NEURON_LOGICAL_NC_CONFIG``. None: not a Trainium."""
        chip = self.roof_key(fingerprint)
        if chip is None or chip not in self.datasheet:
            return None  # not a Trainium, or one without a datasheet roof here (trn3)
        lnc_text = env.get("NEURON_LOGICAL_NC_CONFIG", "")
        return neuroncore_peak(chip, int(lnc_text) if lnc_text.isdigit() else None)

    def correlation_status(self) -> str:
        """``correlate_device_time`` as the capture shows it: ``yes`` only when device time
        arrived in ``key_averages()``, ``no`` when the config rejected the option,
        ``unknown`` otherwise (a read-back "yes" proves nothing: an option the C++ session
        does not know is dropped there)."""
        if self.correlated is False:
            return "no"
        if self.key_averages_had_time:
            return "yes"
        return "unknown"

    def capture_versions(self) -> dict[str, str]:
        """Fingerprint fields of the tool and the trace: ``neuron_explorer`` (its
        ``--version``), and from the last capture ``ntff_version``, ``neuron_profile_runtime``
        and ``neuron_compiler`` (the device profile's Metadata); ``none`` when unknown."""
        if self._tool_version is None:
            explorer, _ = self.explorer()
            found = explorer.version()[0] if explorer is not None else None
            self._tool_version = found or "none"
        version = self._tool_version
        seen = self.last_capture.versions if self.last_capture is not None else {}
        return {
            "neuron_explorer": version,
            "ntff_version": seen.get("neuron.ntff_version", "none"),
            "neuron_profile_runtime": seen.get("neuron.runtime_version", "none"),
            "neuron_compiler": seen.get("neuron.compiler_version", "none"),
        }

    def describe(self) -> dict[str, str]:
        import torch

        info = {
            "backend": self.name,
            "torch": torch.__version__,
            "neuron_modes": ",".join(self.modes),
            "capture_enabled_for_nc": self.capture_enabled_for_nc,
            "correlate_device_time": self.correlation_status(),
            "correlate_device_time_read_back": self.correlation_read_back or "unknown",
            "device_time_source": self.device_time_source or "unknown",
        }
        info.update(self.capture_versions())
        build = detect_neuron_build()
        info["torch_neuronx_flavour"] = build.flavour
        if build.module_version != "none":
            info["torch_neuronx"] = build.module_version
        return info
