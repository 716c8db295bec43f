"""Sticky comment against the loopback GitHub: paging, ownership, faults, rate limits.

After every scenario there is exactly one up-to-date comment of ours; waits are asserted
on the fake clock's recorded sleeps (nothing sleeps for real).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from neuronasv.errors import (
    GitHubError,
    GitHubPermissionError,
    GitHubRateLimitError,
    UsageError,
)
from neuronasv.github.client import ACTIONS_BOT, GitHubClient, Pacing
from neuronasv.github.comments import upsert_comment
from neuronasv.report.markdown import MARKER, comment_marker
from tests.builders import compare_doc
from tests.github.conftest import ACTIONS_TOKEN, SECRETS, TOKEN
from tests.github.fakegithub import FakeClock, FakeGitHub

PR = 7
BOT = "neuronasv-bot"
Make = Callable[..., GitHubClient]


def body(text: str = "2 regressions, 1 improvement, 40 unchanged on trn2") -> str:
    return f"{MARKER}\n## neuronasv: {text}\n"


def ours(gh: FakeGitHub, author: str = BOT) -> list[dict]:
    return gh.comments(PR, author=author, marker=MARKER)


def assert_one_current(gh: FakeGitHub, text: str, author: str = BOT) -> None:
    mine = ours(gh, author)
    assert len(mine) == 1, [c["id"] for c in mine]
    assert mine[0]["body"] == text


def assert_no_secret(*texts: object) -> None:
    for t in texts:
        for s in SECRETS:
            assert s not in str(t) and s not in repr(t)


def test_250_comments_over_three_pages_ours_on_the_last_is_updated(
    fake_github: FakeGitHub, make_client: Make
) -> None:
    fake_github.seed_comments(PR, 249)
    old = fake_github.add_comment(PR, BOT, body("old"))
    new = body("new")
    result = upsert_comment(make_client(), PR, new, marker=MARKER)
    assert result.action == "updated" and result.comment_id == old["id"]
    assert_one_current(fake_github, new)
    lists = [r for r in fake_github.requests if r.method == "GET" and r.path.endswith("/comments")]
    assert [r.query.get("page", ["1"])[0] for r in lists] == ["1", "2", "3"]
    assert all(r.query["per_page"] == ["100"] for r in lists)
    assert [(w.method, w.path) for w in fake_github.writes()] == [
        ("PATCH", f"/repos/octo/kernels/issues/comments/{old['id']}")
    ]
    assert len(fake_github.comments(PR)) == 250


def test_two_consecutive_runs_leave_one_comment(fake_github: FakeGitHub, make_client: Make) -> None:
    fake_github.seed_comments(PR, 150)
    first = upsert_comment(make_client(), PR, body("first"), marker=MARKER)
    second = upsert_comment(make_client(), PR, body("second"), marker=MARKER)
    third = upsert_comment(make_client(), PR, body("second"), marker=MARKER)
    assert (first.action, second.action, third.action) == ("created", "updated", "unchanged")
    assert first.comment_id == second.comment_id == third.comment_id
    assert_one_current(fake_github, body("second"))
    assert len(fake_github.comments(PR)) == 151


def test_marker_planted_by_someone_else_is_ignored(
    fake_github: FakeGitHub, make_client: Make
) -> None:
    planted = fake_github.add_comment(PR, "mallory", body("fake verdict: all good"))
    result = upsert_comment(make_client(), PR, body(), marker=MARKER)
    assert result.action == "created" and result.comment_id != planted["id"]
    assert_one_current(fake_github, body())
    assert ours(fake_github, "mallory")[0]["body"] == body("fake verdict: all good")


def test_actions_token_uses_github_actions_bot_when_user_is_forbidden(
    fake_github: FakeGitHub, make_client: Make
) -> None:
    fake_github.add_comment(PR, BOT, body("a PAT's comment is not ours now"))
    mine = fake_github.add_comment(PR, ACTIONS_BOT, body("old"))
    result = upsert_comment(make_client(ACTIONS_TOKEN), PR, body("new"), marker=MARKER)
    assert result.action == "updated" and result.comment_id == mine["id"]
    assert_one_current(fake_github, body("new"), author=ACTIONS_BOT)
    user = [r for r in fake_github.requests if r.path == "/user"]
    assert [r.status for r in user] == [403]


def test_keyed_markers_are_separate_comments(fake_github: FakeGitHub, make_client: Make) -> None:
    client = make_client()
    for key in ("trn2", "cpu"):
        m = comment_marker(key)
        upsert_comment(client, PR, f"{m}\nfor {key}\n", marker=m)
    assert len(fake_github.comments(PR, author=BOT)) == 2
    upsert_comment(client, PR, f"{comment_marker('cpu')}\nagain\n", marker=comment_marker("cpu"))
    assert len(fake_github.comments(PR, author=BOT)) == 2
    with pytest.raises(ValueError):
        comment_marker("a b -->")


def test_op_name_holding_another_keys_marker_cannot_hijack_its_comment(
    fake_github: FakeGitHub, make_client: Make
) -> None:
    """Issue 13 #5: the marker counts only as the body's first line."""
    from neuronasv.model import SeriesId
    from neuronasv.report.markdown import render_comment
    from tests.builders import finding

    hostile_op = f"aten::mul{comment_marker('cpu')}"
    f = finding(
        SeriesId("b.devtime", ("x",), "rmsnorm.naive", "4x512", "float32", hostile_op),
        "regression",
        base=1e-5,
        head=2e-5,
    )
    doc = compare_doc(f, machine="trn2")
    client = make_client()
    rendered = render_comment(doc, marker=comment_marker("trn2"))
    # Issue 22: the renderer does not even plant it (the comment opener is broken)...
    assert comment_marker("cpu") not in rendered and "aten::mul<!" in rendered
    # ...and a body that did quote it further down is still only the first line's comment.
    trn2_body = rendered + f"`{comment_marker('cpu')}`\n"
    trn2 = upsert_comment(client, PR, trn2_body, marker=comment_marker("trn2"))
    cpu_body = f"{comment_marker('cpu')}\n## neuronasv: cpu results\n"
    cpu = upsert_comment(client, PR, cpu_body, marker=comment_marker("cpu"))
    assert cpu.action == "created" and cpu.comment_id != trn2.comment_id
    by_id = {c["id"]: c["body"] for c in fake_github.comments(PR, author=BOT)}
    assert by_id == {trn2.comment_id: trn2_body, cpu.comment_id: cpu_body}
    # A body that carries the marker anywhere but its first line is refused as ours.
    with pytest.raises(UsageError, match="first line must be the marker"):
        upsert_comment(client, PR, f"intro\n{MARKER}\n", marker=MARKER)


