"""One way to find a repository's workloads (run/usersuite.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from neuronasv.measure import workloads
from neuronasv.run import usersuite as uw


def test_root_is_prepended_and_the_callers_entries_kept() -> None:
    env = uw.with_root_on_path("/tree", {"PYTHONPATH": f"/mine{os.pathsep}/tree", "X": "1"})
    assert env["PYTHONPATH"] == f"/tree{os.pathsep}/mine" and env["X"] == "1"
    assert uw.with_root_on_path("/tree", {})["PYTHONPATH"] == "/tree"


def test_repo_root_is_found_from_a_subfolder(tmp_path: Path) -> None:
    (tmp_path / "asv.conf.json").write_text("{}")
    (tmp_path / "docs" / "deep").mkdir(parents=True)
    assert uw.find_repo_root(str(tmp_path / "docs" / "deep")) == str(tmp_path)
    assert uw.suite_root(str(tmp_path / "docs"), "/checkout") == "/checkout"


@pytest.fixture
def isolated(monkeypatch: pytest.MonkeyPatch) -> None:
    """sys.path and the importers asv adds are restored after the test."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))


@pytest.mark.usefixtures("isolated")
def test_the_suite_imports_register_the_workloads(tmp_path: Path) -> None:
    """What asv imports registers the workload for profile and confirm: no variable."""
    tag = f"t{os.getpid()}_{tmp_path.name[-6:].replace('-', '_')}"
    module = f"{tag}_wl"
    (tmp_path / "asv.conf.json").write_text(f'{{"benchmark_dir": "suite_{tag}"}}')
    (tmp_path / f"suite_{tag}").mkdir()
    (tmp_path / f"suite_{tag}" / "__init__.py").write_text("")
    (tmp_path / f"suite_{tag}" / "devtime.py").write_text(f"import {module}  # noqa\n")
    (tmp_path / f"{module}.py").write_text(
        "from neuronasv.measure.workloads import Workload, register\n"
        f"register(Workload('{tag}.w', 'd', '4x4', lambda *a: (lambda: None)))\n"
    )
    (tmp_path / "sub").mkdir()
    assert uw.import_repo_workloads(str(tmp_path / "sub")) == []
    assert workloads.get(f"{tag}.w").default_shape == "4x4"
    assert sys.path[-1] == str(tmp_path)  # after PYTHONPATH: a worktree's code wins


@pytest.mark.usefixtures("isolated")
def test_a_broken_suite_is_reported_not_raised(tmp_path: Path) -> None:
    name = f"broken_{os.getpid()}"
    (tmp_path / "asv.conf.json").write_text(f'{{"benchmark_dir": "{name}"}}')
    (tmp_path / name).mkdir()
    (tmp_path / name / "__init__.py").write_text("import no_such_module_here\n")
    problems = uw.import_repo_workloads(str(tmp_path))
    assert len(problems) == 1 and "no_such_module_here" in problems[0]
    assert uw.import_repo_workloads(str(tmp_path.parent / "nowhere")) == []
