"""``neuronasv doctor --calibrate``, quiet and under load, against a plain matmul and copy.

    .venv/bin/python bench/bench_calibrate.py                  # 3 quiet runs, then 3 with 4 busy
    .venv/bin/python bench/bench_calibrate.py --quiet-runs 3 --busy-runs 3 --busy 4 --gap 5

Each run calls the real CLI (``python -m neuronasv doctor --calibrate`` into a temporary
results folder) and prints the machine's 1-minute load (``os.getloadavg``, what ``uptime``
says), what the calibration did (stored, or the one-line refusal) with the stored roof, and
the **named baselines measured in the same run**, right after it, on the suite's one
thread: a plain 1024² float32 ``torch.mm`` and a plain 128 MiB float32 copy, 10 calls each,
fastest and median. ``roof/base`` is the stored roof over the baseline's fastest call (the
roof is the median of the calibration's three fastest calls, so ~×1 is an honest roof; the
baseline's median shows how loaded the machine was).

The busy runs start ``--busy`` processes running ``while 1: pass`` (four busy processes on
two cores is issue 28's test) and end them after the last run. The summary checks issue 28's
rule: each busy run either refused with a message or stored a float32 and bandwidth roof
within 2x of the quiet runs' median.

The machine may be shared: "quiet" is the machine as it is, its load printed beside every
figure. Nothing is written outside a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from neuronasv.format import format_rate, format_ratio

MATMUL = "plain 1024² float32 torch.mm, 1 thread, 10 calls"
COPY = "plain 128 MiB float32 copy, 1 thread, 10 calls"


@dataclass
class Run:
    label: str
    busy: int
    load: float
    seconds: float
    stored: dict[str, float] | None  # bandwidth / float32 / bfloat16 rates
    said: str  # the refusal line, or the stored roof
    base_mm: tuple[float, float]  # FLOP/s: fastest call, median call
    base_copy: tuple[float, float]  # B/s: fastest call, median call


def _rates(work: float, seconds: list[float]) -> tuple[float, float]:
    return work / min(seconds), work / statistics.median(seconds)


def baselines() -> tuple[tuple[float, float], tuple[float, float]]:
    """The named baselines on one thread, (fastest, median) of 10 calls: a plain matmul, a
    plain copy."""
    import torch

    torch.set_num_threads(1)
    a = torch.ones(1024, 1024)
    b = torch.ones(1024, 1024)
    torch.mm(a, b)
    mm = []
    for _ in range(10):
        t0 = time.perf_counter()
        torch.mm(a, b)
        mm.append(time.perf_counter() - t0)
    n = 128 * 2**20 // 4
    src = torch.ones(n)
    dst = torch.empty_like(src)
    dst.copy_(src)
    cp = []
    for _ in range(10):
        t0 = time.perf_counter()
        dst.copy_(src)
        cp.append(time.perf_counter() - t0)
    return _rates(2.0 * 1024**3, mm), _rates(2.0 * n * 4, cp)


def calibrate_once(label: str, busy: int) -> Run:
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-calibrate-") as tmp:
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "neuronasv", "doctor", "--calibrate",
             "--results-dir", tmp, "--machine", "bench"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        seconds = time.perf_counter() - t0
        path = os.path.join(tmp, "bench", "calibration.peaks")
        stored = None
        if proc.returncode == 0 and os.path.exists(path):
            with open(path, encoding="utf-8") as fh:
                doc = json.load(fh)
            stored = {"bandwidth": doc["memory_bytes_per_s"], **doc["flops_per_s"]}
            said = "stored"
        else:
            lines = [x for x in proc.stderr.splitlines() if x.startswith("error:")]
            said = (lines[0] if lines else proc.stderr.strip()[-300:]).removeprefix("error: ")
            said = f"exit {proc.returncode}: {said}"
    mm, cp = baselines()
    return Run(label, busy, load, seconds, stored, said, mm, cp)


def show(r: Run) -> None:
    head = f"{r.label:<7} load {r.load:5.2f}  busy {r.busy}  {r.seconds:5.1f} s"
    base = (
        f"baselines: matmul {format_rate(r.base_mm[0], 'FLOP/s')} fastest"
        f" ({format_rate(r.base_mm[1], 'FLOP/s')} median), copy"
        f" {format_rate(r.base_copy[0], 'B/s')} fastest ({format_rate(r.base_copy[1], 'B/s')}"
        " median)"
    )
    if r.stored is None:
        print(f"{head}  REFUSED  {base}\n        {r.said}")
        return
    fp32, bw = r.stored.get("float32", 0.0), r.stored["bandwidth"]
    bf16 = r.stored.get("bfloat16")
    print(
        f"{head}  STORED   float32 {format_rate(fp32, 'FLOP/s')}"
        f" (roof/base {format_ratio(fp32 / r.base_mm[0], divide=False)}),"
        f" bandwidth {format_rate(bw, 'B/s')}"
        f" (roof/base {format_ratio(bw / r.base_copy[0], divide=False)}),"
        f" bfloat16 {format_rate(bf16, 'FLOP/s')}\n        {base}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quiet-runs", type=int, default=3)
    parser.add_argument("--busy-runs", type=int, default=3)
    parser.add_argument("--busy", type=int, default=4, help="busy processes in the busy runs")
    parser.add_argument("--gap", type=float, default=5.0, help="seconds between runs")
    args = parser.parse_args(argv)

    print(f"baselines: {MATMUL}; {COPY}")
    print(f"cores: {os.cpu_count()}; the suite's threads: 1 (NEURONASV_CPU_THREADS)\n")
    runs: list[Run] = []
    for i in range(args.quiet_runs):
        runs.append(calibrate_once(f"quiet{i + 1}", 0))
        show(runs[-1])
        time.sleep(args.gap)
    busy: list[subprocess.Popen[bytes]] = []
    try:
        if args.busy_runs:
            busy = [subprocess.Popen([sys.executable, "-c", "while 1: pass"])
                    for _ in range(args.busy)]  # fmt: skip
            time.sleep(2.0)  # let the load settle in the scheduler
        for i in range(args.busy_runs):
            runs.append(calibrate_once(f"busy{i + 1}", args.busy))
            show(runs[-1])
            if i + 1 < args.busy_runs:
                time.sleep(args.gap)
    finally:
        for p in busy:
            p.kill()
        for p in busy:
            p.wait()

    quiet = [r.stored for r in runs if r.busy == 0 and r.stored]
    print("\nsummary")
    if not quiet:
        print("  no quiet run stored a roof: no quiet reference (the machine was not quiet)")
    keys = ("float32", "bandwidth")
    ref = {k: statistics.median(q[k] for q in quiet) for k in keys} if quiet else {}
    if ref:
        print(f"  quiet reference (median of {len(quiet)} stored): float32"
              f" {format_rate(ref['float32'], 'FLOP/s')}, bandwidth"
              f" {format_rate(ref['bandwidth'], 'B/s')}")  # fmt: skip
    ok = True
    for r in runs:
        if r.busy == 0:
            continue
        if r.stored is None:
            verdict = "refused with a message" if r.said else "refused WITHOUT a message"
            ok &= bool(r.said)
        elif not ref:
            verdict = "stored (no quiet reference to compare)"
        else:
            ratios = {k: r.stored[k] / ref[k] for k in ref}
            within = all(0.5 <= x <= 2.0 for x in ratios.values())
            ok &= within
            figures = ", ".join(f"{k} {format_ratio(x, divide=False)}" for k, x in ratios.items())
            verdict = f"stored, {'within' if within else 'OUTSIDE'} 2x of quiet: {figures}"
        print(f"  {r.label}: {verdict}")
    rule = "each busy run refuses with a message or stores within 2x of quiet"
    print(f"  issue 28's rule ({rule}): {'holds' if ok else 'BROKEN'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
