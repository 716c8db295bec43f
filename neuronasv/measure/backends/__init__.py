"""Backends: where a workload runs and how its device time is captured.

Each backend is one file of this package, a subclass of :class:`Backend` that holds all
it knows (its canary kernel, fingerprint probes, roof, device state, how it looks present
without torch, ...). The backends are found the way asv finds its benchmark types: every
module of this package is imported (``pkgutil``) and the :class:`Backend` subclasses
defined in them are the backends, in the order of their ``auto_order`` — adding a backend
is adding its file; there is no table to keep.

:func:`get_backend` picks one by name or, with ``"auto"``, the first available in order of
preference: ``neuron``, then ``cuda``, then ``cpu`` (always available; there "device time"
is self CPU time).
"""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
from collections.abc import Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from neuronasv import env as neuronasv_env
from neuronasv.errors import BackendUnavailable, UsageError
from neuronasv.measure.backends.base import Backend, TraceHook
from neuronasv.measure.peaks import Peak, parse_override

if TYPE_CHECKING:
    from neuronasv.measure.backends.neuron import NeuronBackend

__all__ = [
    "BACKEND_NAMES",
    "PEAKS",
    "Backend",
    "TraceHook",
    "all_backends",
    "available_backends",
    "backend_class",
    "backend_classes",
    "backend_for_device",
    "backend_named",
    "capture_backend",
    "default_samples",
    "detected_backend_name",
    "device_time_note",
    "discover",
    "get_backend",
    "is_accelerator",
    "parse_peak_override",
    "peak_for",
    "takes",
]


def _subclasses(cls: type[Any]) -> Iterator[type[Any]]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def discover(package: str, path: Iterable[str]) -> tuple[type[Backend], ...]:
    """The backends of ``package`` (its folders ``path``): every module imported, then every
    named, concrete :class:`Backend` subclass defined in one of them, in ``auto`` order
    (then name).

    Raises:
        UsageError: two backends with one name (a copy of a file, a typo).
    """
    for info in pkgutil.iter_modules(list(path)):
        if not info.name.startswith("_"):
            importlib.import_module(f"{package}.{info.name}")
    found = sorted(
        {
            cls
            for cls in _subclasses(Backend)
            if cls.name
            and not inspect.isabstract(cls)
            and cls.__module__.startswith(f"{package}.")
        },
        key=lambda cls: (cls.auto_order, cls.name),
    )
    names = [cls.name for cls in found]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UsageError(f"two backends are called {', '.join(twice)} in {package}")
    return tuple(found)


_CLASSES: tuple[type[Backend], ...] = discover(__name__, __path__)

#: Preference order for ``auto``.
BACKEND_NAMES: tuple[str, ...] = tuple(cls.name for cls in _CLASSES)

#: Every backend's published roofs (``Backend.datasheet``), by table key.
PEAKS: Mapping[str, Peak] = MappingProxyType(
    {key: peak for cls in _CLASSES for key, peak in cls.datasheet.items()}
)


def backend_classes() -> tuple[type[Backend], ...]:
    """The backend classes, in order of preference."""
    return _CLASSES


def all_backends() -> list[Backend]:
    """One fresh instance of every backend, in order of preference (for ``doctor``)."""
    return [cls() for cls in _CLASSES]


def available_backends() -> list[str]:
    """Names of the backends that can run here, in order of preference."""
    return [b.name for b in all_backends() if b.is_available()]


def backend_class(name: str | None) -> type[Backend] | None:
    """The class of the backend recorded as ``name`` (a fingerprint's ``backend``, a
    ``--backend``): what it is, asked without making one; None when it names none."""
    return next((cls for cls in _CLASSES if cls.name == (name or "")), None)


def backend_for_device(device: str) -> type[Backend] | None:
    """The class whose device ``device`` (a torch device string, ``cuda:1``) is."""
    return next((cls for cls in _CLASSES if cls.uses_device(device)), None)


