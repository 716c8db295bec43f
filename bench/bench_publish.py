"""Wall time and peak memory of ``neuronasv publish`` (full, incremental) vs ``asv publish``.

Same synthetic history (``bench/synth_history.py``: asv results + sidecars + git repo,
``--workloads`` × ``--ops`` series with known steps) for both tools, in the same run.
Each measurement is a separate process timed here, its peak RSS read from
``resource.getrusage(RUSAGE_CHILDREN)`` (max RSS of the largest waited-for child; the
parser pool's workers are children of the publish process, so they are counted
separately — the printed RSS is the largest single process).

asv publish is not incremental and slow (minutes per thousand commits at 1,000 series),
so it runs only up to ``--asv-max`` commits; larger sizes measure neuronasv alone.

Printed last: the cold ratio against ``asv publish`` (issue 29's Done-when: at 1,000
commits × 96 series, ``neuronasv publish`` cold at least 5x faster).

Usage::

    python bench/bench_publish.py --sizes 1000 --workloads 8 --ops 12 --repeat 3  # 96 series
    python bench/bench_publish.py --sizes 1000 --big 10000 --work /tmp/nasv-bench  # 1,000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from synth_history import generate  # noqa: E402


def _run(cmd: list[str], cwd: Path | None = None) -> tuple[float, float]:
    """(wall seconds, peak RSS MiB) of one child process."""
    # Run through a tiny wrapper so each measurement has its own RUSAGE_CHILDREN.
    code = (
        "import resource, subprocess, sys, time, json;"
        "t=time.perf_counter();"
        f"p=subprocess.run({cmd!r}, cwd={str(cwd) if cwd else None!r},"
        " stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True);"
        "w=time.perf_counter()-t;"
        "r=resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss/1024;"
        "print(json.dumps([p.returncode, w, r, p.stderr[-1500:]]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    rc, wall, rss, err = json.loads(out.stdout.strip().splitlines()[-1])
    if rc != 0:
        raise SystemExit(f"{cmd[:3]} failed ({rc}): {err}")
    return float(wall), float(rss)


def _nasv(hist: Path, out: Path, extra: list[str] = ()) -> list[str]:  # type: ignore[assignment]
    return [
        sys.executable, "-m", "neuronasv.publish", "--results-dir", str(hist / "results"),
        "--repo", str(hist / "repo"), "--out", str(out), *extra,
    ]  # fmt: skip


def measure(hist: Path, *, with_asv: bool, repeat: int) -> dict[str, float]:
    res: dict[str, list[float]] = {}
    out = hist / "site"
    for _ in range(repeat):
        shutil.rmtree(out, ignore_errors=True)
        w, r = _run(_nasv(hist, out))
        res.setdefault("full_s", []).append(w)
        res.setdefault("full_rss", []).append(r)
        w, r = _run(_nasv(hist, out))
        res.setdefault("nochange_s", []).append(w)
    generate(hist, commits=1, append=True)
    w, r = _run(_nasv(hist, out))
    res["incr_s"], res["incr_rss"] = [w], [r]
    if with_asv:
        # the analysis loader (compare/regressions) on the same files, for its figure
        code = (
            "from neuronasv.store.history import load_history;"
            f"h = load_history({str(hist / 'results')!r}, repo={str(hist / 'repo')!r});"
            "assert h.series and not h.load_errors, h.load_errors[:3]"
        )
        for _ in range(repeat):
            w, r = _run([sys.executable, "-c", code])
            res.setdefault("load_s", []).append(w)
            res.setdefault("load_rss", []).append(r)
        for _ in range(repeat):
            w, r = _run([sys.executable, "-m", "asv", "publish", "--no-pull"], cwd=hist)
            res.setdefault("asv_s", []).append(w)
            res.setdefault("asv_rss", []).append(r)
    return {k: statistics.median(v) for k, v in res.items()}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="1000", help="commit counts measured against asv publish")
    p.add_argument("--big", type=int, default=0, help="also this many commits, neuronasv only")
    p.add_argument("--asv-max", type=int, default=3000)
    p.add_argument("--workloads", type=int, default=50)
    p.add_argument("--ops", type=int, default=20)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--work", default="/tmp/nasv-bench")
    a = p.parse_args(argv)
    sizes = [int(s) for s in a.sizes.split(",") if s] + ([a.big] if a.big else [])
    rows = []
    load0 = os.getloadavg()
    cli_s, _ = _run([sys.executable, "-m", "neuronasv", "--help"])
    print(f"# `neuronasv --help` start-up (imports every command): {cli_s:.1f} s", flush=True)
    for n in sizes:
        hist = Path(a.work) / f"h{n}"
        shutil.rmtree(hist, ignore_errors=True)
        t = time.perf_counter()
        generate(hist, commits=n, workloads=a.workloads, ops=a.ops)
        print(
            f"# generated {n} commits × {a.workloads * a.ops} series"
            f" in {time.perf_counter() - t:.0f} s",
            flush=True,
        )
        m = measure(hist, with_asv=n <= a.asv_max and n != a.big, repeat=a.repeat)
        rows.append((n, m))
        print(f"# {n}: {json.dumps({k: round(v, 2) for k, v in m.items()})}", flush=True)
        if n == a.big:
            shutil.rmtree(hist, ignore_errors=True)
    load1 = os.getloadavg()
    print(f"\nseries: {a.workloads * a.ops}; cpus: {os.cpu_count()}; medians of {a.repeat} run(s)")
    fmt = " ".join(f"{x:.2f}" for x in load0), " ".join(f"{x:.2f}" for x in load1)
    print(f"load average (1/5/15 min) at start: {fmt[0]}; at end: {fmt[1]}")
    print(
        "neuronasv timed as `python -m neuronasv.publish` (the CLI's `neuronasv publish`,"
        f" start-up included; `neuronasv --help` alone: {cli_s:.1f} s)"
    )
    cols = ["commits", "nasv full s", "RSS MiB", "no-change s", "incr s", "RSS MiB"]
    cols += ["asv s", "RSS MiB", "asv/nasv"]
    widths = [8, 12, 8, 12, 7, 8, 8, 8, 9]
    print(" ".join(f"{c:>{w}}" for c, w in zip(cols, widths, strict=True)))
    for n, m in rows:
        asv = m.get("asv_s")
        cells = [
            f"{n}", f"{m['full_s']:.1f}", f"{m['full_rss']:.0f}", f"{m['nochange_s']:.1f}",
            f"{m['incr_s']:.1f}", f"{m['incr_rss']:.0f}", f"{asv:.1f}" if asv else "-",
            f"{m['asv_rss']:.0f}" if asv else "-", f"{asv / m['full_s']:.1f}x" if asv else "-",
        ]  # fmt: skip
        print(" ".join(f"{c:>{w}}" for c, w in zip(cells, widths, strict=True)))
    for n, m in rows:
        if "load_s" in m:
            print(
                f"load_history (compare/regressions loader) at {n} commits:"
                f" {m['load_s']:.1f} s, {m['load_rss']:.0f} MiB peak RSS"
            )
        if "asv_s" in m:
            print(f"incremental vs asv publish at {n} commits: {m['asv_s'] / m['incr_s']:.0f}x")
            ratio = m["asv_s"] / m["full_s"]
            print(
                f"cold (empty folder, no cache) vs asv publish at {n} commits ×"
                f" {a.workloads * a.ops} series: {ratio:.1f}x faster"
                f" ({m['full_s']:.2f} s vs {m['asv_s']:.2f} s; Done-when >= 5x:"
                f" {'met' if ratio >= 5 else 'NOT met'} at this load)"
            )
    _ = resource  # getrusage is used in the measuring child
    return 0


if __name__ == "__main__":
    sys.exit(main())
