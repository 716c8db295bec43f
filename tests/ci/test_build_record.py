"""setup.py records the repository a wheel is built from (or none: never a guess), and the
package metadata links the docs at that commit (issue 29 items 2 and 5)."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def setup_py() -> dict:
    return runpy.run_path(str(ROOT / "setup.py"), run_name="setup_under_test")


def test_the_repository_comes_from_the_environment_or_a_github_origin(setup_py: dict) -> None:
    info = setup_py["_info"]({"NEURONASV_REPOSITORY": "acme/neuronasv"})
    assert info["repository"] == "acme/neuronasv" and len(info["commit"]) == 40
    for hostile in ("o/r\n    secrets: inherit", "evil/x@main #", "o/..", "-o/r"):
        with pytest.raises(SystemExit, match="not a GitHub OWNER/REPO"):
            setup_py["_info"]({"NEURONASV_REPOSITORY": hostile})


def test_project_urls_link_the_docs_at_the_recorded_commit(setup_py: dict) -> None:
    urls = setup_py["project_urls"]({"repository": "acme/nx", "commit": "a" * 40})
    docs = f"https://github.com/acme/nx/blob/{'a' * 40}/docs/getting-started.md"
    assert urls["Documentation"] == docs
    assert setup_py["project_urls"]({"commit": "a" * 40}) == {}
