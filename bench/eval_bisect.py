"""Bisection on device time, replaying this machine's noise (prints tables; no asserts).

    .venv/bin/python bench/eval_bisect.py                      # 200 histories, the defaults
    .venv/bin/python bench/eval_bisect.py --max-rounds 12 24 48 --noise-scale 1 0.5
    .venv/bin/python bench/eval_bisect.py --histories 1000 --first-seed 1000 --max-rounds 12
    .venv/bin/python bench/eval_bisect.py --real --shape 64x4096  # one real search, this CPU
    .venv/bin/python bench/eval_bisect.py --runs-dir bench/data/h200-2026-11-30/runs \\
        --shape 8x1024x4096 --noise-scale 1 --max-rounds 12 --seconds-per-process 14

1. **Noise measured here.** The real CPU runs ``bench/eval_detection.py`` caches (each run a
   fresh process profiling rmsnorm.naive and more, 30 single-iteration samples per series;
   collected first when the cache lacks them: ``--runs``). The target is one op series,
   ``rmsnorm.naive <shape> float32 · aten::mul``.
2. **Replay.** ``--histories`` seeded 64-commit histories, each with a +30 % step (``--step``)
   in that op at a seeded commit. The search (:func:`neuronasv.analyse.bisect.time_search`,
   what ``neuronasv bisect`` runs) asks for one process's samples of a commit: it gets a
   cached run's samples (``--samples`` of its 30, drawn at random), times the step when the
   commit is at or after the culprit. Each process is a run drawn at random, its level
   moved by a normal jitter of Silverman's bandwidth and shrunk back to the runs' variance
   (the shrunk smoothed bootstrap: there are far fewer runs than processes, and a run drawn
   twice in one round would fake agreement; unshrunk, the jitter made the noise larger than
   measured), so the replay keeps the runs' heavy tails but no benefit of interleaving
   (neighbouring processes share more of the machine's state: conservative).
   ``--noise-scale`` shrinks every run's deviation from the series' median (log scale): what
   a quieter machine would give. ``--prior`` adds the cached runs' history noise floor as
   the rounds test's prior (``neuronasv bisect`` does not).
3. **Prints**, per setting: the sd of one round's log-ratio in the replay ("round sd"),
   the power of one test by its last look (a noncentral t, ``one_test_power`` of
   :mod:`neuronasv.analyse.bisect_budget`: what ``neuronasv bisect`` sizes by), culprit right
   / undecided (a narrowed range, which must hold the step) / undecided at the ends (the
   ends' test did not show the step: "undecided between GOOD and BAD") / no change (an
   exact axis's answer: must stay 0 here) / **wrong**, processes per search (median, 90th
   percentile), minutes per search (processes × the measured seconds of one ``neuronasv
   profile`` process here); then the rounds every test needs for ~95 % of searches at that
   round sd, and the round sd that 48 rounds would need.
4. ``--real``: a synthetic 16-commit repository (``tests/run/bisect_repo.py``, ``aten::mul``
   of ``synth.gate`` twice instead of once from a seeded commit on: about +100 % in that
   op's time) and one real ``neuronasv bisect --axis time`` (instructions off), its rounds
   sized by the command from a pilot of GOOD for a ``--real-step`` (30 %) change, within
   ``--real-minutes`` (25); its budget line, output and wall time::

       .venv/bin/python bench/eval_bisect.py --real --shape 64x4096
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from neuronasv.analyse.bisect import RoundsPlan, time_search
from neuronasv.analyse.bisect_budget import one_test_power, round_sd_for, rounds_for, search_tests
from neuronasv.analyse.floors import NoiseFloor
from neuronasv.analyse.stats import noise_floor
from neuronasv.model import ProfileDocument, SeriesId

ROOT = Path(__file__).resolve().parents[1]
CACHE = "/tmp/neuronasv-eval-bisect-runs.json"
TARGET = ("rmsnorm.naive", "aten::mul")


def _eval_detection():
    path = ROOT / "bench" / "eval_detection.py"
    spec = importlib.util.spec_from_file_location("eval_detection", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def load_runs(args) -> tuple[list[np.ndarray], list[float]]:
    """The target series' samples of every cached run (collected first when missing)."""
    ev = _eval_detection()
    ns = argparse.Namespace(shapes=list(ev.SHAPES), dtype="float32", samples=30, active=1,
                            runs=args.runs, cache=args.cache)  # fmt: skip
    if not os.path.exists(args.cache):
        print(f"collecting {args.runs} runs into {args.cache} (fresh processes)...", flush=True)
    runs = ev.collect(ns)
    with open(args.cache, encoding="utf-8") as fh:
        loads = [r.get("load1", float("nan")) for r in json.load(fh)["runs"]]
    out = []
    for r in runs:
        for p in r[TARGET[0]]:
            if p.shape == args.shape:
                op = next(o for o in p.ops if o.op == TARGET[1])
                out.append(np.asarray(op.self_device_time_us, dtype=float))
    return out, loads[: len(out)]


