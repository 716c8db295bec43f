"""Neuron backend configuration logic, with stand-in modules for what needs Trainium.

Everything marked ``standin`` is unverified on hardware: a stand-in ``torch_neuronx``
module records what the backend passes to the documented API.
"""

from __future__ import annotations

import enum
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from torch.profiler import ProfilerActivity

from neuronasv.errors import BackendUnavailable, UsageError
from neuronasv.measure.backends import get_backend
from neuronasv.measure.backends.neuron import (
    INSTALL_HINT,
    MODES_ENV,
    NeuronBackend,
    build_neuron_config,
    import_neuron_profiling,
)


class ProfileMode(enum.Enum):
    DEVICE = "device"
    RUNTIME = "runtime"
    CPU_UTIL = "cpu_util"


class ConfigWithCorrelation:
    def __init__(
        self,
        modes: list[Any],
        profile_output_dir: str,
        capture_enabled_for_nc: str,
        max_events_per_nc: int | None = None,
        correlate_device_time: bool = False,
    ) -> None:
        self.kwargs = {
            "modes": modes,
            "profile_output_dir": profile_output_dir,
            "capture_enabled_for_nc": capture_enabled_for_nc,
            "max_events_per_nc": max_events_per_nc,
            "correlate_device_time": correlate_device_time,
        }


class ConfigWithoutCorrelation:
    def __init__(
        self, modes: list[Any], profile_output_dir: str, capture_enabled_for_nc: str = "all"
    ) -> None:
        self.kwargs = {
            "modes": modes,
            "profile_output_dir": profile_output_dir,
            "capture_enabled_for_nc": capture_enabled_for_nc,
        }


class KwargsConfigRejecting:
    """Signature cannot tell (``**kwargs``); rejects the keyword at call time."""

    def __init__(self, **kwargs: Any) -> None:
        if "correlate_device_time" in kwargs:
            raise TypeError("__init__() got an unexpected keyword argument 'correlate_device_time'")
        self.kwargs = kwargs


class KwargsConfigAccepting:
    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs


class Exporter:
    def __init__(self, cfg: Any) -> None:
        self.cfg = cfg
        self.exported: list[Any] = []

    def export_trace(self, prof: Any) -> None:
        self.exported.append(prof)


def standin(config_cls: type) -> types.ModuleType:
    mod = types.ModuleType("torch_neuronx.profiling")
    mod.NeuronConfig = config_cls  # type: ignore[attr-defined]
    mod.ProfileMode = ProfileMode  # type: ignore[attr-defined]
    mod.NeuronProfiler = Exporter  # type: ignore[attr-defined]
    return mod


pytestmark = pytest.mark.standin


def test_documented_config_with_correlation() -> None:
    cfg, correlated = build_neuron_config(standin(ConfigWithCorrelation), output_dir="/tmp/o")
    assert correlated is True
    assert cfg.kwargs == {
        "modes": [ProfileMode.DEVICE, ProfileMode.RUNTIME],
        "profile_output_dir": "/tmp/o",
        "capture_enabled_for_nc": "0",
        "max_events_per_nc": None,
        "correlate_device_time": True,
    }


@pytest.mark.parametrize(
    ("config_cls", "correlated"),
    [
        (ConfigWithoutCorrelation, False),
        (KwargsConfigRejecting, False),
        (KwargsConfigAccepting, True),
    ],
)
def test_correlation_is_feature_detected(config_cls: type, correlated: bool) -> None:
    cfg, got = build_neuron_config(standin(config_cls), output_dir="/o", max_events_per_nc=None)
    assert got is correlated
    assert ("correlate_device_time" in cfg.kwargs) is correlated
    assert cfg.kwargs["capture_enabled_for_nc"] == "0"


def test_unrelated_type_error_is_not_swallowed() -> None:
    class Broken:
        def __init__(self, **kwargs: Any) -> None:
            raise TypeError("modes must be a list")

    with pytest.raises(TypeError, match="modes must be a list"):
        build_neuron_config(standin(Broken), output_dir="/o")


