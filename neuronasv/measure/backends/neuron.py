"""The Neuron backend (Trainium / Inferentia via torch_neuronx and PrivateUse1).

Follows the documented torch_neuronx profiling API (aws-neuron-sdk, "Capture PyTorch
profiles with Neuron Explorer")::

    from torch_neuronx.profiling import NeuronConfig, ProfileMode, NeuronProfiler
    cfg = NeuronConfig(modes=[ProfileMode.DEVICE, ProfileMode.RUNTIME],
                       profile_output_dir=..., capture_enabled_for_nc="0",
                       correlate_device_time=True)   # only where NeuronConfig accepts it
    torch.profiler.profile(activities=[CPU, PrivateUse1], experimental_config=cfg,
                           on_trace_ready=NeuronProfiler(cfg).export_trace)

``correlate_device_time`` is what puts NeuronCore time into ``key_averages()``; it appears
in user code but not in every release's docs, so it is feature-detected (signature first,
then ``TypeError``). Without it a capture may show zero device time, which the profiling
core reports as a failed capture.

torch_neuronx is never a dependency: it comes from the Neuron pip repository or the Neuron
DLAMI venv. The package named ``torch-neuronx`` on PyPI is a placeholder whose import
raises ``ImportError``; both cases make this backend unavailable with a hint, never a
traceback. Nothing here is verified on Trainium hardware from this repository's CI; the
configuration logic is tested with a stand-in module (``@pytest.mark.standin``).
"""

from __future__ import annotations

import importlib
import inspect
import os
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from neuronasv.errors import BackendUnavailable, UsageError
from neuronasv.measure.backends.base import Backend

if TYPE_CHECKING:
    from torch.profiler import ProfilerActivity

__all__ = [
    "DEFAULT_MODES",
    "INSTALL_HINT",
    "MODES_ENV",
    "NeuronBackend",
    "build_neuron_config",
    "import_neuron_profiling",
]

#: Profile modes used unless configured otherwise (names of ``ProfileMode`` members).
DEFAULT_MODES: tuple[str, ...] = ("DEVICE", "RUNTIME")
#: Environment variable overriding the modes, e.g. ``RUNTIME`` alone (DEVICE mode reserves
#: ~5 GB of HBM on Trn2) or ``DEVICE,RUNTIME,CPU_UTIL``.
MODES_ENV = "NEURONASV_NEURON_MODES"

INSTALL_HINT = (
    "torch-neuronx comes from the Neuron pip repository, not PyPI (the PyPI package of that"
    " name is a placeholder that raises ImportError): use the PyTorch venv of the AWS Neuron"
    " DLAMI, or `pip install torch-neuronx neuronx-cc --extra-index-url"
    " https://pip.repos.neuron.amazonaws.com` on a Trainium/Inferentia host"
)


def import_neuron_profiling() -> tuple[ModuleType | None, str | None]:
    """Import ``torch_neuronx.profiling``; return ``(module, None)`` or ``(None, reason)``."""
    try:
        importlib.import_module("torch_neuronx")
        module = importlib.import_module("torch_neuronx.profiling")
    except ImportError as exc:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return None, f"torch_neuronx cannot be imported ({text})"
    except Exception as exc:  # a broken install must read as "unavailable", not crash
        return None, f"importing torch_neuronx failed: {type(exc).__name__}: {exc}"
    needed = ("NeuronConfig", "ProfileMode", "NeuronProfiler")
    missing = [n for n in needed if not hasattr(module, n)]
    if missing:
        return None, (
            "torch_neuronx.profiling lacks " + ", ".join(missing)
            + " (a torch_neuronx release without native PyTorch profiling)"
        )
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


def build_neuron_config(
    profiling: ModuleType,
    *,
    output_dir: str,
    modes: Sequence[str] = DEFAULT_MODES,
    capture_enabled_for_nc: str = "0",
    max_events_per_nc: int | None = None,
) -> tuple[Any, bool]:
    """Build a ``NeuronConfig``; return it and whether device-time correlation is on.

    Args:
        profiling: the ``torch_neuronx.profiling`` module (or a stand-in in tests).
        output_dir: ``profile_output_dir`` (``.neff``, ``.ntff``, ``trace.json``, ...).
        modes: ``ProfileMode`` member names, e.g. ``("DEVICE", "RUNTIME")``.
        capture_enabled_for_nc: NeuronCores to capture, as the API's string (``"0"``).
        max_events_per_nc: optional cap on recorded events per NeuronCore.

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
    config_cls = profiling.NeuronConfig
    accepts = _accepts_kwarg(config_cls, "correlate_device_time")
    if accepts is not False:
        try:
            return config_cls(**kwargs, correlate_device_time=True), True
        except TypeError as exc:
            # Only an unknown-keyword TypeError means "not supported"; anything else is real.
            if accepts is True or "correlate_device_time" not in str(exc):
                raise
    return config_cls(**kwargs), False


def _modes_from_env() -> tuple[str, ...]:
    raw = os.environ.get(MODES_ENV, "")
    modes = tuple(m.strip() for m in raw.split(",") if m.strip())
    return modes or DEFAULT_MODES


class NeuronBackend(Backend):
    """Runs workloads on device ``neuron`` (one NeuronCore: ``capture_enabled_for_nc``)."""

    name = "neuron"
    device = "neuron"
    device_time_is_cpu = False
    # At least 3: the first calls compile and load the NEFF (field notes).
    min_warmup = 3

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
        self._probe: tuple[ModuleType | None, str | None] | None = None

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
            return INSTALL_HINT
        return "run on a Trainium/Inferentia instance; `neuron-ls` must list the devices"

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
        )
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
        """Why a capture may show no device time, for the CaptureError hint."""
        if self.correlated is False:
            return (
                "this torch_neuronx's NeuronConfig has no correlate_device_time, so NeuronCore"
                " time cannot reach key_averages(); upgrade torch-neuronx"
            )
        return (
            "check that ProfileMode.DEVICE is among the modes"
            f" ({MODES_ENV}={','.join(self.modes)}) and that capture_enabled_for_nc"
            f"={self.capture_enabled_for_nc!r} is the core the workload ran on"
        )

    def describe(self) -> dict[str, str]:
        import torch

        info = {
            "backend": self.name,
            "torch": torch.__version__,
            "neuron_modes": ",".join(self.modes),
            "capture_enabled_for_nc": self.capture_enabled_for_nc,
            "correlate_device_time": {None: "unknown", True: "yes", False: "no"}[self.correlated],
        }
        module, _ = self._profiling_module()
        if module is not None:
            top = importlib.import_module("torch_neuronx")
            info["torch_neuronx"] = str(getattr(top, "__version__", "unknown"))
        return info
