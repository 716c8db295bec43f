"""``neuronasv bisect GOOD BAD --series PATTERN``: the first commit at which a series changed.

    neuronasv bisect GOOD BAD --series 'workload=rmsnorm.naive op=aten::mul metric=memory'
    neuronasv bisect GOOD BAD --series 'rmsnorm.naive 4x512 float32 · aten::mul'
    neuronasv bisect GOOD BAD --series '*naive*4x512*float32 · aten::mul' --budget-minutes 30

PATTERN names one series of one machine: an op, a module (``module:<path>``) or a workload
total (``op=``), by the fields of its id (``workload= shape= dtype= op= metric=
benchmark= params=``, fnmatch globs), or in the earlier form, a glob over the label as
version 1 wrote it, the asv benchmark and ``benchmark(params)``
(docs/analysis.md#series-patterns). A pattern that names none or several is refused with
the nearest series, each named by its fields.

The search follows BAD's first parents back to GOOD,
uses every result already stored for those commits, and measures only the commits it
needs, each in a git worktree:

- an exact axis — an exact metric of the registry (``neuronasv.metrics.EXACT``: counts
  and allocated bytes) on its own series, or the work evidence (calls, input shapes) — chosen by
  ``--axis auto`` whenever the range's ends differ on it (the ends are measured first when
  they have no stored results): one reading per commit decides, a binary search of at
  most ceil(log2 n) measurements, each the run stage of
  ``neuronasv run`` narrowed to the series' workload and configuration; the answer is a fact;
- device time (``--axis auto``: only when the ends read the same on every exact axis):
  each probe measured in interleaved rounds with the bracket's ends and judged
  with confirm's rounds test; a probe that stays undecided ends the search with the
  narrowest range it proved; the chance of a wrong answer is at most ``--alpha``
  (split over the search's tests).

It prints the culprit, its subject, its PR (the GitHub API when $GITHUB_TOKEN and
$GITHUB_REPOSITORY are set, else the subject's ``(#N)``), the cause as the PR comment words
it, the exact work between the culprit and its parent, how many commits it measured and
what that cost; the record goes to ``<results>/<machine>/bisect-<key>.bisect`` (so
``regressions``, the issue and the site name the culprit) and, with ``--out``, a file.
With ``--side-branches`` a merge found as the culprit has its side branch bisected too.
An interrupt leaves no worktree and no scratch folder behind.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from neuronasv import env
from neuronasv.commands.args import (
    add_backend_arg,
    add_repo_arg,
    command_parser,
    finite_nonnegative,
    int_at_least,
    machine_name,
    output_dir,
    output_file,
    probability_open,
    write_output,
)
from neuronasv.metrics import EXACT

if TYPE_CHECKING:
    from neuronasv.run.bisect import BisectOptions

__all__ = ["add_parser", "options", "run"]


def _step_pct(text: str) -> float:
    """``--step``: a percentage above 0 (30 = +30 %)."""
    pct = finite_nonnegative(text)
    if pct <= 0.0:
        raise argparse.ArgumentTypeError(f"the step must be a percentage above 0, got {text!r}")
    return pct


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = command_parser(
        subparsers, "bisect", description=__doc__,
        exits={
            0: "a culprit, or the narrowest range it could prove: the first line says which",
            2: "a commit that does not exist, GOOD not an ancestor of BAD, a pattern that"
               " matches no series or several",
            4: "an end of the range could not be measured",
            7: "git",
            12: None,
        },
    )  # fmt: skip
    p.add_argument("good", metavar="GOOD", help="a commit at the old level (an ancestor of BAD)")
    p.add_argument("bad", metavar="BAD", help="a commit at the new level")
    p.add_argument(
        "--series",
        required=True,
        metavar="PATTERN",
        help="the series: FIELD=GLOB terms (workload, shape, dtype, op, metric, benchmark,"
        " params; op= is the total), or a glob over its label, benchmark or"
        " benchmark(params)",
    )
    exact = tuple(m.name for m in EXACT)
    p.add_argument(
        "--axis",
        choices=("auto", *exact, "work", "time"),
        default="auto",
        help="what decides: auto (an exact axis on which the range's ends differ: "
        + ", ".join((*exact, "work"))
        + "; else time), an exact metric on its own series, work (calls and input shapes of"
        " the matched device-time series), time",
    )
    p.add_argument("--machine", type=machine_name, help="asv machine (default: the results"
                   " folder's only machine, else this host's name)")  # fmt: skip
    p.add_argument("--results-dir", type=output_dir,
                   help="asv results folder (default: asv.conf.json's)")  # fmt: skip
    p.add_argument("--bench", metavar="REGEX",
                   help="asv --bench for the measurements (default: the series' benchmark"
                   " class)")  # fmt: skip
    add_backend_arg(p, purpose="where to measure")
    p.add_argument(
        "--compile-cache",
        type=output_dir,
        default=env.COMPILE_CACHE.read(),
        metavar="DIR",
        help="torch.compile's caches, shared by every measurement (default:"
        " $NEURONASV_COMPILE_CACHE)",
    )
    p.add_argument("--alpha", type=probability_open, default=0.001,
                   help="time: bound on the chance of a wrong answer, split over the search's"
                   " tests (0.001)")  # fmt: skip
    p.add_argument("--rounds", type=int_at_least(2), default=3,
                   help="time: rounds before a probe's first look (3)")  # fmt: skip
    p.add_argument("--max-rounds", type=int_at_least(2), default=None,
                   help="time: a cap on the rounds a test may take before its probe is"
                   " undecided (default: the rounds the measured noise needs to find --step"
                   " with chance --target, said before the search measures; a cap below"
                   " them is said with the power it leaves, and the search goes on)")  # fmt: skip
    p.add_argument(
        "--step",
        type=_step_pct,
        default=30.0,
        metavar="PCT",
        help="time: the change the rounds are sized to find, percent (30)",
    )
    p.add_argument(
        "--target",
        type=probability_open,
        default=0.95,
        help="time: the chance of naming the culprit sized for (0.95)",
    )
    p.add_argument(
        "--pilot",
        type=int_at_least(2),
        default=5,
        metavar="N",
        help="time: processes of GOOD measured first for the noise (5)",
    )
    p.add_argument("--round-sd", type=finite_nonnegative, default=None, metavar="SD",
                   help="time: the sd of one round's log-ratio, known (no pilot)")  # fmt: skip
    p.add_argument("--samples", type=int_at_least(1), default=None,
                   help="time: samples per process (CPU 10, accelerator 30)")  # fmt: skip
    p.add_argument("--budget-minutes", type=finite_nonnegative, default=None,
                   help="start no measurement after this many minutes (no limit)")  # fmt: skip
    p.add_argument("--side-branches", action="store_true",
                   help="when the culprit is a merge, bisect its side branch too")  # fmt: skip
    p.add_argument("--no-github", action="store_true",
                   help="never ask the GitHub API for the culprit's PR")  # fmt: skip
    p.add_argument("--no-record", action="store_true",
                   help="do not write the record into the results folder")  # fmt: skip
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="text, or json (the bisection document)")  # fmt: skip
    p.add_argument("--out", type=output_file, metavar="FILE",
                   help="write the output to this file instead of stdout")  # fmt: skip
    add_repo_arg(p, purpose="holds GOOD and BAD")
    p.set_defaults(func=run)


def options(args: argparse.Namespace) -> BisectOptions:
    """The step's options from the parsed arguments."""
    from neuronasv.run.bisect import BisectOptions

    return BisectOptions(
        repo=args.repo, good=args.good, bad=args.bad, pattern=args.series, machine=args.machine,
        results_dir=args.results_dir, axis=args.axis, bench=args.bench, backend=args.backend,
        compile_cache=args.compile_cache, alpha=args.alpha, rounds=args.rounds,
        max_rounds=args.max_rounds, samples=args.samples, step=1.0 + args.step / 100.0,
        target=args.target, pilot=args.pilot, round_sd=args.round_sd,
        budget_seconds=None if args.budget_minutes is None else args.budget_minutes * 60.0,
        side_branches=args.side_branches,
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from neuronasv.report.bisect import render_text
    from neuronasv.steps.measure import bisect, check_change

    doc = bisect(options(args), github=not args.no_github, record=not args.no_record).doc
    as_json = args.format == "json"
    write_output(doc.dumps() if as_json else render_text(doc), args.out, json=as_json)
    check_change(doc)
    return 0
