"""The ``alloc_`` benchmark type: self allocated bytes per iteration, as samples.

The memory metric (``neuronasv run --metrics devtime,memory``, docs/metrics.md): each
sample is one profiled iteration's self allocated bytes of an op (or the workload's sum),
taken by ``setup_cache`` beside the timed profile. Stored like ``devtime_`` samples
(``{"samples": [...], "number": 1}``, kept with ``--record-samples``), in the unit
``bytes allocated`` — not asv's ``mem_``/``peakmem_`` (whose prefix and unit ``bytes`` are
asv's own). A sample may be negative: an op may free more inside its own frames than it
allocates there.

Import-light (no torch): asv imports it in every benchmark process.
"""

from __future__ import annotations

import re

from asv_bench_neuronasv.benchmarks.devtime import DevtimeBenchmark

__all__ = ["AllocBenchmark"]


class AllocBenchmark(DevtimeBenchmark):
    """asv benchmark type for methods named ``alloc_*`` (or classes ``Alloc*``)."""

    name_regex = re.compile(r"^(Alloc[A-Z_].+)|(alloc_.+)$")
    #: ``neuronasv.metrics.MEMORY.unit`` (this package stays free of neuronasv's imports).
    samples_unit = "bytes allocated"
    signed = True


# asv_runner reads this list from every module of <plugin>/benchmarks/.
export_as_benchmark = [AllocBenchmark]
