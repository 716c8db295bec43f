"""Device time and roofline fraction of every workload; the suite's wall time.

For each selected workload at its preset shape: the median device time per iteration, the
top ops by self device time with their FLOPs, bytes, achieved bandwidth / throughput and
fraction of the device's peak (memory- or compute-bound), the canary reading, and at the
end the whole run's wall time. Ratios are against ``transformer.block`` measured in the
same run (the pieces' share of the block; compiled and backward against eager forward).

    .venv/bin/python bench/bench_workloads.py                       # CPU preset, CPU backend
    .venv/bin/python bench/bench_workloads.py --preset accelerator --backend cuda
    .venv/bin/python bench/bench_workloads.py --json out/workloads.json

On the CPU the "device" is the CPU (self CPU time), the peak is the machine's calibration
(``NEURONASV_PEAK_FILE``, from ``neuronasv doctor --calibrate``; none: no fraction) and the
run uses one thread by default (``--threads``): on a shared 2-core runner two threads
oversubscribe and measure the neighbours.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from neuronasv.measure import backends, workloads
from neuronasv.measure import fractions as FR
from neuronasv.measure import roofline as R
from neuronasv.measure.backends import peak_for
from neuronasv.measure.fingerprint import collect_fingerprint
from neuronasv.measure.peaks import Peak
from neuronasv.measure.profiling import ProfileOptions, profile_workload
from neuronasv.measure.workloads import transformer as T
from neuronasv.model.profile import WorkloadProfile

BASELINE = "transformer.block"


def _fmt_time(us: float) -> str:
    return f"{us / 1000:8.3f} ms" if us >= 1000 else f"{us:8.1f} µs"


def _fmt_rate(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= scale:
            return f"{value / scale:.1f} {prefix}{unit}"
    return f"{value:.0f} {unit}"


def _print_profile(prof: WorkloadProfile, peak: Peak | None, top: int) -> None:
    total = statistics.median(prof.device_time_us)
    print(
        f"\n{prof.name} [{prof.shape},{prof.dtype}] on {prof.backend}: "
        f"{_fmt_time(total).strip()} per iteration (median of {len(prof.device_time_us)})"
    )
    print(
        f"  {'op':<58} {'time':>11} {'share':>6} {'FLOP':>9} {'bytes':>9} "
        f"{'achieved':>12} {'of peak':>8}  bound"
    )
    for op in prof.ops[:top]:
        t = statistics.median(op.self_device_time_us)
        cost = R.OpCost(op.flops, op.bytes)
        point = FR.roofline_point(cost, t, None)
        frac = op.roofline_fraction
        bound = ""
        if peak is not None and op.flops is not None and op.bytes is not None:
            mem_t = op.bytes / peak.memory_bytes_per_s
            pf = peak.flops_for(prof.dtype)
            bound = "memory" if not pf or mem_t >= op.flops / pf else "compute"
        if bound == "compute":
            achieved = _fmt_rate(point.flops_per_s, "FLOP/s")
        else:
            achieved = _fmt_rate(point.bytes_per_s, "B/s")
        name = op.op if len(op.op) <= 58 else op.op[:55] + "..."
        print(
            f"  {name:<58} {_fmt_time(t):>11} {t / total if total else 0:6.1%} "
            f"{_fmt_rate(op.flops, ''):>9} {_fmt_rate(op.bytes, 'B'):>9} "
            f"{achieved if frac is not None else '-':>12} "
            f"{'-' if frac is None else f'{frac:.1%}':>8}  {bound if frac is not None else ''}"
        )
    rest = len(prof.ops) - top
    if rest > 0:
        print(f"  ... {rest} more ops")
    if prof.canary is not None:
        c = prof.canary
        print(
            f"  canary {c.name}: start {statistics.median(c.start_us):.0f} µs,"
            f" end {statistics.median(c.end_us):.0f} µs"
        )
    for w in prof.warnings:
        print(f"  warning: {w}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--backend", default="cpu")
    presets = {p.name: p for p in T.PRESETS}
    parser.add_argument("--preset", choices=sorted(presets), default=T.CPU_PRESET.name)
    parser.add_argument(
        "--tag",
        action="append",
        default=None,
        help="workload tags to run (default: transformer, rmsnorm)",
    )
    parser.add_argument("--workload", action="append", default=None, help="only these")
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--active", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="torch threads on the CPU")
    parser.add_argument("--top", type=int, default=6, help="ops shown per workload")
    parser.add_argument("--json", help="write the profiles (with roofline) here")
    args = parser.parse_args(argv)

    import torch

    backend = backends.get_backend(args.backend)
    if not backend.accelerator:
        torch.set_num_threads(args.threads)
    preset = presets[args.preset]
    tags = set(args.tag or ["transformer", "rmsnorm"])
    selected = [
        w
        for w in workloads.all_workloads()
        if (args.workload is None and tags & set(w.tags))
        or (args.workload is not None and w.name in args.workload)
    ]

    t_start = time.perf_counter()
    peak = peak_for(backend, None if backend.roof_is_calibrated else collect_fingerprint(backend))
    t_peak = time.perf_counter() - t_start
    print(
        f"backend {backend.name}, preset {preset.name}, threads {torch.get_num_threads()}, "
        f"samples {args.samples} x {args.active} iterations"
    )
    print(f"peak: {peak.describe() if peak else 'unknown'} ({t_peak:.1f} s to obtain)")

    profiles: list[WorkloadProfile] = []
    timings: dict[str, float] = {}
    skipped: list[str] = []
    for w in selected:
        reason = w.skip_reason(backend)
        if reason:
            skipped.append(f"{w.name}: {reason}")
            continue
        if "transformer" in w.tags:
            shapes, dtype = preset.shapes, preset.dtype
        else:  # RMSNorm variants: the seed's shape, in the preset's dtype
            shapes, dtype = (w.default_shape,), preset.dtype
        for shape in shapes:
            t0 = time.perf_counter()
            # Roofline (default) and canary come from profile_workload itself: the same
            # path `neuronasv profile` and the asv suite take.
            prof = profile_workload(
                w,
                backend,
                shape=shape,
                dtype=dtype,
                options=ProfileOptions(
                    samples=args.samples,
                    active=args.active,
                    canary=True,
                    peak=peak,
                ),
            )
            timings[prof.key] = time.perf_counter() - t0
            profiles.append(prof)
            _print_profile(prof, peak, args.top)
            print(f"  wall time for this workload: {timings[prof.key]:.1f} s")

    wall = time.perf_counter() - t_start
    print(
        "\nsummary (median device time per iteration; ratio vs "
        f"{BASELINE} in this run; time-weighted mean roofline fraction of the ops with a formula)"
    )
    base = {p.shape: statistics.median(p.device_time_us) for p in profiles if p.name == BASELINE}
    for p in profiles:
        t = statistics.median(p.device_time_us)
        ratio = f"{t / base[p.shape]:.2f}x" if base.get(p.shape) else "-"
        known = [
            (statistics.median(o.self_device_time_us), o.roofline_fraction)
            for o in p.ops
            if o.roofline_fraction is not None
        ]
        covered = sum(k[0] for k in known) / t if t else 0.0
        weighted = (
            sum(k[0] * (k[1] or 0) for k in known) / sum(k[0] for k in known) if known else None
        )
        frac = "-" if weighted is None else f"{weighted:.1%}"
        print(
            f"  {p.name:<28} {p.shape:<16} {_fmt_time(t)}  {ratio:>7}  roofline {frac:>7}"
            f" (ops with a formula cover {covered:.0%} of the time)"
        )
    for s in skipped:
        print(f"  skipped {s}")
    print(
        f"\nsuite wall time: {wall:.1f} s for {len(profiles)} profiles (peak probe {t_peak:.1f} s)"
    )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(
                {
                    "peak": peak.describe() if peak else None,
                    "wall_s": wall,
                    "profiles": [p.to_json() for p in profiles],
                },
                fh,
                indent=1,
            )
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