def test_502_then_success_is_retried_with_backoff(
    fake_github: FakeGitHub, make_client: Make, clock: FakeClock
) -> None:
    fake_github.seed_comments(PR, 120)
    fake_github.add_fault("GET", r"/issues/7/comments$", "status", status=502, times=2)
    result = upsert_comment(make_client(), PR, body(), marker=MARKER)
    assert result.action == "created"
    assert_one_current(fake_github, body())
    # Two backoffs: 1 s then 2 s, each with up to 25 % jitter.
    assert len(clock.sleeps) == 2
    assert 1.0 <= clock.sleeps[0] <= 1.25 and 2.0 <= clock.sleeps[1] <= 2.5


def test_502_on_create_is_rechecked_then_created_once(
    fake_github: FakeGitHub, make_client: Make
) -> None:
    fake_github.add_fault("POST", r"/issues/7/comments$", "status", status=502)
    result = upsert_comment(make_client(), PR, body(), marker=MARKER)
    assert result.action == "created"
    assert_one_current(fake_github, body())
    methods = [(r.method, r.status) for r in fake_github.requests if r.path != "/user"]
    # list, POST 502, list again (did it land? no), POST 201, list (no racing duplicate).
    assert methods == [("GET", 200), ("POST", 502), ("GET", 200), ("POST", 201), ("GET", 200)]


