"""``neuronasv issues-sync [--dry-run] [--site-url URL] REGRESSIONS.json...``.

One GitHub issue per open regression change point: opened, updated, closed (see
:mod:`neuronasv.github.issues_sync`). ``--dry-run`` prints the plan and writes nothing; without
``GITHUB_TOKEN`` a dry run plans against no existing issues. What ``ci/issues-sync.sh`` runs.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from neuronasv.commands.args import command_parser
from neuronasv.log import emit
from neuronasv.steps.store import action_line, sync_issues

__all__ = ["add_parser", "run"]


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = command_parser(
        subparsers, "issues-sync", description=__doc__,
        exits={0: None, 2: None, 5: "the documents", 8: None},
    )  # fmt: skip
    p.add_argument("documents", nargs="+", type=Path, help="regressions JSON documents")
    p.add_argument("--site-url", help="history site to link from each issue")
    p.add_argument("--dry-run", action="store_true", help="print the plan, write nothing")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    plan = sync_issues([str(p) for p in args.documents], site_url=args.site_url,
                       dry_run=args.dry_run)  # fmt: skip
    for a in plan:
        emit(action_line(a, dry_run=args.dry_run))
    if not plan:
        emit("regression issues up to date")
    return 0
