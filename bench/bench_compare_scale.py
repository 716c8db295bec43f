"""Analysis at scale: compare, comment and summary at 1k/5k/10k series vs ``asv compare``.

For each size, a synthetic asv results folder (``bench/synth_history.py``: 2 commits,
``workloads x 20`` series, 10 recorded samples per value) has **half of its series
shifted** at head (x1.5, every other series), the worst case for the multiple-testing
step (one rejection per shifted series). Then, each in its own process, timed and with
its peak RSS (``os.wait4``):

- ``neuronasv compare BASE HEAD --format json`` (the findings document),
- ``neuronasv comment --dry-run`` and ``neuronasv summary`` on that document,
- plain ``asv compare BASE HEAD`` on the same folder (the baseline of the ratios).

Then one series with 10^6 samples a side (14 MB a results file): compare, comment and
``asv compare`` (stopped after ``--asv-limit`` seconds: its own statistics on 10^6
samples ran for 20 minutes).

Prints one row per size: seconds and peak MB of each step, compare + comment against the
Done-when (<= 10 s, < 500 MB at 10k series) and their ratio to ``asv compare``. Medians of
``--repeat`` runs (default 1: the largest size takes a while on 2 cores).

Usage::

    python bench/bench_compare_scale.py [--sizes 1000 5000 10000] [--repeat 1]
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
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synth_history import MACHINE, generate

OPS = 20  # series per workload, the total included
SAMPLES = 10
SHIFT = 1.5


def run(cmd: list[str], cwd: Path, limit: float = 3600.0) -> tuple[float, float, int]:
    """``(seconds, peak RSS in MB, exit code)`` of one command in its own process; stopped
    after ``limit`` seconds (then the seconds are the limit and the exit code -9)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() - t0 > limit:
            proc.kill()
        time.sleep(0.02)
    secs = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 1, -9):
        print(f"  ! {' '.join(cmd[3:5])}... exit {proc.returncode}", file=sys.stderr)
    return secs, usage.ru_maxrss / 1024.0, proc.returncode


def _rows(path: Path):  # type: ignore[no-untyped-def]
    data = json.loads(path.read_text())
    cols = data["result_columns"]
    return data, cols.index("result"), cols.index("samples")


def shift_half(results: Path, head: str) -> None:
    """Every other series of the head file x SHIFT (samples and value)."""
    (path,) = [p for p in (results / MACHINE).glob(f"{head[:8]}-*.json")]
    data, ri, si = _rows(path)
    for row in data["results"].values():
        for i in range(0, len(row[ri]), 2):
            if row[ri][i] is not None:
                row[ri][i] *= SHIFT
                row[si][i] = [x * SHIFT for x in row[si][i]]
    path.write_text(json.dumps(data))


def million_samples(results: Path, commits: list[str], seed: int = 0) -> None:
    """The first series of the first benchmark: 10^6 samples a side (head 20 % slower)."""
    rng = np.random.default_rng(seed)
    for k, commit in enumerate(commits):
        (path,) = [p for p in (results / MACHINE).glob(f"{commit[:8]}-*.json")]
        data, ri, si = _rows(path)
        row = next(iter(data["results"].values()))
        xs = rng.lognormal(np.log(1e-4 * (1.2 if k else 1.0)), 0.03, 1_000_000)
        row[si][0] = [float(x) for x in xs]
        row[ri][0] = float(np.median(xs))
        path.write_text(json.dumps(data))


def measure(
    root: Path, base: str, head: str, repeat: int, asv_limit: float = 3600.0
) -> dict[str, tuple[float, float, bool]]:
    """Median seconds, peak MB and whether it finished, per step."""
    nx = [sys.executable, "-m", "neuronasv"]
    doc = root / "findings.json"
    steps = {
        "compare": [*nx, "compare", base, head, "--results-dir", str(root / "results"),
                    "--format", "json", "--out", str(doc), "--force"],
        "comment": [*nx, "comment", "--pr", "1", "--report", str(doc), "--dry-run",
                    "--out", str(root / "req.json"), "--github-repo", "o/r"],
        "summary": [*nx, "summary", "--report", str(doc), "--out", str(root / "summary.md")],
        "asv": [sys.executable, "-m", "asv", "compare", "--config",
                str(root / "asv.conf.json"), "-m", MACHINE, base, head],
    }  # fmt: skip
    out = {}
    for name, cmd in steps.items():
        runs = [run(cmd, root, asv_limit if name == "asv" else 3600.0) for _ in range(repeat)]
        out[name] = (
            statistics.median(r[0] for r in runs),
            statistics.median(r[1] for r in runs),
            all(r[2] != -9 for r in runs),
        )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 10000])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--no-million", action="store_true", help="skip the 10^6-sample series")
    ap.add_argument(
        "--asv-limit", type=float, default=120.0,
        help="stop asv compare on the 10^6-sample series after this many seconds (it took"
        " 1,246 s under load 8)",
    )  # fmt: skip
    args = ap.parse_args(argv)
    load = os.getloadavg()
    print(
        f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, {os.cpu_count()} CPUs",
        flush=True,
    )
    print(
        f"{'series':>7} | {'compare s':>9} {'MB':>5} | {'comment s':>9} {'MB':>5} |"
        f" {'summary s':>9} {'MB':>5} | {'asv s':>6} {'MB':>5} |"
        f" {'cmp+cmt s':>9} {'x asv':>6} | {'peak MB':>7}"
    )
    for n in args.sizes:
        with tempfile.TemporaryDirectory(prefix="nasv-scale-") as tmp:
            root = Path(tmp)
            got = generate(root, commits=2, workloads=max(1, n // OPS), ops=OPS, samples=SAMPLES)
            base, head = got["hashes"]  # type: ignore[misc]
            shift_half(root / "results", head)
            m = measure(root, base, head, args.repeat)
            both = m["compare"][0] + m["comment"][0]
            peak = max(m["compare"][1], m["comment"][1])
            print(
                f"{got['series']:>7} | {m['compare'][0]:>9.2f} {m['compare'][1]:>5.0f} |"
                f" {m['comment'][0]:>9.2f} {m['comment'][1]:>5.0f} |"
                f" {m['summary'][0]:>9.2f} {m['summary'][1]:>5.0f} |"
                f" {m['asv'][0]:>6.2f} {m['asv'][1]:>5.0f} |"
                f" {both:>9.2f} {both / m['asv'][0]:>6.1f} | {peak:>7.0f}",
                flush=True,
            )
    if not args.no_million:
        with tempfile.TemporaryDirectory(prefix="nasv-million-") as tmp:
            root = Path(tmp)
            got = generate(root, commits=2, workloads=1, ops=2, samples=SAMPLES)
            hashes = got["hashes"]  # type: ignore[assignment]
            million_samples(root / "results", list(hashes))  # type: ignore[arg-type]
            m = measure(root, hashes[0], hashes[1], 1, args.asv_limit)  # type: ignore[index]
            asv = f"{m['asv'][0]:.2f} s" if m["asv"][2] else f"stopped after {m['asv'][0]:.0f} s"
            print(
                f"10^6 samples a side: compare {m['compare'][0]:.2f} s, {m['compare'][1]:.0f} MB"
                f" peak; comment {m['comment'][0]:.2f} s; asv compare {asv}"
            )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
