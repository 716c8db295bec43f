"""asv benchmark-type plugin: ``devtime_`` benchmarks return device-time samples.

asv_runner discovers this distribution because its metadata Name starts with
``asv_bench`` and imports ``asv_bench_neuronasv.benchmarks.*`` modules that export
``export_as_benchmark``. See :mod:`asv_bench_neuronasv.benchmarks.devtime`.

This module must stay light: asv imports it in every benchmark process.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
