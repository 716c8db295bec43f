"""``python -m neuronasv.ci STEP [options]``: the reusable workflows' steps (see the package doc).

    python -m neuronasv.ci plan COMMIT [--machine M] [--shards JSON] [--backfill N]
                                [--site-branch B --default-branch D] [store opts]
    python -m neuronasv.ci pr-bench --pr N --base SHA --head SHA --out DIR [--machine M]
                                    [--bench RE] [--traces-out DIR] [--rounds 3]
                                    [--metrics LIST]
    python -m neuronasv.ci pr-comment --artifact DIR [--event FILE] [--dry-run] ...
    python -m neuronasv.ci analyse --out DIR --site DIR [--traces-dir T] [--title T] [store opts]
    python -m neuronasv.ci site-branch --site DIR --branch B [--default-branch D] [store opts]
    python -m neuronasv.ci issues DIR [--site-url URL] [--dry-run]   # regression issues
    python -m neuronasv.ci bisect --out DIR [--add RESULTS]... [--minutes 30] [store opts]
                                  # bisect open regressions over unmeasured commits
    python -m neuronasv.ci metric-tools [--metrics LIST]  # a metric's tools: valgrind + gcc
    python -m neuronasv.ci requirements      # dependencies without torch, one a line
    python -m neuronasv.ci verdict FINDINGS  # regression-detected=true|false
    python -m neuronasv.ci traces --findings F --traces-dir D --machine M --out O
                                  # the flagged workloads' base and head traces

Store options (plan, analyse, site-branch, bisect): ``--remote R --branch B --token-env VAR``
as for ``neuronasv store``. Exit codes are neuronasv's (``neuronasv/errors.py``).

One parser: each step's arguments are defined beside the step (``add_parsers`` of
:mod:`~neuronasv.ci.flows`, ``add_parser`` of :mod:`~neuronasv.ci.bisect_step`,
:mod:`~neuronasv.ci.tools` and :mod:`~neuronasv.ci.pr_comment`), as ``neuronasv``'s are
beside each command; argparse routes by the step name alone (a later argument spelled like
a step is that step's argument). One exception: ``requirements`` runs before the
dependencies are installed (``pip install --no-deps`` first, then its list), so it is sent
to :mod:`neuronasv.ci.requirements` before that parser is built, importing the standard
library only.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The one parser of ``python -m neuronasv.ci``, from the steps' own definitions."""
    from neuronasv.ci import bisect_step, flows, pr_comment, tools
    from neuronasv.log import InertArgumentParser

    ap = InertArgumentParser(prog="python -m neuronasv.ci", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    ap.add_argument("--repo", default=".", help="the repository (default: here)")
    sub = ap.add_subparsers(dest="step", required=True, metavar="STEP")
    flows.add_parsers(sub)
    bisect_step.add_parser(sub)
    tools.add_parser(sub)
    pr_comment.add_parser(sub)
    return ap


def _step_and_rest(argv: Sequence[str]) -> tuple[str | None, list[str]]:
    """The step's name and its arguments, past the global ``--repo`` option."""
    rest = list(argv)
    while rest and rest[0].startswith("--repo"):
        rest = rest[1:] if "=" in rest[0] else rest[2:]
    return (rest[0], rest[1:]) if rest else (None, [])


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    step, rest = _step_and_rest(argv)
    if step == "requirements":  # before the dependencies are installed: stdlib only
        from neuronasv.ci import requirements

        return requirements.main(rest)
    from neuronasv.cli import _terminate_as_interrupt, run_parsed
    from neuronasv.log import cli_output

    args = build_parser().parse_args(argv)
    args.command = f"ci {args.step}"
    # The steps run in this process (and start asv, valgrind, git): a cancelled job's
    # SIGTERM unwinds like Ctrl-C, so their process groups are killed and scratch removed.
    # One voice: the steps' log lines through one handler, in Actions as workflow commands
    # (neuronasv.log.ActionsHandler).
    with _terminate_as_interrupt(), cli_output(actions=True):
        return run_parsed(args)


if __name__ == "__main__":
    sys.exit(main())