def test_modes_are_configurable_and_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    cfg, _ = build_neuron_config(
        standin(ConfigWithCorrelation), output_dir="/o", modes=["runtime"], max_events_per_nc=10
    )
    assert cfg.kwargs["modes"] == [ProfileMode.RUNTIME]
    assert cfg.kwargs["max_events_per_nc"] == 10
    with pytest.raises(UsageError, match="unknown Neuron profile mode 'DEVIC'"):
        build_neuron_config(standin(ConfigWithCorrelation), output_dir="/o", modes=["DEVIC"])
    monkeypatch.setenv(MODES_ENV, "RUNTIME,CPU_UTIL")
    assert NeuronBackend().modes == ("RUNTIME", "CPU_UTIL")


def test_profiler_kwargs_follow_the_documented_api() -> None:
    backend = NeuronBackend()
    kwargs = backend.profiler_kwargs("/tmp/trace", profiling=standin(ConfigWithCorrelation))
    assert set(kwargs) == {"experimental_config", "on_trace_ready"}
    assert kwargs["experimental_config"].kwargs["profile_output_dir"] == "/tmp/trace"
    exporter = kwargs["on_trace_ready"].__self__
    assert isinstance(exporter, Exporter) and exporter.cfg is kwargs["experimental_config"]
    assert backend.activities() == [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]
    assert backend.device == "neuron" and backend.min_warmup >= 3
    assert backend.device_time_is_cpu is False
    # Passed and accepted, but nothing shows it works until device time arrives in
    # key_averages(): an option the C++ session does not know is dropped there (audit).
    assert backend.describe()["correlate_device_time"] == "unknown"
    backend.note_key_averages(False)
    assert backend.describe()["correlate_device_time"] == "unknown"
    backend.note_key_averages(True)
    assert backend.describe()["correlate_device_time"] == "yes"
    assert backend.device_time_source == "key_averages"


def test_capture_hint_names_missing_correlation() -> None:
    backend = NeuronBackend()
    backend.profiler_kwargs("/t", profiling=standin(ConfigWithoutCorrelation))
    hint = backend.capture_hint() or ""
    assert hint.startswith("key_averages: no device time (this NeuronConfig did not take")
    assert "correlate_device_time" in hint and "neuron-explorer" in hint


def test_missing_torch_neuronx_is_a_clear_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch_neuronx", None)  # import raises ImportError
    backend = NeuronBackend()
    assert backend.is_available() is False
    assert backend.unavailable_reason() == "torch_neuronx: absent (torch_neuronx is not installed)"
    with pytest.raises(BackendUnavailable) as info:
        get_backend("neuron")
    assert info.value.hint == INSTALL_HINT
    assert "TorchNeuron" in INSTALL_HINT and "Trn2/Trn3" in INSTALL_HINT
    assert "XLA-based and cannot be used" in INSTALL_HINT
    assert "Inferentia" not in INSTALL_HINT and "trn1" not in INSTALL_HINT


def test_pypi_placeholder_package_is_a_clear_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pkg = tmp_path / "torch_neuronx"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        'raise ImportError("WRONG PACKAGE: torch-neuronx is not on PyPI;'
        ' use the Neuron repository")\n'
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "torch_neuronx", raising=False)
    module, reason = import_neuron_profiling()
    assert module is None
    assert reason is not None and "WRONG PACKAGE" in reason
    with pytest.raises(BackendUnavailable, match="WRONG PACKAGE"):
        get_backend("neuron")


def test_release_without_native_profiling_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    top = types.ModuleType("torch_neuronx")
    prof = types.ModuleType("torch_neuronx.profiling")
    monkeypatch.setitem(sys.modules, "torch_neuronx", top)
    monkeypatch.setitem(sys.modules, "torch_neuronx.profiling", prof)
    module, reason = import_neuron_profiling()
    assert module is None and reason is not None and "NeuronConfig" in reason


