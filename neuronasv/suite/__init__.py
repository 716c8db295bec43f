"""Suite stage: the asv suite that turns measured workloads into asv benchmarks.

Between measuring (``measure``: a workload's profile) and storing (``store``: asv's results
on disk), asv runs a suite. This package is that suite's machinery; it runs inside asv's
processes and the pre-pass, so nothing here imports torch at module level.

- :mod:`neuronasv.suite.build` — ``build_suite``: one ``devtime_`` class per workload, its
  params fixed at import (the pre-pass's declaration, the op catalogue, the seed ops).
- :mod:`neuronasv.suite.feed` — what ``setup_cache`` returns: the pre-pass payload, or a
  profile taken there; the payload of one class (the pre-pass writes it).
- :mod:`neuronasv.suite.declare` — the suite's classes as the pre-pass found them, so asv's
  processes declare them without importing the user's workloads (or torch).
- :mod:`neuronasv.suite.usermodule` — the user's workloads module, imported the suite's way
  (the suite's file wins over a commit's own package).
- :mod:`neuronasv.suite.instr` — the ``instr_`` benchmarks (the callgrind pass's metric).
- :mod:`neuronasv.suite.catalogue` — the machine's op catalogue: the ``op`` params.

A suite module needs one line::

    from neuronasv.suite import build_suite
"""

from __future__ import annotations

from neuronasv.suite.build import build_suite

__all__ = ["build_suite"]
