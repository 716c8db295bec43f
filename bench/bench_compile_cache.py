r"""Suite time of ``neuronasv run`` with a cold vs a warm ``--compile-cache``.

torch.compile workloads compile in the pre-pass (inductor + its FX graph cache); with
``--compile-cache DIR`` the pre-pass and asv's processes share ``DIR`` (``TORCHINDUCTOR_CACHE_DIR``,
``TRITON_CACHE_DIR``), and a CI workflow that caches ``DIR`` between runs starts warm.
Each repetition runs ``neuronasv run HEAD`` twice on this checkout: first with a new, empty
cache folder (cold), then with the same folder again (warm). Results go to a temporary
folder; HOME is left alone (the run writes nothing there). Prints each wall time, the
CPU seconds of the run's processes, the medians and the warm/cold ratio.

    .venv/bin/python bench/bench_compile_cache.py --reps 2
    .venv/bin/python bench/bench_compile_cache.py --bench 'transformer\.BlockCompiled' --reps 1
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NEURONASV = str(Path(sys.executable).parent / "neuronasv")


def _cpu_children() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _run(work: Path, cache: Path, bench: str, tag: str) -> tuple[float, float]:
    cmd = [NEURONASV, "run", "HEAD", "--backend", "cpu", "--machine", "bench",
           "--metrics", "devtime", "--results-dir", str(work / f"results-{tag}"), "--no-traces",
           "--compile-cache", str(cache), "--bench", bench]  # fmt: skip
    start, cpu0 = time.perf_counter(), _cpu_children()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - start, _cpu_children() - cpu0
    if proc.returncode != 0:
        print(proc.stdout[-3000:], proc.stderr[-3000:], file=sys.stderr)
        raise SystemExit(f"neuronasv run failed (exit {proc.returncode})")
    return wall, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--bench", default=r"rmsnorm\.Compiled\.", help="asv --bench regex")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-compile-cache-"))
    times: dict[str, list[float]] = {"cold": [], "warm": []}
    cpus: dict[str, list[float]] = {"cold": [], "warm": []}
    try:
        for rep in range(args.reps):
            cache = work / f"cache-{rep}"
            for tag in ("cold", "warm"):
                wall, cpu = _run(work, cache, args.bench, f"{rep}-{tag}")
                times[tag].append(wall)
                cpus[tag].append(cpu)
            size = sum(f.stat().st_size for f in cache.rglob("*") if f.is_file())
            print(
                f"rep {rep + 1}: cold {times['cold'][-1]:.1f} s ({cpus['cold'][-1]:.1f} CPU s)"
                f" | warm {times['warm'][-1]:.1f} s ({cpus['warm'][-1]:.1f} CPU s)"
                f" | cache {size / 2**20:.1f} MiB | load {os.getloadavg()[0]:.1f}",
                flush=True,
            )
        med = {k: statistics.median(v) for k, v in times.items()}
        mcpu = {k: statistics.median(v) for k, v in cpus.items()}
        print(
            f"median: cold {med['cold']:.1f} s ({mcpu['cold']:.1f} CPU s) | warm"
            f" {med['warm']:.1f} s ({mcpu['warm']:.1f} CPU s) | warm / cold"
            f" {med['warm'] / med['cold']:.2f} (CPU {mcpu['warm'] / mcpu['cold']:.2f})"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
