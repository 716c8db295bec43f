"""The results branch (``neuronasv store``) and the regression issues (``neuronasv
issues-sync``): the steps that write to the repository or to GitHub."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from neuronasv.errors import CorruptResultsError, NeuronasvError

if TYPE_CHECKING:
    from neuronasv.github.issues_sync import IssueAction
    from neuronasv.store.gitstore import PullReport, PushReport, ResultsStore

__all__ = [
    "StoreRef",
    "action_line",
    "branch_of",
    "check_result_files",
    "pull",
    "pull_lines",
    "push",
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


def check_result_files(files: dict[str, Path]) -> None:
    """Parse every file to be pushed as the readers will; refuse the push if any fails.

    Results files are parsed by neuronasv's loader and by asv's own
    (``asv.results.Results.load``), sidecars by their schema, ``machine.json`` and
    ``benchmarks.json`` as JSON objects, bisection records as ``regressions`` reads them
    (:func:`~neuronasv.store.bisections.read_record`: their schema, their own machine's
    folder, their own key's name). A truncated or
    corrupt file on the results branch would break every later reader, so nothing is pushed.

    Raises:
        CorruptResultsError: names each bad file and why (exit 5).
    """
    from neuronasv.model._codec import loads
    from neuronasv.store.asvresults import AsvResultsReader
    from neuronasv.store.bisections import read_record
    from neuronasv.store.history import parse_result_file
    from neuronasv.store.layout import METADATA_FILES, PEAKS_FILE, SIDECAR_SUFFIX, is_bisect_name

    reader = AsvResultsReader()
    problems: list[str] = []
    for rel, path in sorted(files.items()):
        try:
            if rel.endswith(SIDECAR_SUFFIX):
                reader.sidecar_bytes(path.read_bytes(), str(path))
            elif is_bisect_name(rel):  # a bisection's record (neuronasv bisect)
                read_record(str(path), rel.split("/", 1)[0] if "/" in rel else "")
            elif rel.rsplit("/", 1)[-1] in (*METADATA_FILES, PEAKS_FILE):
                if not isinstance(loads(path.read_text(encoding="utf-8"), source=str(path)),
                                  dict):
                    raise CorruptResultsError(f"{path}: expected a JSON object")
            else:
                parsed = parse_result_file(path)
                problems.extend(w for w in parsed.warnings)  # its sidecar is unreadable
                _asv_load(path)
        except (NeuronasvError, OSError, UnicodeDecodeError) as exc:
            msg = str(exc)
            problems.append(msg if msg.startswith(str(path)) else f"{path}: {msg}")
    if problems:
        raise CorruptResultsError(
            f"refusing to push {len(problems)} unreadable file(s); nothing was pushed: "
            + "; ".join(problems[:5]) + (" ..." if len(problems) > 5 else ""),
            hint="re-run `neuronasv run` for those commits, or delete the files (or narrow"
            " the push with --machine / --commit)",
        )


def _asv_load(path: Path) -> None:
    """asv's own reader, so what is pushed is what `asv compare`/`asv publish` can read."""
    from asv.results import Results

    try:
        Results.load(str(path))
    except Exception as exc:  # asv raises its own UserError, KeyError, TypeError, ...
        raise CorruptResultsError(
            f"{path}: asv cannot read it: {type(exc).__name__}: {exc}"[:500]
        ) from None


def push(
    ref: StoreRef,
    *,
    results_dir: str,
    machine: str | None = None,
    commits: Sequence[str] = (),
    message: str | None = None,
) -> PushReport:
    """Store the results folder's files on the branch (only ``machine``'s, only
    ``commits``'), each checked as the readers will read it first (see
    :func:`check_result_files`); one commit, fetched, re-applied and retried, never forced."""
    from neuronasv.errors import StoreError
    from neuronasv.store.gitstore import collect_result_files
    from neuronasv.store.layout import parse_result_name

    files = collect_result_files(results_dir, machine=machine, commits=list(commits))
    if not any(parse_result_name(p) is not None and "/" in p for p in files):
        raise StoreError(f"no result files to push under {results_dir}"
                         + (f" for machine {machine}" if machine else ""),
                         hint="run `neuronasv run` first, or check --results-dir")  # fmt: skip
    check_result_files(files)
    machines = sorted({p.split("/", 1)[0] for p in files if "/" in p})
    text = message or f"neuronasv: {len(files)} result files from {', '.join(machines)}"
    return results_store(ref).write(files, text)


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
