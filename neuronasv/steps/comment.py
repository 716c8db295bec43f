"""``comment``: the sticky PR comment from a findings document (``neuronasv comment``).

Rendered here, then either planned (a dry run: the requests that would be sent) or sent
through the injected GitHub environment (``GITHUB_TOKEN``, ``GITHUB_REPOSITORY``,
``GITHUB_API_URL``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from neuronasv.errors import UsageError
from neuronasv.steps.common import Report, report_of

if TYPE_CHECKING:
    from neuronasv.github.comments import CommentResult

__all__ = ["CommentOptions", "Commented", "Rendered", "comment", "render", "send"]


@dataclass(frozen=True)
class CommentOptions:
    """What ``neuronasv comment`` posts (each field is the flag of the same name).

    Attributes:
        pr: the pull request number.
        report: the findings document (a file, or the document).
        dry_run: send nothing; plan the requests.
        key: one sticky comment per key (e.g. the machine).
        report_url: link to the full report (default: the document's).
        history: JSON file ``{series label: [values oldest→newest]}`` for the chart.
        authors: logins whose marker comments are ours (empty: the token's own).
        title: the word before the headline (None: the checkout's project).
        environ: the GitHub environment (None: ``os.environ``).
    """

    pr: int
    report: Report
    dry_run: bool = False
    key: str | None = None
    report_url: str | None = None
    history: str | None = None
    authors: Sequence[str] = ()
    title: str | None = None
    environ: Mapping[str, str] | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Commented:
    """The rendered comment, and either the dry run's text or what GitHub answered."""

    body: str
    dry_run: str | None = None
    reason: str | None = None  # why it was a dry run
    result: CommentResult | None = None


def _title(given: str | None) -> str:
    """``--title``, else the project of the checkout this runs in (its top level)."""
    from neuronasv.store.asvconf import comment_title

    return comment_title(".", given)


@dataclass(frozen=True)
class Rendered:
    """The comment as rendered: full, trimmed (GitHub's length limit) and its marker."""

    body: str
    trimmed: str
    marker: str


def render(opts: CommentOptions) -> Rendered:
    """The comment of ``opts.report`` (nothing sent)."""
    from neuronasv.report.load import load_history_values
    from neuronasv.report.markdown import (
        comment_marker,
        render_comment,
        render_comment_trimmed,
    )

    doc = report_of(opts.report)
    history = load_history_values(opts.history) if opts.history else None
    try:
        marker = comment_marker(opts.key)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    title = _title(opts.title)
    body = render_comment(
        doc, history=history, marker=marker, report_url=opts.report_url, title=title
    )
    trimmed = render_comment_trimmed(doc, marker=marker, report_url=opts.report_url, title=title)
    return Rendered(body, trimmed, marker)


def send(opts: CommentOptions, rendered: Rendered) -> Commented:
    """Send the rendered comment, or plan it when dry (or without a token)."""
    from neuronasv.github.client import DEFAULT_API_URL, GitHubClient
    from neuronasv.github.comments import planned_requests, upsert_comment
    from neuronasv.github.dryrun import dry_run_text

    body = rendered.body
    env = dict(os.environ if opts.environ is None else opts.environ)
    token = env.get("GITHUB_TOKEN")
    if opts.dry_run or not token:
        reason = "--dry-run" if opts.dry_run else "GITHUB_TOKEN is not set"
        repo = env.get("GITHUB_REPOSITORY") or "{owner}/{repo}"
        text = dry_run_text(
            planned_requests(repo, opts.pr, body),
            api_url=env.get("GITHUB_API_URL") or DEFAULT_API_URL,
            reason=reason,
        )
        return Commented(body, dry_run=text, reason=reason)
    client = GitHubClient.from_env(env)
    result = upsert_comment(
        client, opts.pr, body, marker=rendered.marker, trimmed_body=rendered.trimmed,
        authors=list(opts.authors) or None,
    )  # fmt: skip
    return Commented(body, result=result)


def comment(opts: CommentOptions) -> Commented:
    """Render the comment and send it (or plan it: :func:`send`)."""
    return send(opts, render(opts))
