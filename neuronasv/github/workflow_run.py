"""Which pull request a ``workflow_run`` was for, decided from trusted sources only.

The privileged comment job (``pr-comment.yml``) is triggered by a finished pr-benchmarks
run. The artifact of that run *claims* a PR number and a head SHA; it ran the PR's code,
so the claim is worth nothing by itself. Two PRs can share a head SHA (anyone can push the
same commit to a fork and open a PR), so "the claimed PR's head is the run's SHA" does not
bind either. What binds is GitHub's own record of the run, in the event payload the runner
wrote (``$GITHUB_EVENT_PATH``): its id, head SHA, head repository and head branch, plus the
API's view of the open PRs with that head.

:func:`bind_pr` accepts the claimed number only when it is the one open PR whose head is
the run's SHA *from the run's head repository and branch*; any other number, or more than
one such PR (the run cannot tell which it was for), is refused.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

from neuronasv.errors import NeuronasvError, UntrustedArtifactError, UsageError
from neuronasv.github.client import GitHubClient

__all__ = ["RunContext", "artifact_url", "bind_pr", "recheck_pr", "run_url"]

_SHA = re.compile(r"[0-9a-f]{40}")
_REPO = re.compile(r"[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}")


@dataclass(frozen=True)
class RunContext:
    """Trusted facts about the triggering run, from the ``workflow_run`` event payload.

    Attributes:
        run_id: the pr-benchmarks run (its page holds the artifact and the traces).
        head_sha: the commit it measured.
        head_repo: ``owner/name`` of the repository the PR's branch lives in (a fork).
        head_branch: the PR's branch there (any text: used only as an API query value).
        pull_requests: PR numbers the event lists (same-repository PRs only; GitHub
            leaves it empty for forks).
    """

    run_id: int
    head_sha: str
    head_repo: str
    head_branch: str
    pull_requests: tuple[int, ...] = ()

    @classmethod
    def from_event(cls, event: Any) -> RunContext:
        """Read the ``workflow_run`` event payload.

        Raises:
            UsageError: not a ``workflow_run`` event of a ``pull_request`` run, or a
                field missing or of the wrong type.
        """
        run = _pull_request_run(event)
        return cls(
            _positive_int(run.get("id"), "workflow_run.id is not a positive integer"),
            _head_sha(run),
            _head_repo(run),
            _head_branch(run),
            _listed_prs(run),
        )


def _pull_request_run(event: Any) -> Mapping[str, Any]:
    """The ``workflow_run`` object of the event, which must be a ``pull_request`` run's."""
    run = event.get("workflow_run") if isinstance(event, Mapping) else None
    if not isinstance(run, Mapping):
        raise UsageError("the event payload is not a workflow_run event")
    if run.get("event") != "pull_request":
        raise UsageError(
            f"the triggering run was for a {run.get('event')!r} event, not pull_request"
        )
    return run


def _is_positive_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _positive_int(value: Any, error: str) -> int:
    if not _is_positive_int(value):
        raise UsageError(error)
    return value


def _head_sha(run: Mapping[str, Any]) -> str:
    sha = run.get("head_sha")
    if not isinstance(sha, str) or not _SHA.fullmatch(sha):
        raise UsageError("workflow_run.head_sha is not a 40-hex commit")
    return sha


def _head_repo(run: Mapping[str, Any]) -> str:
    repo = run.get("head_repository")
    full = repo.get("full_name") if isinstance(repo, Mapping) else None
    if not isinstance(full, str) or not _REPO.fullmatch(full):
        raise UsageError("workflow_run.head_repository.full_name is not owner/name")
    return full


def _head_branch(run: Mapping[str, Any]) -> str:
    branch = run.get("head_branch")
    if not isinstance(branch, str) or not branch:
        raise UsageError("workflow_run.head_branch is missing")
    return branch


def _listed_prs(run: Mapping[str, Any]) -> tuple[int, ...]:
    """The PR numbers the event lists, sorted and once each; malformed entries are skipped."""
    listed = run.get("pull_requests")
    if listed is not None and not isinstance(listed, list):
        raise UsageError("workflow_run.pull_requests is not a list")
    numbers = (p.get("number") if isinstance(p, Mapping) else None for p in listed or [])
    return tuple(sorted({n for n in numbers if _is_positive_int(n)}))


def run_url(server_url: str, repository: str, run_id: int) -> str:
    """``https://github.com/owner/name/actions/runs/123`` (from trusted parts only)."""
    if not _REPO.fullmatch(repository):
        raise UsageError(f"repository {repository!r} is not owner/name")
    if not re.fullmatch(r"https://[A-Za-z0-9.-]+(:[0-9]{1,5})?", server_url.rstrip("/")):
        raise UsageError(f"server URL {server_url!r} is not https://host")
    return f"{server_url.rstrip('/')}/{repository}/actions/runs/{int(run_id)}"


