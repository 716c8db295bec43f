"""``neuronasv compare BASE HEAD``: verdicts for every series between two commits.
"""

from __future__ import annotations

import argparse

from neuronasv.analyse.rules import Rule
from neuronasv.analyse.states import TIME_GATES, WORK_GATES
from neuronasv.commands.args import (
    add_acks_arg,
    add_floor_args,
    add_out_arg,
    add_results_args,
    command_parser,
    existing_file,
    machine_name,
    probability_open,
    write_output,
)
from neuronasv.report.document import FORMATS, render_document, renders_json
from neuronasv.steps.compare import CompareOptions, check_gate, compare

__all__ = ["add_parser", "options", "run"]


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = command_parser(
        subparsers, "compare", description=__doc__,
        exits={
            0: None,
            1: "an unacknowledged row fires --fail-on and confirm did not disprove it",
            2: None,
            5: None,
            6: None,
            10: "--fail-on given; the output says why",
        },
    )  # fmt: skip
    p.add_argument("base", metavar="BASE", help="commit-ish (branch, tag, hash or prefix)")
    p.add_argument("head", metavar="HEAD", help="commit-ish (branch, tag, hash or prefix)")
    add_results_args(p, machine_help="asv machine name (default: the one with both commits)")
    p.add_argument(
        "--head-machine",
        type=machine_name,
        help="head measured on another machine (needs --force)",
    )
    p.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help="text table, json (the findings document: comment/status/summary/confirm read"
        " it) or markdown",
    )
    p.add_argument(
        "--rule",
        action="append",
        default=[],
        metavar="[PATTERN=]RULE",
        help="minimum effect, e.g. 'median:5%%' or '*aten::add*=median:20%%' (repeatable)",
    )
    p.add_argument(
        "--alpha",
        type=probability_open,
        default=0.01,
        help="family-wise significance level, between 0 and 1 (0.01)",
    )
    p.add_argument(
        "--fail-on",
        metavar="RULE",
        help="exit 1 if an unacknowledged row fires the gate (below) and, for a slower time,"
        " exceeds RULE (e.g. 'median:5%%')",
    )
    p.add_argument(
        "--fail-on-time",
        choices=TIME_GATES,
        default="confirmed",
        help="time axis of the gate (and the commit status): a slower time the rounds"
        " 'confirmed' (default), any decided 'slower' time, or 'never'",
    )
    p.add_argument(
        "--fail-on-work",
        choices=WORK_GATES,
        default="undecided",
        help="work axis of the gate: more bytes/FLOPs where the time is 'undecided' (default),"
        " any 'more' work, or 'never'",
    )
    add_acks_arg(p)
    p.add_argument("--force", action="store_true", help="compare across machines/devices")
    add_out_arg(p)
    add_floor_args(p)
    p.add_argument(
        "--round-base",
        action="append",
        type=existing_file,
        default=[],
        metavar="FILE",
        help="profile JSON (neuronasv profile --json) of one base round; repeat per round",
    )
    p.add_argument(
        "--round-head",
        action="append",
        type=existing_file,
        default=[],
        metavar="FILE",
        help="profile JSON of one head round, paired in order with --round-base",
    )
    p.set_defaults(func=run)


def options(args: argparse.Namespace) -> CompareOptions:
    """The step's options from the parsed arguments."""
    return CompareOptions(
            base=args.base, head=args.head, results_dir=args.results_dir, repo=args.repo,
            machine=args.machine, head_machine=args.head_machine, rules=tuple(args.rule),
            alpha=args.alpha, fail_on_time=args.fail_on_time, fail_on_work=args.fail_on_work,
            acks=args.acks, force=args.force, history_dir=args.history_dir,
            no_floor=args.no_floor, round_base=tuple(args.round_base),
            round_head=tuple(args.round_head),
        )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    fail_rule = Rule.parse(args.fail_on) if args.fail_on else None  # a bad rule: before work
    doc = compare(options(args))
    write_output(render_document(doc, args.format), args.out,
                 json=renders_json(doc, args.format))
    check_gate(doc, fail_rule)
    return 0