def detected_backend_name() -> str:
    """The preferred backend that looks installed here, judged without importing torch
    (``Backend.detected_without_torch``): Neuron when ``torch_neuronx`` is installed, CUDA
    when an NVIDIA device node exists, else the CPU."""
    return next((cls.name for cls in _CLASSES if cls.detected_without_torch()), "cpu")


def is_accelerator(name: str | None) -> bool:
    """``name`` runs on a device beside the host; an unknown name counts as one."""
    cls = backend_class(name)
    return cls is None or cls.accelerator


def takes(name: str | None, metric: str) -> bool:
    """``metric`` (a name of :mod:`neuronasv.metrics`) is taken on the backend recorded as
    ``name`` (``Backend.counts``); an unknown backend takes none."""
    cls = backend_class(name)
    return cls is not None and metric in cls.counts


def default_samples(name: str | None) -> int:
    """Samples per process when not told: ``name``'s; ``auto`` or no name is the host's
    (the backend that is no accelerator: what a machine without a recorded backend ran
    on), an unknown name an accelerator's."""
    if name in (None, "", "auto"):
        cls: type[Backend] = next(c for c in _CLASSES if not c.accelerator)
    else:
        cls = backend_class(name) or Backend
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
    cls = backend_class((name or "").strip().lower())
    if cls is None:
        raise UsageError(f"unknown backend {name!r} (choose {', '.join(BACKEND_NAMES)})")
    return cls()


def capture_backend(name: str | None) -> NeuronBackend:
    """A fresh instance of the backend whose captures ``profile --from-capture`` replays
    (``auto``: the one that does: Neuron's, read by its ``neuron-explorer``); available
    here or not (replay needs no device).

    Raises:
        UsageError: ``name`` is another backend, or none.
    """
    from neuronasv.measure.backends.neuron import NeuronBackend

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
    cls = backend_class(key)
    if cls is None:
        raise UsageError(
            f"unknown backend {name!r} (choose auto, {', '.join(BACKEND_NAMES)})"
        )
    found = cls()
    if not found.is_available():
        raise BackendUnavailable(
            f"the {key} backend is unavailable: {found.unavailable_reason()}",
            hint=found.install_hint(),
        )
    return found


def _named_roof(key: str) -> Peak | None:
    return next((p for cls in _CLASSES if (p := cls.named_roof(key)) is not None), None)


def parse_peak_override(text: str) -> Peak:
    """A ``NEURONASV_PEAK`` value: a backend's table key (``h100-pcie``) or alias
    (``trn2/nc``: one NeuronCore), or ``bw=GB/s,<dtype>=TFLOP/s,...``
    (:func:`neuronasv.measure.peaks.parse_override`).

    Raises:
        UsageError: naming the variable and the bad part.
    """
    known = [*PEAKS, *(alias for cls in _CLASSES for alias in cls.roof_aliases())]
    return parse_override(text, named=_named_roof, known=known)


def peak_for(
    backend: Backend,
    fingerprint: Mapping[str, str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    calibration: Peak | None = None,
) -> Peak | None:
    """The roof for ``backend`` on this machine, or None when unknown.

    ``NEURONASV_PEAK`` (a table key or ``bw=...,bfloat16=...``) first; else the backend's
    own (``backend.roof``): CUDA the datasheet entry of the fingerprint's ``device_model``,
    Neuron one logical NeuronCore of trn1/trn2, the CPU its calibration (``calibration``,
    else the file ``NEURONASV_PEAK_FILE`` names — never a measurement of its own, and none
    when it was measured with other threads than the suite's).

    Args:
        backend: a ``Backend``.
        fingerprint: :func:`neuronasv.measure.fingerprint.collect_fingerprint` output.
        env: environment (default ``os.environ``), injectable for tests.
        calibration: this machine's calibrated CPU peak
            (:func:`neuronasv.measure.calibration.read_calibration`).
    """
    env = os.environ if env is None else env
    override = neuronasv_env.PEAK.read(env)
    if override:
        return parse_peak_override(override)
    return backend.roof(fingerprint or {}, env=env, calibration=calibration)
