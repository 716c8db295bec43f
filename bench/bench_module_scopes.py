"""Do the module scopes distort what they measure? transformer.block with and without them.

The module ranges (``neuronasv.measure.modules.scope``: one ``record_function`` each, five
per block forward) cost host time; this measures whether they change the block's *device*
time (self CPU time on the CPU backend), which is what the series record. The two variants
run back to back, ``--rounds`` pairs (order alternating), each one profile of ``--active``
iterations read like a profiler cycle; the headline is the median of the per-pair ratios
scoped / unscoped (pairing cancels the drift of a shared machine), with the quartiles.
Each variant also goes once through ``profile_workload`` (the scoped one must have module
times, the other none). It also prints the host cost of one range and the wall time per
step of each variant::

    .venv/bin/python bench/bench_module_scopes.py                      # CPU, 1x128x256x4 fp32
    .venv/bin/python bench/bench_module_scopes.py --backend cuda --shape 1x2048x4096x32 \\
        --dtype bfloat16
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from neuronasv.measure import backends, workloads
from neuronasv.measure.profiling import ProfileOptions, profile_workload
from neuronasv.measure.workloads import transformer as T


@contextlib.contextmanager
def _no_scope(name: str) -> Iterator[str]:
    yield name


def _variant(scoped: bool) -> workloads.Workload:
    base = workloads.get("transformer.block")

    def build(dims: tuple[int, ...], dtype: Any, device: str, seed: int) -> Callable[[], object]:
        step = base.build(dims, dtype, device, seed)
        if scoped:
            return step

        def unscoped() -> object:
            saved = T.scope
            T.scope = _no_scope
            try:
                return step()
            finally:
                T.scope = saved

        return unscoped

    name = "transformer.block" + ("" if scoped else ".unscoped")
    return workloads.Workload(name, base.description, base.default_shape, build)


def _wall_per_step(w: workloads.Workload, backend: Any, shape: str, dtype: str, n: int) -> float:
    import torch

    step = w.build(workloads.parse_shape(shape), workloads.parse_dtype(dtype), backend.device, 0)
    with backend.measuring(), torch.no_grad():
        for _ in range(3):
            step()
        backend.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        backend.synchronize()
    return (time.perf_counter() - t0) / n * 1e6


def _range_cost_us(n: int = 20000) -> tuple[float, float]:
    """Host cost of one scope enter/exit (µs), without and with the profiler recording."""
    from torch.profiler import ProfilerActivity, profile

    from neuronasv.measure.modules import scope

    def loop() -> float:
        t0 = time.perf_counter()
        for _ in range(n):
            with scope("x"):
                pass
        return (time.perf_counter() - t0) / n * 1e6

    idle = min(loop() for _ in range(3))
    with profile(activities=[ProfilerActivity.CPU]):
        recording = min(loop() for _ in range(3))
    return idle, recording


def _pairs(
    variants: dict[str, workloads.Workload],
    backend: Any,
    shape: str,
    dtype: str,
    rounds: int,
    active: int,
) -> dict[str, list[float]]:
    """Device time per iteration of each variant, ``rounds`` back-to-back pairs (order
    alternating), each one profile of ``active`` iterations read the way
    :func:`neuronasv.measure.profiling.extract_cycle` reads a cycle."""
    import torch
    from torch.profiler import profile

    from neuronasv.measure.profiling import extract_cycle

    dims, tdtype = workloads.parse_shape(shape), workloads.parse_dtype(dtype)
    steps = {k: w.build(dims, tdtype, backend.device, 0) for k, w in variants.items()}
    out: dict[str, list[float]] = {k: [] for k in variants}
    with backend.measuring(), torch.no_grad():
        for step in steps.values():
            for _ in range(3):
                step()
        backend.synchronize()
        for r in range(rounds):
            for name in list(steps) if r % 2 == 0 else list(reversed(steps)):
                with profile(activities=backend.activities()) as prof:
                    for _ in range(active):
                        steps[name]()
                    backend.synchronize()
                cycle = extract_cycle(
                    prof.key_averages(), device_time_is_cpu=backend.device_time_is_cpu
                )
                out[name].append(cycle.device_time_us / active)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--shape", default=T.CPU_PRESET.shapes[0])
    ap.add_argument("--dtype", default=T.CPU_PRESET.dtype)
    ap.add_argument("--rounds", type=int, default=100, help="pairs")
    ap.add_argument("--active", type=int, default=3)
    args = ap.parse_args()
    backend = backends.get_backend(args.backend)
    variants = {"scoped": _variant(True), "unscoped": _variant(False)}
    # The real path once each: the scoped block has module times, the unscoped none.
    for name, w in variants.items():
        prof = profile_workload(
            w,
            backend,
            shape=args.shape,
            dtype=args.dtype,
            options=ProfileOptions(samples=2, active=1, roofline=False, evidence=False),
        )  # fmt: skip
        assert bool(prof.modules) == (name == "scoped"), f"{name}: modules {prof.modules}"
    med = _pairs(variants, backend, args.shape, args.dtype, args.rounds, args.active)
    s, u = statistics.median(med["scoped"]), statistics.median(med["unscoped"])
    ratios = sorted(a / b for a, b in zip(med["scoped"], med["unscoped"], strict=True))
    q1, q2, q3 = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else ratios * 3
    print(
        f"{backend.name} transformer.block {args.shape} {args.dtype}: device time per"
        f" iteration, {args.rounds} pairs of profiles of {args.active} iterations"
    )
    print(f"  scoped   median {s:10.1f} µs")
    print(f"  unscoped median {u:10.1f} µs")
    print(
        f"  ratio scoped/unscoped, median of pairs {q2:.3f} (quartiles {q1:.3f} … {q3:.3f};"
        f" min {ratios[0]:.3f}, max {ratios[-1]:.3f})"
    )
    idle, recording = _range_cost_us()
    print(
        f"  one range enter/exit: {idle:.2f} µs idle, {recording:.2f} µs while profiling"
        f" -> 5 ranges = {5 * recording:.1f} µs of host time per block"
        f" ({5 * recording / u:.2%} of the unscoped device time; the ranges' own time is"
        " no op row, so it is not in the device time)"
    )
    walls = {k: _wall_per_step(w, backend, args.shape, args.dtype, 50) for k, w in variants.items()}
    print(
        f"  wall per step: scoped {walls['scoped']:.1f} µs, unscoped"
        f" {walls['unscoped']:.1f} µs (host cost of 5 ranges:"
        f" {walls['scoped'] - walls['unscoped']:+.1f} µs, outside the profiler)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
