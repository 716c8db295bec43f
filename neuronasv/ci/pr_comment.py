"""Privileged half of the PR flow: recompute from the untrusted artifact's numbers, then post.

Runs in ``pr-comment.yml`` (``workflow_run``, hosted runner, default-branch code). The
artifact was produced by PR code on a runner the PR author controlled, so every byte is
untrusted. This step takes **numbers only** from it and decides everything else itself:

1. The folder holds only regular files (no symlinks, no devices), each within a size cap.
2. Which PR and commit: GitHub's record of the triggering run (the ``workflow_run`` event
   payload at ``$GITHUB_EVENT_PATH``: run id, head SHA, head repository and branch) and
   the API's open PRs with that head (:func:`neuronasv.github.workflow_run.bind_pr`). The
   artifact's ``pr-number`` must be that one PR (two PRs sharing the head: refused as
   ambiguous) and its ``head-sha`` the run's SHA; ``base-sha`` is 40-hex.
3. The verdicts: :func:`neuronasv.analyse.recompute.recompute` loads the artifact's asv
   results folder (``results/``, schema-checked loader) and its rounds document
   (``rounds.json``), withholds free text (machine names that fail a strict pattern,
   fingerprint values, units, load-error file names), and runs the same ``compare`` and
   ``confirm`` (replaying the recorded rounds) that ``neuronasv compare``/``confirm`` run.
   The artifact's ``findings.json`` and ``comment.md`` (its verdicts, sentences, labels,
   settings, links) are never read.
4. Links: built here from the repository and the run id only
   (``$GITHUB_SERVER_URL/$GITHUB_REPOSITORY/actions/runs/<id>``), for the comment and the
   commit status. The traces: the run's ``pr-benchmark-traces`` artifact, found by name
   through the API (``.../actions/runs/<id>/artifacts/<artifact id>``; the run's page when
   it is not there), and per flagged workload of the *recomputed* findings the file name
   that ``ci/pr-bench.sh`` gives it (:func:`neuronasv.report.traces.trace_path`, from the
   series identity, made file-system safe) — nothing about traces is read from the
   artifact. Acknowledgements come from this (default-branch) checkout, and so does the
   comment's title: ``--title`` (the caller workflow's input), else the project of this
   checkout's ``asv.conf.json`` (:func:`neuronasv.store.asvconf.comment_title`, the one
   ``neuronasv comment`` uses), escaped by the renderer.
5. Posting needs ``GITHUB_TOKEN``: without it this step fails (exit 2), it never falls
   back to a silent dry run. ``--dry-run`` does everything but the writes and prints them.

Usage: python -m neuronasv.ci pr-comment --artifact DIR [--event FILE] [--acks FILE]
           [--history-dir DIR] [--title T] [--dry-run] [--out FILE]
Environment: GITHUB_REPOSITORY, GITHUB_TOKEN, GITHUB_API_URL, GITHUB_SERVER_URL
(https://github.com), GITHUB_EVENT_PATH.
Exit codes: 0 posted, 2 usage (no token, bad event, bad --out), 9 the artifact was refused
(its results unreadable, out of range or its base and head incomparable included; nothing
was posted), 8 GitHub errors, 11 a bug (one line, never a traceback).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import re
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

from neuronasv.ci.outputs import set_output
from neuronasv.errors import (
    IncomparableError,
    NeuronasvError,
    ResultsError,
    UntrustedArtifactError,
    UsageError,
)
from neuronasv.exits import run_guarded
from neuronasv.log import InertArgumentParser, cli_output, emit
from neuronasv.model import FindingsDocument

INVALID_ARTIFACT = UntrustedArtifactError.exit_code
MAX_SMALL_BYTES = 256
MAX_DATA_FILE_BYTES = 64 * 1024 * 1024  # one results file, sidecar or the rounds document
MAX_DATA_BYTES = 512 * 1024 * 1024  # results/ and rounds.json together
MAX_TOTAL_BYTES = 2 * 1024 * 1024 * 1024  # traces may be large, but not unbounded
SHA_RE = re.compile(r"[0-9a-f]{40}")
PR_RE = re.compile(r"[1-9][0-9]{0,9}")

# Kept as a name for old callers: the artifact was refused.
InvalidArtifact = UntrustedArtifactError


@dataclass(frozen=True)
class Claims:
    """What the artifact says about itself (format-checked, not yet believed)."""

    pr: int
    head_sha: str
    base_sha: str


def _read_small(path: Path, name: str) -> str:
    if not path.is_file():
        raise InvalidArtifact(f"{name} is missing")
    data = path.read_bytes()
    if len(data) > MAX_SMALL_BYTES:
        raise InvalidArtifact(f"{name} is {len(data)} bytes; expected a single short line")
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        raise InvalidArtifact(f"{name} is not ASCII") from None
    # One value and an optional trailing newline: nothing else.
    if text.endswith("\n"):
        text = text[:-1]
    if "\n" in text or "\r" in text:
        raise InvalidArtifact(f"{name} holds more than one line")
    return text


def check_tree(root: Path) -> None:
    """Regular files and folders only, bounded in size; nothing that points elsewhere."""
    if root.is_symlink() or not root.is_dir():
        raise InvalidArtifact(f"{root} is not a folder")
    total = data = 0
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = p.relative_to(root)
            mode = p.lstat().st_mode
            if stat.S_ISLNK(mode):
                raise InvalidArtifact(f"{rel} is a symbolic link")
            if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                raise InvalidArtifact(f"{rel} is not a regular file")
            if stat.S_ISREG(mode):
                size = p.lstat().st_size
                total += size
                if rel.parts[0] in ("results", "rounds.json"):
                    if size > MAX_DATA_FILE_BYTES:
                        raise InvalidArtifact(f"{rel} is {size} bytes, over {MAX_DATA_FILE_BYTES}")
                    data += size
    if data > MAX_DATA_BYTES:
        raise InvalidArtifact(f"results and rounds are {data} bytes, over {MAX_DATA_BYTES}")
    if total > MAX_TOTAL_BYTES:
        raise InvalidArtifact(f"artifact is {total} bytes, over the {MAX_TOTAL_BYTES} cap")


def read_claims(root: Path, run_head_sha: str) -> Claims:
    """The artifact's pr-number, head-sha and base-sha, format-checked.

    ``head-sha`` must equal the triggering run's head SHA (GitHub's record).
    """
    check_tree(root)
    pr_text = _read_small(root / "pr-number", "pr-number")
    if not PR_RE.fullmatch(pr_text):
        raise InvalidArtifact(f"pr-number is not a positive integer: {pr_text[:40]!r}")
    head = _read_small(root / "head-sha", "head-sha")
    if not SHA_RE.fullmatch(head):
        raise InvalidArtifact(f"head-sha is not 40 lowercase hex digits: {head[:60]!r}")
    if head != run_head_sha:
        raise InvalidArtifact(
            f"head-sha {head} is not the commit the benchmark run was for ({run_head_sha})"
        )
    base = _read_small(root / "base-sha", "base-sha")
    if not SHA_RE.fullmatch(base):
        raise InvalidArtifact(f"base-sha is not 40 lowercase hex digits: {base[:60]!r}")
    if not (root / "results").is_dir():
        raise InvalidArtifact("results/ is missing (the asv results of the PR run)")
    return Claims(int(pr_text), head, base)


def recompute_findings(
    root: Path, claims: Claims, *, acks_path: str, history_dir: str | None, created: str
) -> FindingsDocument:
    """The findings, recomputed here from the artifact's numbers (see the module doc)."""
    from neuronasv.analyse.acks import load_acks
    from neuronasv.analyse.recompute import recompute
    from neuronasv.model.rounds import RoundsDocument

    rounds = None
    rpath = root / "rounds.json"
    if rpath.is_file():
        try:
            rounds = RoundsDocument.loads(rpath.read_bytes().decode("utf-8"), source="rounds.json")
        except UnicodeDecodeError:
            raise InvalidArtifact("rounds.json is not UTF-8") from None
        except NeuronasvError as exc:
            raise InvalidArtifact(f"rounds.json failed schema validation: {exc.message}") from None
    from neuronasv.store.history import load_history

    floors = None
    if history_dir:
        from neuronasv.analyse.floors import noise_floors

        trusted = load_history(history_dir)
        if trusted.machines:
            floors = noise_floors(trusted, trusted.machines[0], exclude=(claims.head_sha,))
    acks = load_acks(acks_path)  # this trusted checkout's file: its errors are its own
    try:
        return recompute(
            load_history(root / "results"),
            base=claims.base_sha,
            head=claims.head_sha,
            rounds=rounds,
            acks=acks,
            floors=floors,
            created=created,
        )
    except ResultsError as exc:
        # The artifact's results folder: untrusted input, refused as such (exit 9).
        raise InvalidArtifact(f"the artifact's results are unusable: {exc.message}") from None
    except IncomparableError as exc:
        raise InvalidArtifact(f"the artifact's base and head: {exc.message}") from None
    except (RecursionError, MemoryError, ValueError, OverflowError) as exc:
        # Hostile JSON (deeply nested, huge numbers) must not become a traceback.
        what = type(exc).__name__
        raise InvalidArtifact(f"the artifact's results are unusable ({what})") from None


