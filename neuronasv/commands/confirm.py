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

from neuronasv.analyse.confirm import confirm
from neuronasv.analyse.replay import RecordingRunner
from neuronasv.analyse.rules import Rule, failing
from neuronasv.commands.args import (
    add_backend_arg,
    add_findings_arg,
    add_floor_args,
    add_out_arg,
    add_repo_arg,
    command_parser,
    finite_nonnegative,
    floors_from_args,
    int_at_least,
    output_file,
    write_output,
)
from neuronasv.errors import RegressionFound, UsageError
from neuronasv.measure.backends import default_samples
from neuronasv.model import FindingsDocument
from neuronasv.report.document import FORMATS, render_document
from neuronasv.report.load import load_findings
from neuronasv.run.worktree import WorktreeProfileRunner

__all__ = ["add_parser", "run"]


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


def default_sampling(args: argparse.Namespace, doc: FindingsDocument) -> tuple[int, int]:
    """``(samples, active)`` per side per round: the options, else single-iteration samples,
    10 on the CPU (or an unknown backend) and 30 on an accelerator.

    Single iterations, not the asv suite's 3-iteration means: a round's median varies
    between processes no more that way, so the suite history's floors (the rounds test's
    prior) are, if anything, the wider ones, which is conservative. Measured
    (``bench/bench_sampling.py --processes 16``, this CPU, quiet): median between-process
    SD of a series' median 17.7 % for 10 single iterations against 20.5 % for the suite's
    10 means of 3. On the H200 data 3-iteration means raised the adaptive confirmation's
    false alarms to 12 % (``bench/eval_h200.py --active 3``; single iterations: 0 %).
    More samples on an accelerator: there most of an op's round-to-round noise is the
    median's own sampling error (docs/analysis.md).
    """
    backend = doc.head.fingerprint.get("backend") if doc.head else None
    return args.samples or default_samples(backend), args.active or 1


def run(args: argparse.Namespace) -> int:
    fail_rule = Rule.parse(args.fail_on) if args.fail_on else None  # bad rule: before work
    doc = load_findings(args.findings)
    if doc.mode != "compare" or doc.base is None or doc.head is None:
        raise UsageError(f"{args.findings}: not a compare document")
    if args.max_rounds is not None and args.max_rounds < args.rounds:
        raise UsageError("--max-rounds must be at least --rounds")
    if args.budget_seconds is not None and not args.budget_seconds > 0:
        raise UsageError("--budget-seconds must be a positive number")
    samples, active = default_sampling(args, doc)
    runner = WorktreeProfileRunner(
        repo=args.repo,
        base=doc.base.commit,
        head=doc.head.commit,
        backend=args.backend,
        samples=samples,
        active=active,
    )
    floors = (
        floors_from_args(args, doc.base.machine, (doc.head.commit,)) if args.history_dir else None
    )
    recorder = RecordingRunner(runner)
    try:
        doc = confirm(
            doc,
            recorder,
            rounds=args.rounds,
            max_rounds=args.max_rounds,
            budget_seconds=args.budget_seconds,
            include_noisy=args.include_noisy,
            floors=floors,
        )
    finally:
        runner.close()
    if args.rounds_out:
        rec = recorder.document(runner.base, runner.head, args.rounds, args.max_rounds)
        write_output(rec.dumps(), args.rounds_out)
    write_output(render_document(doc, args.format), args.out)
    if fail_rule is not None:
        bad = failing(doc, fail_rule, confirmed_only=True)
        if bad:
            raise RegressionFound(f"{len(bad)} confirmed regression(s): " + ", ".join(bad[:5]))
    return 0
