"""Fixtures shared by the store tests: the suite module (its home: tests/suite/conftest.py)."""

from __future__ import annotations

from tests.suite.conftest import suite

__all__ = ["suite"]
