"""``neuronasv regressions``: change points over the stored history, open ones first, and
the newest commit against its parent.

A change point is *open* when it is a regression still in effect at the latest commit.
Change points cannot see a shift at the newest commit (one point after it), so the newest
commit is also compared with its parent (git's first parent, else the previous measured
commit) as ``neuronasv compare`` does: ``suspect`` regressions; with ``--report``, the
compare/confirm document of that pair (what the PR comment shows) is used instead, and
its confirmed regressions read ``confirmed``. Fewer than 4 commits: the output says
"too few commits for change points (have N, need 4)".

The whole history is read as value matrices (one float per series and commit, not a
point object each) and searched in array passes. With ``--cache-dir`` both are cached
there (a job may keep the folder between runs): a run after one more commit parses one
results file and searches the windows that commit touches. A cache entry is used only
when the files it came from hash the same and the values it was searched in are
identical, and only when its HMAC verifies under the cache's key (``NEURONASV_CACHE_KEY``,
else ``DIR.neuronasv-key`` beside the folder, made on first use): a stale, damaged or
planted cache costs time, never an answer. The newest
commit's comparison reads its results and its parent's, the noise floors of the whole
history, and for device health the sidecars of the machine's last 100 commits that have
one (the whole history's, as ``compare`` reads them, when it is shorter).
A change point names its culprit when ``neuronasv bisect`` narrowed its range (the
records beside the results) or when its range is one first-parent commit.
"""

from __future__ import annotations

import argparse

from neuronasv.commands.args import (
    add_acks_arg,
    add_out_arg,
    add_results_args,
    command_parser,
    existing_file,
    finite_nonnegative,
    int_at_least,
    output_dir,
    pvalue,
    write_output,
)
from neuronasv.steps.regressions import (
    MAX_PVALUE,
    MIN_MAGNITUDE,
    WINDOW,
    RegressionsOptions,
    regressions,
)

__all__ = ["add_parser", "options", "run"]


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = command_parser(
        subparsers, "regressions", description=__doc__,
        exits={
            0: None,
            2: None,
            5: "files that cannot be read are listed and skipped; only when nothing can be read",
        },
    )  # fmt: skip
    add_results_args(
        p,
        machine_help="only this asv machine's history (default: every machine, each on its own)",
    )
    p.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text (open regressions first) or json (a findings document for publish/issues)",
    )
    p.add_argument(
        "--window",
        type=int_at_least(8),
        default=WINDOW,
        help="commits per sliding search window, at least 8 (the method needs a few points"
        f" on each side of a change; default {WINDOW})",
    )
    p.add_argument(
        "--max-pvalue",
        type=pvalue,
        default=MAX_PVALUE,
        help=f"largest p-value of a reported change, in (0, 1] (default {MAX_PVALUE})",
    )
    p.add_argument(
        "--min-magnitude",
        type=finite_nonnegative,
        default=MIN_MAGNITUDE,
        help="smallest relative shift reported, >= 0 (0.02 = 2 %%)",
    )
    p.add_argument("--open", action="store_true", help="text: only open regressions")
    add_acks_arg(p)
    add_out_arg(p)
    p.add_argument(
        "--report",
        type=existing_file,
        metavar="FINDINGS.json",
        help="compare/confirm document (JSON) of the newest commit vs its parent: its"
        " verdicts and confirmations are the newest commit's state (default: compare here)",
    )
    p.add_argument(
        "--cache-dir",
        type=output_dir,
        default=None,
        help="keep parsed results files and searched windows here, so the next run reads and"
        " searches only what changed (default: no cache; a folder inside the results folder"
        " should start with a dot, which readers and `store push` skip); entries are signed"
        " with $NEURONASV_CACHE_KEY, else the key in DIR.neuronasv-key beside the folder",
    )
    p.add_argument(
        "--workers",
        type=int_at_least(1),
        default=None,
        help="processes parsing results files (default: CPUs, at most 8)",
    )
    p.set_defaults(func=run)


def options(args: argparse.Namespace) -> RegressionsOptions:
    """The step's options from the parsed arguments."""
    return RegressionsOptions(
            results_dir=args.results_dir, repo=args.repo, machine=args.machine,
            window=args.window, max_pvalue=args.max_pvalue, min_magnitude=args.min_magnitude,
            acks=args.acks, report=args.report, cache_dir=args.cache_dir, workers=args.workers,
        )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    doc = regressions(options(args))
    if args.format == "json":
        text = doc.dumps()
    else:
        from neuronasv.report.tables import history_text

        text = history_text(doc, only_open=args.open)
    write_output(text, args.out, json=args.format == "json")
    return 0
