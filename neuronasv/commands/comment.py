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
from neuronasv.errors import UsageError
from neuronasv.github.client import DEFAULT_API_URL, GitHubClient
from neuronasv.github.comments import planned_requests, upsert_comment
from neuronasv.github.dryrun import dry_run_text
from neuronasv.report.load import load_findings, load_history_values
from neuronasv.report.markdown import comment_marker, render_comment, render_comment_trimmed

__all__ = ["add_parser", "run"]

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


def _title(given: str | None) -> str:
    """``--title``, else the project of the checkout this runs in (its top level)."""
    from neuronasv.store.asvconf import comment_title

    return comment_title(".", given)


def run(args: argparse.Namespace) -> int:
    doc = load_findings(args.report)
    history = load_history_values(args.history) if args.history else None
    try:
        marker = comment_marker(args.key)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    title = _title(args.title)
    body = render_comment(
        doc, history=history, marker=marker, report_url=args.report_url, title=title
    )
    trimmed = render_comment_trimmed(doc, marker=marker, report_url=args.report_url, title=title)
    if args.body_out:
        write_output(body, args.body_out)

    env = github_environment(args)
    token = env.get("GITHUB_TOKEN")
    if args.dry_run or not token:
        reason = "--dry-run" if args.dry_run else "GITHUB_TOKEN is not set"
        repo = env.get("GITHUB_REPOSITORY") or "{owner}/{repo}"
        text = dry_run_text(
            planned_requests(repo, args.pr, body),
            api_url=env.get("GITHUB_API_URL") or DEFAULT_API_URL,
            reason=reason,
        )
        write_output(text, args.out)
        if not args.dry_run:
            log.info(f"neuronasv comment: {reason}; dry run, nothing sent")
        return 0

    client = GitHubClient.from_env(env)
    result = upsert_comment(
        client, args.pr, body, marker=marker, trimmed_body=trimmed, authors=args.author or None
    )
    where = f" {result.html_url}" if result.html_url else ""
    extra = " (trimmed form: GitHub refused the full length)" if result.trimmed else ""
    print(f"comment {result.action}: #{result.comment_id}{where}{extra}")
    if result.deleted:
        print(f"removed {len(result.deleted)} duplicate comment(s) of ours")
    return 0
