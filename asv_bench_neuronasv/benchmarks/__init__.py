"""Benchmark types exported to asv_runner (each module lists ``export_as_benchmark``)."""

from __future__ import annotations

__all__: list[str] = []
