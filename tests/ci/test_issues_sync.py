"""One issue per open regression change point: planned purely, then over real HTTP."""

from __future__ import annotations

import random
import re
from dataclasses import replace

from neuronasv.github.client import GitHubClient, Pacing
from neuronasv.github.issues_sync import (
    LABEL,
    change_point_key,
    issue_marker,
    plan_sync,
    sync_issues,
)
from neuronasv.model import ChangePoint, FindingsDocument, SeriesId
from tests.builders import history_doc
from tests.ci.fakegithub_ext import FakeGitHubCI
from tests.github.fakegithub import FakeClock

BOT = "github-actions[bot]"
HEAD = "f" * 40


def cp(op: str = "aten::mul", *, machine: str = "trn2", after: str = "b" * 40,
       is_open: bool = True, ratio: float = 1.25, ack: str | None = None) -> ChangePoint:
    return ChangePoint(
        series=SeriesId("rmsnorm.Naive.devtime_op", ("'4x512'", "'bfloat16'", repr(op)),
                        "rmsnorm.naive", "4x512", "bfloat16", op),
        machine=machine, commit_before="a" * 40, commit_after=after, index=5,
        before=0.002, after=0.002 * ratio, ratio=ratio, p_value=0.0004, unit="seconds",
        kind="regression", open=is_open, acknowledged=ack,
        reason="e-divisive shift, window 50",
    )


def doc(*cps: ChangePoint, machine: str = "trn2") -> FindingsDocument:
    return history_doc(*cps, head=HEAD, machine=machine)


def as_issue(number: int, action_title: str, body: str, *, state: str = "open",
             author: str = BOT) -> dict[str, object]:
    return {"number": number, "title": action_title, "body": body, "state": state,
            "user": {"login": author}, "labels": [{"name": LABEL}]}


def test_open_regression_creates_then_is_stable_then_updates() -> None:
    c = cp()
    plan = plan_sync([doc(c)], [], authors=[BOT])
    assert [a.kind for a in plan] == ["create"]
    a = plan[0]
    assert a.key == change_point_key(c) and issue_marker(a.key, "trn2") in a.body
    assert "aten" in a.title and "+25 %" in a.title and "trn2" in a.title
    assert "2.00 ms → 2.50 ms" in a.body

    existing = [as_issue(1001, a.title, a.body)]
    assert plan_sync([doc(c)], existing, authors=[BOT]) == []  # nothing changed: no write

    worse = replace(c, after=0.003, ratio=1.5)  # same change point, new estimate
    plan = plan_sync([doc(worse)], existing, authors=[BOT])
    assert [(p.kind, p.number) for p in plan] == [("update", 1001)]
    assert "+50 %" in plan[0].title


def test_recovery_and_acknowledgement_close_only_our_machine() -> None:
    c = cp()
    a = plan_sync([doc(c)], [], authors=[BOT])[0]
    existing = [as_issue(1001, a.title, a.body)]
    recovered = plan_sync([doc(replace(c, open=False))], existing, authors=[BOT])
    assert [(p.kind, p.number) for p in recovered] == [("close", 1001)]
    assert "recovered" in recovered[0].comment
    acked_doc = doc(replace(c, acknowledged="expected: new kernel"))
    acked = plan_sync([acked_doc], existing, authors=[BOT])
    assert acked[0].kind == "close" and "acknowledged" in acked[0].comment
    gone = plan_sync([doc()], existing, authors=[BOT])
    assert gone[0].kind == "close" and "no longer detected" in gone[0].comment
    # An analysis of another machine never closes this machine's issue.
    assert plan_sync([doc(machine="gpu-h100")], existing, authors=[BOT]) == []


def test_closed_by_maintainer_stays_closed_and_planted_markers_are_ignored() -> None:
    c = cp()
    a = plan_sync([doc(c)], [], authors=[BOT])[0]
    closed = [as_issue(1001, a.title, a.body, state="closed")]
    assert plan_sync([doc(c)], closed, authors=[BOT]) == []
    planted = [as_issue(1002, "spoof", a.body, author="mallory")]
    assert [p.kind for p in plan_sync([doc(c)], planted, authors=[BOT])] == ["create"]
    pr_like = [{**as_issue(1003, a.title, a.body), "pull_request": {}}]
    assert [p.kind for p in plan_sync([doc(c)], pr_like, authors=[BOT])] == ["create"]


def test_one_issue_per_change_point_and_improvements_ignored() -> None:
    two = doc(cp("aten::mul"), cp("aten::add", after="c" * 40),
              replace(cp("aten::mean"), kind="improvement", ratio=0.8))
    plan = plan_sync([two], [], authors=[BOT])
    assert [p.kind for p in plan] == ["create", "create"]
    assert len({p.key for p in plan}) == 2


