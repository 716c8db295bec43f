"""Backends: where a workload runs and how its device time is captured.

:func:`get_backend` picks one by name or, with ``"auto"``, the first available in order of
preference: ``neuron``, then ``cuda``, then ``cpu`` (always available; there "device time"
is self CPU time).
"""

from __future__ import annotations

from neuronasv.errors import BackendUnavailable, UsageError
from neuronasv.measure.backends.base import Backend, TraceHook
from neuronasv.measure.backends.cpu import CpuBackend
from neuronasv.measure.backends.cuda import CudaBackend
from neuronasv.measure.backends.neuron import NeuronBackend

__all__ = [
    "BACKEND_NAMES",
    "Backend",
    "CpuBackend",
    "CudaBackend",
    "NeuronBackend",
    "TraceHook",
    "all_backends",
    "available_backends",
    "backend_named",
    "get_backend",
]

#: Preference order for ``auto``.
BACKEND_NAMES: tuple[str, ...] = ("neuron", "cuda", "cpu")


def all_backends() -> list[Backend]:
    """One fresh instance of every backend, in order of preference (for ``doctor``)."""
    return [NeuronBackend(), CudaBackend(), CpuBackend()]


def available_backends() -> list[str]:
    """Names of the backends that can run here, in order of preference."""
    return [b.name for b in all_backends() if b.is_available()]


def backend_named(name: str) -> Backend:
    """A fresh instance of the backend called ``name``, available here or not (what a
    backend *is*: its roof, its clock; :func:`get_backend` to run on it).

    Raises:
        UsageError: an unknown name.
    """
    key = (name or "").strip().lower()
    for backend in all_backends():
        if backend.name == key:
            return backend
    raise UsageError(f"unknown backend {name!r} (choose {', '.join(BACKEND_NAMES)})")


def get_backend(name: str = "auto") -> Backend:
    """The backend called ``name``, or the preferred available one for ``"auto"``.

    Raises:
        UsageError: an unknown name.
        BackendUnavailable: the named backend cannot run here (message says why; hint says
            what to install).
    """
    key = (name or "auto").strip().lower()
    if key == "auto":
        for backend in all_backends():
            if backend.is_available():
                return backend
        raise BackendUnavailable("no backend is available (not even the CPU)")  # pragma: no cover
    by_name = {b.name: b for b in all_backends()}
    found = by_name.get(key)
    if found is None:
        raise UsageError(
            f"unknown backend {name!r} (choose auto, {', '.join(BACKEND_NAMES)})"
        )
    if not found.is_available():
        raise BackendUnavailable(
            f"the {key} backend is unavailable: {found.unavailable_reason()}",
            hint=found.install_hint(),
        )
    return found
