"""``torch.profiler.profile`` without the torch.compile stack it imports for nothing.

Every profiler cycle runs ``_KinetoProfile.prepare_trace``, which asks
``hasattr(torch, "_inductor")`` to read ``inductor_config.triton.cudagraphs`` when inductor
is in use. Since torch made ``_dynamo``/``_inductor`` lazy modules, that ``hasattr`` *imports*
them (``torch.__getattr__``) whether or not anything was compiled: the RMSNorm pre-pass
went from 4.3 to 2.9 CPU s without it, and every ``neuronasv profile`` process confirm
starts per round and side saves the same. The check meant
"is inductor loaded?": :func:`profile` makes exactly that the answer — while the profiler
prepares a cycle, ``torch._inductor`` is missing unless it was already imported (a compiled
workload imports it when it compiles, and then the real check runs). Measurements are the
real profiler's; nothing else of torch changes.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["profile"]

_CLASS: Any = None


def _lean_class() -> Any:
    import torch
    from torch.profiler import profile as torch_profile

    class LeanProfile(torch_profile):
        def prepare_trace(self) -> None:
            if "torch._inductor" in sys.modules:
                super().prepare_trace()
                return
            lazy = torch.__dict__.get("__getattr__")

            def no_inductor(name: str) -> Any:
                if name == "_inductor":
                    raise AttributeError(name)
                if lazy is None:
                    raise AttributeError(name)
                return lazy(name)

            names = torch.__dict__  # a module's __getattr__ is looked up there, per miss
            names["__getattr__"] = no_inductor
            try:
                super().prepare_trace()
            finally:
                if lazy is None:
                    del names["__getattr__"]
                else:
                    names["__getattr__"] = lazy

    return LeanProfile


def profile(*args: Any, **kwargs: Any) -> Any:
    """A ``torch.profiler.profile`` (same arguments, same object) that leaves inductor alone."""
    global _CLASS
    if _CLASS is None:
        _CLASS = _lean_class()
    return _CLASS(*args, **kwargs)
