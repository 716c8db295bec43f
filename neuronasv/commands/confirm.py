"""``neuronasv confirm --findings FILE``: re-measure suspected regressions ABAB.

Reads a compare document (``neuronasv compare --format json``), checks out base and head
as git worktrees, re-profiles only the suspected workloads alternately (base, head, base,
head, ...) on this machine with ``python -m neuronasv profile --json``, and writes the
document back with ``confirmed`` set, judged by the rounds test (per-round log-ratios,
moderated t, every round the same direction; ``--history-dir`` adds noise floors).
Exit codes: 0 done, 1 a confirmed regression
matched ``--fail-on``, 2 usage, 4 capture failed, 5 unreadable findings, 7 git failed.
"""

from __future__ import annotations

import argparse

from neuronasv.analyse.confirm import WorktreeProfileRunner, confirm
from neuronasv.analyse.rules import Rule
from neuronasv.commands.args import existing_dir, existing_file, int_at_least, output_file
from neuronasv.commands.compare import add_floor_args, emit, failing, floors_for, render
from neuronasv.errors import RegressionFound, UsageError
from neuronasv.report.load import load_findings

__all__ = ["add_parser", "run"]


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "confirm",
        help="re-measure suspected regressions interleaved (ABAB) and confirm survivors",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--findings",
        required=True,
        type=existing_file,
        metavar="FINDINGS.json",
        help="compare document (`neuronasv compare --format json`)",
    )
    p.add_argument(
        "--repo",
        type=existing_dir,
        default=".",
        help="git work tree holding both commits (.)",
    )
    p.add_argument(
        "--rounds",
        type=int_at_least(1),
        default=3,
        help="ABAB repetitions, each a separate process per side (3)",
    )
    p.add_argument(
        "--samples", type=int_at_least(1), default=10, help="samples per side per round (10)"
    )
    p.add_argument(
        "--backend", default="auto", help="auto (default), cpu, cuda or neuron: where to re-measure"
    )
    p.add_argument(
        "--include-noisy",
        action="store_true",
        default=True,
        help="also re-measure noisy findings (the default; kept for old scripts)",
    )
    p.add_argument(
        "--regressions-only", action="store_true", help="re-measure regressions, not noisy ones"
    )
    add_floor_args(p)
    p.add_argument(
        "--format",
        choices=("text", "json", "markdown"),
        default="text",
        help="output: text table, json (the findings document with `confirmed` set) or markdown",
    )
    p.add_argument(
        "--fail-on",
        metavar="RULE",
        help="exit 1 if a *confirmed* unacknowledged regression exceeds RULE (e.g. 'median:5%%')",
    )
    p.add_argument(
        "--out",
        type=output_file,
        metavar="FILE",
        help="write the output to this file instead of stdout",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    fail_rule = Rule.parse(args.fail_on) if args.fail_on else None  # bad rule: before work
    doc = load_findings(args.findings)
    if doc.mode != "compare" or doc.base is None or doc.head is None:
        raise UsageError(f"{args.findings}: not a compare document")
    runner = WorktreeProfileRunner(
        repo=args.repo,
        base=doc.base.commit,
        head=doc.head.commit,
        backend=args.backend,
        samples=args.samples,
    )
    floors = floors_for(args, doc.base.machine, (doc.head.commit,)) if args.history_dir else None
    try:
        doc = confirm(
            doc,
            runner,
            rounds=args.rounds,
            include_noisy=not args.regressions_only,
            floors=floors,
        )
    finally:
        runner.close()
    emit(render(doc, args.format), args.out)
    if fail_rule is not None:
        bad = [
            label
            for label in failing(doc, fail_rule)
            if any(f.series.label == label and f.confirmed for f in doc.findings)
        ]
        if bad:
            raise RegressionFound(f"{len(bad)} confirmed regression(s): " + ", ".join(bad[:5]))
    return 0
