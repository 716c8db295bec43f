"""Shared fixtures: a tiny synthetic asv history (bench/synth_history.py) and Chromium."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def load_synth() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "synth_history", ROOT / "bench" / "synth_history.py"
    )
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["synth_history"] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="session")
def synth() -> ModuleType:
    return load_synth()


@pytest.fixture(scope="session")
def tiny_history(tmp_path_factory: pytest.TempPathFactory, synth: ModuleType) -> Path:
    """40 commits × 3 workloads × 4 series with samples; read-only for tests (copy to modify)."""
    dest = tmp_path_factory.mktemp("tiny")
    synth.generate(dest, commits=40, workloads=3, ops=4, samples=5)
    return dest


@pytest.fixture()
def history_copy(tiny_history: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "hist"
    shutil.copytree(tiny_history, dest, symlinks=True)
    return dest
