"""Python's cyclic garbage collector paused for a block of code, then as before.

Two places need it, for two reasons:

- loading a history (:mod:`neuronasv.store.history`): millions of small acyclic objects (a
  ``Point`` per value) that the collector would rescan over and over while they are made
  (1,000 commits x 1,000 series, ``bench/bench_publish.py``: 5.4 s with it off, 10.2 s on);
- the callgrind pass's counting (the collector of ``metrics.counted_by(CALLGRIND_PASS)``,
  :mod:`neuronasv.run.instrpass`): a collection that falls inside a counted window frees
  tensors there, whose native destructors are counted (the first ``aten::add_`` replay of
  ``rmsnorm.fused`` counted 1,917,329 with a collection in it, 22,808 without).

It is process-wide while the body runs, so it wraps exactly the work that needs it.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["no_cyclic_gc"]


@contextlib.contextmanager
def no_cyclic_gc() -> Iterator[None]:
    """The cyclic collector off for the body, then as before (the caller's state kept)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
