"""``neuronasv regressions``: change points over the stored history, open ones first, and
the newest commit against its parent.

A change point is *open* when it is a regression still in effect at the latest commit.
Change points cannot see a shift at the newest commit (one point after it), so the newest
commit is also compared with its parent (git's first parent, else the previous measured
commit) as ``neuronasv compare`` does: ``suspect`` regressions; with ``--report``, the
compare/confirm document of that pair (what the PR comment shows) is used instead, and
its confirmed regressions read ``confirmed``. Fewer than 4 commits: the output says
"too few commits for change points (have N, need 4)". A change point names its culprit
when ``neuronasv bisect`` narrowed its range (the records beside the results) or when its
range is one first-parent commit.
"""

from __future__ import annotations

import argparse
import datetime
import sys

from neuronasv.analyse.changepoints import CPSettings
from neuronasv.analyse.newest import newest_for, regressions_document
from neuronasv.commands.args import (
    acks_from_args,
    add_acks_arg,
    add_out_arg,
    add_results_args,
    command_parser,
    existing_file,
    finite_nonnegative,
    int_at_least,
    pvalue,
    results_folder,
    warn_load_errors,
    write_output,
)
from neuronasv.errors import ResultsError, UsageError
from neuronasv.model import FindingsDocument, History
from neuronasv.report.load import load_findings
from neuronasv.report.tables import history_text
from neuronasv.store.git import Git, git_for
from neuronasv.store.history import load_history

__all__ = ["add_parser", "run"]


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
    add_acks_arg(p)
    add_out_arg(p)
    p.add_argument(
        "--report",
        type=existing_file,
        metavar="FINDINGS.json",
        help="compare/confirm document (JSON) of the newest commit vs its parent: its"
        " verdicts and confirmations are the newest commit's state (default: compare here)",
    )
    p.set_defaults(func=run)


def _newest_machine(history: History, machine: str | None) -> str | None:
    if machine is not None:
        return machine
    return history.machines[0] if len(history.machines) == 1 else None


def _with_culprits(
    doc: FindingsDocument, history: History, rdir: str, machine: str | None, git: Git | None
) -> FindingsDocument:
    """The change points with the bisections stored beside the results (and the culprit of
    a one-commit range when there is git)."""
    from neuronasv.analyse.culprits import attach_culprits
    from neuronasv.store.bisections import load_bisections

    records, errors = load_bisections(rdir, [machine] if machine else None)
    for err in errors[:10]:
        print(f"warning: skipped bisection record: {err}", file=sys.stderr)
    parent = None if git is None else (lambda c: git.resolve(f"{c}^"))
    subject = None if git is None else git.subject
    return attach_culprits(doc, records, history, first_parent=parent, subject=subject)


def run(args: argparse.Namespace) -> int:
    git = git_for(args.repo)
    rdir = results_folder(args)
    history = load_history(rdir, machine=args.machine, git=git)
    warn_load_errors(history)
    if not history.series:
        detail = "; ".join(history.load_errors[:3])
        raise ResultsError(f"no readable results under {rdir}" + (f": {detail}" if detail else ""))
    report = load_findings(args.report) if args.report else None
    created = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    acks = acks_from_args(args)
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
    doc = _with_culprits(doc, history, rdir, args.machine, git)
    text = doc.dumps() if args.format == "json" else history_text(doc, only_open=args.open)
    write_output(text, args.out)
    return 0
