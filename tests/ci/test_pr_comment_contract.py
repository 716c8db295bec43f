"""The privileged step (neuronasv/ci/pr_comment.py) keeps the exit-code contract for any
input (issue 22 item 4).

Every case ends in the error tree: a documented exit code, one ``error:`` line (and at
most a ``hint:`` line), no traceback; an artifact the step refuses is exit 9 and nothing
is written to GitHub. In process (``pr_comment.main``) against the loopback GitHub.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.ci.fakegithub_ext import FakeGitHubCI
from tests.ci.test_pr_comment import HEAD, REPO, SERVER, TOKEN, event, make_artifact, pr_comment


def _run(
    art: Path,
    ev: Path,
    gh: FakeGitHubCI,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    *extra: str,
) -> tuple[int, str]:
    for k, v in {
        "GITHUB_API_URL": gh.url,
        "GITHUB_REPOSITORY": REPO,
        "GITHUB_SERVER_URL": SERVER,
        "GITHUB_EVENT_PATH": str(ev),
        "GITHUB_TOKEN": TOKEN,
    }.items():
        monkeypatch.setenv(k, v)
    capsys.readouterr()
    code = pr_comment.main(["--artifact", str(art), *extra])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln]
    if code:
        assert lines and lines[0].startswith(("error: ", "internal error: ")), err
        assert len(lines) <= 2, err
    return code, err


def _event_with(tmp_path: Path, change: Any) -> Path:
    p = event(tmp_path)
    payload = json.loads(p.read_text())
    change(payload["workflow_run"])
    p.write_text(json.dumps(payload))
    return p


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda r: r.__setitem__("pull_requests", 5), "pull_requests is not a list"),
        (lambda r: r.__setitem__("pull_requests", "7"), "pull_requests is not a list"),
        (lambda r: r.__setitem__("pull_requests", [5, None, {"number": "7"}]), "head of no"),
        (lambda r: r.__setitem__("id", "4242"), "workflow_run.id"),
        (lambda r: r.__setitem__("head_repository", []), "full_name"),
    ],
    ids=["int", "string", "odd entries", "id string", "repo list"],
)
def test_a_malformed_event_is_a_usage_error_and_posts_nothing(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    change: Any,
    says: str,
) -> None:
    art = make_artifact(tmp_path, rounds=False)
    with FakeGitHubCI(tokens={TOKEN: "github-actions[bot]"}, repo=REPO) as gh:
        code, err = _run(art, _event_with(tmp_path, change), gh, monkeypatch, capsys)
        assert gh.writes() == []
    assert code in (2, 9) and says in err, err
    if "pull_requests" in says or "workflow_run" in says or "full_name" in says:
        assert code == 2


def test_dry_run_out_in_a_missing_folder_is_refused_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    art = make_artifact(tmp_path, rounds=False)
    with FakeGitHubCI(tokens={TOKEN: "github-actions[bot]"}, repo=REPO) as gh:
        gh.add_pull(7, HEAD)
        out = tmp_path / "missing" / "requests.json"
        code, err = _run(
            art, event(tmp_path), gh, monkeypatch, capsys, "--dry-run", "--out", str(out)
        )
        assert code == 2 and "--out" in err and "does not exist" in err, err
        code, err = _run(
            art, event(tmp_path), gh, monkeypatch, capsys, "--dry-run", "--out", str(tmp_path)
        )
        assert code == 2 and "is a folder" in err, err
        assert gh.writes() == []


def test_unreadable_results_in_the_artifact_are_exit_9_with_nothing_posted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    art = make_artifact(tmp_path, rounds=False)
    victim = next(p for p in (art / "results").rglob("*.json") if p.name != "machine.json")
    data = json.loads(victim.read_text())
    data["result_columns"] = "result"  # wrong type: not a list
    victim.write_text(json.dumps(data))
    with FakeGitHubCI(tokens={TOKEN: "github-actions[bot]"}, repo=REPO) as gh:
        gh.add_pull(7, HEAD)
        code, err = _run(art, event(tmp_path), gh, monkeypatch, capsys)
        assert gh.writes() == [] and gh.comments(7) == []
    assert code == 9 and "untrusted artifact rejected" in err, err


def test_a_bug_is_one_line_and_exit_11(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Whatever escapes the error tree still ends in it: a distinct code, one line."""
    art = make_artifact(tmp_path, rounds=False)

    def boom(*_a: Any, **_k: Any) -> Any:
        raise TypeError("unexpected")

    monkeypatch.setattr(pr_comment, "read_claims", boom)
    with FakeGitHubCI(tokens={TOKEN: "github-actions[bot]"}, repo=REPO) as gh:
        gh.add_pull(7, HEAD)
        code, err = _run(art, event(tmp_path), gh, monkeypatch, capsys)
        assert gh.writes() == []
    assert code == 11 and "internal error: TypeError" in err, err
    assert "neuronasv.ci pr-comment" in err, err


def test_the_pr_head_is_checked_again_right_before_posting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 22 item 6: bound at the start, the PR is pushed to while the step recomputes;
    the re-read right before posting sees the new head: exit 9, nothing written."""
    art = make_artifact(tmp_path, rounds=False)
    with FakeGitHubCI(tokens={TOKEN: "github-actions[bot]"}, repo=REPO) as gh:
        gh.add_pull(7, HEAD)
        code, err = _run(art, event(tmp_path), gh, monkeypatch, capsys)  # unmoved: posts
        assert code == 0, err
        posted = len(gh.writes())
        gh.pull_reads.clear()
        # Binding reads /pulls/7 once (one read per distinct candidate); the next read is
        # the re-check before posting, and by then the PR has a new head.
        gh.push_after_reads[7] = (1, "e" * 40)
        code, err = _run(art, event(tmp_path), gh, monkeypatch, capsys)
        assert code == 9 and "no longer has head" in err and "not posting" in err, err
        assert len(gh.writes()) == posted  # nothing more written


def test_an_artifact_whose_base_and_head_are_incomparable_is_exit_9(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The head's sidecar removed: device time without a backend at head cannot be
    compared with the base's; the artifact is refused, nothing posted."""
    from neuronasv.store.layout import sidecar_path

    art = make_artifact(tmp_path, rounds=False)
    head = next(p for p in (art / "results").rglob(f"{HEAD[:8]}-*.json"))
    Path(sidecar_path(head)).unlink()
    with FakeGitHubCI(tokens={TOKEN: "github-actions[bot]"}, repo=REPO) as gh:
        gh.add_pull(7, HEAD)
        code, err = _run(art, event(tmp_path), gh, monkeypatch, capsys)
        assert gh.writes() == []
    assert code == 9 and "not known to be comparable" in err, err
