r"""Where the instructions pass's time goes, on a few configurations of a suite.

    .venv/bin/python bench/bench_instr_breakdown.py REPO [--bench REGEX ...] [--jobs N]
        [--counts-out FILE]

Runs the pass as the runner does (:func:`neuronasv.run.instrrun.valgrind_command` and
:func:`~neuronasv.run.instrrun.valgrind_env`, ``REPO`` first on the import path, its
``benchmarks`` suite) with ``NEURONASV_INSTR_PHASES=1``: each configuration's child then
logs its phases (build, uncounted steps, the recorded step, count "a", count "b"), in
wall and CPU seconds. Printed: every line of the pass time-stamped from valgrind's start,
the pass's wall and CPU seconds (the process tree), then the dumps read at native speed
(:func:`~neuronasv.run.instrpass.finish_payloads`) with its time, and the load average.
``--counts-out FILE`` writes every configuration's counts as JSON, to check that a variant of
the pass counts the same.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from neuronasv.env import INSTR_PHASES  # noqa: E402
from neuronasv.measure.callgrind import build_helper  # noqa: E402
from neuronasv.run.instrpass import finish_payloads  # noqa: E402
from neuronasv.run.instrrun import read_counts, valgrind_command, valgrind_env  # noqa: E402

PHASE = re.compile(r"phase (\S+ \[\S+\]) (.+): ([\d.]+) s wall, ([-\d.]+) s CPU")
PRIMED = re.compile(r"phase pass primed: ([\d.]+) s CPU")
COLUMNS = ("build", "warm-up", "record", "count a", "count b")


def _table(lines: list[str]) -> None:
    """CPU seconds per configuration and phase, and their sums."""
    cpu: dict[str, dict[str, float]] = {}
    for line in lines:
        m = PHASE.search(line)
        if m:
            cpu.setdefault(m.group(1), {})[m.group(2)] = float(m.group(4))
        m = PRIMED.search(line)
        if m:
            print(f"start-up (torch's import, the suite, prime): {m.group(1)} s CPU")
    print(f"{'CPU s':48s}" + "".join(f"{c:>9s}" for c in COLUMNS) + "    total")
    sums = dict.fromkeys(COLUMNS, 0.0)
    for config in sorted(cpu, key=lambda k: -sum(cpu[k].values())):
        row = cpu[config]
        print(
            f"{config:48s}"
            + "".join(f"{row.get(c, 0):9.2f}" for c in COLUMNS)
            + f"{sum(row.values()):9.2f}"
        )
        for c in COLUMNS:
            sums[c] += row.get(c, 0)
    print(
        f"{'sum':48s}" + "".join(f"{sums[c]:9.2f}" for c in COLUMNS) + f"{sum(sums.values()):9.2f}"
    )


def _cpu_children() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo")
    parser.add_argument("--bench", action="append", default=[])
    parser.add_argument("--jobs", type=int, default=None, help="default: the runner's")
    parser.add_argument(
        "--valgrind-opt",
        action="append",
        default=[],
        help="extra valgrind option (tried before adopting it)",
    )
    parser.add_argument(
        "--counts-out",
        metavar="FILE",
        help="write every configuration's counts there (JSON), to compare two variants",
    )
    args = parser.parse_args()
    repo = Path(args.repo).resolve()
    print(f"load average at the start: {os.getloadavg()}", flush=True)
    work = Path(tempfile.mkdtemp(prefix="bench-instr-breakdown-"))
    try:
        helper = build_helper(str(work / "helper"))
        dumps = work / "callgrind" / "callgrind.out"
        dumps.parent.mkdir()
        cmd = valgrind_command(
            sys.executable,
            str(repo / "benchmarks"),
            out_dir=str(work / "out"),
            helper=helper,
            dumps=str(dumps),
            regexes=args.bench,
        )
        if args.jobs is not None:
            cmd += ["--jobs", str(args.jobs)]
        cmd[2:2] = args.valgrind_opt
        env = valgrind_env({**os.environ, "ASV_PYTHONPATH": str(repo)}, scratch=str(work))
        env[INSTR_PHASES.name] = "1"
        cpu0, t0 = _cpu_children(), time.monotonic()
        proc = subprocess.Popen(
            cmd, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        assert proc.stdout is not None
        lines: list[str] = []
        for line in proc.stdout:
            if not line.lstrip().startswith("=="):
                lines.append(line)
                print(f"{time.monotonic() - t0:7.1f} {line.rstrip()}", flush=True)
        rc = proc.wait()
        wall, cpu = time.monotonic() - t0, _cpu_children() - cpu0
        t1 = time.monotonic()
        n = finish_payloads(str(work / "out"), str(dumps))
        print(
            f"pass: exit {rc}, {wall:.1f} s wall, {cpu:.1f} s CPU (process tree);"
            f" dumps read: {n} configuration(s) in {time.monotonic() - t1:.2f} s"
        )
        counts, meta = read_counts(str(work / "out"))
        same = sum(e.get("deterministic") is True for e in counts.values())
        if args.counts_out:
            Path(args.counts_out).write_text(json.dumps(counts, indent=1, sort_keys=True))
        print(
            f"deterministic (the pass's heap-shifted check): {same} of {len(counts)}"
            f" configuration(s); settings {meta}"
        )
        _table(lines)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"load average at the end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
