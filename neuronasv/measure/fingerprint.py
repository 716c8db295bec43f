"""The environment fingerprint stored with every profile: what could change a timing.

Keys are fixed (``FINGERPRINT_KEYS``) so the analysis can name what changed between two
runs ("torch 2.13.0 -> 2.14.0"); a value is ``"none"`` when the thing is absent.

``host`` is the machine's host name (``NEURONASV_HOST_ID`` overrides it, e.g. to a stable
runner label or ``hidden`` where host names must not be published). On the neuron backend
``torch_neuronx_flavour`` says which torch-neuronx it is (``native`` TorchNeuron or the
PyTorch/XLA one, :mod:`neuronasv.measure.neuron_build`), ``neuron_runtime`` the Neuron
runtime library version (``aws-neuronx-runtime-lib`` package), ``nki`` the NKI compiler
package, ``driver`` the Neuron kernel driver; and only there (:data:`NEURON_CAPTURE_KEYS`,
so the CPU and CUDA fingerprints keep their keys) ``neuron_explorer`` (the tool's
``--version``), ``ntff_version``, ``neuron_profile_runtime`` and ``neuron_compiler`` (the
last device profile's Metadata; ``none`` before a capture, e.g. in ``neuronasv run``'s
fingerprint, which is taken before the suite runs — each profile's canary state carries
them, ``end.neuron.*``): tool/trace skew shows as a changed value, not a crash.
"""

from __future__ import annotations

import importlib.metadata
import platform
import shutil
import socket
from collections.abc import Callable
from pathlib import Path

from neuronasv import env
from neuronasv.measure.backends.base import Backend
from neuronasv.measure.backends.cuda import CudaBackend
from neuronasv.measure.backends.neuron import NeuronBackend
from neuronasv.proc import run_process

__all__ = [
    "FINGERPRINT_KEYS",
    "NEURON_CAPTURE_KEYS",
    "NONE",
    "collect_fingerprint",
    "host_id",
    "instance_type",
]

FINGERPRINT_KEYS: tuple[str, ...] = (
    "backend",
    "python",
    "torch",
    "torch_neuronx",
    "neuronx_cc",
    "cuda",
    "driver",
    "device_model",
    "cpu_model",
    "platform",
    "host",
    "torch_neuronx_flavour",
    "neuron_runtime",
    "nki",
)
NONE = "none"
#: Keys only the neuron backend's fingerprint has (the tool and the trace it reads).
NEURON_CAPTURE_KEYS: tuple[str, ...] = (
    "neuron_explorer",
    "ntff_version",
    "neuron_profile_runtime",
    "neuron_compiler",
)

Runner = Callable[[list[str]], str | None]


def _run(cmd: list[str]) -> str | None:
    """First line of a command's stdout, or None (missing tool, error, timeout)."""
    if shutil.which(cmd[0]) is None:
        return None
    try:
        out = run_process(cmd, timeout=10, text=True)
    except OSError:
        return None
    if out.returncode != 0:
        return None
    line = str(out.stdout).strip().splitlines()
    return line[0].strip() if line else None


def _dist_version(*names: str) -> str:
    for name in names:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return NONE


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.lower().startswith(("model name", "hardware")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or NONE


def instance_type() -> str | None:
    # EC2 (Trainium hosts) exposes the instance type as the DMI product name.
    try:
        text = Path("/sys/devices/virtual/dmi/id/product_name").read_text().strip()
    except OSError:
        return None
    return text or None


def _neuron_driver() -> str | None:
    try:
        text = Path("/sys/module/neuron/version").read_text().strip()
    except OSError:
        return None
    return text or None


def _neuron_runtime(run: Runner) -> str | None:
    """Neuron runtime version from the OS package (Debian/Ubuntu, then RPM)."""
    return run(["dpkg-query", "-W", "-f=${Version}", "aws-neuronx-runtime-lib"]) or run(
        ["rpm", "-q", "--qf", "%{VERSION}", "aws-neuronx-runtime-lib"]
    )


def host_id() -> str:
    """``NEURONASV_HOST_ID`` or the host name."""
    return env.HOST_ID.read() or socket.gethostname() or NONE


def collect_fingerprint(backend: Backend, *, run: Runner = _run) -> dict[str, str]:
    """Versions and hardware facts for ``backend``'s environment.

    Args:
        backend: the backend the profile ran on.
        run: command runner returning the first stdout line or None (injected in tests).

    Returns:
        A dict with exactly :data:`FINGERPRINT_KEYS` (and :data:`NEURON_CAPTURE_KEYS` on
        the neuron backend); absent things read ``"none"``.
    """
    import torch

    described = backend.describe()
    cpu_model = _cpu_model()
    fp = dict.fromkeys(FINGERPRINT_KEYS, NONE)
    fp["backend"] = backend.name
    fp["python"] = platform.python_version()
    fp["torch"] = str(torch.__version__)
    fp["torch_neuronx"] = _dist_version("torch-neuronx", "torch_neuronx")
    fp["neuronx_cc"] = _dist_version("neuronx-cc", "neuronx_cc")
    fp["cuda"] = str(torch.version.cuda) if torch.version.cuda else NONE
    fp["cpu_model"] = cpu_model
    fp["platform"] = platform.platform()
    fp["host"] = host_id()
    if isinstance(backend, CudaBackend):
        query = ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]
        fp["driver"] = run(query) or NONE
        fp["device_model"] = described.get("device_model", NONE)
    elif isinstance(backend, NeuronBackend):
        fp["torch_neuronx"] = described.get("torch_neuronx", fp["torch_neuronx"])
        fp["driver"] = _neuron_driver() or NONE
        fp["device_model"] = instance_type() or "neuron"
        fp["neuron_runtime"] = _neuron_runtime(run) or NONE
        fp["nki"] = _dist_version("nki")
        fp["torch_neuronx_flavour"] = described.get("torch_neuronx_flavour", NONE)
        for key in NEURON_CAPTURE_KEYS:
            fp[key] = described.get(key, NONE)
    else:
        fp["device_model"] = cpu_model
    return {k: (str(v).strip() or NONE) for k, v in fp.items()}
