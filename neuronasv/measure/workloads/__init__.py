"""Workloads: pure torch code the profiler runs, and the registry that names them.

A :class:`Workload` builds a zero-argument *step function* with its inputs already bound
(seeded, on the target device), so the profiler times only the work itself. Workloads
register themselves by name (``rmsnorm.naive``); the CLI, the asv suite and the tests find
them through :func:`get` / :func:`all_workloads`.

Other modules add workloads by calling :func:`register` at import time and appending their
module name to :data:`BUILTIN_MODULES` (loaded lazily, on the first registry lookup, so that
``import neuronasv.measure.workloads`` stays cheap and import cycles cannot happen).

Shapes are strings such as ``"4x512"`` (:func:`parse_shape`); dtypes are names such as
``"bfloat16"`` (:func:`parse_dtype`).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from neuronasv import dtypes, env
from neuronasv.errors import UsageError

if TYPE_CHECKING:
    import torch

    from neuronasv.measure.backends.base import Backend

__all__ = [
    "BUILTIN_MODULES",
    "USER_MODULES_ENV",
    "Workload",
    "all_workloads",
    "dtype_name",
    "get",
    "names",
    "parse_dtype",
    "parse_shape",
    "register",
    "shape_label",
]

#: Modules (under ``neuronasv.measure.workloads``) whose import registers workloads.
BUILTIN_MODULES: list[str] = ["rmsnorm", "nki_rmsnorm", "transformer"]

_SHAPE_RE = re.compile(r"^[1-9][0-9]*(x[1-9][0-9]*)*\Z")
# Generous but finite: a typo such as 4x5120000000 should be an error, not an OOM.
_MAX_ELEMENTS = 1 << 34


BuildFn = Callable[[tuple[int, ...], "torch.dtype", str, int], Callable[[], object]]
SkipFn = Callable[["Backend"], "str | None"]


@dataclass(frozen=True)
class Workload:
    """A named piece of torch work the profiler can run.

    Attributes:
        name: unique name, ``<family>.<variant>`` (e.g. ``rmsnorm.naive``).
        description: one line for ``neuronasv profile --list`` and reports.
        default_shape: shape label used when none is given (``"4x512"``).
        build_fn: ``(shape, dtype, device, seed) -> step``; see :meth:`build`.
        compiled: True when the step function is ``torch.compile``-d (first calls compile).
        tags: free-form labels for selection (``("rmsnorm",)``, ``("transformer",)``).
        skip_fn: optional ``backend -> reason | None``; see :meth:`skip_reason`.
        default_dtype: dtype label used when none is given.
    """

    name: str
    description: str
    default_shape: str
    build_fn: BuildFn
    compiled: bool = False
    tags: tuple[str, ...] = ()
    skip_fn: SkipFn | None = None
    default_dtype: str = "bfloat16"

    def build(
        self, shape: tuple[int, ...], dtype: torch.dtype, device: str, seed: int
    ) -> Callable[[], object]:
        """Create seeded inputs on ``device`` and return a zero-argument step function.

        The step returns its output (so tests can check numerics). The first calls of a
        compiled workload compile; the profiler warms up before it measures.
        """
        return self.build_fn(shape, dtype, device, seed)

    def skip_reason(self, backend: Backend) -> str | None:
        """Why this workload cannot run on ``backend``, or None when it can."""
        return self.skip_fn(backend) if self.skip_fn is not None else None


_REGISTRY: dict[str, Workload] = {}
_loaded = False


#: Environment variable naming the user's own workload modules (comma list of importable
#: module names, e.g. ``mymodel.workloads``): imported after the built-ins, so
#: ``neuronasv profile --workload mymodel.attn`` finds what they register.
USER_MODULES_ENV = env.WORKLOADS.name


def _load_builtins() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for mod in BUILTIN_MODULES:
        importlib.import_module(f"{__name__}.{mod}")
    for mod in env.WORKLOADS.read():
        try:
            importlib.import_module(mod)
        except ImportError as exc:
            raise UsageError(
                f"{USER_MODULES_ENV} names {mod!r}, which cannot be imported: {exc}",
                hint="install its package, or run from the repository whose root holds it"
                " (the root is put on the import path: docs/getting-started.md)",
            ) from exc


def register(workload: Workload) -> Workload:
    """Add ``workload`` to the registry and return it.

    Registering the same name twice is an error unless it is the very same object (a
    module imported twice), so two workloads can never silently shadow each other.
    """
    existing = _REGISTRY.get(workload.name)
    if existing is not None and existing is not workload:
        raise ValueError(f"workload {workload.name!r} is already registered")
    if not re.fullmatch(r"[A-Za-z0-9_.\-]+", workload.name):  # no trailing newline
        raise ValueError(f"workload name {workload.name!r} must be [A-Za-z0-9_.-]+")
    parse_shape(workload.default_shape)
    _REGISTRY[workload.name] = workload
    return workload


def get(name: str) -> Workload:
    """The registered workload called ``name``; :class:`UsageError` lists the known ones."""
    _load_builtins()
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(_REGISTRY) or "none"
        raise UsageError(f"unknown workload {name!r} (known: {known})") from None


def all_workloads() -> list[Workload]:
    """All registered workloads, in registration order."""
    _load_builtins()
    return list(_REGISTRY.values())


def names() -> list[str]:
    """Names of all registered workloads, in registration order."""
    return [w.name for w in all_workloads()]


def parse_shape(text: str) -> tuple[int, ...]:
    """Parse ``"8x1024x4096"`` into ``(8, 1024, 4096)``.

    Raises:
        UsageError: on anything but positive integers joined by ``x``, or an absurd size.
    """
    cleaned = str(text).strip().lower().replace("×", "x")
    if not _SHAPE_RE.match(cleaned):
        raise UsageError(
            f"bad shape {text!r}: expected positive integers joined by 'x', e.g. 4x512"
        )
    dims = tuple(int(d) for d in cleaned.split("x"))
    total = 1
    for d in dims:
        total *= d
    if total > _MAX_ELEMENTS:
        raise UsageError(f"shape {text!r} has {total} elements, more than {_MAX_ELEMENTS}")
    return dims


def shape_label(dims: tuple[int, ...]) -> str:
    """Inverse of :func:`parse_shape`."""
    return "x".join(str(d) for d in dims)


def parse_dtype(text: str) -> torch.dtype:
    """Parse a dtype name (``bfloat16``, ``bf16``, ``float32``, ...) into a ``torch.dtype``."""
    import torch

    canonical = dtypes.workload_dtype(text)
    if canonical is None:
        raise UsageError(
            f"unknown dtype {text!r} (known: {', '.join(dtypes.workload_dtype_names())})"
        )
    dtype: torch.dtype = getattr(torch, canonical)
    return dtype


def dtype_name(text_or_dtype: str | torch.dtype) -> str:
    """Canonical label of a dtype (``bf16`` -> ``bfloat16``), as stored in results."""
    if isinstance(text_or_dtype, str):
        canonical = dtypes.workload_dtype(text_or_dtype)
        if canonical is None:
            parse_dtype(text_or_dtype)  # raises the one error wording
        return str(canonical)
    return str(text_or_dtype).removeprefix("torch.")
