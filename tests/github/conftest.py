"""Fixtures for the GitHub tests: the loopback stand-in, a fake clock, and a secret check.

``fake_github`` is a started :class:`tests.github.fakegithub.FakeGitHub` that knows
:data:`TOKEN` (login ``neuronasv-bot``) and :data:`ACTIONS_TOKEN` (an Actions token:
``/user`` is 403, comments by ``github-actions[bot]``). ``make_client`` builds a client
against it whose clock and sleeper are the fake clock's (nothing sleeps for real).
Every test here also fails if either token shows up in captured output or logs.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from neuronasv.github.client import GitHubClient, Pacing
from tests.github.fakegithub import FakeClock, FakeGitHub

TOKEN = "ghp_NEURONASV_SECRET_9c1e7f3a_DO_NOT_PRINT"
ACTIONS_TOKEN = "ghs_NEURONASV_ACTIONS_SECRET_4b2d_DO_NOT_PRINT"
SECRETS = (TOKEN, ACTIONS_TOKEN, "SECRET_9c1e7f3a", "ACTIONS_SECRET_4b2d")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def fake_github(clock: FakeClock) -> Iterator[FakeGitHub]:
    with FakeGitHub(
        tokens={TOKEN: "neuronasv-bot"}, actions_tokens={ACTIONS_TOKEN}, clock=clock.time
    ) as gh:
        yield gh


@pytest.fixture
def make_client(fake_github: FakeGitHub, clock: FakeClock) -> Callable[..., GitHubClient]:
    def make(token: str | None = TOKEN, **kw: Any) -> GitHubClient:
        kw.setdefault("timeout", (5.0, 5.0))
        return GitHubClient(
            token,
            fake_github.repo,
            api_url=fake_github.url,
            pacing=Pacing(clock=clock.time, sleeper=clock.sleep, rng=random.Random(0)),
            **kw,
        )

    return make


@pytest.fixture(autouse=True)
def no_secret_leaks(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> Iterator[None]:
    """Capture everything at DEBUG (urllib3 included) and fail if a token shows up."""
    caplog.set_level(logging.DEBUG)
    yield
    out, err = capfd.readouterr()
    text = "\n".join([caplog.text, out, err])
    for secret in SECRETS:
        assert secret not in text, "a token leaked into output or logs"