def load_dir(folder: str, shape: str) -> tuple[list[np.ndarray], list[float]]:
    """The target series of recorded runs elsewhere (``--runs-dir``: profile documents,
    e.g. the real H200 runs in bench/data/h200-2026-11-30/runs)."""
    out = []
    for path in sorted(Path(folder).glob("*.json")):
        doc = ProfileDocument.loads(path.read_text(encoding="utf-8"), source=str(path))
        for p in doc.workloads:
            if p.name == TARGET[0] and p.shape == shape:
                op = next(o for o in p.ops if o.op == TARGET[1])
                out.append(np.asarray(op.self_device_time_us, dtype=float))
    return out, []


def seconds_per_process(shape: str, n: int = 3) -> float:
    """Median wall time of one ``neuronasv profile`` process (what one round trip costs)."""
    times = []
    for _ in range(n):
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.monotonic()
            subprocess.run(
                [sys.executable, "-m", "neuronasv", "profile", "--quiet", "--no-roofline",
                 "--backend", "cpu", "--workload", TARGET[0], "--shape", shape, "--dtype",
                 "float32", "--samples", "10", "--json", os.path.join(tmp, "p.json")],
                check=True, capture_output=True,
            )  # fmt: skip
            times.append(time.monotonic() - t0)
    return float(np.median(times))


def scaled(runs: list[np.ndarray], scale: float) -> list[np.ndarray]:
    """Each run's samples moved towards the series' median run level (log scale)."""
    if scale == 1.0:
        return runs
    level = float(np.median([np.median(r) for r in runs]))
    return [r * math.exp((scale - 1.0) * math.log(float(np.median(r)) / level)) for r in runs]


def bandwidth(runs: list[np.ndarray]) -> float:
    """Silverman's bandwidth of the runs' log levels: the smoothing of the bootstrap."""
    x = np.log([float(np.median(r)) for r in runs])
    iqr = float(np.subtract(*np.percentile(x, [75, 25])))
    return 0.9 * min(float(np.std(x, ddof=1)), iqr / 1.34) * len(x) ** -0.2


def process_sampler(runs: list[np.ndarray], h: float, samples: int):
    """``draw(rng) -> samples`` of one replayed process: a run drawn at random, its log level
    moved by a normal jitter of bandwidth ``h`` and shrunk towards the runs' mean level by
    ``1/sqrt(1 + h²/s²)`` (the shrunk smoothed bootstrap: the replayed levels keep the runs'
    variance ``s²``; unshrunk, the jitter added ``h²`` to it — 0.136² on 0.285² here, a
    noise larger than measured)."""
    lv = np.log([float(np.median(r)) for r in runs])
    mean, var = float(np.mean(lv)), float(np.var(lv, ddof=1))
    shrink = 1.0 / math.sqrt(1.0 + h * h / var) if var > 0 else 1.0

    def draw(rng: np.random.Generator) -> np.ndarray:
        i = int(rng.integers(len(runs)))
        r, level = runs[i], float(lv[i])
        new = mean + (level - mean + rng.normal(0.0, h)) * shrink
        return rng.choice(r, size=min(samples, r.size), replace=False) * math.exp(new - level)

    return draw


def one_search(draw, chain, culprit, plan, rng, step: float):
    sid = SeriesId("b", (), TARGET[0], "4x512", "float32", TARGET[1])
    pos = {c: i for i, c in enumerate(chain)}

    def runner(commit: str, call: int) -> list[float]:
        xs = draw(rng) * 1e-6  # a new process, not a copy of a cached one
        return list(xs * (step if pos[commit] >= culprit else 1.0))

    return time_search(chain, sid, "seconds", runner, plan)


