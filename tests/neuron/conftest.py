"""Shared Neuron fixtures: the stand-in explorer, and capture folders in the documented
layout written from stand-in NTFF records (tests/neuron/ntff.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from neuronasv.measure.neuron_explorer import Explorer, find_tool
from tests.neuron import ntff
from tests.neuron.fixtures import chrome_trace
from tests.neuron.standin import tool_path

#: One RMSNorm iteration on a 32x1024 input, as eager TorchNeuron runs it (one NEFF an op).
NAIVE = [
    ("mul", 32768),
    ("mean", 32768),
    ("add", 32),
    ("rsqrt", 32),
    ("mul", 32768),
    ("mul", 32768),
]

needs_pyarrow = pytest.mark.skipif(
    importlib.util.find_spec("pyarrow") is None,
    reason="pyarrow is not installed (the neuron extra): no Parquet",
)


@pytest.fixture(autouse=True)
def _standin_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stand-in explorer first on PATH, this interpreter's folder next: its
    ``#!/usr/bin/env python3`` is this venv's (pyarrow, when installed)."""
    monkeypatch.setenv("PATH", tool_path())


@pytest.fixture(scope="session")
def explorer() -> Explorer:
    tool = find_tool(path=tool_path(), install_dirs=())
    assert tool is not None and tool.endswith("tests/neuron/bin/neuron-explorer")
    return Explorer(tool)


def write_capture(
    root: Path,
    *,
    sessions: int = 2,
    ops: list[tuple[str, int]] | None = None,
    layer: bool = True,
    trace: bool = True,
    **record: object,
) -> Path:
    """``root/i-0abc_pid_42/<timestamp>/`` x ``sessions``, each one cycle of ``ops``."""
    for k in range(sessions):
        rec, neffs = ntff.sequential(ops or NAIVE, layer=layer)
        for key, value in record.items():
            setattr(rec, key, value)
        folder = root / "i-0abc_pid_42" / f"2026120{k + 1}T000000"
        ntff.write_session(str(folder), rec, neffs, trace=chrome_trace() if trace else None)
    return root


@pytest.fixture
def capture(tmp_path: Path) -> Path:
    return write_capture(tmp_path / "rmsnorm.naive-32x1024-float32")
