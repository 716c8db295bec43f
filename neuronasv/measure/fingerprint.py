"""The environment fingerprint stored with every profile: what could change a timing.

Keys are fixed (``FINGERPRINT_KEYS``) so the analysis can name what changed between two
runs ("torch 2.13.0 -> 2.14.0"); a value is ``"none"`` when the thing is absent.

``host`` is the machine's host name (``NEURONASV_HOST_ID`` overrides it, e.g. to a stable
runner label or ``hidden`` where host names must not be published). What only a backend
knows how to read is its probe (``Backend.fingerprint_fields``, in its own file of
:mod:`neuronasv.measure.backends`): on CUDA the driver (``nvidia-smi``) and the GPU's name;
on the neuron backend ``torch_neuronx_flavour`` (``native`` TorchNeuron or the PyTorch/XLA
one, :mod:`neuronasv.measure.neuron_build`), ``neuron_runtime`` (the
``aws-neuronx-runtime-lib`` package), ``nki``, ``driver`` (the Neuron kernel driver), and
keys only its fingerprint has (``Backend.fingerprint_extra_keys``: the tool and trace
versions, so the CPU and CUDA fingerprints keep their keys); on the CPU the CPU model is
the device model.
"""

from __future__ import annotations

import importlib.metadata
import platform
import shutil
import socket
from pathlib import Path

from neuronasv import env
from neuronasv.measure.backends.base import Backend, Runner
from neuronasv.proc import run_process

__all__ = [
    "FINGERPRINT_KEYS",
    "NONE",
    "collect_fingerprint",
    "dist_version",
    "first_line",
    "host_id",
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


def first_line(cmd: list[str]) -> str | None:
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


def dist_version(*names: str) -> str:
    """The installed version of the first distribution of ``names`` found, else ``none``."""
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


def host_id() -> str:
    """``NEURONASV_HOST_ID`` or the host name."""
    return env.HOST_ID.read() or socket.gethostname() or NONE


def collect_fingerprint(backend: Backend, *, run: Runner = first_line) -> dict[str, str]:
    """Versions and hardware facts for ``backend``'s environment.

    Args:
        backend: the backend the profile ran on.
        run: command runner returning the first stdout line or None (injected in tests).

    Returns:
        A dict with exactly :data:`FINGERPRINT_KEYS` and the backend's
        ``fingerprint_extra_keys``; absent things read ``"none"``.
    """
    import torch

    fp = dict.fromkeys((*FINGERPRINT_KEYS, *backend.fingerprint_extra_keys), NONE)
    fp["backend"] = backend.name
    fp["python"] = platform.python_version()
    fp["torch"] = str(torch.__version__)
    fp["torch_neuronx"] = dist_version("torch-neuronx", "torch_neuronx")
    fp["neuronx_cc"] = dist_version("neuronx-cc", "neuronx_cc")
    fp["cuda"] = str(torch.version.cuda) if torch.version.cuda else NONE
    fp["cpu_model"] = _cpu_model()
    fp["platform"] = platform.platform()
    fp["host"] = host_id()
    fp.update(backend.fingerprint_fields(fp, run=run))
    return {k: (str(v).strip() or NONE) for k, v in fp.items()}
