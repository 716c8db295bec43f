"""``neuronasv status --sha SHA --report FINDINGS.json``: commit status (+ check run).

State ``failure`` for an unacknowledged regression, ``error`` when benchmarks failed or
results were unreadable, else ``success``; the description is the findings headline.
``--check-run`` also creates a check run when the token can (GitHub App or Actions token
with ``checks: write``); when it cannot, that is reported and the status still stands.
``--dry-run`` (or no ``GITHUB_TOKEN``) writes the requests instead of sending them.
``--github-repo OWNER/NAME`` overrides ``GITHUB_REPOSITORY`` (``--repo OWNER/NAME``, the old
spelling, still works with a deprecation warning).
"""

from __future__ import annotations

import argparse
import logging

from neuronasv.commands.args import (
    add_dry_run_args,
    add_findings_arg,
    add_github_repo_arg,
    command_parser,
    github_environment,
    write_output,
)
from neuronasv.github.client import DEFAULT_API_URL, GitHubClient
from neuronasv.github.dryrun import dry_run_text
from neuronasv.github.statuses import (
    DEFAULT_CONTEXT,
    check_run_payload,
    check_sha,
    publish_status,
    status_payload,
)
from neuronasv.log import emit
from neuronasv.report.load import load_findings

__all__ = ["add_parser", "run"]

log = logging.getLogger(__name__)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = command_parser(
        subparsers, "status", description=__doc__,
        exits={0: None, 2: None, 5: "the findings", 8: None},
    )  # fmt: skip
    p.add_argument("--sha", required=True, help="full 40-hex commit SHA")
    add_findings_arg(p)
    p.add_argument("--context", default=DEFAULT_CONTEXT, help="status context (neuronasv)")
    p.add_argument("--target-url", help="status link (default: the document's report_url)")
    p.add_argument("--check-run", action="store_true", help="also create a check run")
    add_dry_run_args(p)
    add_github_repo_arg(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    sha = check_sha(args.sha)
    doc = load_findings(args.report)
    env = github_environment(args)
    token = env.get("GITHUB_TOKEN")
    if args.dry_run or not token:
        repo = env.get("GITHUB_REPOSITORY") or "{owner}/{repo}"
        reqs = [
            {
                "method": "POST",
                "path": f"/repos/{repo}/statuses/{sha}",
                "json": status_payload(doc, context=args.context, target_url=args.target_url),
            }
        ]
        if args.check_run:
            reqs.append(
                {
                    "method": "POST",
                    "path": f"/repos/{repo}/check-runs",
                    "json": check_run_payload(
                        doc, sha, name=args.context, details_url=args.target_url
                    ),
                }
            )
        reason = "--dry-run" if args.dry_run else "GITHUB_TOKEN is not set"
        write_output(
            dry_run_text(reqs, api_url=env.get("GITHUB_API_URL") or DEFAULT_API_URL, reason=reason),
            args.out,
            json=True,
        )
        if not args.dry_run:
            log.info(f"neuronasv status: {reason}; dry run, nothing sent")
        return 0
    client = GitHubClient.from_env(env)
    result = publish_status(
        client, sha, doc, context=args.context, target_url=args.target_url, check_run=args.check_run
    )
    emit(f"status {result.state} set on {sha[:10]}")
    if result.check_run_id is not None:
        emit(f"check run #{result.check_run_id} created")
    if result.check_run_skipped:
        log.warning(f"no check run: {result.check_run_skipped}")
    return 0
