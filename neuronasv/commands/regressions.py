"""``neuronasv regressions``: change points over the stored history, open ones first.

A change point is *open* when it is a regression still in effect at the latest commit.
Exit codes: 0 done, 2 usage, 5 unreadable results (files that cannot be read are listed
and skipped; the command fails only when nothing can be read).
"""

from __future__ import annotations

import argparse
import datetime
import os

from neuronasv.analyse.acks import ACKS_PATH, load_acks
from neuronasv.analyse.changepoints import CPSettings, detect_history
from neuronasv.analyse.tables import history_text
from neuronasv.commands.args import (
    existing_file,
    finite_nonnegative,
    int_at_least,
    output_file,
    pvalue,
)
from neuronasv.commands.compare import add_common, emit, results_folder, warn_load_errors
from neuronasv.errors import ResultsError
from neuronasv.store.history import git_runner_for, load_history

__all__ = ["add_parser", "run"]


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "regressions",
        help="change points over history; open regressions first",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_common(
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
        default=CPSettings.window,
        help="commits per sliding search window, at least 8 (the method needs a few points"
        f" on each side of a change; default {CPSettings.window})",
    )
    p.add_argument(
        "--max-pvalue",
        type=pvalue,
        default=CPSettings.max_pvalue,
        help="largest p-value of a reported change, in (0, 1]"
        f" (default {CPSettings.max_pvalue})",
    )
    p.add_argument(
        "--min-magnitude",
        type=finite_nonnegative,
        default=CPSettings.min_magnitude,
        help="smallest relative shift reported, >= 0 (0.02 = 2 %%)",
    )
    p.add_argument("--open", action="store_true", help="text: only open regressions")
    p.add_argument(
        "--acks", type=existing_file, help=f"acknowledgements file (default: REPO/{ACKS_PATH})"
    )
    p.add_argument(
        "--out", type=output_file, help="write the output to this file instead of stdout"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    git = git_runner_for(args.repo)
    rdir = results_folder(args)
    history = load_history(rdir, machine=args.machine, repo=args.repo if git is not None else None)
    warn_load_errors(history)
    if not history.series:
        detail = "; ".join(history.load_errors[:3])
        raise ResultsError(f"no readable results under {rdir}" + (f": {detail}" if detail else ""))
    doc = detect_history(
        history,
        machine=args.machine,
        settings=CPSettings(args.window, args.max_pvalue, args.min_magnitude),
        acks=load_acks(args.acks or os.path.join(args.repo, ACKS_PATH)),
        created=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    )
    emit(doc.dumps() if args.format == "json" else history_text(doc, only_open=args.open), args.out)
    return 0
