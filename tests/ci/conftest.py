"""Fixtures of the CI tests: the wheel a user installs, built once per session.

``built_wheel`` is this checkout's wheel, built from its sdist in a source copy with no
GitHub origin (so it records its commit and no repository: ``init`` asks for ``--from``).
The adoption test, the light-install tests and the act lane share it: a test that needs
another build (a recorded repository) builds its own.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.wheelenv import build_wheel


@pytest.fixture(scope="session")
def built_wheel(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the wheel, the source copy it was built from: one commit, the one recorded)."""
    where = tmp_path_factory.mktemp("wheel")
    home = where / "home"
    home.mkdir()
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8"}
    return build_wheel(where, env)