def with_run_links(
    doc: FindingsDocument, run_url: str, traces_url: str | None = None
) -> FindingsDocument:
    """The only things this step adds to the recomputed findings, from trusted sources: the
    run's page as the report link, and each flagged workload's traces (the run's traces
    artifact, else its page). Nothing else differs from what ``neuronasv comment`` renders
    of the same numbers (``tests/ci/test_same_comment.py``)."""
    from neuronasv.report.traces import with_trace_links

    doc = dataclasses.replace(doc, links={"report_url": run_url})
    return with_trace_links(doc, traces_url or run_url)


def _event(path: str | None) -> object:
    if not path:
        raise UsageError("no workflow_run event: give --event FILE or set GITHUB_EVENT_PATH")
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read the event payload {path}: {exc}") from None


def _check_out(out: str) -> Path:
    """``--out``, checked before any work: its folder exists and it is not a folder."""
    path = Path(out)
    if path.is_dir():
        raise UsageError(f"--out {out} is a folder, not a file")
    if not path.parent.is_dir():
        raise UsageError(f"--out {out}: the folder {path.parent} does not exist")
    return path


def run(args: argparse.Namespace, env: dict[str, str]) -> int:
    from neuronasv.analyse.acks import ACKS_PATH
    from neuronasv.github.client import GitHubClient
    from neuronasv.github.comments import planned_requests, upsert_comment
    from neuronasv.github.statuses import publish_status, status_payload
    from neuronasv.github.workflow_run import (
        RunContext,
        artifact_url,
        bind_pr,
        recheck_pr,
        run_url,
    )
    from neuronasv.report.markdown import MARKER, render_comment, render_comment_trimmed
    from neuronasv.report.traces import TRACES_ARTIFACT, flagged_workloads
    from neuronasv.store.asvconf import comment_title

    token = env.get("GITHUB_TOKEN")
    if not token and not args.dry_run:
        raise UsageError(
            "GITHUB_TOKEN is not set: the comment job must post, and does not fall back to a"
            " dry run",
            hint="give the job `GITHUB_TOKEN: ${{ github.token }}` (pull-requests: write,"
            " statuses: write), or pass --dry-run to validate and render only",
        )
    out = _check_out(args.out) if args.dry_run and args.out else None
    repo = env.get("GITHUB_REPOSITORY", "")
    ctx = RunContext.from_event(_event(args.event or env.get("GITHUB_EVENT_PATH")))
    url = run_url(env.get("GITHUB_SERVER_URL") or "https://github.com", repo, ctx.run_id)
    claims = read_claims(args.artifact, ctx.head_sha)
    client = GitHubClient.from_env(env)
    pr = bind_pr(client, ctx, claims.pr)
    doc = recompute_findings(
        args.artifact,
        claims,
        acks_path=args.acks or ACKS_PATH,
        history_dir=args.history_dir,
        created=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    )
    traces_url = artifact_url(
        client, env.get("GITHUB_SERVER_URL") or "https://github.com", repo, ctx.run_id,
        TRACES_ARTIFACT,
    ) if flagged_workloads(doc) else None  # fmt: skip
    doc = with_run_links(doc, url, traces_url)
    title = comment_title(".", args.title)  # this trusted checkout's project, never the artifact's
    body = render_comment(doc, marker=MARKER, report_url=url, title=title)
    trimmed = render_comment_trimmed(doc, marker=MARKER, report_url=url, title=title)
    emit(
        f"artifact accepted: PR #{pr}, head {claims.head_sha}, run {ctx.run_id};"
        f" {len(doc.findings)} series recomputed"
    )
    if args.dry_run:
        status_req = {
            "method": "POST",
            "path": f"/repos/{repo}/statuses/{claims.head_sha}",
            "json": status_payload(doc, target_url=url),
        }
        reqs = [*planned_requests(repo, pr, body), status_req]
        text = json.dumps(reqs, indent=2, ensure_ascii=False) + "\n"
        if out is not None:
            try:
                out.write_text(text, encoding="utf-8")
            except OSError as exc:
                raise UsageError(f"--out {args.out}: cannot write: {exc.strerror}") from None
        else:
            emit(text, end="", json=True)
        return 0
    recheck_pr(client, ctx, pr)  # the head may have moved while we recomputed
    result = upsert_comment(client, pr, body, marker=MARKER, trimmed_body=trimmed)
    emit(f"comment {result.action}: #{result.comment_id}")
    status = publish_status(client, claims.head_sha, doc, target_url=url)
    emit(f"status {status.state} set on {claims.head_sha[:10]}")
    server = env.get("GITHUB_SERVER_URL") or "https://github.com"
    set_output("comment-url", f"{server}/{repo}/pull/{pr}#issuecomment-{result.comment_id}", env)
    set_output("regression-detected", str(status.state == "failure").lower(), env)
    return 0