@pytest.mark.parametrize("kind", ["timeout_after_create", "disconnect_after_create"])
def test_create_that_fails_after_the_server_stored_it_is_not_repeated(
    fake_github: FakeGitHub, make_client: Make, kind: str
) -> None:
    fake_github.seed_comments(PR, 101)
    fake_github.add_fault("POST", r"/issues/7/comments$", kind)
    # A short read timeout so the held answer times out quickly (a real socket timeout).
    client = make_client(timeout=(5.0, 0.3))
    try:
        result = upsert_comment(client, PR, body(), marker=MARKER)
    finally:
        fake_github.release()
    assert result.action == "created"
    assert_one_current(fake_github, body())
    assert [w.method for w in fake_github.writes()] == ["POST"]


def test_secondary_rate_limit_honours_retry_after(
    fake_github: FakeGitHub, make_client: Make, clock: FakeClock
) -> None:
    fake_github.add_fault("POST", r"/issues/7/comments$", "secondary", retry_after=7)
    upsert_comment(make_client(), PR, body(), marker=MARKER)
    assert_one_current(fake_github, body())
    rate_waits = [s for s in clock.sleeps if s >= 2]
    assert len(rate_waits) == 1 and 7.0 <= rate_waits[0] <= 7.0 * 1.25


@pytest.mark.parametrize(("retry_after", "low"), [(None, 60.0), (3, 3.0)])
def test_429_waits_retry_after_or_at_least_a_minute(
    fake_github: FakeGitHub,
    make_client: Make,
    clock: FakeClock,
    retry_after: int | None,
    low: float,
) -> None:
    fake_github.add_fault("GET", r"/comments$", "429", retry_after=retry_after)
    upsert_comment(make_client(), PR, body(), marker=MARKER)
    assert_one_current(fake_github, body())
    assert len(clock.sleeps) == 1 and low <= clock.sleeps[0] <= low * 1.25


def test_unsignalled_secondary_limit_backs_off_exponentially_from_60s(
    fake_github: FakeGitHub, make_client: Make, clock: FakeClock
) -> None:
    fake_github.add_fault("PATCH", r"/issues/comments/", "secondary_unsignalled", times=2)
    fake_github.add_comment(PR, BOT, body("old"))
    upsert_comment(make_client(), PR, body("new"), marker=MARKER)
    assert_one_current(fake_github, body("new"))
    waits = [s for s in clock.sleeps if s > 1.0]
    assert len(waits) == 2
    assert 60 <= waits[0] <= 75 and 120 <= waits[1] <= 150


def test_primary_limit_exhausted_waits_until_reset(
    fake_github: FakeGitHub, make_client: Make, clock: FakeClock
) -> None:
    fake_github.add_fault("GET", r"/comments$", "primary", reset_in=30)
    upsert_comment(make_client(), PR, body(), marker=MARKER)
    assert_one_current(fake_github, body())
    assert len(clock.sleeps) == 1 and 31.0 <= clock.sleeps[0] <= 31.0 * 1.25


def test_primary_limit_too_far_away_fails_without_waiting(
    fake_github: FakeGitHub, make_client: Make, clock: FakeClock
) -> None:
    fake_github.add_fault("GET", r"/comments$", "primary", reset_in=3000)
    with pytest.raises(GitHubRateLimitError) as info:
        upsert_comment(make_client(), PR, body(), marker=MARKER)
    assert "3001" in info.value.message
    assert clock.sleeps == [] and ours(fake_github) == []
    assert_no_secret(info.value, info.value.hint)


def test_persistent_502_gives_up_with_bounded_exponential_waits(
    fake_github: FakeGitHub, make_client: Make, clock: FakeClock
) -> None:
    fake_github.add_fault("GET", r"/comments$", "status", status=502, times=100)
    with pytest.raises(GitHubError) as info:
        upsert_comment(make_client(), PR, body(), marker=MARKER)
    assert "giving up after 6 attempts" in info.value.message
    assert len(clock.sleeps) == 5
    for i, s in enumerate(clock.sleeps):
        assert 2**i <= s <= 2**i * 1.25
    assert_no_secret(info.value)


