"""``neuronasv regressions``: change points over the stored history, open ones first, and
the newest commit against its parent.

A change point is *open* when it is a regression still in effect at the latest commit.
Change points cannot see a shift at the newest commit (one point after it), so the newest
commit is also compared with its parent (git's first parent, else the previous measured
commit) as ``neuronasv compare`` does: ``suspect`` regressions; with ``--report``, the
compare/confirm document of that pair (what the PR comment shows) is used instead, and
its confirmed regressions read ``confirmed``. Fewer than 4 commits: the output says
"too few commits for change points (have N, need 4)".
Exit codes: 0 done, 2 usage, 5 unreadable results (files that cannot be read are listed
and skipped; the command fails only when nothing can be read).
"""

from __future__ import annotations

import argparse
import datetime
import os
from collections.abc import Sequence

from neuronasv.analyse.acks import ACKS_PATH, Acknowledgement, load_acks
from neuronasv.analyse.changepoints import CPSettings
from neuronasv.analyse.newest import (
    NewestCheck,
    check_newest,
    measured_commits,
    regressions_document,
)
from neuronasv.commands.args import (
    existing_file,
    finite_nonnegative,
    int_at_least,
    output_file,
    pvalue,
)
from neuronasv.commands.compare import add_common, emit, results_folder, warn_load_errors
from neuronasv.errors import ResultsError, StoreError, UsageError
from neuronasv.model import FindingsDocument, History
from neuronasv.report.tables import history_text
from neuronasv.store.git import Git, git_for
from neuronasv.store.history import load_history

__all__ = ["add_parser", "newest_for", "run"]


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
    p.add_argument(
        "--report",
        help="compare/confirm document (JSON) of the newest commit vs its parent: its"
        " verdicts and confirmations are the newest commit's state (default: compare here)",
    )
    p.set_defaults(func=run)


def _ancestors(git: Git | None, commit: str) -> list[str] | None:
    """``commit``'s first-parent chain, nearest first (None without git or unknown commit)."""
    if git is None:
        return None
    try:
        return git.ancestors(commit, 10000)[1:]
    except StoreError:
        return None


def newest_for(
    history: History,
    machine: str,
    git: Git | None,
    *,
    report: FindingsDocument | None = None,
    acks: Sequence[Acknowledgement] = (),
    created: str = "",
) -> NewestCheck | None:
    """:func:`check_newest` with the parent from git's first-parent chain when there is git."""
    measured = measured_commits(history, machine)
    ancestors = _ancestors(git, measured[-1]) if measured else None
    return check_newest(
        history, machine, ancestors=ancestors, report=report, acks=acks, created=created
    )


def _newest_machine(history: History, machine: str | None) -> str | None:
    if machine is not None:
        return machine
    return history.machines[0] if len(history.machines) == 1 else None


def run(args: argparse.Namespace) -> int:
    git = git_for(args.repo)
    rdir = results_folder(args)
    history = load_history(rdir, machine=args.machine, git=git)
    warn_load_errors(history)
    if not history.series:
        detail = "; ".join(history.load_errors[:3])
        raise ResultsError(f"no readable results under {rdir}" + (f": {detail}" if detail else ""))
    report = None
    if args.report:
        try:
            with open(args.report, encoding="utf-8") as fh:
                report = FindingsDocument.loads(fh.read(), source=args.report)
        except OSError as exc:
            raise UsageError(f"--report {args.report}: {exc.strerror or exc}") from None
    created = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    acks = load_acks(args.acks or os.path.join(args.repo, ACKS_PATH))
    newest = None
    nm = _newest_machine(history, args.machine)
    if nm is not None:
        newest = newest_for(history, nm, git, report=report, acks=acks, created=created)
    if report is not None and newest is None:
        raise UsageError(
            "--report: no newest commit to match it with"
            + (" (several machines: pass --machine)" if nm is None else " (one commit only)")
        )
    doc = regressions_document(
        history,
        machine=args.machine,
        settings=CPSettings(args.window, args.max_pvalue, args.min_magnitude),
        acks=acks,
        created=created,
        newest=newest,
    )
    emit(doc.dumps() if args.format == "json" else history_text(doc, only_open=args.open), args.out)
    return 0
