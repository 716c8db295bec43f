"""The user's workloads module is the file beside the suite, inside the commit's package."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from neuronasv.suite.usermodule import import_workloads_module, suite_copy_of

PKG = "ukit_pkg"  # a name no other test imports


@pytest.fixture
def layout(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """(checkout, tree): today's checkout with the suite and ``ukit_pkg/workloads.py``; an
    older commit's tree whose ``ukit_pkg`` has no workloads module and its own ``core``."""
    checkout, tree = tmp_path / "checkout", tmp_path / "tree"
    for root, core in ((checkout, "VERSION = 'today'\n"), (tree, "VERSION = 'old'\n")):
        (root / PKG).mkdir(parents=True)
        (root / PKG / "__init__.py").write_text("")
        (root / PKG / "core.py").write_text(core)
        (root / ".git").mkdir()
    (checkout / "asv.conf.json").write_text("{}")
    (checkout / "benchmarks").mkdir()
    (checkout / "benchmarks" / "devtime.py").write_text("")
    (checkout / PKG / "workloads.py").write_text(
        f"from {PKG}.core import VERSION\nMEASURES = VERSION\n"
    )
    saved = list(sys.path)
    sys.path[:0] = [str(tree), str(checkout)]  # the commit first, as run puts it
    yield checkout, tree
    sys.path[:] = saved
    for name in [m for m in sys.modules if m == PKG or m.startswith(PKG + ".")]:
        del sys.modules[name]


def test_the_suite_file_is_found_up_to_the_repository_top(layout: tuple[Path, Path]) -> None:
    checkout, _ = layout
    suite = str(checkout / "benchmarks" / "devtime.py")
    assert suite_copy_of(f"{PKG}.workloads", suite) == str(checkout / PKG / "workloads.py")
    assert suite_copy_of(f"{PKG}.missing", suite) is None  # stops at the top: no walk above


def test_the_suites_workloads_win_inside_the_commits_package(
    layout: tuple[Path, Path], log_lines: list[str]
) -> None:
    """A commit before init: its ``ukit_pkg`` lacks workloads.py (a plain import fails, the
    failure the getting-started page hit); the suite's file is loaded into that package and
    measures the commit's code, and one line says so."""
    checkout, tree = layout
    with pytest.raises(ModuleNotFoundError):
        __import__(f"{PKG}.workloads")
    lines = log_lines
    mod = import_workloads_module(f"{PKG}.workloads", str(checkout / "benchmarks" / "devtime.py"))
    assert mod.MEASURES == "old"  # the commit's core, today's workloads
    assert mod.__file__ == str(checkout / PKG / "workloads.py")
    assert sys.modules[f"{PKG}.workloads"] is mod and sys.modules[PKG].workloads is mod
    assert sys.modules[PKG].__file__ == str(tree / PKG / "__init__.py")
    assert len(lines) == 1 and "the suite's workloads win" in lines[0] and "has none" in lines[0]
    # Asked again (setup_cache after the suite's import): the same module, nothing said.
    assert (
        import_workloads_module(f"{PKG}.workloads", str(checkout / "benchmarks" / "devtime.py"))
        is mod
    )
    assert len(lines) == 1


def test_a_commits_own_other_workloads_module_loses(
    layout: tuple[Path, Path], log_lines: list[str]
) -> None:
    checkout, tree = layout
    (tree / PKG / "workloads.py").write_text("MEASURES = 'the commit file'\n")
    lines = log_lines
    mod = import_workloads_module(f"{PKG}.workloads", str(checkout / "benchmarks" / "devtime.py"))
    assert mod.MEASURES == "old"
    assert lines and str(tree / PKG / "workloads.py") in lines[0]


def test_the_same_file_is_a_plain_import(layout: tuple[Path, Path], log_lines: list[str]) -> None:
    """A commit after init: its own suite, its own workloads file: nothing to say."""
    checkout, _ = layout
    lines = log_lines
    sys.path.remove(str(checkout))
    sys.path.insert(0, str(checkout))
    mod = import_workloads_module(f"{PKG}.workloads", str(checkout / "benchmarks" / "devtime.py"))
    assert mod.MEASURES == "today" and lines == []


def test_a_module_not_beside_the_suite_is_imported_as_usual(tmp_path: Path) -> None:
    mod = import_workloads_module("json", str(tmp_path / "benchmarks" / "devtime.py"))
    assert mod is sys.modules["json"]
    with pytest.raises(ModuleNotFoundError):
        import_workloads_module("no_such_module_here", None)
