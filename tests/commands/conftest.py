"""The command tests use the GitHub tests' fixtures: the loopback stand-in, the fake clock,
and the check that no token reaches captured output or logs (autouse here too)."""

from tests.github.conftest import clock, fake_github, make_client, no_secret_leaks

__all__ = ["clock", "fake_github", "make_client", "no_secret_leaks"]
