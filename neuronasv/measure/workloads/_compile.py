"""What every ``torch.compile`` workload shares: the compiler backend and its preconditions."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from neuronasv.measure.backends.base import Backend

__all__ = ["compile_backend", "compiled_skip_reason"]


def compile_backend(device: str) -> str:
    """``torch.compile`` backend for ``device``: its backend's (``neuron`` on Trainium),
    inductor for a device no backend claims."""
    from neuronasv.measure.backends import backend_for_device

    cls = backend_for_device(device)
    return cls.compile_backend if cls is not None else "inductor"


def compiled_skip_reason(backend: Backend) -> str | None:
    """Why a compiled workload cannot run on ``backend`` here (None = it can).

    Inductor needs a C++ compiler on the CPU and Triton on CUDA; saying so beats a long
    traceback from deep inside ``torch.compile``. The backend knows what it needs.
    """
    return backend.compile_skip_reason()
