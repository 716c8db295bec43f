"""The comment job's validation of the untrusted PR artifact, and posting over real HTTP."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from neuronasv.model import Finding, FindingsDocument, RunRef, SeriesId
from tests.ci.fakegithub_ext import FakeGitHubCI

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("pr_comment", ROOT / "ci" / "pr_comment.py")
assert _spec and _spec.loader
pr_comment = importlib.util.module_from_spec(_spec)
sys.modules["pr_comment"] = pr_comment  # dataclasses look their module up by name
_spec.loader.exec_module(pr_comment)

HEAD = "c" * 40
BASE = "b" * 40
TOKEN = "ghs_rehearsal_SECRET_do_not_print"


def findings(head: str = HEAD) -> FindingsDocument:
    f = Finding(
        series=SeriesId("rmsnorm.Naive.devtime_op", ("'4x512'", "'float32'", "'aten::mul'"),
                        "rmsnorm.naive", "4x512", "float32", "aten::mul"),
        verdict="regression", unit="seconds", base=1e-5, head=3e-5, ratio=3.0, ci_low=2.5,
        ci_high=3.5, p_value=1e-4, p_adjusted=1e-3, n_base=8, n_head=8,
        reason="+200 % (CI 150–250 %), p=0.001 after Holm", confirmed=True,
    )
    return FindingsDocument(mode="compare", base=RunRef(BASE, "trn2"), head=RunRef(head, "trn2"),
                            findings=(f,))


def artifact(tmp_path: Path, *, pr: str = "7\n", head: str = HEAD + "\n",
             doc: str | None = None) -> Path:
    d = tmp_path / "artifact"
    d.mkdir()
    (d / "pr-number").write_text(pr)
    (d / "head-sha").write_text(head)
    (d / "findings.json").write_text(findings().dumps() if doc is None else doc)
    (d / "comment.md").write_text("@everyone click [here](http://evil.example)")
    return d


def head_is(sha: str):  # type: ignore[no-untyped-def]
    return lambda _pr: sha


def test_valid_artifact_passes(tmp_path: Path) -> None:
    ok = pr_comment.validate_artifact(artifact(tmp_path), HEAD, head_is(HEAD))
    assert ok.pr == 7 and ok.head_sha == HEAD and ok.findings.findings[0].series.op == "aten::mul"


@pytest.mark.parametrize(
    ("kw", "run_head", "api_head", "message"),
    [
        ({"pr": "7; rm -rf /\n"}, HEAD, HEAD, "not a positive integer"),
        ({"pr": "0\n"}, HEAD, HEAD, "not a positive integer"),
        ({"pr": "7\n8\n"}, HEAD, HEAD, "more than one line"),
        ({"pr": "7" * 300}, HEAD, HEAD, "single short line"),
        ({"head": "C" * 40}, HEAD, HEAD, "40 lowercase hex"),
        ({"head": HEAD[:39]}, HEAD, HEAD, "40 lowercase hex"),
        ({"head": BASE}, HEAD, HEAD, "not the commit the benchmark run was for"),
        ({}, HEAD, BASE, "current head"),
        ({"doc": "{\"kind\": \"neuronasv.findings\", \"schema_version\": 99}"}, HEAD, HEAD,
         "schema validation"),
        ({"doc": "{\"truncated"}, HEAD, HEAD, "schema validation"),
        ({"doc": findings(head=BASE).dumps()}, HEAD, HEAD, "is about head"),
    ],
)
def test_invalid_artifacts_are_refused(tmp_path: Path, kw: dict[str, str], run_head: str,
                                       api_head: str, message: str) -> None:
    with pytest.raises(pr_comment.InvalidArtifact, match=message):
        pr_comment.validate_artifact(artifact(tmp_path, **kw), run_head, head_is(api_head))


def test_symlinks_are_refused(tmp_path: Path) -> None:
    d = artifact(tmp_path)
    (d / "findings.json").unlink()
    (d / "findings.json").symlink_to("/etc/passwd")
    with pytest.raises(pr_comment.InvalidArtifact, match="symbolic link"):
        pr_comment.validate_artifact(d, HEAD, head_is(HEAD))


def run_script(art: Path, run_head: str, gh: FakeGitHubCI) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GITHUB_API_URL": gh.url, "GITHUB_REPOSITORY": gh.repo,
           "GITHUB_TOKEN": TOKEN}
    return subprocess.run([sys.executable, str(ROOT / "ci" / "pr_comment.py"), "--artifact",
                           str(art), "--run-head-sha", run_head], env=env, cwd=ROOT,
                          capture_output=True, text=True, check=False, timeout=120)


@pytest.mark.slow
def test_posts_comment_rendered_here_and_status_then_refuses_tampering(tmp_path: Path) -> None:
    with FakeGitHubCI(tokens={TOKEN: "github-actions[bot]"}) as gh:
        gh.add_pull(7, HEAD)
        r = run_script(artifact(tmp_path), HEAD, gh)
        assert r.returncode == 0, r.stderr
        ours = gh.comments(7, author="github-actions[bot]")
        assert len(ours) == 1
        body = ours[0]["body"]
        assert "aten::mul" in body or "aten\\:\\:mul" in body
        assert "http://evil.example" not in body  # the artifact's comment.md is never posted
        assert gh.statuses(HEAD)[-1]["state"] == "failure"
        n = len(gh.writes())

        gh.add_pull(7, BASE)  # the PR moved on: the old run's artifact must not post
        r = run_script(tmp_path / "artifact", HEAD, gh)
        assert r.returncode == 9 and "current head" in r.stderr
        assert len(gh.writes()) == n
        assert TOKEN not in r.stdout + r.stderr
