"""``neuronasv comment --pr N --report FINDINGS.json``: the sticky PR comment.

Creates our comment on the PR or updates it in place (found by hidden marker and author,
across all pages). With ``--dry-run``, or when ``GITHUB_TOKEN`` is not set, nothing is
sent: the request that would be sent (method, path, JSON body) is written to stdout or
``--out``. Environment: ``GITHUB_API_URL``, ``GITHUB_REPOSITORY`` (or ``--github-repo``;
the old spelling ``--repo OWNER/NAME`` still works, with a deprecation warning),
``GITHUB_TOKEN``.
"""

from __future__ import annotations

import argparse
import logging
from dataclasses import replace

from neuronasv.commands.args import (
    add_dry_run_args,
    add_findings_arg,
    add_github_repo_arg,
    command_parser,
    existing_file,
    github_environment,
    output_file,
    positive_int,
    write_output,
)
from neuronasv.log import emit
from neuronasv.steps.comment import CommentOptions, render, send

__all__ = ["add_parser", "options", "run"]

log = logging.getLogger(__name__)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = command_parser(
        subparsers, "comment", description=__doc__,
        exits={
            0: None,
            2: None,
            5: "the findings",
            8: "a permission error names the workflow's permissions:",
        },
    )  # fmt: skip
    p.add_argument("--pr", type=positive_int, required=True, help="pull request number")
    add_findings_arg(p)
    add_dry_run_args(p)
    p.add_argument(
        "--body-out",
        type=output_file,
        metavar="FILE",
        help="also write the rendered markdown here",
    )
    p.add_argument("--key", help="one sticky comment per KEY (e.g. the machine); A-Za-z0-9._-")
    p.add_argument("--report-url", help="link to the full report (default: the document's)")
    p.add_argument(
        "--history",
        type=existing_file,
        metavar="FILE",
        help="JSON {series label: [values oldest→newest]} for the chart",
    )
    p.add_argument(
        "--author",
        action="append",
        default=[],
        metavar="LOGIN",
        help="login whose marker comments are ours (default: the token's own,"
        " or github-actions[bot])",
    )
    p.add_argument(
        "--title",
        help="the word before the headline (default: the project named in the checkout's"
        " asv.conf.json, else neuronasv)",
    )
    add_github_repo_arg(p)
    p.set_defaults(func=run)


def options(args: argparse.Namespace) -> CommentOptions:
    """The step's options from the parsed arguments (the GitHub environment is added when
    the command runs: ``--github-repo``, or the deprecated ``--repo``, warns there)."""
    return CommentOptions(
        pr=args.pr, report=args.report, dry_run=args.dry_run, key=args.key,
        report_url=args.report_url, history=args.history, authors=tuple(args.author),
        title=args.title,
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    opts = options(args)
    rendered = render(opts)
    if args.body_out:
        write_output(rendered.body, args.body_out)
    done = send(replace(opts, environ=github_environment(args)), rendered)
    if done.dry_run is not None:
        write_output(done.dry_run, args.out, json=True)
        if not args.dry_run:
            log.info(f"neuronasv comment: {done.reason}; dry run, nothing sent")
        return 0
    result = done.result
    assert result is not None
    where = f" {result.html_url}" if result.html_url else ""
    extra = " (trimmed form: GitHub refused the full length)" if result.trimmed else ""
    emit(f"comment {result.action}: #{result.comment_id}{where}{extra}")
    if result.deleted:
        emit(f"removed {len(result.deleted)} duplicate comment(s) of ours")
    return 0
