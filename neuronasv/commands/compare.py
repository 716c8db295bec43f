"""``neuronasv compare BASE HEAD``: verdicts for every series between two commits.
"""

from __future__ import annotations

import argparse
import datetime

from neuronasv.analyse.pairwise import Settings, compare
from neuronasv.analyse.profile_samples import Rounds, paired_rounds
from neuronasv.analyse.rules import Rule, RuleSet, failing
from neuronasv.analyse.states import TIME_GATES, WORK_GATES, Gate
from neuronasv.commands.args import (
    acks_from_args,
    add_acks_arg,
    add_floor_args,
    add_out_arg,
    add_results_args,
    command_parser,
    existing_file,
    floors_from_args,
    machine_name,
    probability_open,
    results_folder,
    warn_load_errors,
    write_output,
)
from neuronasv.errors import RegressionFound, UsageError, VerdictsWithheld
from neuronasv.model import History
from neuronasv.report.document import FORMATS, render_document
from neuronasv.report.load import load_profile
from neuronasv.report.rowwords import gate_phrase
from neuronasv.store.git import Git, git_for
from neuronasv.store.history import (
    load_history,
    missing_results_error,
    resolve_commit,
)

__all__ = ["add_parser", "run"]


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


def read_rounds(base_files: list[str], head_files: list[str]) -> Rounds:
    """The ``--round-base``/``--round-head`` documents, paired in order."""
    if len(base_files) != len(head_files):
        raise UsageError(
            f"--round-base given {len(base_files)} times but --round-head {len(head_files)}:"
            " rounds pair in order"
        )
    return paired_rounds(
        [load_profile(f) for f in base_files], [load_profile(f) for f in head_files]
    )


def _only_machine(history: History) -> str:
    machines = history.machines
    if len(machines) != 1:
        raise UsageError("--history-dir needs --machine when the results hold several machines")
    return str(machines[0])


def _resolve(ref: str, history: History, git: Git | None, rdir: str) -> str:
    try:
        commit = resolve_commit(ref, history, git)
    except UsageError:
        err = missing_results_error(history, rdir, ref)
        if err is not None:
            raise err from None
        raise
    err = missing_results_error(history, rdir, ref, commit)
    if err is not None:
        raise err
    return commit


def run(args: argparse.Namespace) -> int:
    fail_rule = Rule.parse(args.fail_on) if args.fail_on else None
    rules = RuleSet.parse(args.rule)
    git = git_for(args.repo)
    rdir = results_folder(args)
    history = load_history(rdir, machine=None, git=git)
    warn_load_errors(history)
    base = _resolve(args.base, history, git, rdir)
    head = _resolve(args.head, history, git, rdir)
    acks = acks_from_args(args)
    rounds = read_rounds(args.round_base, args.round_head) if args.round_base else None
    floors = None
    if args.no_floor or args.history_dir:
        floors = floors_from_args(args, args.machine or _only_machine(history), (head,))
    doc = compare(
        history,
        base,
        head,
        machine=args.machine,
        head_machine=args.head_machine,
        settings=Settings(
            rules=rules, alpha=args.alpha, gate=Gate(args.fail_on_time, args.fail_on_work)
        ),
        acks=acks,
        force=args.force,
        base_label=args.base,
        head_label=args.head,
        created=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        floors=floors,
        rounds=rounds,
    )
    write_output(render_document(doc, args.format), args.out)
    if fail_rule is not None and doc.withheld is not None:
        raise VerdictsWithheld(
            doc.withheld,
            hint="the device ran slower than usual: re-run base and head on a healthy device"
            " (neuronasv confirm); the verdicts are in the output as data",
        )
    if fail_rule is not None:
        bad = failing(doc, fail_rule)
        if bad:
            raise RegressionFound(
                f"{len(bad)} row(s) fire the {gate_phrase(doc.findings)} (beyond"
                f" --fail-on {fail_rule.text}): "
                + ", ".join(bad[:5])
                + (" ..." if len(bad) > 5 else "")
            )
    return 0
