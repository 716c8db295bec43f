"""``python -m neuronasv.ci``: only the step (its first positional) picks the route."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize(
    "argv",
    [
        # a findings folder named pr-comment is the issues step's argument: it went to the
        # privileged step's parser before (exit 2, "--artifact is required")
        ["issues", "pr-comment", "--dry-run"],
        ["--repo", ".", "verdict", "pr-comment"],
    ],
)
def test_only_the_step_routes_to_pr_comment(argv: list[str], tmp_path: Path) -> None:
    res = subprocess.run([sys.executable, "-m", "neuronasv.ci", *argv], capture_output=True,
                         text=True, cwd=tmp_path, timeout=120)  # fmt: skip
    assert "--artifact" not in res.stderr, res.stderr
    assert res.returncode != 0 and "pr-comment" in res.stderr, res.stderr


def test_the_pr_comment_step_keeps_its_own_parser(tmp_path: Path) -> None:
    res = subprocess.run([sys.executable, "-m", "neuronasv.ci", "pr-comment"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=120)  # fmt: skip
    assert res.returncode == 2 and "--artifact" in res.stderr, res.stderr
