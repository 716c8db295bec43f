"""``neuronasv confirm --findings FILE``: re-measure suspected regressions ABAB.

Reads a compare document (``neuronasv compare --format json``), checks out base and head
as git worktrees, re-profiles only the suspected workloads alternately (base, head, base,
head, ...) on this machine with ``python -m neuronasv profile --json``, and writes the
document back with ``confirmed`` set, judged by the rounds test (per-round log-ratios,
moderated t, every round the same direction; ``--history-dir`` adds noise floors). After
``--rounds`` rounds, undecided suspects get one more round at a time up to ``--max-rounds``
or ``--budget-seconds``; alpha is spent over the looks (docs/analysis.md).
"""

from __future__ import annotations

import argparse

from neuronasv.analyse.rules import Rule
from neuronasv.commands.args import (
    add_backend_arg,
    add_findings_arg,
    add_floor_args,
    add_out_arg,
    add_repo_arg,
    command_parser,
    finite_nonnegative,
    int_at_least,
    output_file,
    write_output,
)
from neuronasv.report.document import FORMATS, render_document, renders_json
from neuronasv.steps.confirm import ConfirmOptions, check_gate, confirm

__all__ = ["add_parser", "options", "run"]


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = command_parser(
        subparsers, "confirm", description=__doc__,
        exits={
            0: None,
            1: "a confirmed unacknowledged regression matched --fail-on",
            2: None,
            4: None,
            5: "the findings",
            7: "git worktrees",
        },
    )  # fmt: skip
    add_findings_arg(p, "--findings")
    add_repo_arg(p, purpose="holds both commits")
    p.add_argument(
        "--rounds",
        type=int_at_least(1),
        default=3,
        help="ABAB repetitions before the first look, each a separate process per side (3)",
    )
    p.add_argument(
        "--max-rounds",
        type=int_at_least(1),
        default=None,
        help="add one round at a time to undecided suspects, up to this many (default:"
        " --rounds, one look); alpha is spent over the looks",
    )
    p.add_argument(
        "--budget-seconds",
        type=finite_nonnegative,
        default=None,
        help="start no new round that would end past this many seconds (no limit)",
    )
    p.add_argument(
        "--samples",
        type=int_at_least(1),
        default=None,
        help="samples per side per round (default: 10 on the CPU, 30 on an accelerator, where"
        " the median's sampling error is most of an op's round-to-round noise)",
    )
    p.add_argument(
        "--active",
        type=int_at_least(1),
        default=None,
        help="iterations averaged into one sample (default 1)",
    )
    add_backend_arg(p, purpose="where to re-measure")
    which = p.add_mutually_exclusive_group()
    which.add_argument(
        "--include-noisy",
        dest="include_noisy",
        action="store_true",
        default=True,
        help="also re-measure noisy findings (the default)",
    )
    which.add_argument(
        "--regressions-only",
        dest="include_noisy",
        action="store_false",
        help="re-measure regressions and improvements, not noisy ones",
    )
    add_floor_args(p)
    p.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help="output: text table, json (the findings document with `confirmed` set) or markdown",
    )
    p.add_argument(
        "--fail-on",
        metavar="RULE",
        help="exit 1 if a *confirmed* unacknowledged regression exceeds RULE (e.g. 'median:5%%')",
    )
    add_out_arg(p)
    p.add_argument(
        "--rounds-out",
        type=output_file,
        metavar="FILE",
        help="also write every re-measured sample (a rounds document) so the confirmation"
        " can be recomputed elsewhere (the PR comment job does)",
    )
    p.set_defaults(func=run)


def options(args: argparse.Namespace) -> ConfirmOptions:
    """The step's options from the parsed arguments."""
    return ConfirmOptions(
            findings=args.findings, repo=args.repo, rounds=args.rounds,
            max_rounds=args.max_rounds, budget_seconds=args.budget_seconds,
            samples=args.samples, active=args.active, backend=args.backend,
            include_noisy=args.include_noisy, history_dir=args.history_dir,
            no_floor=args.no_floor,
        )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    fail_rule = Rule.parse(args.fail_on) if args.fail_on else None  # bad rule: before work
    done = confirm(options(args))
    if args.rounds_out:
        write_output(done.rounds.dumps(), args.rounds_out, json=True)
    write_output(render_document(done.doc, args.format), args.out,
                 json=renders_json(done.doc, args.format))
    check_gate(done.doc, fail_rule)
    return 0