def artifact_url(
    client: GitHubClient, server_url: str, repository: str, run_id: int, name: str
) -> str | None:
    """The page of run ``run_id``'s artifact ``name``, or None when it is not there.

    GitHub's documented artifact URL,
    ``<server>/<owner>/<name>/actions/runs/<run id>/artifacts/<artifact id>`` (what
    ``actions/upload-artifact`` reports as ``artifact-url``), with the id from the REST API
    (``GET /repos/{owner}/{repo}/actions/runs/{run_id}/artifacts?name=...``; needs
    ``actions: read``). None when the run uploaded no such artifact, it expired, or the
    API fails: the caller links the run's page instead.
    """
    base = run_url(server_url, repository, run_id)
    try:
        data = client.get_json(
            f"/repos/{repository}/actions/runs/{int(run_id)}/artifacts", params={"name": name}
        )
    except NeuronasvError:
        return None
    arts = data.get("artifacts") if isinstance(data, Mapping) else None
    for a in arts if isinstance(arts, list) else []:
        if (
            isinstance(a, Mapping)
            and a.get("name") == name
            and not a.get("expired")
            and isinstance(a.get("id"), int)
            and not isinstance(a.get("id"), bool)
            and a["id"] > 0
        ):
            return f"{base}/artifacts/{a['id']}"
    return None


def _pr_matches(data: Any, ctx: RunContext) -> bool:
    if not isinstance(data, Mapping) or data.get("state") != "open":
        return False
    head = data.get("head")
    if not isinstance(head, Mapping):
        return False
    repo = head.get("repo")
    full = repo.get("full_name") if isinstance(repo, Mapping) else None
    return (
        head.get("sha") == ctx.head_sha
        and isinstance(full, str)
        and full.lower() == ctx.head_repo.lower()
        and head.get("ref") == ctx.head_branch
    )


def _pull(client: GitHubClient, number: int) -> Any:
    resp = client.request("GET", client.repo_path(f"/pulls/{number}"), allow=(404,))
    return None if resp.status_code == 404 else resp.json()


def bind_pr(client: GitHubClient, ctx: RunContext, claimed: int) -> int:
    """``claimed`` if it is the one open PR the run was for; else :class:`UntrustedArtifactError`.

    Candidates are the event's ``pull_requests`` and the API's open PRs with head
    ``owner:branch`` of the run; each is re-read (``GET /pulls/{n}``) and kept when its
    head SHA, head repository and head branch are the run's.
    """
    owner = ctx.head_repo.split("/", 1)[0]
    candidates = set(ctx.pull_requests)
    for p in client.paginate(
        client.repo_path("/pulls"), {"state": "open", "head": f"{owner}:{ctx.head_branch}"}
    ):
        n = p.get("number") if isinstance(p, Mapping) else None
        if isinstance(n, int) and not isinstance(n, bool) and n > 0:
            candidates.add(n)
    candidates.add(claimed)  # re-read too, to say precisely why it does not match
    matching = sorted(n for n in candidates if _pr_matches(_pull(client, n), ctx))
    if claimed not in matching:
        raise UntrustedArtifactError(
            f"the artifact names PR #{claimed}, but the run {ctx.run_id} was for"
            f" {ctx.head_repo}@{ctx.head_sha[:12]}, which is "
            + (
                "the head of no open PR"
                if not matching
                else "the head of " + ", ".join(f"#{n}" for n in matching)
            )
            + " (a stale run, or an artifact naming another PR); not posting"
        )
    if len(matching) > 1:
        raise UntrustedArtifactError(
            f"PRs {', '.join(f'#{n}' for n in matching)} all have head"
            f" {ctx.head_repo}@{ctx.head_sha[:12]} on the run's branch: the run cannot say"
            " which one it was for; not posting"
        )
    return claimed


def recheck_pr(client: GitHubClient, ctx: RunContext, pr: int) -> None:
    """Right before posting: PR ``pr`` is still open with the run's head (re-read now).

    The recomputation takes a while; a push meanwhile makes the bound head stale, and a
    comment about it would describe code the PR no longer has.

    Raises:
        UntrustedArtifactError: the PR moved on (another head), closed or vanished.
    """
    if not _pr_matches(_pull(client, pr), ctx):
        raise UntrustedArtifactError(
            f"PR #{pr} no longer has head {ctx.head_repo}@{ctx.head_sha[:12]} open (it moved"
            " on, or was closed, while the results were recomputed); not posting"
        )
