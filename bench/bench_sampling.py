"""Between-process noise of a series' median under different sampling schemes (prints; no asserts).

    .venv/bin/python bench/bench_sampling.py [--processes 8] [--backend cpu] [--out DIR]

What a run-to-run comparison sees is the spread of a series' median between separate
processes. This takes ``--processes`` rounds; in each, one ``neuronasv profile`` process per
scheme (in a shuffled order, so drifts hit every scheme alike), rmsnorm naive + fused at
4x512 and 4x64x256 float32. Schemes (same profiler-cycle count where it matters):

- ``suite``: 10 samples of 3-iteration means (the asv suite's; the **baseline**);
- ``single``: 10 single-iteration samples (what ``confirm`` took on the CPU before);
- ``per-step``: 30 single-iteration samples from the same 10 cycles (``--per-step``).

Printed per scheme: the median over series of the between-process SD of log(median), its
interquartile range over series, and its ratio to the baseline's (medians and ratios: this
machine is noisy, and its load moves every absolute figure).
"""

from __future__ import annotations

import argparse
import glob
import os
import random
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from eval_h200 import read_run

SCHEMES = {
    "suite": ["--samples", "10", "--active", "3"],
    "single": ["--samples", "10", "--active", "1"],
    "per-step": ["--samples", "30", "--active", "3", "--per-step"],
}
BASELINE = "suite"


def profile(backend: str, args: list[str], out: str) -> None:
    cmd = [
        sys.executable, "-m", "neuronasv", "profile", "--quiet", "--no-roofline",
        "--backend", backend, "--workload", "rmsnorm.naive", "--workload", "rmsnorm.fused",
        "--shape", "4x512", "--shape", "4x64x256", "--dtype", "float32", *args, "--json", out,
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}\nexit {proc.returncode}: {proc.stderr[-2000:]}")


def spread(folder: str, scheme: str) -> dict[str, float]:
    runs = [read_run(p) for p in sorted(glob.glob(os.path.join(folder, f"{scheme}-*.json")))]
    out = {}
    for sid in runs[0]:
        meds = [float(np.median(r[sid])) for r in runs if sid in r]
        if len(meds) >= 3 and min(meds) > 0:
            out[sid.label] = float(np.std(np.log(meds), ddof=1) * 100)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--processes", type=int, default=8)
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--out", default=None, help="keep the profiles here (default: a temp dir)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    folder = args.out or tempfile.mkdtemp(prefix="neuronasv-bench-sampling-")
    os.makedirs(folder, exist_ok=True)
    rng = random.Random(args.seed)
    t0 = time.time()
    for i in range(1, args.processes + 1):
        order = list(SCHEMES)
        rng.shuffle(order)
        for name in order:
            profile(args.backend, SCHEMES[name], os.path.join(folder, f"{name}-{i}.json"))
        print(f"round {i}/{args.processes} ({time.time() - t0:.0f} s)", file=sys.stderr)
    base = spread(folder, BASELINE)
    print(f"{args.processes} processes a scheme, backend {args.backend}; profiles in {folder}")
    print(f"{'scheme':<10} {'median SD':>10} {'IQR over series':>17} {'ratio to ' + BASELINE:>16}")
    for name in SCHEMES:
        got = spread(folder, name)
        common = sorted(set(got) & set(base))
        ratios = [got[k] / base[k] for k in common if base[k] > 0]
        q1, q3 = np.percentile(list(got.values()), [25, 75])
        print(f"{name:<10} {np.median(list(got.values())):>9.1f}% {q1:>8.1f}–{q3:.1f} %"
              f" {np.median(ratios):>15.2f}x")
    print(f"\n(total {time.time() - t0:.0f} s, load {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
