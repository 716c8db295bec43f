"""Every test runs with a temporary HOME, so nothing is ever written into the real one.

asv keeps its machine registry in ``~/.asv-machine.json`` (``neuronasv run`` saves the
machine there, as asv does) and git, Chromium and caches write under ``~`` too. The
temporary HOME is set before any test module is imported and inherited by every
subprocess (asv, git, ``ci/*.sh``); it holds a neutral git identity, because commits made
by tests must not depend on (or borrow) the developer's. It is removed at the end.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

_REAL_HOME = os.environ.get("HOME")
_TMP_HOME: str | None = None


def pytest_configure(config: pytest.Config) -> None:
    global _TMP_HOME
    _TMP_HOME = tempfile.mkdtemp(prefix="neuronasv-test-home-")
    with open(os.path.join(_TMP_HOME, ".gitconfig"), "w", encoding="utf-8") as fh:
        fh.write(
            "[user]\n\tname = neuronasv tests\n\temail = tests@neuronasv.invalid\n"
            "[init]\n\tdefaultBranch = main\n"
        )
    os.environ["HOME"] = _TMP_HOME
    os.environ["NEURONASV_TEST_REAL_HOME"] = _REAL_HOME or ""


def pytest_unconfigure(config: pytest.Config) -> None:
    if _REAL_HOME is not None:
        os.environ["HOME"] = _REAL_HOME
    if _TMP_HOME is not None:
        shutil.rmtree(_TMP_HOME, ignore_errors=True)
