"""Store stage: asv results (+ sidecars) on disk and in git.

Modules (imported by name; this package imports nothing heavy so that ``import
neuronasv.store.history`` stays cheap):

- :mod:`neuronasv.store.machine` — asv machine information (arch, cpu, ram, ...).
- :mod:`neuronasv.store.asvconf` — the one reader of ``asv.conf.json``.
- :mod:`neuronasv.store.asvresults` — the one reader of asv's results format.
- :mod:`neuronasv.store.asvjson` — its JSON decode (msgspec with a NaN pre-pass).
- :mod:`neuronasv.store.git` — the one git gateway (worktrees, commit order, plumbing).
- :mod:`neuronasv.store.history` — results folder -> ``model.History``.
- :mod:`neuronasv.store.gitstore` — the results branch.
- :mod:`neuronasv.store.suite` — the old name of :func:`neuronasv.suite.build_suite`, kept
  for suites written by an earlier ``neuronasv init`` (the suite stage is
  :mod:`neuronasv.suite`, below this one).

Running asv and checking out commits is the run stage (:mod:`neuronasv.run`).
"""

from __future__ import annotations

__all__: list[str] = []
