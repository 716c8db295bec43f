"""The sticky PR comment: one comment of ours per PR (and marker), updated in place.

"Ours" means both: the body's **first line** is our hidden marker **and** the author is the
token's own login (``GET /user``) or, for an Actions ``GITHUB_TOKEN`` whose ``/user`` is
forbidden, ``github-actions[bot]``. Anyone can paste the marker into a comment; only the
author check makes it safe to edit. The marker counts only as the first line: a body of
ours can quote another key's marker further down (an op name holding
``<!-- neuronasv:comment:K -->``), and that must not make it key K's comment.

All pages of the PR's comments are read (``per_page=100``, ``Link`` header), so a PR with
hundreds of comments still finds ours. If a create times out after GitHub stored it, the
comments are listed again before any retry, so a retry never duplicates. If several
comments of ours exist (an older tool, a race), the oldest is kept and the rest deleted.
If GitHub answers 422 "body is too long", the trimmed body is sent instead.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from neuronasv.errors import GitHubError, UsageError
from neuronasv.github.client import (
    ACTIONS_BOT,
    AmbiguousWriteError,
    GitHubClient,
    GitHubValidationError,
)

__all__ = [
    "PERMISSION",
    "CommentResult",
    "comment_authors",
    "find_own_comments",
    "has_marker",
    "planned_requests",
    "upsert_comment",
]

log = logging.getLogger("neuronasv.github")

#: The workflow permission comments need (named in permission errors).
PERMISSION = "pull-requests: write (or issues: write)"


@dataclass(frozen=True)
class CommentResult:
    """What :func:`upsert_comment` did.

    Attributes:
        action: ``created``, ``updated`` or ``unchanged`` (body already current).
        comment_id: the id of our comment.
        html_url: its web address when GitHub returned one.
        trimmed: the trimmed body was sent (422 "body is too long").
        deleted: ids of duplicate comments of ours that were removed.
    """

    action: Literal["created", "updated", "unchanged"]
    comment_id: int
    html_url: str | None = None
    trimmed: bool = False
    deleted: tuple[int, ...] = ()


def _check_pr(pr: int) -> int:
    if isinstance(pr, bool) or not isinstance(pr, int) or pr <= 0:
        raise UsageError(f"PR number must be a positive integer, got {pr!r}")
    return pr


def comment_authors(client: GitHubClient, authors: Sequence[str] | None = None) -> tuple[str, ...]:
    """Logins whose marker comments count as ours: ``authors``, or the token's own login,
    or ``github-actions[bot]`` when ``/user`` is forbidden (Actions token)."""
    if authors:
        return tuple(authors)
    login = client.login()
    return (login,) if login else (ACTIONS_BOT,)


def has_marker(body: str, marker: str) -> bool:
    """True when ``body``'s first line is exactly ``marker`` (a CR before the LF allowed).

    Only the first line counts: anywhere else the marker may be quoted text (an op name,
    a pasted comment), and another key's comment must not be taken for this one.
    """
    first = body.split("\n", 1)[0]
    return first.removesuffix("\r") == marker


def _is_ours(c: Any, marker: str, authors: Sequence[str]) -> bool:
    if not isinstance(c, Mapping):
        return False
    user = c.get("user")
    login = user.get("login") if isinstance(user, Mapping) else None
    body = c.get("body")
    return isinstance(body, str) and has_marker(body, marker) and login in authors


def find_own_comments(
    client: GitHubClient, pr: int, marker: str, authors: Sequence[str]
) -> list[Mapping[str, Any]]:
    """Our marker comments on ``pr`` across all pages, oldest first."""
    path = client.repo_path(f"/issues/{_check_pr(pr)}/comments")
    ours = [c for c in client.paginate(path) if _is_ours(c, marker, authors)]
    return sorted(ours, key=lambda c: int(c.get("id", 0)))


def planned_requests(repository: str, pr: int, body: str) -> list[dict[str, Any]]:
    """What :func:`upsert_comment` sends when no comment of ours exists (for dry runs).

    When one exists, the same body goes as ``PATCH /repos/{repo}/issues/comments/{id}``.
    """
    return [
        {
            "method": "POST",
            "path": f"/repos/{repository}/issues/{_check_pr(pr)}/comments",
            "json": {"body": body},
            "note": f"or PATCH /repos/{repository}/issues/comments/{{id}} when ours exists",
        }
    ]


def _write(
    client: GitHubClient,
    method: str,
    path: str,
    body: str,
    trimmed_body: str | None,
    allow: Sequence[int] = (),
) -> tuple[Mapping[str, Any] | None, bool]:
    """POST/PATCH ``body``; on 422 "too long" send ``trimmed_body`` once.

    A status in ``allow`` (a PATCH answered 404: the comment was deleted meanwhile) gives
    ``(None, False)`` instead of an error.
    """
    try:
        resp = client.request(method, path, json={"body": body}, permission=PERMISSION, allow=allow)
        if resp.status_code in allow:
            return None, False
        return resp.json(), False
    except GitHubValidationError as exc:
        if not (exc.too_long and trimmed_body is not None and trimmed_body != body):
            raise
        log.warning(
            "comment body too long for GitHub (%d characters); sending the trimmed form", len(body)
        )
        resp = client.request(
            method, path, json={"body": trimmed_body}, permission=PERMISSION, allow=allow
        )
        if resp.status_code in allow:
            return None, True
        return resp.json(), True


def _update(
    client: GitHubClient,
    existing: Sequence[Mapping[str, Any]],
    body: str,
    trimmed_body: str | None,
) -> CommentResult | None:
    """Update the oldest of ours (deleting the others); None when it vanished (404)."""
    keep, extra = existing[0], existing[1:]
    deleted = []
    for c in extra:
        client.request(
            "DELETE",
            client.repo_path(f"/issues/comments/{int(c['id'])}"),
            allow=(404,),
            permission=PERMISSION,
        )
        deleted.append(int(c["id"]))
    cid = int(keep["id"])
    if keep.get("body") in (body, trimmed_body):
        return CommentResult(
            "unchanged", cid, keep.get("html_url"), keep.get("body") != body, tuple(deleted)
        )
    data, trimmed = _write(
        client, "PATCH", client.repo_path(f"/issues/comments/{cid}"), body, trimmed_body,
        allow=(404,),
    )  # fmt: skip
    if data is None:
        log.warning("comment #%d was deleted while we updated it; finding or creating again", cid)
        return None
    return CommentResult("updated", cid, data.get("html_url"), trimmed, tuple(deleted))


def _converge(
    client: GitHubClient,
    created: CommentResult,
    ours: Sequence[Mapping[str, Any]],
    body: str,
    trimmed_body: str | None,
) -> CommentResult:
    """After a create, listed again: when another run created one too (concurrent first
    runs), the oldest stays with our body and every newer one goes (ours included), so
    every racer converges on the same single comment."""
    if len(ours) <= 1:
        return created
    if int(ours[0]["id"]) == created.comment_id:
        for c in ours[1:]:
            client.request(
                "DELETE",
                client.repo_path(f"/issues/comments/{int(c['id'])}"),
                allow=(404,),
                permission=PERMISSION,
            )
        deleted = tuple(int(c["id"]) for c in ours[1:])
        return dataclasses.replace(created, deleted=deleted)
    log.warning("another run created our comment at the same time; keeping the older one")
    return _update(client, ours, body, trimmed_body) or created


def upsert_comment(
    client: GitHubClient,
    pr: int,
    body: str,
    *,
    marker: str,
    trimmed_body: str | None = None,
    authors: Sequence[str] | None = None,
    max_create_attempts: int = 3,
) -> CommentResult:
    """Create or update our sticky comment on ``pr`` (find-or-create, converging).

    Each attempt lists our comments: the oldest is updated (the others deleted); a PATCH
    answered 404 (deleted meanwhile) or a create whose outcome is unknown (timeout) starts
    the next attempt with a fresh list, never a blind create. After a create the list is
    read again and duplicates newer than the oldest are deleted, so two runs racing on a
    PR's first comment leave one.

    Args:
        client: the GitHub client.
        pr: pull request number.
        body: the comment; its first line must be ``marker``.
        marker: the hidden marker that identifies our comment.
        trimmed_body: shorter body (also starting with ``marker``) for 422 "body is too long".
        authors: logins that count as ours (default: see :func:`comment_authors`).
        max_create_attempts: find-or-create attempts (after a 404 or an ambiguous create).

    Raises:
        UsageError: the body does not start with the marker line, or ``pr`` is not a
            positive integer.
        GitHubError: and subclasses, from the client.
    """
    _check_pr(pr)
    for text in (body, trimmed_body):
        if text is not None and not has_marker(text, marker):
            raise UsageError(
                "the comment body's first line must be the marker, or it cannot be found again"
            )
    who = comment_authors(client, authors)
    create_path = client.repo_path(f"/issues/{pr}/comments")
    last: GitHubError | None = None
    for attempt in range(1, max_create_attempts + 2):  # the last one only looks
        existing = find_own_comments(client, pr, marker, who)
        if existing:
            result = _update(client, existing, body, trimmed_body)
            if result is None:
                continue
            if last is not None and result.action == "unchanged":
                # Our timed-out create did land: report it as what it was.
                result = dataclasses.replace(result, action="created")
            return result
        if attempt > max_create_attempts:
            break
        try:
            data, trimmed = _write(client, "POST", create_path, body, trimmed_body)
        except AmbiguousWriteError as exc:
            last = exc
            log.warning(
                "creating the comment may have failed (%s); checking before retrying "
                "(attempt %d of %d)",
                exc.message,
                attempt,
                max_create_attempts,
            )
            continue
        assert data is not None  # no status is allowed through for a create
        created = CommentResult("created", int(data["id"]), data.get("html_url"), trimmed)
        return _converge(
            client, created, find_own_comments(client, pr, marker, who), body, trimmed_body
        )
    why = last.message if last is not None else "our comment kept being deleted"
    raise GitHubError(
        f"could not create the comment on PR {pr}: {why}",
        hint="GitHub may be degraded; re-run the job",
    )
