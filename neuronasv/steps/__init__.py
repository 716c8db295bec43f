"""The steps: one function per piece of work a command, the API, the demo or a CI step runs.

Each step takes its options as one frozen, typed dataclass (keyword fields, the defaults the
command's flags have) and returns a value (a document, a report, an outcome); it prints only
what the command printed as progress or warnings, never its result. The command modules
(``neuronasv/commands/*``) parse argv into those options, call the step and print or write
the value; :mod:`neuronasv.api` offers the same steps to scripts and the demo; the workflow
steps (:mod:`neuronasv.ci`) chain them in one process. Errors are the package's
(:mod:`neuronasv.errors`), each with its documented exit code.

- :mod:`~neuronasv.steps.measure`: ``run`` (the asv suite per commit), ``bisect``;
- :mod:`~neuronasv.steps.compare`: ``compare`` (base vs head) and its gate;
- :mod:`~neuronasv.steps.confirm`: ``confirm`` (ABAB rounds) and its gate;
- :mod:`~neuronasv.steps.regressions`: ``regressions`` and, the one place it is
  orchestrated, ``regressions_per_machine``;
- :mod:`~neuronasv.steps.comment`: the sticky PR comment;
- :mod:`~neuronasv.steps.publish`: the history site;
- :mod:`~neuronasv.steps.store`: the results branch and the regression issues.

Front end of the stage order, below the commands, the API, the demo and the CI steps that
call it (it imports none of them).
"""

from __future__ import annotations

__all__: list[str] = []
