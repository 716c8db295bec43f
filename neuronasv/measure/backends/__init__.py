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
    "backend_class",
    "backend_named",
    "capture_backend",
    "counts_instructions",
    "default_samples",
    "device_time_note",
    "get_backend",
    "is_accelerator",
]

#: Preference order for ``auto``.
BACKEND_NAMES: tuple[str, ...] = ("neuron", "cuda", "cpu")


def all_backends() -> list[Backend]:
    """One fresh instance of every backend, in order of preference (for ``doctor``)."""
    return [NeuronBackend(), CudaBackend(), CpuBackend()]


def available_backends() -> list[str]:
    """Names of the backends that can run here, in order of preference."""
    return [b.name for b in all_backends() if b.is_available()]


def backend_class(name: str | None) -> type[Backend] | None:
    """The class of the backend recorded as ``name`` (a fingerprint's ``backend``, a
    ``--backend``): what it is, asked without making one; None when it names none."""
    return {cls.name: cls for cls in (NeuronBackend, CudaBackend, CpuBackend)}.get(name or "")


def is_accelerator(name: str | None) -> bool:
    """``name`` runs on a device beside the host; an unknown name counts as one."""
    cls = backend_class(name)
    return cls is None or cls.accelerator


def counts_instructions(name: str | None) -> bool:
    """The exact axis (instruction counts) is taken on ``name`` (the CPU only)."""
    cls = backend_class(name)
    return cls is not None and cls.counts_instructions


def default_samples(name: str | None) -> int:
    """Samples per process when not told: ``name``'s; ``auto`` or no name is the CPU's
    (what a machine without a recorded backend ran on), an unknown name an accelerator's."""
    cls = backend_class(name) or (CpuBackend if name in (None, "", "auto") else Backend)
    return cls.default_samples


def device_time_note(name: str | None) -> str:
    """What "device time" is on ``name`` ("" = the device's own clock, or unknown)."""
    cls = backend_class(name)
    return cls.device_time_note if cls else ""


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


def capture_backend(name: str | None) -> NeuronBackend:
    """A fresh instance of the backend whose captures ``profile --from-capture`` replays
    (``auto``: the one that does); available here or not (replay needs no device).

    Raises:
        UsageError: ``name`` is another backend, or none.
    """
    key = (name or "auto").strip().lower()
    cls = NeuronBackend if key == "auto" else backend_class(key)
    if cls is None or not cls.replays_captures:
        raise UsageError(
            f"--from-capture reads a Neuron capture; the {key} backend has none to replay"
            f" (use --backend {NeuronBackend.name})"
        )
    return NeuronBackend()


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
