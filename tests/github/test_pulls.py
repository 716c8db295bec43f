"""The culprit's pull request through the REST API (loopback GitHub), else nothing."""

from __future__ import annotations

from neuronasv.github.client import GitHubClient
from neuronasv.github.pulls import pull_for_commit
from tests.ci.fakegithub_ext import FakeGitHubCI

SHA = "c" * 40


def test_the_merged_pr_of_a_commit_and_none_without_a_token_or_a_pr() -> None:
    with FakeGitHubCI(tokens={"t0ken": "bot"}, repo="octo/kernels") as gh:
        gh.add_commit_pull(SHA, 12, "open sibling", merged=False)
        gh.add_commit_pull(SHA, 15, "Fold the scale <b>", merged=True)
        client = GitHubClient("t0ken", "octo/kernels", api_url=gh.url)
        pr = pull_for_commit(client, SHA)
        assert pr is not None and (pr.number, pr.title, pr.source) == (15, "Fold the scale <b>",
                                                                        "github")  # fmt: skip
        assert pr.url.endswith("/pull/15")
        assert pull_for_commit(client, "d" * 40) is None  # no PR for that commit
        assert pull_for_commit(GitHubClient(None, "octo/kernels", api_url=gh.url), SHA) is None
        assert pull_for_commit(client, "not-a-sha") is None
        asked = [r for r in gh.snapshot()["requests"] if "/pulls" in r["path"]]
        assert len(asked) == 2  # only the two calls with a token and a hash


def test_an_api_failure_is_not_the_searchs_failure() -> None:
    with FakeGitHubCI(tokens={"t0ken": "bot"}, repo="octo/kernels") as gh:
        client = GitHubClient("wrong", "octo/kernels", api_url=gh.url)
        assert pull_for_commit(client, SHA) is None  # 401: the subject's number stays