def test_auto_never_picks_an_unavailable_neuron(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch_neuronx", None)
    assert get_backend("auto").name in ("cuda", "cpu")


def _xla_like(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pip/DLAMI torch-neuronx 2.x: imports, has torch_neuronx.experimental, no profiling."""
    top = types.ModuleType("torch_neuronx")
    top.__version__ = "2.9.0.2.15.32035"  # type: ignore[attr-defined]
    top.__path__ = []  # type: ignore[attr-defined]
    exp = types.ModuleType("torch_neuronx.experimental")
    monkeypatch.setitem(sys.modules, "torch_neuronx", top)
    monkeypatch.setitem(sys.modules, "torch_neuronx.experimental", exp)
    monkeypatch.setitem(sys.modules, "torch_neuronx.profiling", None)


def test_xla_torch_neuronx_is_named_and_the_hint_says_what_is_needed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from neuronasv.measure.neuron_build import detect_neuron_build, what_is_needed

    _xla_like(monkeypatch)
    build = detect_neuron_build()
    assert build.flavour == "xla" and not build.usable
    assert build.module_version == "2.9.0.2.15.32035"
    assert "torch_neuronx.experimental" in build.detail
    needed = what_is_needed(build) or ""
    assert needed.startswith("this is the PyTorch/XLA torch-neuronx")
    assert "TorchNeuron" in needed
    backend = NeuronBackend()
    assert backend.is_available() is False
    assert (backend.unavailable_reason() or "").startswith("torch_neuronx: xla (PyTorch/XLA")
    assert backend.install_hint() == needed
    assert backend.describe()["torch_neuronx_flavour"] == "xla"


def test_native_build_is_usable_only_with_torch_2_10(monkeypatch: pytest.MonkeyPatch) -> None:
    import neuronasv.measure.neuron_build as NB

    top = types.ModuleType("torch_neuronx")
    top.__version__ = "0.1.0"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch_neuronx", top)
    monkeypatch.setitem(sys.modules, "torch_neuronx.profiling", standin(ConfigWithCorrelation))
    build = NB.detect_neuron_build()
    assert build.flavour == "native" and build.torch_ok and build.usable  # torch 2.13 here
    assert NB.what_is_needed(build) is None
    monkeypatch.setattr(NB, "_torch_version", lambda: ("2.9.1", False))
    old = NB.detect_neuron_build()
    assert old.flavour == "native" and not old.usable
    assert "needs PyTorch >= 2.10" in (NB.what_is_needed(old) or "")


def test_neff_cache_dir_is_passed_where_accepted() -> None:
    class WithNeff(ConfigWithCorrelation):
        def __init__(self, *a: Any, neff_cache_dir: str | None = None, **kw: Any) -> None:
            super().__init__(*a, **kw)
            self.kwargs["neff_cache_dir"] = neff_cache_dir

    backend = NeuronBackend()
    kwargs = backend.profiler_kwargs("/tmp/t", profiling=standin(WithNeff))
    assert kwargs["experimental_config"].kwargs["neff_cache_dir"] == "/tmp/t"
    # A build without the parameter still gets a config (and no neff_cache_dir).
    kwargs = backend.profiler_kwargs("/tmp/t", profiling=standin(ConfigWithCorrelation))
    assert "neff_cache_dir" not in kwargs["experimental_config"].kwargs


def test_correlation_is_read_back_and_a_silently_ignored_option_is_not_taken() -> None:
    class Ignoring:
        """Takes **kwargs, keeps its own attribute, ignores what it does not know."""

        def __init__(self, **kwargs: Any) -> None:
            self.kwargs = kwargs
            self.correlate_device_time = False

    class Keeping:
        def __init__(self, **kwargs: Any) -> None:
            self.kwargs = kwargs
            self.correlate_device_time = kwargs.get("correlate_device_time", False)

    b = NeuronBackend()
    b.profiler_kwargs("/t", profiling=standin(Ignoring))
    assert b.correlated is False and b.correlation_read_back == "no"
    assert "did not take correlate_device_time (read back: no)" in (b.capture_hint() or "")
    assert b.describe()["correlate_device_time"] == "no"
    b.profiler_kwargs("/t", profiling=standin(Keeping))
    assert b.correlated is True and b.correlation_read_back == "yes"
    b.profiler_kwargs("/t", profiling=standin(KwargsConfigAccepting))
    # Passed, but the class keeps no attribute to read back: on, and said to be unconfirmed.
    assert b.correlated is True and b.correlation_read_back == "unknown"
    assert b.describe()["correlate_device_time_read_back"] == "unknown"
