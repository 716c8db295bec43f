"""One GitHub issue per open regression change point on main: opened, updated, closed.

pandas' asv-runner files an issue per regression; done naively that is noise (a new issue
every run, never closed). Here each change point has a stable identity — a hash of
(machine, series, first commit of the new level) — written into the issue as a hidden
marker, and every run *reconciles*:

- an open, unacknowledged regression with no issue → create one;
- one with an open issue of ours → update title/body if they changed (nothing otherwise);
- an open issue of ours whose change point is no longer an open regression (it recovered,
  was acknowledged, or is no longer detected) → a short comment saying which, then close;
- an issue of ours that someone closed stays closed (a maintainer's decision; the
  acknowledgements file is the way to silence a known shift).

Only machines present in the analysed documents are reconciled, so a run that analysed one
shard never closes another shard's issues. Issues count as ours only with the marker *and*
our author (anyone can paste a marker). Titles and bodies escape all text that comes from
code (op names, benchmark params) via :mod:`neuronasv.report.escape`.

CLI (what ``ci/issues-sync.sh`` runs): ``neuronasv issues-sync [--dry-run] [--site-url URL]
REGRESSIONS.json...`` (:mod:`neuronasv.commands.issues_sync`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from neuronasv.format import format_delta_pct, format_p, format_pair
from neuronasv.github.client import GitHubClient
from neuronasv.github.comments import comment_authors
from neuronasv.model import ChangePoint, FindingsDocument
from neuronasv.report.bisect import culprit_markdown
from neuronasv.report.escape import clean, inert_model, md_code, md_text, safe_url

__all__ = [
    "LABEL",
    "IssueAction",
    "apply_actions",
    "change_point_key",
    "issue_marker",
    "plan_sync",
    "sync_issues",
]

LABEL = "performance-regression"
_MARKER = "neuronasv-regression"
PERMISSION = "issues: write"


def change_point_key(cp: ChangePoint) -> str:
    """Stable identity of a change point across runs (16 hex digits)."""
    s = cp.series
    ident = [
        cp.machine,
        s.benchmark,
        list(s.params),
        s.workload,
        s.shape,
        s.dtype,
        s.op,
        cp.commit_after,
    ]
    return hashlib.sha256(json.dumps(ident).encode()).hexdigest()[:16]


def issue_marker(key: str, machine: str) -> str:
    """Hidden marker; the machine is hex-encoded so no user text reaches an HTML comment."""
    return f"<!-- {_MARKER} key={key} machine={machine.encode().hex()} -->"


def _parse_marker(body: str) -> tuple[str, str] | None:
    start = body.find(f"<!-- {_MARKER} key=")
    if start < 0:
        return None
    end = body.find("-->", start)
    if end < 0:
        return None
    fields = dict(part.split("=", 1) for part in body[start:end].split()[2:] if "=" in part)
    key, mhex = fields.get("key", ""), fields.get("machine", "")
    try:
        machine = bytes.fromhex(mhex).decode()
    except ValueError:
        return None
    if len(key) != 16 or not all(c in "0123456789abcdef" for c in key):
        return None
    return key, machine


@dataclass(frozen=True)
class IssueAction:
    """One write the sync will make (or, in a dry run, would make)."""

    kind: Literal["create", "update", "close"]
    key: str
    title: str = ""
    body: str = ""
    number: int | None = None
    comment: str = ""


def render_title(cp: ChangePoint) -> str:
    return clean(
        f"Performance regression: {cp.series.label} {format_delta_pct(cp.ratio)} on {cp.machine}",
        max_len=240,
    )


def render_body(
    cp: ChangePoint, key: str, *, site_url: str | None = None, repository: str | None = None
) -> str:
    """Issue body (markdown). Deterministic: same change point → same bytes."""
    marker = issue_marker(key, cp.machine)  # the machine as recorded (hex in the marker)
    cp = inert_model(cp)  # untrusted strings inert by type (escape.py)
    values = format_pair(cp.before, cp.after, cp.unit)
    rng = f"{cp.commit_before[:12]}..{cp.commit_after[:12]}"
    lines = [
        marker,
        f"**{md_text(cp.series.label, max_len=200)}** regressed by"
        f" **{format_delta_pct(cp.ratio)}** on "
        f"{md_code(cp.machine)}: {values} (p {format_p(cp.p_value)}).",
        "",
        f"- Culprit range: {md_code(rng)} (the shift starts at the first commit of the range end)",
        *(culprit_markdown(cp.culprit, repository=repository) if cp.culprit else []),
        f"- Benchmark: {md_code(cp.series.benchmark, max_len=200)}"
        + (f" ({md_code(', '.join(cp.series.params), max_len=200)})" if cp.series.params else ""),
    ]
    if repository and all(c.isalnum() or c in "-_./" for c in repository):
        compare = safe_url(
            f"https://github.com/{repository}/compare/{cp.commit_before}...{cp.commit_after}"
        )
        if compare:
            lines.append(f"- [Changes in the range]({compare})")
    if cp.env_changes:
        changes = ", ".join(
            f"{md_code(e.key)} {md_code(e.before or 'none')} → {md_code(e.after or 'none')}"
            for e in cp.env_changes
        )
        lines.append(f"- Environment changed at the same commit: {changes}")
    if cp.reason:
        lines.append(f"- Detector: {md_text(cp.reason, max_len=400)}")
    url = safe_url(site_url)
    if url:
        lines.append(f"- [History]({url})")
    lines += [
        "",
        "This issue is kept up to date by the `benchmarks` workflow and closed automatically"
        " when the series recovers. If the shift is expected, acknowledge it in"
        " `.neuronasv/acknowledgements.json` (`neuronasv ack`).",
    ]
    return "\n".join(lines) + "\n"


def plan_sync(
    docs: Sequence[FindingsDocument],
    existing: Sequence[Mapping[str, Any]],
    *,
    authors: Sequence[str],
    site_url: str | None = None,
    repository: str | None = None,
) -> list[IssueAction]:
    """Reconcile change points with existing issues. Pure: no I/O.

    Args:
        docs: ``history`` findings documents (``neuronasv regressions --format json``).
        existing: issues carrying our label (any state), as the REST API returns them.
        authors: logins whose issues count as ours.
    """
    machines, current = _current_change_points(docs)
    want = {
        k: cp
        for k, cp in current.items()
        if cp.kind == "regression" and cp.open and cp.acknowledged is None
    }
    ours = _our_issues(existing, authors)
    actions: list[IssueAction] = []
    for key in sorted(want):
        action = _open_action(want[key], key, ours.get(key), site_url, repository)
        if action is not None:
            actions.append(action)
    for key in sorted(ours):
        issue = ours[key]
        if key in want or issue.get("state") != "open" or issue["_machine"] not in machines:
            continue
        why = _close_reason(current.get(key))
        actions.append(
            IssueAction(
                "close",
                key,
                number=int(issue["number"]),
                comment=f"{why}\n\nClosed by the `benchmarks` workflow.",
            )
        )
    return actions


def _current_change_points(
    docs: Sequence[FindingsDocument],
) -> tuple[set[str], dict[str, ChangePoint]]:
    """The machines the documents analysed, and their change points by key."""
    machines: set[str] = set()
    current: dict[str, ChangePoint] = {}
    for doc in docs:
        if doc.head is not None:
            machines.add(doc.head.machine)
        for cp in doc.change_points:
            machines.add(cp.machine)
            current[change_point_key(cp)] = cp
    return machines, current


def _our_issues(
    existing: Sequence[Mapping[str, Any]], authors: Sequence[str]
) -> dict[str, Mapping[str, Any]]:
    """Our issues (by ``authors``, carrying our marker) by key, with ``_machine`` added; the
    first open one of a key wins (duplicates should not exist)."""
    ours: dict[str, Mapping[str, Any]] = {}
    for issue in sorted(existing, key=lambda i: int(i.get("number", 0))):
        if "pull_request" in issue:
            continue
        user = issue.get("user")
        login = user.get("login") if isinstance(user, Mapping) else None
        body = issue.get("body")
        if login not in authors or not isinstance(body, str):
            continue
        parsed = _parse_marker(body)
        if parsed is None:
            continue
        key, machine = parsed
        if key in ours and ours[key].get("state") == "open":
            continue  # keep the first open one; duplicates should not exist
        ours[key] = {**issue, "_machine": machine}
    return ours


def _open_action(
    cp: ChangePoint,
    key: str,
    mine: Mapping[str, Any] | None,
    site_url: str | None,
    repository: str | None,
) -> IssueAction | None:
    """Create the issue of a wanted change point, or update ours when its text changed."""
    title = render_title(cp)
    body = render_body(cp, key, site_url=site_url, repository=repository)
    if mine is None:
        return IssueAction("create", key, title, body)
    if mine.get("state") == "open" and (mine.get("title") != title or mine.get("body") != body):
        return IssueAction("update", key, title, body, int(mine["number"]))
    return None


def _close_reason(gone: ChangePoint | None) -> str:
    """Why an open issue of ours closes: undetected, acknowledged, or recovered."""
    if gone is None:
        return "It is no longer detected in the latest analysis of this machine's history."
    if gone.acknowledged is not None:
        return f"It was acknowledged: {md_text(gone.acknowledged, max_len=300)}"
    return "The series recovered: the regression is no longer in effect at the latest commit."


def list_our_issues(client: GitHubClient) -> list[Mapping[str, Any]]:
    """Every issue with our label, open or closed, across all pages."""
    return list(client.paginate(client.repo_path("/issues"), {"state": "all", "labels": LABEL}))


def apply_actions(client: GitHubClient, actions: Sequence[IssueAction]) -> list[str]:
    """Send the planned writes; returns one line per write for the log."""
    done: list[str] = []
    for a in actions:
        if a.kind == "create":
            data = client.request(
                "POST",
                client.repo_path("/issues"),
                permission=PERMISSION,
                json={"title": a.title, "body": a.body, "labels": [LABEL]},
            ).json()
            done.append(f"created #{data.get('number')} {a.key}")
        elif a.kind == "update":
            client.request(
                "PATCH",
                client.repo_path(f"/issues/{a.number}"),
                permission=PERMISSION,
                json={"title": a.title, "body": a.body},
            )
            done.append(f"updated #{a.number} {a.key}")
        else:
            client.request(
                "POST",
                client.repo_path(f"/issues/{a.number}/comments"),
                permission=PERMISSION,
                json={"body": a.comment},
            )
            client.request(
                "PATCH",
                client.repo_path(f"/issues/{a.number}"),
                permission=PERMISSION,
                json={"state": "closed", "state_reason": "completed"},
            )
            done.append(f"closed #{a.number} {a.key}")
    return done


def sync_issues(
    client: GitHubClient,
    docs: Sequence[FindingsDocument],
    *,
    site_url: str | None = None,
    dry_run: bool = False,
    authors: Sequence[str] | None = None,
) -> list[IssueAction]:
    """List our issues, plan, and (unless ``dry_run``) apply. Returns the plan."""
    who = comment_authors(client, authors)
    plan = plan_sync(
        docs, list_our_issues(client), authors=who, site_url=site_url, repository=client.repository
    )
    if not dry_run:
        apply_actions(client, plan)
    return plan