def test_403_without_rate_limit_signals_is_a_permission_error(
    fake_github: FakeGitHub, make_client: Make, clock: FakeClock
) -> None:
    fake_github.add_fault("POST", r"/comments$", "forbidden")
    with pytest.raises(GitHubPermissionError) as info:
        upsert_comment(make_client(), PR, body(), marker=MARKER)
    assert "Resource not accessible by integration" in info.value.message
    assert "permissions:" in (info.value.hint or "")
    assert "pull-requests: write" in (info.value.hint or "")
    assert clock.sleeps == []
    assert_no_secret(info.value, info.value.hint)


def test_bad_token_is_a_permission_error_without_the_token(make_client: Make) -> None:
    bad = "ghp_NEURONASV_SECRET_9c1e7f3a_WRONG"
    with pytest.raises(GitHubPermissionError) as info:
        upsert_comment(make_client(bad), PR, body(), marker=MARKER)
    assert "401" in info.value.message and "Bad credentials" in info.value.message
    assert_no_secret(info.value, info.value.hint)
    assert bad not in str(info.value)


def test_422_body_too_long_sends_the_trimmed_form(clock: FakeClock, make_client: Make) -> None:
    with FakeGitHub(tokens={TOKEN: BOT}, clock=clock.time, max_body=2000) as gh:
        pacing = Pacing(clock=clock.time, sleeper=clock.sleep)
        client = GitHubClient(TOKEN, gh.repo, api_url=gh.url, pacing=pacing)
        long_body, short = body("x" * 3000), body("trimmed")
        result = upsert_comment(client, PR, long_body, marker=MARKER, trimmed_body=short)
        assert result.action == "created" and result.trimmed
        assert_one_current(gh, short)
        # The next run, with the same too-long body, sees its trimmed form as current.
        again = upsert_comment(client, PR, long_body, marker=MARKER, trimmed_body=short)
        assert again.action == "unchanged"
        assert [(w.method, w.status) for w in gh.writes()] == [("POST", 422), ("POST", 201)]


def test_duplicates_of_ours_are_collapsed_and_writes_spaced(
    fake_github: FakeGitHub, make_client: Make, clock: FakeClock
) -> None:
    first = fake_github.add_comment(PR, BOT, body("one"))
    fake_github.seed_comments(PR, 3)
    fake_github.add_comment(PR, BOT, body("two"))
    fake_github.add_comment(PR, BOT, body("three"))
    result = upsert_comment(make_client(), PR, body("now"), marker=MARKER)
    assert result.comment_id == first["id"] and len(result.deleted) == 2
    assert_one_current(fake_github, body("now"))
    writes = fake_github.writes()
    assert [w.method for w in writes] == ["DELETE", "DELETE", "PATCH"]
    gaps = [b.at - a.at for a, b in itertools.pairwise(writes)]
    assert all(g >= 1.0 for g in gaps), gaps


def test_github_enterprise_prefix(clock: FakeClock) -> None:
    with FakeGitHub(tokens={TOKEN: BOT}, clock=clock.time, prefix="/api/v3") as gh:
        pacing = Pacing(clock=clock.time, sleeper=clock.sleep)
        client = GitHubClient(TOKEN, gh.repo, api_url=gh.url, pacing=pacing)
        gh.seed_comments(PR, 130)
        upsert_comment(client, PR, body(), marker=MARKER)
        assert_one_current(gh, body())
        assert all(r.path.startswith("/api/v3/") for r in gh.requests)


def test_headers_sent_and_token_kept_out_of_records(
    fake_github: FakeGitHub, make_client: Make
) -> None:
    client = make_client()
    upsert_comment(client, PR, body(), marker=MARKER)
    for r in fake_github.requests:
        assert r.headers["accept"] == "application/vnd.github+json"
        assert r.headers["x-github-api-version"] == "2022-11-28"
        assert r.login == BOT  # the token was sent (the server resolved it)
    assert_no_secret(client, fake_github.snapshot())
    assert "***" in repr(client)


def test_client_refuses_links_to_another_origin_and_bad_config(make_client: Make) -> None:
    client = make_client()
    with pytest.raises(GitHubError, match="refusing to follow"):
        client.request("GET", "http://evil.example/repos/octo/kernels/issues/7/comments")
    from neuronasv.errors import UsageError

    with pytest.raises(UsageError):
        GitHubClient(TOKEN, "not-a-repo")
    with pytest.raises(UsageError, match="GITHUB_REPOSITORY"):
        GitHubClient.from_env({"GITHUB_TOKEN": TOKEN})
    env_client = GitHubClient.from_env(
        {
            "GITHUB_TOKEN": TOKEN,
            "GITHUB_REPOSITORY": "o/r",
            "GITHUB_API_URL": "https://ghe.x/api/v3/",
        }
    )
    assert env_client.api_url == "https://ghe.x/api/v3" and env_client.has_token
    assert_no_secret(env_client)


