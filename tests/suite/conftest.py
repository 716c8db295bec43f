"""Fixtures shared by the suite tests."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def suite(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The asv suite module, on the CPU backend with two small shapes and one dtype."""
    monkeypatch.setenv("NEURONASV_BACKEND", "cpu")
    monkeypatch.setenv("NEURONASV_SHAPES", "4x512,8x64")
    monkeypatch.setenv("NEURONASV_DTYPES", "float32")
    from neuronasv.suite import build as suite_module

    return suite_module
