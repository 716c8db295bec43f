"""The pull request a commit came from: ``GET /repos/{owner}/{repo}/commits/{sha}/pulls``.

``neuronasv bisect`` names the culprit's PR through the REST API when a token is there (the
endpoint lists the PRs whose head or merge produced the commit); without one, the commit
subject's ``(#123)`` stays the source (:func:`neuronasv.analyse.culprits.pull_from_subject`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from neuronasv.errors import GitHubError
from neuronasv.github.client import GitHubClient
from neuronasv.model.culprit import PullRef

__all__ = ["pull_for_commit"]

_SHA = re.compile(r"[0-9a-f]{40}")


def _pick(items: list[Any]) -> Mapping[str, Any] | None:
    """A merged PR first (the one that landed the commit), else the lowest number."""
    prs = [p for p in items if isinstance(p, Mapping) and isinstance(p.get("number"), int)]
    if not prs:
        return None
    merged = [p for p in prs if p.get("merged_at")]
    return min(merged or prs, key=lambda p: int(p["number"]))


def pull_for_commit(client: GitHubClient, sha: str) -> PullRef | None:
    """The commit's pull request from the API; None without a token, a PR or an answer.

    A failure of the API (permissions, rate limit, a network fault) is not the search's
    failure: it returns None and the caller keeps what the subject says.
    """
    if not client.has_token or not _SHA.fullmatch(sha):
        return None
    try:
        data = client.get_json(client.repo_path(f"/commits/{sha}/pulls"), allow=(404, 422))
    except GitHubError:
        return None
    if not isinstance(data, list):
        return None
    pr = _pick(data)
    if pr is None:
        return None
    title = pr.get("title")
    url = pr.get("html_url")
    return PullRef(
        int(pr["number"]),
        title=title if isinstance(title, str) else "",
        url=url if isinstance(url, str) else "",
        source="github",
    )