def add_arguments(ap: argparse.ArgumentParser) -> None:
    """The step's options (one definition: ``python -m neuronasv.ci pr-comment`` and
    ``ci/pr_comment.py`` both parse with these)."""
    ap.add_argument("--artifact", required=True, type=Path, help="the downloaded artifact")
    ap.add_argument("--event", help="workflow_run event payload (default: $GITHUB_EVENT_PATH)")
    ap.add_argument("--acks", help="acknowledgements file of this trusted checkout")
    ap.add_argument(
        "--history-dir", help="trusted main-branch results for noise floors (confirm's prior)"
    )
    ap.add_argument(
        "--title", help="the comment's title (default: the project named in this trusted"
        " checkout's asv.conf.json, else neuronasv; never taken from the artifact)"
    )
    ap.add_argument("--dry-run", action="store_true", help="everything but the writes")
    ap.add_argument("--out", help="with --dry-run: write the requests here (default stdout)")


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The ``pr-comment`` step of ``python -m neuronasv.ci``."""
    p = sub.add_parser("pr-comment", help="the privileged comment from the untrusted artifact",
                       description=(__doc__ or "").split("\n\n")[0])  # fmt: skip
    add_arguments(p)
    p.set_defaults(func=step)


def step(args: argparse.Namespace) -> int:
    """Run the step on parsed arguments; a refused artifact's error says so."""
    try:
        return run(args, dict(os.environ))
    except UntrustedArtifactError as exc:
        raise UntrustedArtifactError(
            f"untrusted artifact rejected: {exc.message}", hint=exc.hint
        ) from None


def main(argv: list[str] | None = None) -> int:
    """``ci/pr_comment.py``'s entry (the package's is ``python -m neuronasv.ci pr-comment``)."""
    ap = InertArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    add_arguments(ap)
    args = ap.parse_args(argv)
    with cli_output(actions=True):
        return run_guarded(lambda: step(args), "python -m neuronasv.ci pr-comment")


if __name__ == "__main__":
    sys.exit(main())