def test_patch_answered_404_creates_the_comment_again(
    fake_github: FakeGitHub, make_client: Make
) -> None:
    """Our comment was deleted between listing and updating: it is created anew."""
    old = fake_github.add_comment(PR, BOT, body("old"))
    fault = fake_github.add_fault("PATCH", rf"/issues/comments/{old['id']}$", "deleted")
    result = upsert_comment(make_client(), PR, body("new"), marker=MARKER)
    assert fault.fired == 1
    assert result.action == "created" and result.comment_id != old["id"]
    assert_one_current(fake_github, body("new"))


def test_patch_404_finds_the_comment_a_concurrent_run_recreated_instead_of_adding_one(
    fake_github: FakeGitHub, make_client: Make
) -> None:
    """Issue 22: deleted between list and update, and meanwhile another run of ours
    created it again: the 404 starts a new find-or-create, which updates that one."""
    old = fake_github.add_comment(PR, BOT, body("old"))
    fault = fake_github.add_fault(
        "PATCH", rf"/issues/comments/{old['id']}$", "deleted_then_recreated", body=body("other run")
    )
    result = upsert_comment(make_client(), PR, body("new"), marker=MARKER)
    assert fault.fired == 1 and result.action == "updated"
    assert_one_current(fake_github, body("new"))
    assert [w.method for w in fake_github.writes()] == ["PATCH", "PATCH"]


def test_two_concurrent_first_runs_leave_one_comment(
    fake_github: FakeGitHub, make_client: Make
) -> None:
    """Issue 22: both runs saw no comment and both create; the one whose create landed
    second lists again, finds the older one, updates it and deletes its own."""
    fault = fake_github.add_fault(
        "POST", r"/issues/7/comments$", "concurrent_comment", body=body("the other run")
    )
    result = upsert_comment(make_client(), PR, body("this run"), marker=MARKER)
    assert fault.fired == 1
    assert_one_current(fake_github, body("this run"))
    (kept,) = ours(fake_github)
    assert result.comment_id == kept["id"] and len(result.deleted) == 1
    # The other run, listing after its own create, finds the single comment: no change.
    again = upsert_comment(make_client(), PR, body("this run"), marker=MARKER)
    assert again.action == "unchanged" and again.comment_id == kept["id"]


def test_the_older_racer_deletes_the_newer_duplicate(
    fake_github: FakeGitHub, make_client: Make
) -> None:
    """The mirror case: our create landed first, the other run's right after it."""
    client = make_client()
    first = upsert_comment(client, PR, body("a"), marker=MARKER)
    fake_github.add_comment(PR, BOT, body("b"))  # a racing run's create, landed later
    from neuronasv.github.comments import _converge, find_own_comments

    result = _converge(
        client, first, find_own_comments(client, PR, MARKER, (BOT,)), body("a"), None
    )
    assert result.comment_id == first.comment_id and len(result.deleted) == 1
    assert_one_current(fake_github, body("a"))


@pytest.mark.parametrize(
    "header", ["soon", "", "-5", "nan", "inf", "Wed, 32 Foo 2099 99:99:99", "Mon, 01 Jan 2024"]
)
def test_unparseable_retry_after_falls_back_to_bounded_backoff(
    fake_github: FakeGitHub, make_client: Make, clock: FakeClock, header: str
) -> None:
    """A retry-after that is not seconds or an HTTP date: no crash, the 60 s floor."""
    fake_github.add_fault("GET", r"/comments$", "429", retry_after=header)
    upsert_comment(make_client(), PR, body(), marker=MARKER)
    assert_one_current(fake_github, body())
    assert len(clock.sleeps) == 1 and 60.0 <= clock.sleeps[0] <= 60.0 * 1.25
