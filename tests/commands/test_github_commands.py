"""`neuronasv comment|status|summary` end to end against the loopback GitHub.

The two consecutive ``comment`` runs and the dry run are real subprocesses (whole output
checked, no token anywhere); the rest call ``neuronasv.cli.main`` in-process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from neuronasv.cli import main
from neuronasv.github.client import GitHubClient, Pacing
from neuronasv.report.markdown import MARKER
from tests.github.conftest import ACTIONS_TOKEN, SECRETS, TOKEN
from tests.github.fakegithub import FakeClock, FakeGitHub
from tests.report.fixtures import DATA, HEAD_SHA

REPORT = str(DATA / "compare.findings.json")
ROOT = Path(__file__).resolve().parents[2]


def _env(gh: FakeGitHub | None, token: str | None = TOKEN) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    if gh is not None:
        env.update(GITHUB_API_URL=gh.url, GITHUB_REPOSITORY=gh.repo)
    if token:
        env["GITHUB_TOKEN"] = token
    return env


@pytest.fixture(autouse=True)
def fake_time(monkeypatch: pytest.MonkeyPatch, clock: FakeClock) -> FakeClock:
    """In-process commands get the fake clock too: write spacing must not sleep for real."""
    real = GitHubClient.from_env.__func__  # type: ignore[attr-defined]

    def from_env(cls: type[GitHubClient], environ: object = None, **kw: object) -> GitHubClient:
        kw.setdefault("pacing", Pacing(clock=clock.time, sleeper=clock.sleep))
        return real(cls, environ, **kw)  # type: ignore[no-any-return]

    monkeypatch.setattr(GitHubClient, "from_env", classmethod(from_env))
    return clock


def _read(capfd: pytest.CaptureFixture[str]) -> tuple[str, str]:
    """Read captured output, checking it for tokens (the autouse check sees only the rest)."""
    out, err = capfd.readouterr()
    for s in SECRETS:
        assert s not in out and s not in err
    return out, err


def _cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "neuronasv", *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    for s in SECRETS:
        assert s not in proc.stdout and s not in proc.stderr
    return proc


@pytest.mark.slow
def test_two_comment_runs_over_many_comments_leave_one_updated(fake_github: FakeGitHub) -> None:
    fake_github.seed_comments(12, 140)
    fake_github.add_comment(12, "mallory", MARKER + "\nplanted")
    first = _cli(["comment", "--pr", "12", "--report", REPORT], _env(fake_github))
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("comment created: #")
    second = _cli(
        ["comment", "--pr", "12", "--report", str(DATA / "quiet.findings.json")], _env(fake_github)
    )
    assert second.returncode == 0, second.stderr
    assert second.stdout.startswith("comment updated: #")
    mine = fake_github.comments(12, author="neuronasv-bot", marker=MARKER)
    assert len(mine) == 1 and "no change beyond the noise" in mine[0]["body"]
    assert len(fake_github.comments(12)) == 142


@pytest.mark.slow
def test_dry_run_without_token_writes_the_request(tmp_path: Path) -> None:
    out = tmp_path / "dry.json"
    proc = _cli(
        ["comment", "--pr", "5", "--report", REPORT, "--out", str(out)],
        _env(None, token=None) | {"GITHUB_REPOSITORY": "octo/kernels"},
    )
    assert proc.returncode == 0 and proc.stdout == ""
    assert "GITHUB_TOKEN is not set" in proc.stderr
    sent = json.loads(out.read_text())
    assert sent["dry_run"] is True
    (req,) = sent["requests"]
    assert (req["method"], req["path"]) == ("POST", "/repos/octo/kernels/issues/5/comments")
    assert req["json"]["body"].startswith(
        MARKER + "\n## :red_circle: neuronasv: 1 series lost at head \\(1 failed\\); fails \\(gate"
    )


def test_the_comment_is_titled_by_the_checkouts_project_escaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """Issue 21: the project named in asv.conf.json (what ``neuronasv init`` writes) titles
    the comment, found from a subdirectory as git finds the checkout; its text is inert."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "asv.conf.json").write_text('{"version": 1, "project": "kernels @org/team"}')
    (tmp_path / "docs").mkdir()
    monkeypatch.chdir(tmp_path / "docs")
    body = tmp_path / "body.md"
    args = ["comment", "--pr", "3", "--report", REPORT, "--dry-run", "--body-out", str(body)]
    assert main(args) == 0
    title = body.read_text().splitlines()[1]
    assert title.startswith("## :red_circle: kernels @\u200dorg/team: ")
    assert main([*args, "--title", "other"]) == 0
    assert body.read_text().splitlines()[1].startswith("## :red_circle: other: ")
    _read(capfd)


