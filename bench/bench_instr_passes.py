r"""Instructions passes of one suite in separate processes, every dump compared across them.

    .venv/bin/python bench/bench_instr_passes.py REPO --pass 'ConvnextTrain' \
        --pass 'ConvnextTrain,VitMlp,VitPatch'

Each ``--pass`` is one run of the pass as the runner starts it
(:func:`neuronasv.run.instrrun.valgrind_command`, ``REPO`` first on the import path, its
``benchmarks`` suite), limited to the comma list of asv ``--bench`` regexes given (empty: the
whole suite), in a folder of its own whose name is longer with every pass. The pass's own
check shifts the heap inside one process; this compares what it cannot: separate processes,
with other libraries' mappings and another history before each configuration's process is
forked (the classes planned beside it). Every labelled dump that two passes share — each
configuration's whole step ("total|a", "total|b") and every (op, module) pair's replay — is
compared by its counted instructions (:attr:`~neuronasv.measure.callgrind.Dump.native`,
what the series record); each that differs is printed with the functions whose counts moved
most. Printed too: each pass's wall and CPU seconds, and the load average.

``--env-pad N``: every second pass (2, 4, ...) runs with one more environment variable,
``NEURONASV_BENCH_PAD``, of N bytes per pass index — what a workflow that adds a variable
does to the runner's environment (glibc's ``getenv`` walks the environment's entries).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from neuronasv.measure.callgrind import Dump, build_helper, parse_dump  # noqa: E402
from neuronasv.run.instrrun import valgrind_command, valgrind_env  # noqa: E402

#: The functions named per differing dump.
NAMED = 4


def _cpu_children() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _run(repo: Path, work: Path, regexes: list[str], pad: str = "") -> dict[str, Dump]:
    work.mkdir(parents=True)
    helper = build_helper(str(work / "helper"))
    dumps = work / "dumps" / "callgrind.out"
    dumps.parent.mkdir()
    cmd = valgrind_command(sys.executable, str(repo / "benchmarks"), out_dir=str(work / "out"),
                           helper=helper, dumps=str(dumps), regexes=regexes)  # fmt: skip
    env = valgrind_env({**os.environ, "ASV_PYTHONPATH": str(repo)}, scratch=str(work))
    if pad:
        env["NEURONASV_BENCH_PAD"] = pad
    cpu0, t0 = _cpu_children(), time.monotonic()
    proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
    wall, cpu = time.monotonic() - t0, _cpu_children() - cpu0
    if proc.returncode != 0:
        sys.exit(f"pass {regexes} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    found: dict[str, Dump] = {}
    for name in sorted(os.listdir(dumps.parent)):
        with open(dumps.parent / name, encoding="utf-8", errors="replace") as fh:
            dump = parse_dump(fh.read(), functions=True)
        if dump is not None:
            found[dump.label] = dump
    print(f"pass {regexes or ['(whole suite)']}: {len(found)} dumps, {wall:.0f} s wall,"
          f" {cpu:.0f} s CPU (folder {work.name})", flush=True)  # fmt: skip
    return found


def _moved(a: Dump, b: Dump) -> str:
    fa, fb = a.functions or {}, b.functions or {}
    moved = [(fb.get(k, 0) - fa.get(k, 0), k) for k in set(fa) | set(fb)]
    # code of no object is named by its address: the same code mapped elsewhere is two names
    unnamed = sum(d for d, (obj, _) in moved if obj == "???")
    named = sorted(((d, k) for d, k in moved if d and k[0] != "???"), key=lambda m: -abs(m[0]))
    parts = [f"{fn[:90]} {d:+,}" for d, (_, fn) in named[:NAMED]]
    if unnamed:
        parts.append(f"code of no object {unnamed:+,}")
    return "; ".join(parts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo")
    parser.add_argument("--pass", dest="passes", action="append", default=[],
                        help="comma list of --bench regexes for one pass ('' : all)")  # fmt: skip
    parser.add_argument("--env-pad", type=int, default=0, metavar="N",
                        help="passes 2, 4, ... get one more variable of N bytes a pass index")
    args = parser.parse_args()
    passes = args.passes or ["", ""]
    if len(passes) < 2:
        parser.error("give two --pass or more (or none: the whole suite twice)")
    repo = Path(args.repo).resolve()
    print(f"load average at the start: {os.getloadavg()}", flush=True)
    work = Path(tempfile.mkdtemp(prefix="bench-instr-passes-"))
    try:
        runs = [_run(repo, work / ("p" + "-longer" * i), [r for r in p.split(",") if r],
                     "x" * (args.env_pad * i) if i % 2 else "")
                for i, p in enumerate(passes)]  # fmt: skip
        first = runs[0]
        for i, other in enumerate(runs[1:], start=2):
            shared = sorted(set(first) & set(other))
            differ = [k for k in shared if first[k].native != other[k].native]
            print(f"pass 1 vs pass {i}: {len(shared)} dumps in both, {len(differ)} differ")
            for k in differ:
                print(f"  {k}: {first[k].native:,} -> {other[k].native:,}"
                      f" ({_moved(first[k], other[k])})")  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"load average at the end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
