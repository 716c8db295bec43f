"""Which torch-neuronx is installed, and what the neuron backend needs that it lacks.

Two different products share the distribution name ``torch-neuronx`` (aws-neuron-sdk
``frameworks/torch/about/index.rst``: TorchNeuron "retains the same Python package name"):

* **native** — *TorchNeuron*, the PyTorch-native backend: device ``neuron`` through
  PrivateUse1, ``torch.compile(backend="neuron")``, ``torch_neuronx.profiling`` with
  ``NeuronConfig`` / ``ProfileMode`` / ``NeuronProfiler``, NKI through
  ``torch_neuronx.nki`` / ``nki_op``. Trn2 and Trn3 only, PyTorch >= 2.10, a closed beta
  as of Neuron SDK 2.32 (``frameworks/torch/pytorch-native-overview.rst``). This is what
  the neuron backend uses.
* **xla** — the PyTorch/XLA ``torch-neuronx`` 2.x from the Neuron pip repository and the
  DLAMI venvs (``/opt/aws_neuronx_venv_pytorch_2_9``): device ``xla``, profiling through
  ``torch_neuronx.experimental.profiler``; none of the above exists. Not supported here.
* **placeholder** — the PyPI package ``torch-neuronx`` 1.0, whose import raises.
* **absent** / **broken** — not installed / importing it failed otherwise.

:func:`detect_neuron_build` tells them apart without touching a device, and
:func:`what_is_needed` says in one sentence what to do. Tested against stand-in modules;
unverified on a Trainium host.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

__all__ = [
    "MIN_TORCH",
    "NATIVE_HINT",
    "NeuronBuild",
    "detect_neuron_build",
    "what_is_needed",
]

#: TorchNeuron's PyTorch floor (pytorch-native-overview.rst: "PyTorch 2.10").
MIN_TORCH = (2, 10)

NATIVE_HINT = (
    "the neuron backend needs TorchNeuron, the PyTorch-native torch-neuronx (device"
    " 'neuron', torch_neuronx.profiling; PyTorch >= 2.10; Trn2/Trn3 instances; a closed"
    " beta as of Neuron SDK 2.32: see github.com/aws-neuron/torch-neuronx and the Neuron"
    " docs 'TorchNeuron overview'). The pip/DLAMI torch-neuronx 2.x is PyTorch/XLA-based"
    " and cannot be used; the PyPI package of that name is a placeholder"
)

Importer = Callable[[str], ModuleType]


@dataclass(frozen=True)
class NeuronBuild:
    """What :func:`detect_neuron_build` found.

    Attributes:
        flavour: ``native``, ``xla``, ``placeholder``, ``absent`` or ``broken``.
        version: the distribution's version (``importlib.metadata``), or ``none``.
        module_version: ``torch_neuronx.__version__`` when it imported, or ``none``.
        torch: the installed torch version.
        torch_ok: torch meets :data:`MIN_TORCH` (native needs it).
        detail: the evidence, one sentence (missing names, the import error).
    """

    flavour: str
    version: str
    module_version: str
    torch: str
    torch_ok: bool
    detail: str

    @property
    def usable(self) -> bool:
        return self.flavour == "native" and self.torch_ok

    def to_json(self) -> dict[str, object]:
        return {
            "flavour": self.flavour,
            "version": self.version,
            "module_version": self.module_version,
            "torch": self.torch,
            "torch_ok": self.torch_ok,
            "detail": self.detail,
            "usable": self.usable,
        }


def _dist_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "none"


def _torch_version() -> tuple[str, bool]:
    try:
        import torch
    except ImportError:
        return "none", False
    text = str(torch.__version__)
    m = re.match(r"(\d+)\.(\d+)", text)
    ok = bool(m) and (int(m.group(1)), int(m.group(2))) >= MIN_TORCH  # type: ignore[union-attr]
    return text, ok


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def detect_neuron_build(*, importer: Importer = importlib.import_module) -> NeuronBuild:
    """Classify the installed torch-neuronx (imports it; touches no device)."""
    version = _dist_version("torch-neuronx")
    torch_v, torch_ok = _torch_version()

    def build(flavour: str, detail: str, module_version: str = "none") -> NeuronBuild:
        return NeuronBuild(flavour, version, module_version, torch_v, torch_ok, detail)

    try:
        top = importer("torch_neuronx")
    except ImportError as exc:
        text = _first_line(exc)
        if isinstance(exc, ModuleNotFoundError) and exc.name == "torch_neuronx":
            return build("absent", "torch_neuronx is not installed")
        if "wrong package" in text.lower() or version.startswith("1.0"):
            return build("placeholder", f"the PyPI placeholder package: {text}")
        return build("broken", f"import torch_neuronx failed: {text}")
    except Exception as exc:
        return build("broken", f"import torch_neuronx failed: {type(exc).__name__}: {exc}")
    module_version = str(getattr(top, "__version__", "none"))
    try:
        prof = importer("torch_neuronx.profiling")
    except ImportError as exc:
        prof = None
        prof_error = _first_line(exc)
    except Exception as exc:
        prof = None
        prof_error = f"{type(exc).__name__}: {exc}"
    if prof is not None:
        missing = [n for n in ("NeuronConfig", "ProfileMode", "NeuronProfiler")
                   if not hasattr(prof, n)]  # fmt: skip
        if not missing:
            detail = "torch_neuronx.profiling has NeuronConfig, ProfileMode, NeuronProfiler"
            if not torch_ok:
                detail += f"; but torch {torch_v} is older than {MIN_TORCH[0]}.{MIN_TORCH[1]}"
            return build("native", detail, module_version)
        prof_error = "torch_neuronx.profiling lacks " + ", ".join(missing)
    xla_markers = [
        m for m in ("torch_neuronx.xla_impl", "torch_neuronx.experimental", "torch_xla")
        if _has_module(m, importer)
    ]  # fmt: skip
    if xla_markers or (version.startswith("2.") and not torch_ok):
        return build(
            "xla",
            f"PyTorch/XLA torch-neuronx ({prof_error}; found {', '.join(xla_markers) or 'none'})",
            module_version,
        )
    return build("broken", f"torch_neuronx imported but {prof_error}", module_version)


def _has_module(name: str, importer: Importer) -> bool:
    """Whether ``name`` is importable, without importing it where that can be avoided."""
    if sys.modules.get(name) is not None:
        return True
    try:
        if importer is importlib.import_module:
            return importlib.util.find_spec(name) is not None
        importer(name)
        return True
    except Exception:
        return False


def what_is_needed(b: NeuronBuild) -> str | None:
    """One sentence: what to install or change for the neuron backend (None: nothing)."""
    if b.usable:
        return None
    if b.flavour == "native":
        return (
            f"TorchNeuron is installed but torch is {b.torch}; it needs PyTorch >="
            f" {MIN_TORCH[0]}.{MIN_TORCH[1]} (install the torch version TorchNeuron was built"
            " for)"
        )
    if b.flavour == "xla":
        return (
            f"this is the PyTorch/XLA torch-neuronx {b.version} (device 'xla', no"
            " torch_neuronx.profiling); " + NATIVE_HINT
        )
    if b.flavour == "placeholder":
        return "the installed torch-neuronx is the PyPI placeholder; uninstall it; " + NATIVE_HINT
    if b.flavour == "absent":
        return NATIVE_HINT
    return f"torch_neuronx is installed but unusable ({b.detail}); " + NATIVE_HINT