def test_dry_run_flag_sends_nothing(
    fake_github: FakeGitHub, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    for k, v in _env(fake_github).items():
        monkeypatch.setenv(k, v)
    assert main(["comment", "--pr", "3", "--report", REPORT, "--dry-run"]) == 0
    assert json.loads(_read(capfd)[0])["requests"][0]["method"] == "POST"
    assert fake_github.requests == []


def test_status_and_check_run(
    fake_github: FakeGitHub,
    fake_time: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    for k, v in _env(fake_github, ACTIONS_TOKEN).items():
        monkeypatch.setenv(k, v)
    assert main(["status", "--sha", HEAD_SHA, "--report", REPORT, "--check-run"]) == 0
    (status,) = fake_github.statuses(HEAD_SHA)
    assert status["state"] == "failure" and status["context"] == "neuronasv"
    assert status["description"].startswith(
        "1 series lost at head (1 failed); fails (gate: confirmed slower time, 3 rows)"
    )
    assert len(status["description"]) <= 140
    (run,) = fake_github.check_runs
    assert run["conclusion"] == "failure" and run["head_sha"] == HEAD_SHA
    assert "check run #" in _read(capfd)[0]
    assert fake_time.sleeps and all(s <= 1.0 for s in fake_time.sleeps)  # writes spaced


def test_check_run_refused_for_a_personal_token_keeps_the_status(
    fake_github: FakeGitHub, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    for k, v in _env(fake_github).items():
        monkeypatch.setenv(k, v)
    quiet = str(DATA / "quiet.findings.json")
    assert main(["status", "--sha", HEAD_SHA, "--report", quiet, "--check-run"]) == 0
    assert fake_github.statuses(HEAD_SHA)[0]["state"] == "success"
    assert fake_github.check_runs == []
    err = _read(capfd)[1]
    assert "no check run" in err and "GitHub App" in err


def test_status_rejects_a_short_sha(capfd: pytest.CaptureFixture[str]) -> None:
    assert main(["status", "--sha", "abc123", "--report", REPORT, "--dry-run"]) == 2
    assert "40 lower-case hex" in _read(capfd)[1]


def test_comment_permission_error_exit_code_and_hint(
    fake_github: FakeGitHub, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    for k, v in _env(fake_github).items():
        monkeypatch.setenv(k, v)
    fake_github.add_fault("POST", r"/comments$", "forbidden")
    assert main(["comment", "--pr", "4", "--report", REPORT]) == 8
    err = _read(capfd)[1]
    assert "403" in err and "hint:" in err and "permissions:" in err


def test_summary_appends_and_prints_annotations(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "summary.md"
    target.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(target))
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    assert main(["summary", "--report", REPORT]) == 0
    text = target.read_text()
    assert text.startswith("earlier step\n## :red_circle: neuronasv:")
    assert MARKER not in text
    out = _read(capfd)[0].splitlines()
    assert out[0].startswith("::error title=Benchmark failed")
    # a regression the re-run did not reproduce is a notice (time not decided), not a warning
    assert sum(line.startswith("::warning ") for line in out) == 5


def test_corrupt_report_is_a_clear_error(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "f.json"
    bad.write_text(Path(REPORT).read_text()[:500])
    assert main(["summary", "--report", str(bad), "--out", "-"]) == 5
    assert str(bad) in _read(capfd)[1]


@pytest.mark.parametrize("command", ["comment", "status"])
def test_github_repo_and_its_deprecated_spelling(
    command: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    """``--github-repo OWNER/NAME`` names the repository; the old ``--repo OWNER/NAME``
    still works (old scripts) with a warning; the two disagreeing is a usage error."""
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    monkeypatch.setenv("GITHUB_REPOSITORY", "env/repo")
    first = ["--pr", "5"] if command == "comment" else ["--sha", HEAD_SHA]
    base = [command, *first, "--report", REPORT, "--dry-run"]

    def sent(*extra: str) -> tuple[str, str]:
        out = tmp_path / "dry.json"
        assert main([*base, "--out", str(out), *extra]) == 0
        path = json.loads(out.read_text())["requests"][0]["path"]
        return path, _read(capfd)[1]

    path, err = sent("--github-repo", "octo/kernels")
    assert path.startswith("/repos/octo/kernels/") and err == ""
    path, err = sent("--repo", "octo/old")
    assert path.startswith("/repos/octo/old/")
    assert err == (
        f"warning: `--repo OWNER/NAME` is deprecated for `neuronasv {command}` (--repo is a git"
        " checkout in every other command); use --github-repo OWNER/NAME\n"
    )
    path, _ = sent()
    assert path.startswith("/repos/env/repo/")
    assert main([*base, "--repo", "a/b", "--github-repo", "c/d"]) == 2
    assert "--repo a/b and --github-repo c/d disagree" in _read(capfd)[1]
