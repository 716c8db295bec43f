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
import sys

from neuronasv.analyse.confirm import WorktreeProfileRunner, confirm
from neuronasv.analyse.replay import RecordingRunner
from neuronasv.analyse.rules import Rule
from neuronasv.commands.compare import add_floor_args, emit, failing, floors_for, render
from neuronasv.errors import RegressionFound, UsageError
from neuronasv.model import FindingsDocument

__all__ = ["add_parser", "run"]


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "confirm",
        help="re-measure suspected regressions interleaved (ABAB) and confirm survivors",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--findings", required=True, help="compare document (JSON)")
    p.add_argument("--repo", default=".", help="git work tree with both commits (.)")
    p.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="ABAB repetitions before the first look, each a separate run (3)",
    )
    p.add_argument(
        "--max-rounds",
        type=int,
        default=None,
        help="add one round at a time to undecided suspects, up to this many (default:"
        " --rounds, one look); alpha is spent over the looks",
    )
    p.add_argument(
        "--budget-seconds",
        type=float,
        default=None,
        help="start no new round that would end past this many seconds (no limit)",
    )
    p.add_argument("--samples", type=int, default=10, help="samples per side per round")
    p.add_argument("--backend", default="auto")
    p.add_argument(
        "--include-noisy",
        action="store_true",
        default=True,
        help="also re-measure noisy findings (the default; kept for old scripts)",
    )
    p.add_argument(
        "--regressions-only",
        action="store_true",
        help="re-measure regressions and improvements, not noisy ones",
    )
    add_floor_args(p)
    p.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    p.add_argument("--fail-on", metavar="RULE")
    p.add_argument("--out")
    p.add_argument(
        "--rounds-out",
        metavar="FILE",
        help="also write every re-measured sample (a rounds document) so the confirmation"
        " can be recomputed elsewhere (the PR comment job does)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    with open(args.findings, encoding="utf-8") as fh:
        doc = FindingsDocument.loads(fh.read(), source=args.findings)
    if doc.mode != "compare" or doc.base is None or doc.head is None:
        raise UsageError(f"{args.findings}: not a compare document")
    if args.rounds < 1:
        raise UsageError("--rounds must be at least 1")
    if args.max_rounds is not None and args.max_rounds < args.rounds:
        raise UsageError("--max-rounds must be at least --rounds")
    if args.budget_seconds is not None and not args.budget_seconds > 0:
        raise UsageError("--budget-seconds must be a positive number")
    runner = WorktreeProfileRunner(
        repo=args.repo,
        base=doc.base.commit,
        head=doc.head.commit,
        backend=args.backend,
        samples=args.samples,
    )
    floors = floors_for(args, doc.base.machine, (doc.head.commit,)) if args.history_dir else None
    recorder = RecordingRunner(runner)
    try:
        doc = confirm(
            doc,
            recorder,
            rounds=args.rounds,
            max_rounds=args.max_rounds,
            budget_seconds=args.budget_seconds,
            include_noisy=not args.regressions_only,
            floors=floors,
            progress=lambda line: print(line, file=sys.stderr, flush=True),
        )
    finally:
        runner.close()
    if args.rounds_out:
        rec = recorder.document(runner.base, runner.head, args.rounds, args.max_rounds)
        emit(rec.dumps(), args.rounds_out)
    emit(render(doc, args.format), args.out)
    if args.fail_on:
        bad = [
            label
            for label in failing(doc, Rule.parse(args.fail_on))
            if any(f.series.label == label and f.confirmed for f in doc.findings)
        ]
        if bad:
            raise RegressionFound(f"{len(bad)} confirmed regression(s): " + ", ".join(bad[:5]))
    return 0