def round_sd(draw, n: int = 20000) -> float:
    """The sd of one round's log-ratio (two replayed processes' medians): what the rounds
    test sees per round."""
    rng = np.random.default_rng(12345)
    d = [math.log(float(np.median(draw(rng))) / float(np.median(draw(rng)))) for _ in range(n)]
    return float(np.std(d, ddof=1))


def evaluate(args, runs, floor: NoiseFloor, max_rounds: int, scale: float) -> dict:
    chain = [f"{i:040x}" for i in range(64)]
    data = scaled(runs, scale)
    draw = process_sampler(data, bandwidth(data), args.samples)
    prior = NoiseFloor(floor.sd * scale, floor.pairs) if args.prior else None
    plan = RoundsPlan(alpha=args.alpha, rounds=args.rounds, max_rounds=max_rounds,
                      prior=prior)  # fmt: skip
    out = {"right": 0, "undecided": 0, "ends": 0, "no change": 0, "wrong": 0,
           "processes": [], "bad_range": 0, "round_sd": round_sd(draw)}  # fmt: skip
    for seed in range(args.first_seed, args.first_seed + args.histories):
        rng = np.random.default_rng(seed)
        culprit = int(rng.integers(1, 64))
        res = one_search(draw, chain, culprit, plan, rng, args.step)
        lo, hi = chain.index(res.lo), chain.index(res.hi)
        out["processes"].append(len(res.measurements))
        if res.outcome == "culprit":
            out["right" if hi == culprit else "wrong"] += 1
        elif res.outcome == "undecided" and (lo, hi) == (0, len(chain) - 1):
            out["ends"] += 1  # the ends' test did not show the step
        elif res.outcome == "undecided":
            out["undecided"] += 1
            out["bad_range"] += not (lo < culprit <= hi)
        else:
            out["no change"] += 1
    return out


