"""Run stage: everything that starts processes and checks out commits.

Modules (imported by name; nothing heavy here):

- :mod:`neuronasv.run.asvrun` — ``neuronasv run``: a git worktree per commit, asv with
  ``--set-commit-hash`` and ``--record-samples``, complete machine info, sidecars.
- :mod:`neuronasv.run.prepass` — the one-process profile of a commit's suite before asv.
- :mod:`neuronasv.run.instrrun` — the callgrind pass of ``--metrics`` (the registry's
  ``run_pass``, :mod:`neuronasv.metrics`): one callgrind process per commit
  (:mod:`neuronasv.run.instrpass` runs inside it), CPU only.
- :mod:`neuronasv.run.worktree` — confirm's measurement: base and head as git worktrees,
  re-profiled with ``python -m neuronasv profile``.

``analyse`` stays pure: it takes the measurements through an injected runner.
"""

from __future__ import annotations

__all__: list[str] = []
