r"""What valgrind charges for a fused multiply-add, beside a multiply then an add.

    .venv/bin/python bench/bench_valgrind_fma.py [--iterations N] [--reps R]

Why it matters: the instructions pass's cost at an adopter's size is set by ATen's fallback
bfloat16 matrix multiply (docs/analysis.md, "Why 3x is out of reach"), compiled for AVX2
with FMA. This compiles one loop of 256-bit operations twice (``gcc -O2 -mavx2 -mfma
-ffp-contract=off``): ``_mm256_fmadd_ps`` on one side, ``_mm256_mul_ps`` then
``_mm256_add_ps`` on the other, the same dependency chain, and runs each natively and under
``valgrind --tool=none`` (no tool: only valgrind's translation of the code) and
``--tool=callgrind`` (as the pass counts). Printed: each arm's CPU nanoseconds per
iteration (the median of ``--reps`` runs, less an empty run's: valgrind's start-up), the
ratio FMA / multiply-add under each. Needs gcc and valgrind; says which is missing and exits
2 without them.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

SOURCE = r"""
#include <stdio.h>
#include <stdlib.h>
#include <immintrin.h>
int main(int argc, char **argv) {
  int fma = atoi(argv[1]); long n = atol(argv[2]);
  __m256 a = _mm256_set1_ps(1.0001f), b = _mm256_set1_ps(0.9999f), c = _mm256_set1_ps(0.5f);
  for (long i = 0; i < n; i++) {
    if (fma) c = _mm256_fmadd_ps(a, c, b);
    else c = _mm256_add_ps(_mm256_mul_ps(a, c), b);
  }
  float out[8]; _mm256_storeu_ps(out, c); printf("%f\n", out[0]); return 0;
}
"""

ARMS = ("mul+add", "fma")


def _user_cpu(cmd: list[str]) -> float:
    before = os.times()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = os.times()
    return (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=20_000_000)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    missing = [t for t in ("gcc", "valgrind") if shutil.which(t) is None]
    if missing:
        print(f"needs {' and '.join(missing)}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="bench-valgrind-fma-") as tmp:
        src, exe = os.path.join(tmp, "fma.c"), os.path.join(tmp, "fma")
        with open(src, "w") as f:
            f.write(SOURCE)
        subprocess.run(["gcc", "-O2", "-mavx2", "-mfma", "-ffp-contract=off", src, "-o", exe],
                       check=True)  # fmt: skip
        runners = {
            "native": [],
            "valgrind --tool=none": ["valgrind", "--tool=none", "-q"],
            "valgrind --tool=callgrind": [
                "valgrind", "--tool=callgrind", "-q", f"--callgrind-out-file={tmp}/cg.%p",
            ],
        }  # fmt: skip
        print(f"{args.iterations:,} iterations of 8 float lanes, median of {args.reps} runs")
        print(
            f"{'ns per iteration':28s}{'start-up s':>11s}{'mul+add':>10s}{'fma':>10s}"
            f"{'fma / mul+add':>15s}"
        )
        for name, prefix in runners.items():
            empty = statistics.median(_user_cpu([*prefix, exe, "0", "0"]) for _ in range(args.reps))
            secs = {
                arm: statistics.median(
                    _user_cpu([*prefix, exe, str(i), str(args.iterations)])
                    for _ in range(args.reps)
                )
                for i, arm in enumerate(ARMS)
            }
            # The loop's own cost: each arm less the empty run (valgrind's start-up), per
            # iteration; the clock ticks at 10 ms, so the native loop reads coarse.
            ns = {arm: max(secs[arm] - empty, 0.01) / args.iterations * 1e9 for arm in ARMS}
            print(
                f"{name:28s}{empty:11.2f}{ns['mul+add']:10.2f}{ns['fma']:10.2f}"
                f"{ns['fma'] / ns['mul+add']:14.1f}x"
            )
    print(f"load average: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