def test_hostile_op_names_are_inert() -> None:
    evil = cp("@maintainers <img src=x onerror=alert(1)> [x](http://evil.example) |\n# h")
    a = plan_sync([doc(evil)], [], authors=[BOT])[0]
    assert "\n" not in a.title
    body_lines = a.body.splitlines()
    assert not any(line.startswith("# ") for line in body_lines)
    # Inside code spans text is literal (inert); everywhere else it must be escaped.
    prose = re.sub(r"`[^`]*`", "", a.body)
    assert "<img" not in prose and "@maintainers" not in prose
    assert "http://evil.example" not in prose


def test_sync_over_http_creates_once_then_closes_on_recovery() -> None:
    clock = FakeClock()
    with FakeGitHubCI(tokens={"tok-issues": "neuronasv-bot"}, clock=clock.time) as gh:
        gh.add_issue("someone", "unrelated", "hello", labels=(LABEL,))
        pacing = Pacing(clock=clock.time, sleeper=clock.sleep, rng=random.Random(0))
        client = GitHubClient("tok-issues", gh.repo, api_url=gh.url, pacing=pacing)
        c = cp()
        first = sync_issues(client, [doc(c)], site_url="https://octo.github.io/kernels/")
        assert [a.kind for a in first] == ["create"]
        ours = [i for i in gh.issues if i["user"]["login"] == "neuronasv-bot"]
        assert len(ours) == 1 and ours[0]["state"] == "open"
        assert "https://octo.github.io/kernels/" in ours[0]["body"]
        n_writes = len(gh.writes())

        again = sync_issues(client, [doc(c)], site_url="https://octo.github.io/kernels/")
        assert again == []
        assert len([i for i in gh.issues if i["user"]["login"] == "neuronasv-bot"]) == 1

        closed = sync_issues(client, [doc(replace(c, open=False))])
        assert [a.kind for a in closed] == ["close"]
        assert ours[0]["number"] in {i["number"] for i in gh.issues if i["state"] == "closed"}
        assert any("recovered" in cm["body"] for cm in gh.comments(ours[0]["number"]))
        assert len(gh.writes()) > n_writes


def test_the_issues_sync_command_plans_without_a_token_and_maps_bad_input_to_exit_5(
    tmp_path, capsys, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    from neuronasv.cli import main

    for name in ("GITHUB_TOKEN", "GH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GITHUB_REPOSITORY", "example/repo")
    path = tmp_path / "regressions-trn2.json"
    path.write_text(doc(cp()).dumps(), encoding="utf-8")
    assert main(["issues-sync", "--dry-run", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and out[0].startswith("would create new issue [")
    bad = tmp_path / "bad.json"
    bad.write_text("{", encoding="utf-8")
    assert main(["issues-sync", "--dry-run", str(bad)]) == 5
    assert capsys.readouterr().err.startswith("error: ")


def test_the_workflow_step_syncs_every_machines_document_over_http(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """neuronasv-issues.yml's step: `python -m neuronasv.ci issues DIR` opens one issue per
    open change point of every regressions-<machine>.json in DIR (SITE_URL linked); a folder
    without one is a usage error (exit 2) that writes nothing."""
    import os
    import subprocess
    import sys

    (tmp_path / "regressions-trn2.json").write_text(doc(cp()).dumps(), encoding="utf-8")
    (tmp_path / "regressions-h100.json").write_text(
        doc(cp("aten::add", machine="h100"), machine="h100").dumps(), encoding="utf-8")
    (tmp_path / "empty").mkdir()
    with FakeGitHubCI(tokens={"tok-issues": BOT}) as gh:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
        env |= {"GITHUB_API_URL": gh.url, "GITHUB_REPOSITORY": gh.repo,
                "GITHUB_TOKEN": "tok-issues", "SITE_URL": "https://octo.github.io/kernels/"}

        def step(folder: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([sys.executable, "-m", "neuronasv.ci", "issues", folder],
                                  env=env, cwd=tmp_path, capture_output=True, text=True,
                                  check=False, timeout=120)

        assert step(str(tmp_path / "missing")).returncode == 2
        none = step(str(tmp_path / "empty"))
        assert none.returncode == 2 and "no regressions-<machine>.json" in none.stderr
        assert gh.writes() == []
        r = step(str(tmp_path))
        assert r.returncode == 0, r.stderr
        assert "synced=true" in r.stdout
        ours = [i for i in gh.issues if i["user"]["login"] == BOT]
        assert sorted("aten::add" in i["title"] for i in ours) == [False, True]
        assert all("https://octo.github.io/kernels/" in i["body"] for i in ours)
