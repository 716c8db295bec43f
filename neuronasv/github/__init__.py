"""GitHub side of Report: a REST client that survives rate limits and faults, the sticky
PR comment, the commit status and an optional check run. Nothing here renders text; see
:mod:`neuronasv.report`.
"""

from __future__ import annotations

from neuronasv.github.client import (
    ACTIONS_BOT,
    API_VERSION,
    AmbiguousWriteError,
    GitHubClient,
    GitHubValidationError,
    RetryPolicy,
)
from neuronasv.github.comments import CommentResult, find_own_comments, upsert_comment
from neuronasv.github.statuses import (
    StatusResult,
    check_run_payload,
    publish_status,
    status_payload,
)

__all__ = [
    "ACTIONS_BOT",
    "API_VERSION",
    "AmbiguousWriteError",
    "CommentResult",
    "GitHubClient",
    "GitHubValidationError",
    "RetryPolicy",
    "StatusResult",
    "check_run_payload",
    "find_own_comments",
    "publish_status",
    "status_payload",
    "upsert_comment",
]
