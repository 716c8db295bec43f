"""Commit status (``statuses: write``) and, when the token can, a check run.

The status summarises the findings in GitHub's 140-character description; its state is
``failure`` when an unacknowledged regression was found, ``error`` when the head lost
series (:attr:`FindingsDocument.lost`: failed, or removed workloads/benchmarks), results
could not be read, the comparison was forced (and nothing regressed), or the verdicts were
withheld because the device's canary ran slow (the description then starts ``verdicts
withheld:``), ``success`` otherwise. Check runs
need a GitHub App token (an Actions ``GITHUB_TOKEN`` with ``checks: write`` also works);
when the token cannot create one, that is reported and the status still stands.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from neuronasv.errors import GitHubPermissionError, UsageError
from neuronasv.github.client import GitHubClient
from neuronasv.model.findings import FindingsDocument
from neuronasv.report.digest import digest
from neuronasv.report.escape import clean, safe_url
from neuronasv.report.markdown import render_markdown

__all__ = [
    "DEFAULT_CONTEXT",
    "StatusResult",
    "check_run_payload",
    "check_sha",
    "create_check_run",
    "description",
    "publish_status",
    "set_commit_status",
    "status_payload",
]

DEFAULT_CONTEXT = "neuronasv"
_SHA = re.compile(r"[0-9a-f]{40}")


def check_sha(sha: str) -> str:
    """``sha`` if it is a full 40-hex commit id (lower case), else :class:`UsageError`."""
    if not isinstance(sha, str) or not _SHA.fullmatch(sha):
        raise UsageError(f"commit SHA must be 40 lower-case hex digits, got {sha!r}")
    return sha


def _state(doc: FindingsDocument) -> str:
    d = digest(doc)
    if d.withheld is not None:
        return "error"  # the device was unhealthy: no verdict either way (health.py)
    if d.has_regressions:
        return "failure"
    # Series the head lost (removed, failed) are a failure of the run, never a green
    # check, and neither is a comparison that had to be forced.
    if doc.lost or doc.load_errors or doc.forced:
        return "error"
    return "success"


#: GitHub's limit on a commit status description.
DESCRIPTION_MAX = 140


def description(headline: str) -> str:
    """The headline in GitHub's 140 characters: whole when it fits, else without its
    quoted row (`` — <row> <state words>``), never a figure cut in its middle."""
    text = clean(headline, max_len=100_000)
    if len(text) > DESCRIPTION_MAX and " — " in text:
        text = text.split(" — ", 1)[0]
    return clean(text, max_len=DESCRIPTION_MAX)


def status_payload(
    doc: FindingsDocument, *, context: str = DEFAULT_CONTEXT, target_url: str | None = None
) -> dict[str, Any]:
    """The JSON body of ``POST /repos/{repo}/statuses/{sha}`` for ``doc``."""
    payload: dict[str, Any] = {
        "state": _state(doc),
        "description": description(digest(doc).headline),
        "context": clean(context, max_len=100) or DEFAULT_CONTEXT,
    }
    url = safe_url(target_url or doc.links.get("report_url"))
    if url:
        payload["target_url"] = url
    return payload


def check_run_payload(
    doc: FindingsDocument, sha: str, *, name: str = DEFAULT_CONTEXT, details_url: str | None = None
) -> dict[str, Any]:
    """The JSON body of ``POST /repos/{repo}/check-runs`` (completed, with a summary)."""
    state = _state(doc)
    conclusion = {"failure": "failure", "error": "neutral", "success": "success"}[state]
    payload: dict[str, Any] = {
        "name": clean(name, max_len=100) or DEFAULT_CONTEXT,
        "head_sha": check_sha(sha),
        "status": "completed",
        "conclusion": conclusion,
        "output": {
            "title": clean(digest(doc).headline, max_len=255),
            "summary": render_markdown(doc, max_chars=60_000),
        },
    }
    url = safe_url(details_url or doc.links.get("report_url"))
    if url:
        payload["details_url"] = url
    return payload


def set_commit_status(client: GitHubClient, sha: str, payload: dict[str, Any]) -> dict[str, Any]:
    """Create a commit status (repeating it is harmless: the latest per context wins)."""
    resp = client.request(
        "POST",
        client.repo_path(f"/statuses/{check_sha(sha)}"),
        json=payload,
        idempotent=True,
        permission="statuses: write",
    )
    data = resp.json()
    return data if isinstance(data, dict) else {}


def create_check_run(client: GitHubClient, payload: dict[str, Any]) -> dict[str, Any]:
    """Create a check run (``checks: write``; GitHub App or Actions token)."""
    resp = client.request(
        "POST",
        client.repo_path("/check-runs"),
        json=payload,
        idempotent=True,
        permission="checks: write (needs a GitHub App or the Actions GITHUB_TOKEN)",
    )
    data = resp.json()
    return data if isinstance(data, dict) else {}


@dataclass(frozen=True)
class StatusResult:
    """What :func:`publish_status` did.

    Attributes:
        state: the commit status state sent.
        check_run_id: id of the check run, or None.
        check_run_skipped: why no check run was made (None when made or not asked).
    """

    state: str
    check_run_id: int | None = None
    check_run_skipped: str | None = None


def publish_status(
    client: GitHubClient,
    sha: str,
    doc: FindingsDocument,
    *,
    context: str = DEFAULT_CONTEXT,
    target_url: str | None = None,
    check_run: bool = False,
) -> StatusResult:
    """Set the commit status and, if asked, create a check run (optional: a token that
    cannot is reported in the result, not raised)."""
    payload = status_payload(doc, context=context, target_url=target_url)
    set_commit_status(client, sha, payload)
    if not check_run:
        return StatusResult(payload["state"])
    try:
        data = create_check_run(
            client, check_run_payload(doc, sha, name=context, details_url=target_url)
        )
    except GitHubPermissionError as exc:
        return StatusResult(payload["state"], check_run_skipped=f"{exc.message} ({exc.hint})")
    cid = data.get("id")
    return StatusResult(payload["state"], check_run_id=int(cid) if isinstance(cid, int) else None)
