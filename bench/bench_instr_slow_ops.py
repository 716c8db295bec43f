r"""Which ops make a workload's step slow under valgrind, beside the same step native.

    .venv/bin/python bench/bench_instr_slow_ops.py REPO WORKLOAD [--dtype D] [--shape S]
        [--modules M ...] [--top N]

The instructions pass runs every counted step under valgrind (docs/instructions.md); its
cost per configuration is the step's cost there. This builds ``WORKLOAD`` (a registered
name; ``--modules``: the modules that register it, imported first, ``REPO`` first on the
import path) as the pass does (seed 0, one intra-op thread, the pass's matrix-library
settings :data:`neuronasv.measure.callgrind.MATRIX_ISA`), runs one warm-up step, then one step
under torch's profiler — once natively and once under ``valgrind --tool=none`` (valgrind
running the code, no tool: what the pass's uncounted steps cost, and the floor under its
counted ones). Printed: the step's CPU seconds both ways and their ratio, then the ``--top``
ops by self CPU time under valgrind, each with its native time and the ratio.

Example (visionkit, as ``bench/bench_instr_adopter.py`` makes it, in REPO):
``bench_instr_slow_ops.py REPO visionkit.vit_train --modules visionkit.workloads``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's neuronasv, as the child gets it


def _child(args: argparse.Namespace) -> None:
    """In the measured process: one warm-up, one profiled step; JSON on stdout's last line."""
    sys.path.insert(0, args.repo)
    import torch
    from torch.profiler import ProfilerActivity, profile

    from neuronasv.measure import workloads

    torch.set_num_threads(1)
    for module in args.modules:
        importlib.import_module(module)
    w = workloads.get(args.workload)
    shape = workloads.parse_shape(args.shape or w.default_shape)
    step = w.build(shape, workloads.parse_dtype(args.dtype), "cpu", 0)
    step()
    t = time.process_time()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        step()
    cpu = time.process_time() - t
    ops = {e.key: [e.self_cpu_time_total / 1e6, e.count] for e in prof.key_averages()}
    print(json.dumps({"step": cpu, "ops": ops}))


def _measure(args: argparse.Namespace, prefix: list[str]) -> dict:
    from neuronasv.measure.callgrind import MATRIX_ISA

    cmd = [*prefix, sys.executable, __file__, "--child", args.repo, args.workload,
           "--dtype", args.dtype, *(["--shape", args.shape] if args.shape else []),
           *[x for m in args.modules for x in ("--modules", m)]]  # fmt: skip
    env = {**os.environ, **MATRIX_ISA, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo")
    parser.add_argument("workload")
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--shape", default=None, help="default: the workload's")
    parser.add_argument("--modules", action="append", default=[])
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.repo = str(Path(args.repo).resolve())
    if args.child:
        _child(args)
        return 0
    if shutil.which("valgrind") is None:
        print("needs valgrind", file=sys.stderr)
        return 2
    print(f"load average at the start: {os.getloadavg()}", flush=True)
    native = _measure(args, [])
    under = _measure(args, ["valgrind", "--tool=none", "-q"])
    print(
        f"{args.workload} {args.dtype}: one step {native['step']:.4f} s CPU native,"
        f" {under['step']:.2f} s under valgrind --tool=none (x{under['step'] / native['step']:.0f})"
    )
    total = sum(s for s, _ in under["ops"].values()) or 1.0
    print(f"{'op (self CPU)':44s}{'calls':>6s}{'valgrind s':>12s}{'share':>8s}{'native ms':>11s}"
          f"{'ratio':>8s}")  # fmt: skip
    for name, (secs, calls) in sorted(under["ops"].items(), key=lambda kv: -kv[1][0])[: args.top]:
        base = native["ops"].get(name, [0.0, 0])[0]
        ratio = f"x{secs / base:.0f}" if base > 0 else "-"
        print(
            f"{name[:43]:44s}{calls:6d}{secs:12.3f}{100 * secs / total:7.1f}%"
            f"{1e3 * base:11.3f}{ratio:>8s}"
        )
    print(f"load average at the end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
