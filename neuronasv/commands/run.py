"""``neuronasv run [COMMIT ...]``: the asv suite per commit, with samples and sidecars."""

from __future__ import annotations

import argparse

from neuronasv import env
from neuronasv.commands.args import (
    add_backend_arg,
    add_repo_arg,
    command_parser,
    machine_name,
    output_dir,
)
from neuronasv.log import emit
from neuronasv.metrics import CALLGRIND_PASS, counted_by
from neuronasv.metrics import names as metric_names
from neuronasv.run.asvrun import RunOptions
from neuronasv.steps import measure

__all__ = ["add_parser", "options", "run"]


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = command_parser(
        subparsers,
        "run",
        exits={0: "failed benchmarks are listed", 2: None, 3: None, 4: None, 5: None, 7: None},
        raw=False,
        description=(
            "Benchmark the code as of each COMMIT (a temporary git worktree per commit) with"
            " asv (--set-commit-hash, --record-samples), store complete machine info, and"
            " write a .neuronasv sidecar next to each asv results file (environment"
            " fingerprint, full op tables, series map, traces, failures)."
        ),
    )
    p.add_argument("commits", nargs="*", metavar="COMMIT", help="revisions (default: HEAD)")
    p.add_argument(
        "--machine",
        type=machine_name,
        help="asv machine name (default: this host's name); letters, digits and ._+@- only",
    )
    p.add_argument(
        "--results-dir", type=output_dir, help="asv results folder (default: .asv/results)"
    )
    p.add_argument("--bench", metavar="REGEX", help="only benchmarks matching (asv --bench)")
    p.add_argument("--quick", action="store_true", help="smoke test: one sample, minimal profile")
    traces = p.add_mutually_exclusive_group()
    traces.add_argument(
        "--keep-traces",
        dest="keep_traces",
        action="store_true",
        default=True,
        help="keep one gzipped chrome trace per workload under .asv/traces/<machine>/<hash8>/"
        " (the default; the sidecar names them, the comment and the site link them)",
    )
    traces.add_argument(
        "--no-traces",
        dest="keep_traces",
        action="store_false",
        help="keep no traces",
    )
    p.add_argument(
        "--traces-dir",
        type=output_dir,
        help="trace store (default: RESULTS_DIR/.traces with --results-dir, else .asv/traces)",
    )
    p.add_argument(
        "--compile-cache",
        type=output_dir,
        default=env.COMPILE_CACHE.read(),
        metavar="DIR",
        help="folder for torch.compile's caches, shared by the pre-pass and asv (cache it"
        " between CI runs; default: $NEURONASV_COMPILE_CACHE, else torch's own)",
    )
    add_backend_arg(p)
    p.add_argument(
        "--no-prepass",
        action="store_true",
        help="no one-process profile before asv: each workload is profiled in its own asv"
        " process, and ops new in a commit get their series from the next run on",
    )
    p.add_argument(
        "--metrics",
        type=_metrics,
        default=None,
        metavar="LIST",
        help=f"what to measure, comma-separated, of {', '.join(metric_names())}"
        f" (docs/metrics.md); {', '.join(m.name for m in counted_by(CALLGRIND_PASS))}: counted"
        " per op under valgrind's callgrind, one process per commit. Default: devtime, plus"
        " those on the CPU backend where valgrind is usable (--metrics devtime turns them off)",
    )
    add_repo_arg(p, purpose="the commits to benchmark")
    p.set_defaults(func=run)


def _metrics(text: str) -> tuple[str, ...]:
    from neuronasv.errors import UsageError
    from neuronasv.steps.measure import parse_metrics

    try:
        return parse_metrics(text)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(exc.message) from exc


def options(args: argparse.Namespace) -> RunOptions:
    """The step's options from the parsed arguments."""
    return RunOptions(
            repo=args.repo,
            commits=tuple(args.commits) or ("HEAD",),
            machine=args.machine,
            results_dir=args.results_dir,
            traces_dir=args.traces_dir,
            bench=args.bench,
            quick=args.quick,
            keep_traces=args.keep_traces,
            backend=args.backend,
            prepass=not args.no_prepass,
            compile_cache=args.compile_cache,
            metrics=args.metrics,
        )


def run(args: argparse.Namespace) -> int:
    emit(measure.run(options(args)).line())
    return 0
