"""Privileged half of the PR flow: validate the untrusted pr-benchmark artifact, then comment.

Runs in ``pr-comment.yml`` (``workflow_run``, hosted runner, default-branch code). The
artifact was produced by PR code on a runner the PR author controlled, so every byte is
untrusted data:

- the folder must hold only regular files (no symlinks), each within a size cap;
- ``pr-number`` is a positive integer (nothing else on the line);
- ``head-sha`` is 40 lowercase hex digits, equal to the triggering run's ``head_sha``
  (GitHub's own record of what ran) and to the PR's current head from the API (a
  stale run, or an artifact naming another PR, is refused);
- ``findings.json`` must load with neuronasv's schema-checked loader
  (``FindingsDocument.loads``), be a ``compare`` document, and name that head commit.

Only then does it re-serialise the *parsed* findings into a fresh file and run this
checkout's ``neuronasv comment`` and ``neuronasv status`` on it: the comment is rendered
here by trusted code (escaping included); the artifact's ``comment.md`` is never posted.

Usage: python ci/pr_comment.py --artifact DIR --run-head-sha SHA [--target-url URL]
           [--dry-run]
Exit codes: 0 posted, 2 usage, 9 the artifact failed validation (nothing was posted),
other codes from neuronasv (8 GitHub errors).
"""

from __future__ import annotations

import argparse
import os
import re
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from neuronasv.errors import NeuronasvError
from neuronasv.model import FindingsDocument

INVALID_ARTIFACT = 9
MAX_FINDINGS_BYTES = 20 * 1024 * 1024
MAX_SMALL_BYTES = 256
MAX_TOTAL_BYTES = 2 * 1024 * 1024 * 1024  # traces may be large, but not unbounded
SHA_RE = re.compile(r"[0-9a-f]{40}")
PR_RE = re.compile(r"[1-9][0-9]{0,9}")


class InvalidArtifact(Exception):
    """The artifact is not what pr-benchmarks produces; nothing may be posted."""


@dataclass(frozen=True)
class Validated:
    pr: int
    head_sha: str
    findings: FindingsDocument


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
    total = 0
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            mode = p.lstat().st_mode
            if stat.S_ISLNK(mode):
                raise InvalidArtifact(f"{p.relative_to(root)} is a symbolic link")
            if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                raise InvalidArtifact(f"{p.relative_to(root)} is not a regular file")
            if stat.S_ISREG(mode):
                total += p.lstat().st_size
    if total > MAX_TOTAL_BYTES:
        raise InvalidArtifact(f"artifact is {total} bytes, over the {MAX_TOTAL_BYTES} cap")


def validate_artifact(
    root: Path, run_head_sha: str, pr_head: Callable[[int], str]
) -> Validated:
    """Check the artifact as untrusted data; see the module docstring for the rules.

    Args:
        root: the downloaded artifact folder.
        run_head_sha: ``github.event.workflow_run.head_sha`` (from GitHub, not the PR).
        pr_head: returns the PR's current head SHA from the API.

    Raises:
        InvalidArtifact: the first rule broken, in words.
    """
    check_tree(root)
    pr_text = _read_small(root / "pr-number", "pr-number")
    if not PR_RE.fullmatch(pr_text):
        raise InvalidArtifact(f"pr-number is not a positive integer: {pr_text[:40]!r}")
    pr = int(pr_text)
    head = _read_small(root / "head-sha", "head-sha")
    if not SHA_RE.fullmatch(head):
        raise InvalidArtifact(f"head-sha is not 40 lowercase hex digits: {head[:60]!r}")
    if not SHA_RE.fullmatch(run_head_sha or ""):
        raise InvalidArtifact("the workflow run's head_sha is not a 40-hex SHA")
    if head != run_head_sha:
        raise InvalidArtifact(
            f"head-sha {head} is not the commit the benchmark run was for ({run_head_sha})"
        )
    fpath = root / "findings.json"
    if not fpath.is_file():
        raise InvalidArtifact("findings.json is missing")
    size = fpath.stat().st_size
    if size > MAX_FINDINGS_BYTES:
        raise InvalidArtifact(f"findings.json is {size} bytes, over {MAX_FINDINGS_BYTES}")
    try:
        text = fpath.read_bytes().decode("utf-8")
        doc = FindingsDocument.loads(text, source="findings.json")
    except UnicodeDecodeError:
        raise InvalidArtifact("findings.json is not UTF-8") from None
    except NeuronasvError as exc:
        raise InvalidArtifact(f"findings.json failed schema validation: {exc.message}") from None
    if doc.mode != "compare":
        raise InvalidArtifact(f"findings.json is a {doc.mode!r} document, expected 'compare'")
    if doc.head is None or doc.head.commit.lower() != head:
        got = doc.head.commit if doc.head else None
        raise InvalidArtifact(f"findings.json is about head {got!r}, not {head}")
    current = pr_head(pr)
    if current != head:
        raise InvalidArtifact(
            f"PR #{pr}'s current head is {current}, not {head}: stale run or another PR's"
            " artifact; not posting"
        )
    return Validated(pr, head, doc)


def api_pr_head(pr: int) -> str:
    """The PR's current head SHA, from the API (GITHUB_REPOSITORY / GITHUB_TOKEN)."""
    from neuronasv.github.client import GitHubClient

    client = GitHubClient.from_env()
    data = client.get_json(client.repo_path(f"/pulls/{pr}"))
    sha = data.get("head", {}).get("sha") if isinstance(data, dict) else None
    if not isinstance(sha, str) or not SHA_RE.fullmatch(sha):
        raise InvalidArtifact(f"the API gave no head SHA for PR #{pr}")
    return sha


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--artifact", required=True, type=Path)
    ap.add_argument("--run-head-sha", required=True)
    ap.add_argument("--target-url", help="link for the commit status (the benchmark run)")
    ap.add_argument("--dry-run", action="store_true", help="validate and render only")
    args = ap.parse_args(argv)
    try:
        ok = validate_artifact(args.artifact, args.run_head_sha.strip().lower(), api_pr_head)
    except InvalidArtifact as exc:
        print(f"error: untrusted artifact rejected: {exc}", file=sys.stderr)
        return INVALID_ARTIFACT
    except NeuronasvError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return exc.exit_code
    print(f"artifact valid: PR #{ok.pr}, head {ok.head_sha}, {len(ok.findings.findings)} findings")
    with tempfile.TemporaryDirectory(prefix="neuronasv-validated-") as tmp:
        clean = Path(tmp) / "findings.json"
        clean.write_text(ok.findings.dumps(), encoding="utf-8")  # parsed, re-serialised
        nx = [sys.executable, "-m", "neuronasv"]
        dry = ["--dry-run"] if args.dry_run else []
        rc = subprocess.run([*nx, "comment", "--pr", str(ok.pr), "--report", str(clean), *dry],
                            check=False).returncode
        if rc != 0:
            return rc
        status = [*nx, "status", "--sha", ok.head_sha, "--report", str(clean), *dry]
        if args.target_url:
            status += ["--target-url", args.target_url]
        return subprocess.run(status, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
