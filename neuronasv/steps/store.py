"""The results branch (``neuronasv store``) and the regression issues (``neuronasv
issues-sync``): the steps that write to the repository or to GitHub."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from neuronasv.github.issues_sync import IssueAction
    from neuronasv.store.gitstore import PullReport, ResultsStore

__all__ = [
    "StoreRef",
    "action_line",
    "branch_of",
    "pull",
    "pull_lines",
    "results_store",
    "sync_issues",
]


@dataclass(frozen=True)
class StoreRef:
    """Where the results branch is (``neuronasv store``'s common options).

    Attributes:
        repo: a git checkout whose objects are used (its work tree is untouched).
        remote: remote name or URL.
        branch: the results branch (None: :data:`~neuronasv.store.gitstore.DEFAULT_BRANCH`).
        token_env: environment variable holding a token for HTTPS git (CI), handed to git
            as a header, never written into ``.git/config``.
        max_attempts: push attempts before giving up.
    """

    repo: str = "."
    remote: str = "origin"
    branch: str | None = None
    token_env: str | None = None
    max_attempts: int = 8


def branch_of(ref: StoreRef) -> str:
    """The results branch's name."""
    from neuronasv.store.gitstore import DEFAULT_BRANCH

    return ref.branch or DEFAULT_BRANCH


def results_store(ref: StoreRef) -> ResultsStore:
    """The results branch ``ref`` names."""
    from neuronasv.store.gitstore import ResultsStore, token_git_env

    env = token_git_env(ref.token_env) if ref.token_env else {}
    return ResultsStore(ref.repo, remote=ref.remote, branch=branch_of(ref),
                        env=env, max_attempts=ref.max_attempts)  # fmt: skip


def pull(ref: StoreRef, out: str, *, machine: str | None = None) -> PullReport:
    """Copy the branch's results into ``out`` (nothing local is lost: see ``ResultsStore``)."""
    return results_store(ref).pull(out, machine=machine)


def sync_issues(
    documents: Sequence[str], *, site_url: str | None = None, dry_run: bool = False
) -> list[IssueAction]:
    """One GitHub issue per open regression change point of the regressions documents:
    opened, updated, closed (``dry_run``: planned only; without a token, planned against
    no existing issues)."""
    from neuronasv.github.client import GitHubClient
    from neuronasv.github.issues_sync import plan_sync
    from neuronasv.github.issues_sync import sync_issues as sync
    from neuronasv.report.load import load_findings

    docs = [load_findings(p) for p in documents]
    client = GitHubClient.from_env()
    if dry_run and not client.has_token:
        return plan_sync(docs, [], authors=(), site_url=site_url, repository=client.repository)
    return sync(client, docs, site_url=site_url, dry_run=dry_run)


def action_line(action: IssueAction, *, dry_run: bool) -> str:
    """One planned or made issue write, as ``issues-sync`` prints it."""
    what = f"#{action.number}" if action.number else "new issue"
    kind = f"{'would ' if dry_run else ''}{action.kind}"
    return f"{kind} {what} [{action.key}] {action.title}".rstrip()


def pull_lines(pulled: PullReport, branch: str, out: str) -> tuple[str, list[str]]:
    """What a pull did: the summary line, and one warning per local file kept."""
    import os

    same = f" ({len(pulled.unchanged)} already up to date)" if pulled.unchanged else ""
    kept = [
        f"kept local {os.path.join(out, path)}: it differs from the branch and was never"
        " pushed (push it, or delete it to take the branch's)"
        for path in pulled.kept
    ]
    return f"pulled {len(pulled.written)} files from {branch} into {out}{same}", kept
