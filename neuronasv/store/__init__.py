"""Store stage: asv results (+ sidecars) on disk and in git.

Modules (imported by name; this package imports nothing heavy so that ``import
neuronasv.store.history`` stays cheap):

- :mod:`neuronasv.store.asvrun` — ``neuronasv run``: a git worktree per commit, asv with
  ``--set-commit-hash`` and ``--record-samples``, complete machine info, sidecars.
- :mod:`neuronasv.store.machine` — asv machine information (arch, cpu, ram, ...).
- :mod:`neuronasv.store.asvconf` — the one reader of ``asv.conf.json``.
- :mod:`neuronasv.store.asvresults` — the one reader of asv's results format.
- :mod:`neuronasv.store.git` — the one git gateway (worktrees, commit order, plumbing).
- :mod:`neuronasv.store.history` — results folder -> ``model.History``.
- :mod:`neuronasv.store.gitstore` — the results branch.
"""

from __future__ import annotations

__all__: list[str] = []
