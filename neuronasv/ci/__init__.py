"""What the reusable workflows run: ``python -m neuronasv.ci STEP ...`` of the installed package.

An adopting repository vendors nothing: its workflows call ours (``workflow_call``), and
every step of ours runs a command of the installed ``neuronasv`` — ``neuronasv run``,
``neuronasv store``, ``neuronasv compare`` ... — or one of these steps, which chain the
same step functions (:mod:`neuronasv.steps`) in one process, the way ``ci/*.sh`` chained
the commands for this repository alone:

- ``plan`` — the pushed commit plus recent ones without stored results; the shard matrix,
  each shard with its asv machine name (:mod:`neuronasv.ci.flows`);
- ``pr-bench`` — the unprivileged PR measurement: merge-base and head, confirm, artifact;
- ``pr-comment`` — the privileged comment from the untrusted artifact
  (:mod:`neuronasv.ci.pr_comment`);
- ``analyse`` — change points per machine and the history site;
- ``issues`` — one regression issue per open change point (``neuronasv issues-sync``);
- ``bisect`` — open regressions over unmeasured commits (:mod:`neuronasv.ci.bisect_step`);
- ``traces`` — the flagged workloads' base and head traces into a folder;
- ``requirements`` — the package's dependencies without torch (the hosted jobs' install);
- ``verdict`` — ``regression-detected`` of a findings document, as a workflow output.

Each writes its workflow outputs to ``$GITHUB_OUTPUT`` (and stdout) and runs the same on a
laptop. Front end of the stage order (like ``commands``): it may import every stage.
"""

from __future__ import annotations

__all__: list[str] = []