def real_search(args) -> None:
    sys.path.insert(0, str(ROOT))
    from tests.run.bisect_repo import build_repo

    rng = np.random.default_rng(args.seed)
    culprit = int(rng.integers(2, args.commits))
    with tempfile.TemporaryDirectory(prefix="neuronasv-eval-bisect-") as tmp:
        repo = Path(tmp) / "repo"
        shas = build_repo(repo, commits=args.commits, culprit=culprit, others=(1,), change="slow")
        cmd = [str(Path(sys.executable).parent / "neuronasv"), "bisect", shas[0], shas[-1],
               "--series", f"synth.gate {args.shape} float32 · aten::mul", "--axis", "time",
               "--machine", "evalbox", "--backend", "cpu", "--no-github",
               "--step", str(args.real_step), "--budget-minutes", str(args.real_minutes)]
        if args.real_rounds:  # a cap; else the rounds the pilot's noise needs
            cmd += ["--max-rounds", str(args.real_rounds)]  # fmt: skip
        print(f"$ {' '.join(cmd[1:4])} ... (culprit: commit {culprit} of {args.commits},"
              f" {shas[culprit][:12]}; load {os.getloadavg()[0]:.2f})", flush=True)
        env = dict(os.environ, NEURONASV_SHAPES=args.shape, NEURONASV_DTYPES="float32")
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=repo, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)  # fmt: skip
        assert proc.stderr is not None and proc.stdout is not None
        said = []
        for line in proc.stderr:  # the command's progress, live
            print(f"  | {line.rstrip()}", flush=True)
            said += [line.strip()] if line.startswith("noise ") else []
        out = proc.stdout.read()
        rc = proc.wait()
        wall = time.monotonic() - t0
        print("said before measuring: " + (said[0] if said else "(no budget line)"))
        print(out)
        found = shas[culprit][:12] in out.splitlines()[0] if out else False
        print(f"exit {rc}; wall {wall / 60:.1f} min; culprit named right: {found};"
              f" load now {os.getloadavg()[0]:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    ap.add_argument("--histories", type=int, default=200)
    ap.add_argument("--first-seed", type=int, default=0,
                    help="seed of the first history (more histories: --first-seed 1000)")
    ap.add_argument("--step", type=float, default=1.3)
    ap.add_argument("--shape", default="4x512")
    ap.add_argument("--runs", type=int, default=24, help="cached real runs to replay")
    ap.add_argument("--cache", default=CACHE)
    ap.add_argument("--samples", type=int, default=10, help="samples per process")
    ap.add_argument("--alpha", type=float, default=0.001)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--max-rounds", type=int, nargs="+", default=[12, 24, 48])
    ap.add_argument("--noise-scale", type=float, nargs="+", default=[1.0, 0.5])
    ap.add_argument("--prior", action="store_true",
                    help="the history noise floor as the prior too (neuronasv bisect does not:"
                    " see the module doc of neuronasv.analyse.bisect)")
    ap.add_argument("--runs-dir", help="replay recorded profile documents instead (e.g."
                    " bench/data/h200-2026-11-30/runs with --shape 8x1024x4096)")
    ap.add_argument("--seconds-per-process", type=float, default=None,
                    help="cost of one process (default: measured here)")
    ap.add_argument("--real", action="store_true", help="one real search instead")
    ap.add_argument("--commits", type=int, default=16)
    ap.add_argument("--real-rounds", type=int, default=None,
                    help="cap the real search's rounds (default: sized from the noise)")
    ap.add_argument("--real-step", type=float, default=30.0,
                    help="the change (percent) the real search's rounds are sized for")
    ap.add_argument("--real-minutes", type=float, default=25.0,
                    help="the real search's --budget-minutes")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if args.real:
        real_search(args)
        return
    runs, loads = load_dir(args.runs_dir, args.shape) if args.runs_dir else load_runs(args)
    levels = [float(np.median(r[:10])) for r in runs]
    got = noise_floor(levels)
    assert got is not None
    floor = NoiseFloor(*got)
    sd = float(np.std(np.log(levels), ddof=1))
    where = (f"recorded in {args.runs_dir}" if args.runs_dir else
             f"this machine, load {min(loads):.1f}–{max(loads):.1f} while collected")
    print(f"noise: {len(runs)} real runs of {TARGET[0]} {args.shape} · {TARGET[1]} ({where}):"
          f" between-run sd of the log median {sd:.4f}, history floor"
          f" {floor.describe()}")  # fmt: skip
    spp = args.seconds_per_process or seconds_per_process(args.shape)
    how = "given" if args.seconds_per_process else f"measured here, load {os.getloadavg()[0]:.2f}"
    print(f"one `neuronasv profile` process: {spp:.1f} s ({how})")
    print(f"{args.histories} histories of 64 commits, +{(args.step - 1) * 100:.0f} % at a seeded"
          f" commit; alpha {args.alpha} over {search_tests(63)} tests; {args.samples} samples a"
          " process")  # fmt: skip
    head = (f"{'noise':>6} {'round sd':>8} {'max rounds':>10} {'power/ends':>10} {'right':>6}"
            f" {'undecided':>9} {'ends':>6} {'no change':>9} {'wrong':>6}"
            f" {'processes (med/p90)':>20} {'min/search (med)':>17}")  # fmt: skip
    print(head)
    for scale in args.noise_scale:
        for mr in args.max_rounds:
            t0 = time.monotonic()
            r = evaluate(args, runs, floor, mr, scale)
            n = args.histories
            procs = np.asarray(r["processes"])
            tests = search_tests(63)
            pw = one_test_power(r["round_sd"], args.step, args.alpha, tests,
                            RoundsPlan(alpha=args.alpha, max_rounds=mr))  # fmt: skip
            print(f"{scale * sd:>6.3f} {r['round_sd']:>8.3f} {mr:>10} {100 * pw:>9.1f}%"
                  f" {100 * r['right'] / n:>5.1f}%"
                  f" {100 * r['undecided'] / n:>8.1f}% {100 * r['ends'] / n:>5.1f}%"
                  f" {100 * r['no change'] / n:>8.1f}%"
                  f" {r['wrong']:>6} {int(np.median(procs)):>10}/{int(np.percentile(procs, 90)):<9}"
                  f" {np.median(procs) * spp / 60:>16.1f}"
                  + (f"  ({r['bad_range']} undecided ranges miss the step!)" if r["bad_range"]
                     else "") + f"  [{time.monotonic() - t0:.0f} s]", flush=True)  # fmt: skip
        want = 0.95 ** (1.0 / tests)  # every test of a search must show the step
        need = rounds_for(r["round_sd"], args.step, args.alpha, tests, want)
        print(f"       rounds for a {100 * want:.1f} % test (~95 % of searches) at round sd"
              f" {r['round_sd']:.3f}: {need} (neuronasv.analyse.bisect_budget, what `neuronasv"
              f" bisect` sizes by); at 48 rounds that needs round sd"
              f" {round_sd_for(args.step, args.alpha, tests, want, 48):.3f}", flush=True)


if __name__ == "__main__":
    main()
