"""``neuronasv demo``: the whole service end to end, on the accelerator when there is one.

See :mod:`neuronasv.demo`.
"""

from __future__ import annotations

import argparse
import os

from neuronasv.commands.args import (
    add_backend_arg,
    add_repo_arg,
    command_parser,
    existing_file,
    int_at_least,
    output_dir,
)

__all__ = ["add_parser", "run"]


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = command_parser(
        subparsers,
        "demo",
        exits={
            0: None,
            1: "the demo found no regression to show",
            2: None,
            3: None,
            4: None,
            5: None,
            7: None,
        },
        raw=False,
        description=(
            "Clone HEAD into a scratch folder, commit the shipped example regression, run"
            " the suite at both commits, compare them, render the PR comment (dry run), list"
            " change points and publish the history site; ends with the verdict sentence."
        ),
    )
    p.add_argument(
        "--out",
        type=output_dir,
        default=os.path.join("out", "demo"),
        help="scratch folder: new, empty, or one the demo made (default: out/demo)",
    )
    add_repo_arg(p, purpose="the one to demo")
    p.add_argument(
        "--patch",
        type=existing_file,
        help="example change (default: examples/regress-rmsnorm-eps.patch)",
    )
    p.add_argument(
        "--bench",
        default=None,
        help="asv --bench regex limiting the suite (default: the naive and fused RMSNorm;"
        " 'rmsnorm' adds the compiled one; '' = whole suite)",
    )
    p.add_argument(
        "--rounds",
        type=int_at_least(0),
        default=3,
        help="ABAB rounds of the confirmation step (0 = skip)",
    )
    p.add_argument(
        "--fresh",
        action="store_true",
        help="delete --out first (only a folder the demo made; anything else is refused)",
    )
    p.add_argument(
        "--metrics",
        type=_metrics,
        default=None,
        metavar="LIST",
        help="what the run measures (neuronasv run --metrics: the registry's metrics,"
        " docs/metrics.md); default: neuronasv run's",
    )
    add_backend_arg(p)
    p.set_defaults(func=run)


def _metrics(text: str) -> tuple[str, ...]:
    from neuronasv.errors import UsageError
    from neuronasv.steps.measure import parse_metrics

    try:
        return parse_metrics(text)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(exc.message) from exc


def run(args: argparse.Namespace) -> int:
    from neuronasv.demo import DEFAULT_BENCH, DemoOptions, run_demo

    options = DemoOptions(
        patch=args.patch,
        bench=DEFAULT_BENCH if args.bench is None else (args.bench or None),
        fresh=args.fresh,
        rounds=args.rounds,
        backend=args.backend,
        metrics=args.metrics,
    )
    outcome = run_demo(args.repo, args.out, options=options)
    return 0 if outcome.regressions else 1
