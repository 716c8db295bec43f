"""One module per CLI sub-command; each exposes ``add_parser(subparsers)`` and ``run(args)``.

Commands only parse arguments, call the step and print: a step is one function of
:mod:`neuronasv.steps` taking one typed options dataclass (a command's ``options(args)``
builds it) and returning a value; logic lives in the stages (pure logic in ``analyse``,
rendering in ``report``, document loading in ``report.load``). The argument helpers every
command shares are in :mod:`neuronasv.commands.args`; a command never imports another
command (``tests/test_cli.py`` checks).

:data:`COMMANDS` is the one place a command's one-line help is written: ``neuronasv
--help`` lists it without importing the command, and the command's own parser uses it.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["COMMANDS", "command_module"]

# name -> one-line help, in the order of ``neuronasv --help``: the data flow.
COMMANDS: dict[str, str] = {
    "init": "adopt neuronasv in this repository: asv config, suite, workflows (--check)",
    "doctor": "show backends found, versions and what is missing",
    "profile": "profile workloads: device time per op (RMSNorm variants by default)",
    "run": "run the asv suite for commits (default HEAD), samples recorded",
    "compare": "base vs head verdicts with p-values, CIs and op attribution",
    "confirm": "re-measure suspected regressions interleaved (ABAB) and confirm survivors",
    "regressions": "change points over history; open regressions first",
    "bisect": "the first commit at which a series changed (exact counts, or time in rounds)",
    "ack": "acknowledge an expected shift (benchmark pattern, commit, reason)",
    "comment": "create or update the sticky PR comment from a findings document",
    "status": "set the commit status (and optionally a check run) from a findings document",
    "summary": "job summary ($GITHUB_STEP_SUMMARY) and annotations from a findings document",
    "publish": "write the static history site (index, workload pages, regressions feeds)",
    "store": "push results to / pull results from the results branch",
    "issues-sync": "open, update and close one GitHub issue per open regression change point",
    "demo": "run the whole flow locally: suite at 2 commits, compare, comment, site",
}


def command_module(name: str) -> ModuleType:
    """The module of command ``name`` (imported now: only the command being run pays)."""
    return importlib.import_module(f"neuronasv.commands.{name.replace('-', '_')}")
