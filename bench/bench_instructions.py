"""The instructions metric, measured: cost per commit, A/A determinism, exact deltas.

Three experiments (``docs/instructions.md`` has the figures this printed):

``cost``  One ``neuronasv run HEAD --metrics devtime,instructions`` of the default CPU suite
          in a scratch clone of this checkout (its own results folder). Every progress line
          is time-stamped as it arrives; the instructions pass is the span from the
          pre-pass's end (the pass starts then: torch's import under valgrind is its cost) to
          ``instructions pass done``, the timing suite is the rest of the commit
          (pre-pass + asv). Printed: both, wall and the CPU seconds of the process tree,
          and the ratio instructions / timing (target ≤ 2).

``aa``    ``--repeat R`` counts of every configuration of the selected suite in ONE valgrind
          process (R - 1 A/A pairs of "commits" of identical code, the import paid once),
          plus ``--processes P`` separate processes counting once each (P - 1 more pairs
          across processes, and each against the first repetition). Printed: the number of
          series compared and how many differ (target 0), and any configuration marked
          not deterministic.

``ab``    A scratch git repository with four commits — base, a docs-only change (A/A),
          the shipped eps example (``examples/regress-rmsnorm-eps.patch``), one extra
          elementwise op in the naive RMSNorm — run by ``neuronasv run --metrics
          devtime,instructions``; then ``neuronasv compare`` base → each. Printed: per
          comparison the instruction findings that are not ``unchanged`` (target: none for
          the A/A; every CPU configuration of the naive variant for the other two).

Usage::

    python bench/bench_instructions.py cost
    python bench/bench_instructions.py aa --repeat 21 --processes 3 --bench 'rmsnorm\\.'
    python bench/bench_instructions.py ab
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

THIS = Path(__file__).resolve().parents[1]
NEURONASV = str(Path(sys.executable).parent / "neuronasv")


def _git(repo: Path, *args: str) -> str:
    env = dict(
        os.environ,
        GIT_AUTHOR_NAME="b",
        GIT_AUTHOR_EMAIL="b@example.invalid",
        GIT_COMMITTER_NAME="b",
        GIT_COMMITTER_EMAIL="b@example.invalid",
    )
    return subprocess.run(
        ["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True
    ).stdout.strip()


def _scratch_repo(root: Path) -> Path:
    repo = root / "repo"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for part in ("neuronasv", "benchmarks", "examples"):
        shutil.copytree(THIS / part, repo / part, ignore=ignore)
    shutil.copy(THIS / "asv.conf.json", repo / "asv.conf.json")
    (repo / ".gitignore").write_text(".asv/\n__pycache__/\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "base")
    return repo


def _env(home: Path) -> dict[str, str]:
    return dict(os.environ, HOME=str(home), OMP_NUM_THREADS="1")


def _timed_run(
    cmd: list[str], cwd: Path, env: dict[str, str]
) -> tuple[list[tuple[float, str]], int]:
    """Run ``cmd``; its output lines with the seconds since start, and its exit status."""
    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)  # fmt: skip
    lines: list[tuple[float, str]] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append((time.monotonic() - start, line.rstrip()))
    return lines, proc.wait()


def cost(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="nasv-instr-cost-") as tmp:
        root = Path(tmp)
        repo = _scratch_repo(root)
        (root / "home").mkdir()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        lines, rc = _timed_run(
            [NEURONASV, "run", "HEAD", "--backend", "cpu", "--machine", "bench",
             "--metrics", "devtime,instructions", "--no-traces"],
            repo, _env(root / "home"),
        )  # fmt: skip
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        if rc != 0:
            print("\n".join(t for _, t in lines[-30:]))
            raise SystemExit(f"neuronasv run failed ({rc})")
        first = next(t for t, ln in lines if "] commit " in ln)
        done = next(t for t, ln in lines if "] done:" in ln)
        # The pass starts when the pre-pass ends: torch's import under valgrind is its cost.
        i0 = next(t for t, ln in lines if "pre-pass done" in ln)
        i1 = next(t for t, ln in lines if "instructions pass done" in ln)
        instr = i1 - i0
        timing = (done - first) - instr
        for t, ln in lines:
            if args.verbose or "instructions" in ln or "pre-pass done" in ln or "done:" in ln:
                print(f"{t:7.1f}  {ln}")
        print(f"commit wall {done - first:.0f} s: timing suite (pre-pass + asv) {timing:.0f} s,"
              f" instructions pass {instr:.0f} s; ratio {instr / timing:.2f}"
              f" (process tree CPU {cpu:.0f} s)")  # fmt: skip


def _count_once(out: Path, bench: list[str], repeat: int) -> None:
    from neuronasv.measure.callgrind import build_helper
    from neuronasv.run.instrpass import finish_payloads
    from neuronasv.run.instrrun import valgrind_command, valgrind_env

    helper = build_helper(str(out / "helper"))
    dumps = out / "dumps"
    dumps.mkdir(parents=True, exist_ok=True)
    cmd = valgrind_command(sys.executable, str(THIS / "benchmarks"), out_dir=str(out / "counts"),
                           helper=helper, dumps=str(dumps / "cg.out"), regexes=bench)  # fmt: skip
    cmd += ["--repeat", str(repeat)]
    env = valgrind_env({**os.environ, "ASV_PYTHONPATH": str(THIS), "NEURONASV_BACKEND": "cpu"})
    t = time.monotonic()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(proc.stdout[-2000:] + proc.stderr[-2000:])
    finish_payloads(str(out / "counts"), str(dumps / "cg.out"))
    print(f"one process, {repeat} repetition(s): {time.monotonic() - t:.0f} s")


def _series(folder: Path) -> tuple[dict[str, float], set[str]]:
    """Every series' count, and the series the pass found not deterministic (counted twice
    in a row, two numbers: never judged, so never an A/A difference either)."""
    values: dict[str, float] = {}
    unstable: set[str] = set()
    for path in sorted(folder.glob("*.json")):
        if path.name.startswith("_"):
            continue
        doc: dict[str, Any] = json.loads(path.read_text())
        for key, entry in doc["results"].items():
            if "total" not in entry:
                continue
            name = f"{doc['workload']}[{key}]"
            values[f"{name} total"] = entry["total"]
            for op, v in itertools.chain(entry["ops"].items(), entry["modules"].items()):
                values[f"{name} {op}"] = v
            unstable.update(f"{name} {u}" for u in entry.get("unstable") or ())
    return values, unstable


def aa(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="nasv-instr-aa-") as tmp:
        runs: list[tuple[dict[str, float], set[str]]] = []
        for p in range(args.processes):
            out = Path(tmp) / f"p{p}"
            _count_once(out, args.bench, args.repeat if p == 0 else 1)
            counts = out / "counts"
            folders = [counts] + [
                counts / f"rep{k}" for k in range(1, args.repeat if p == 0 else 1)
            ]
            for f in folders:
                values, unstable = _series(f)
                if unstable:
                    print(f"NOT deterministic in {f.name}: {', '.join(sorted(unstable))}")
                runs.append((values, unstable))
    # A/A pairs: every later count against the first (within the first process, then each
    # other process), as a commit's base and head would be compared.
    pairs = [(runs[0], r) for r in runs[1:]]
    compared = judged = 0
    differ: list[tuple[str, float, float | None]] = []
    for (a, ua), (b, ub) in pairs:
        for k, v in a.items():
            compared += 1
            if k in ua or k in ub:
                continue  # said "not deterministic, not judged" in every view
            judged += 1
            if b.get(k) != v:
                differ.append((k, v, b.get(k)))
    print(f"{len(pairs)} A/A pairs ({args.repeat - 1} within one process, {args.processes - 1}"
          f" across processes): {compared} series compared, {judged} judged,"
          f" {compared - judged} not judged (not deterministic), {len(differ)} judged"
          f" series differ")  # fmt: skip
    for k, x, y in differ[:20]:
        print(f"  {k}: {x} vs {y}")


def _extra_op(repo: Path) -> None:
    path = repo / "neuronasv" / "measure" / "workloads" / "rmsnorm.py"
    text = path.read_text()
    anchor = "    sq = x * x  # aten::mul (1)\n"
    path.write_text(
        text.replace(anchor, anchor + "    sq = sq * 1.0  # one extra elementwise op\n")
    )


def ab(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="nasv-instr-ab-") as tmp:
        root = Path(tmp)
        repo = _scratch_repo(root)
        (root / "home").mkdir()
        base = _git(repo, "rev-parse", "HEAD")
        (repo / "NOTES.md").write_text("docs only\n")
        _git(repo, "add", "NOTES.md")
        _git(repo, "commit", "-q", "-m", "docs only (A/A)")
        aa_sha = _git(repo, "rev-parse", "HEAD")
        _git(repo, "checkout", "-q", "-b", "eps", base)
        _git(repo, "apply", "examples/regress-rmsnorm-eps.patch")
        _git(repo, "commit", "-q", "-am", "eps example")
        eps = _git(repo, "rev-parse", "HEAD")
        _git(repo, "checkout", "-q", "-b", "extra", base)
        _extra_op(repo)
        _git(repo, "commit", "-q", "-am", "one extra elementwise op")
        extra = _git(repo, "rev-parse", "HEAD")
        env = _env(root / "home")
        t = time.monotonic()
        lines, rc = _timed_run(
            [NEURONASV, "run", base, aa_sha, eps, extra, "--backend", "cpu", "--machine", "bench",
             "--metrics", "devtime,instructions", "--no-traces", "--bench", args.bench],
            repo, env,
        )  # fmt: skip
        if rc != 0:
            print("\n".join(t for _, t in lines[-30:]))
            raise SystemExit(f"neuronasv run failed ({rc})")
        print(f"4 commits run in {time.monotonic() - t:.0f} s")
        for label, sha in (("A/A docs-only", aa_sha), ("eps example", eps), ("extra op", extra)):
            proc = subprocess.run(
                [NEURONASV, "compare", base, sha, "--machine", "bench", "--format", "json"],
                cwd=repo, env=env, capture_output=True, text=True,
            )  # fmt: skip
            doc = json.loads(proc.stdout)
            rows = [f for f in doc["findings"] if f["estimate"]["unit"] == "instructions"]
            moved = [f for f in rows if f["state"].get("instructions") != "same"]
            print(f"{label}: {len(rows)} instruction series, {len(moved)} not unchanged")
            for f in moved:
                s = f["series"]
                axis = f["state"].get("instructions", "none")
                print(f"  {s['workload']} {s['shape']} {s['dtype']} {s.get('op') or 'total'}:"
                      f" {axis} instructions — {f['reason']}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    p = sub.add_parser("cost")
    p.add_argument("--verbose", action="store_true", help="print every line, time-stamped")
    p = sub.add_parser("aa")
    p.add_argument("--repeat", type=int, default=21)
    p.add_argument("--processes", type=int, default=3)
    p.add_argument("--bench", action="append", default=[])
    p = sub.add_parser("ab")
    p.add_argument("--bench", default=r"rmsnorm\.(Naive|Fused)\.")
    args = parser.parse_args()
    {"cost": cost, "aa": aa, "ab": ab}[args.what](args)


if __name__ == "__main__":
    main()
