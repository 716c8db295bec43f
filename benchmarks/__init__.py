"""neuronasv's asv suite: device time per workload and per op (``devtime_`` benchmarks).

Needs the ``asv_bench_neuronasv`` plugin installed (it provides the ``devtime_`` type).
See docs/asv.md.
"""
