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
from neuronasv.commands.compare import add_common, emit
from neuronasv.errors import ResultsError
from neuronasv.store.history import default_results_dir, git_runner_for, load_history

__all__ = ["add_parser", "run"]


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "regressions",
        help="change points over history; open regressions first",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_common(p)
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--window", type=int, default=CPSettings.window)
    p.add_argument("--max-pvalue", type=float, default=CPSettings.max_pvalue)
    p.add_argument(
        "--min-magnitude",
        type=float,
        default=CPSettings.min_magnitude,
        help="smallest relative shift reported (0.02 = 2 %%)",
    )
    p.add_argument("--open", action="store_true", help="text: only open regressions")
    p.add_argument("--acks", help=f"acknowledgements file (default: REPO/{ACKS_PATH})")
    p.add_argument("--out", help="write the output to this file instead of stdout")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    git = git_runner_for(args.repo)
    rdir = args.results_dir or default_results_dir(args.repo)
    history = load_history(rdir, machine=args.machine, repo=args.repo if git is not None else None)
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
