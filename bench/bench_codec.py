"""The declarative model codecs against a baseline tree, in the same run, side by side.

Times, for the neuronasv package in ``--new`` (default: this checkout) and in ``--old``
(a copy of the baseline's ``neuronasv/``, e.g. ``git archive main neuronasv | tar -x -C
/tmp/old``):

- ``load_history`` (the compare/regressions loader) on a synthetic history of
  ``--commits`` × (``--workloads`` × ``--ops``) series (``bench/synth_history.py``, the
  same files as ``bench/bench_publish.py``), each in its own process;
- ``python -m neuronasv.publish`` (full build) on the same history;
- decoding and encoding one sidecar with full op tables (``--workloads`` workloads ×
  ``--ops`` ops × 20 samples), the part of loading the codec itself does, in process
  (CPU time, the fastest of 5).

Runs alternate old/new ``--repeat`` times; medians and new/old ratios are printed.

Usage::

    python bench/bench_codec.py --old /tmp/old --commits 1000 --workloads 50 --ops 20
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

_CODEC = """
import json, sys, time
from neuronasv.model import OpProfile, RunSidecar, WorkloadProfile
W, O, K = {w}, {o}, {k}
s = tuple(float(i) + 0.5 for i in range(20))
ops = tuple(OpProfile(f"aten::op{{j}}", 2.0, s, s, flops=1.0, signature=("2×f32[4, 512]",))
            for j in range(O))
wl = tuple(WorkloadProfile(f"w{{i}}", "cuda", "4x512", "float32", s, ops) for i in range(W))
text = RunSidecar(machine="m", commit_hash="a" * 40, env_name="e", profiles=wl).dumps()
RunSidecar.loads(text).dumps()  # first use (the declarative codec builds its plans)
dec = enc = float("inf")
for _ in range(K):  # the fastest of K: the least disturbed by other processes
    t = time.process_time()
    doc = RunSidecar.loads(text, source="x")
    dec = min(dec, time.process_time() - t)
    t = time.process_time()
    out = doc.dumps()
    enc = min(enc, time.process_time() - t)
assert out == text
print(json.dumps([dec, enc]))
"""


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _child(tree: Path, cmd: list[str]) -> tuple[float, float, str]:
    """(wall s, CPU s of the child and its children, stdout) of one process in ``tree``.

    On a shared machine wall time swings with the load; CPU time much less, so both are
    printed.
    """
    env = {**os.environ, "PYTHONPATH": str(tree)}
    t, c = time.perf_counter(), _cpu()
    p = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - t, _cpu() - c
    if p.returncode != 0:
        raise SystemExit(f"{tree}: {cmd[:3]} failed ({p.returncode}): {p.stderr[-1500:]}")
    return wall, cpu, p.stdout


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--old", required=True, help="folder holding the baseline neuronasv/")
    p.add_argument("--new", default=str(HERE.parent), help="folder holding the new neuronasv/")
    p.add_argument("--commits", type=int, default=1000)
    p.add_argument("--workloads", type=int, default=50)
    p.add_argument("--ops", type=int, default=20)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--work", default="/tmp/nasv-bench-codec")
    a = p.parse_args(argv)
    trees = {"old": Path(a.old).resolve(), "new": Path(a.new).resolve()}
    for name, tree in trees.items():
        if not (tree / "neuronasv" / "model" / "_codec.py").is_file():
            raise SystemExit(f"--{name}: {tree} holds no neuronasv/ package")
    hist = Path(a.work) / f"h{a.commits}"
    shutil.rmtree(hist, ignore_errors=True)
    t = time.perf_counter()
    generate(hist, commits=a.commits, workloads=a.workloads, ops=a.ops)
    n_series = a.workloads * a.ops
    print(f"# generated {a.commits} commits × {n_series} series in {time.perf_counter() - t:.0f} s")
    load = (
        "from neuronasv.store.history import load_history;"
        f"h = load_history({str(hist / 'results')!r}, repo={str(hist / 'repo')!r});"
        "assert h.series and not h.load_errors, h.load_errors[:3]"
    )
    codec = _CODEC.format(w=a.workloads, o=a.ops, k=5)
    res: dict[str, dict[str, list[float]]] = {k: {} for k in trees}
    for _ in range(a.repeat):
        for name, tree in trees.items():
            r = res[name]
            wall, cpu, _ = _child(tree, [sys.executable, "-c", load])
            r.setdefault("load_history s", []).append(wall)
            r.setdefault("load_history CPU s", []).append(cpu)
            out = hist / f"site-{name}"
            shutil.rmtree(out, ignore_errors=True)
            cmd = [sys.executable, "-m", "neuronasv.publish", "--results-dir",
                   str(hist / "results"), "--repo", str(hist / "repo"),
                   "--out", str(out)]  # fmt: skip
            wall, cpu, _ = _child(tree, cmd)
            r.setdefault("publish (full) s", []).append(wall)
            r.setdefault("publish CPU s", []).append(cpu)
            dec, enc = json.loads(_child(tree, [sys.executable, "-c", codec])[2])
            r.setdefault("sidecar decode CPU ms", []).append(dec * 1e3)
            r.setdefault("sidecar encode CPU ms", []).append(enc * 1e3)
    print(f"\nmedians of {a.repeat} alternating runs; {a.commits} commits × {n_series} series;"
          f" sidecar of {a.workloads} workloads × {a.ops} ops × 20 samples")  # fmt: skip
    print(f"load average at the end (1/5/15 min): {os.getloadavg()}")
    print(f"{'measure':<22} {'old':>9} {'new':>9} {'new/old':>8}")
    for key in res["old"]:
        old, new = statistics.median(res["old"][key]), statistics.median(res["new"][key])
        print(f"{key:<22} {old:>9.2f} {new:>9.2f} {new / old:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
