"""Detection quality of neuronasv's verdicts on this machine (prints tables; no asserts).

    .venv/bin/python bench/eval_detection.py [--runs 20] [--trials 300] [--cache FILE]

1. **Real runs, each its own process.** ``--runs`` times, a fresh Python process
   (``bench/eval_detection.py --worker``) profiles rmsnorm.naive, rmsnorm.fused and a *real
   code change* (the naive RMSNorm with ``(x * rms) * weight * 1.0``: one more
   ``aten::mul``) on the CPU backend at the suite's small shapes, in a shuffled order. So
   between-run shifts (process start, memory layout, frequency, neighbours) are in the
   data, as they are between a PR's base and head. The runs are cached in ``--cache``
   (JSON under /tmp): a re-run only analyses (``--runs`` more than cached collects the rest).
2. **A/A.** For each trial, 2·R distinct runs are drawn and dealt into R interleaved rounds
   of base and head (ABAB...), n samples a round: every series of the suite (totals + ops,
   all shapes) judged together; false alarms are counted per *comparison* (any
   regression/improvement verdict).
3. **Power.** The same with aten::mul of rmsnorm.naive (every shape) scaled by
   1/2/5/10/20 % at head (the total gets the same absolute increase per sample).
4. **Methods side by side** on the same draws: neuronasv with rounds (moderated t on
   per-round log-ratios, Holm); neuronasv single run (R=1: Mann–Whitney + Holm + the
   per-series noise floor learned from other runs); asv compare's rule (asv's own
   ``_is_result_better``: factor 1.1 and Mann–Whitney p < 0.002 from asv's statistics
   module) on one run a side; and a single-point 200 % threshold (github-action-benchmark).
5. **Change points** vs Apache Otava (``apache-otava`` in its own venv, ``--otava-python``)
   on synthetic series with known change points.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import replace

import numpy as np

from neuronasv import samples
from neuronasv.analyse import stats
from neuronasv.analyse.attribution import attribute
from neuronasv.analyse.changepoints import CPSettings, detect
from neuronasv.analyse.floors import NoiseFloor
from neuronasv.analyse.pairwise import PairInput, Settings, judge
from neuronasv.model import Point, ProfileDocument, SeriesId, WorkloadProfile
from neuronasv.report.headline import headline

INJECT = (0.0, 0.01, 0.02, 0.05, 0.10, 0.20)
TARGET = ("rmsnorm.naive", "aten::mul")
METHODS = ("rounds2", "rounds3", "rounds3+floor", "single+floor", "single", "asv", "thr200")
TITLES = {
    "rounds2": "ours R=2",
    "rounds3": "ours R=3",
    "rounds3+floor": "ours R=3+floor",
    "single+floor": "ours 1 run+floor",
    "single": "ours 1 run, no floor",
    "asv": "asv compare",
    "thr200": "200 % threshold",
}
SHAPES = ("4x512", "8x4096")
KINDS = ("rmsnorm.naive", "rmsnorm.fused", "changed")
CACHE = "/tmp/neuronasv-eval-detection-runs.json"


def worker(out: str, shapes: list[str], dtype: str, samples: int, active: int, seed: int) -> None:
    """One profiling run in this (fresh) process: every kind x shape, shuffled order."""
    import random

    from neuronasv.measure import workloads
    from neuronasv.measure.backends import get_backend
    from neuronasv.measure.profiling import profile_workload
    from neuronasv.measure.workloads import Workload
    from neuronasv.measure.workloads.rmsnorm import EPS, make_inputs

    def changed(x, weight, eps=EPS):  # the real code change: one more aten::mul
        import torch

        rms = torch.rsqrt((x * x).mean(dim=-1, keepdim=True) + eps)
        return (x * rms) * weight * 1.0

    def build(shp, dt, device, s):
        x, w = make_inputs(shp, dt, device, s)
        return lambda: changed(x, w)

    change = Workload(
        name="rmsnorm.naive",
        description="naive + extra mul",
        default_shape=shapes[0],
        build_fn=build,
        tags=("rmsnorm",),
    )
    backend = get_backend("cpu")
    wl = {
        "rmsnorm.naive": workloads.get("rmsnorm.naive"),
        "rmsnorm.fused": workloads.get("rmsnorm.fused"),
        "changed": change,
    }
    # The first profiler session of a process pays one-off start-up costs: not a sample.
    profile_workload(
        wl["rmsnorm.naive"], backend, shape=shapes[0], dtype=dtype, samples=2, roofline=False
    )
    plan = [(k, s) for k in KINDS for s in shapes]
    random.Random(seed).shuffle(plan)
    got: dict[str, list[WorkloadProfile]] = {k: [] for k in KINDS}
    for k, s in plan:
        got[k].append(
            profile_workload(
                wl[k], backend, shape=s, dtype=dtype, samples=samples, active=active, roofline=False
            )
        )
    with open(out, "w", encoding="utf-8") as fh:
        json.dump({k: ProfileDocument("cpu", tuple(v)).to_json() for k, v in got.items()}, fh)


def collect(args) -> list[dict[str, list[WorkloadProfile]]]:
    """Cached runs (``args.cache``), topped up to ``args.runs`` with fresh processes."""
    key = {
        "shapes": list(args.shapes),
        "dtype": args.dtype,
        "samples": args.samples,
        "active": args.active,
        "threads": os.environ.get("NEURONASV_CPU_THREADS", "1"),
    }
    runs: list = []
    if os.path.exists(args.cache):
        with open(args.cache, encoding="utf-8") as fh:
            cached = json.load(fh)
        if cached.get("key") == key:
            runs = cached["runs"]
    while len(runs) < args.runs:
        tmp = f"{args.cache}.part"
        t, load = time.time(), os.getloadavg()[0]
        cmd = [
            sys.executable,
            os.path.abspath(__file__),
            "--worker",
            tmp,
            "--shapes",
            *args.shapes,
            "--dtype",
            args.dtype,
            "--samples",
            str(args.samples),
            "--active",
            str(args.active),
            "--seed",
            str(len(runs)),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            sys.exit(f"worker failed: {proc.stderr.strip()[-2000:]}")
        with open(tmp, encoding="utf-8") as fh:
            runs.append({**json.load(fh), "load1": load})
        os.remove(tmp)
        with open(args.cache + ".tmp", "w", encoding="utf-8") as fh:
            json.dump({"key": key, "runs": runs}, fh)
        os.replace(args.cache + ".tmp", args.cache)
        print(
            f"  run {len(runs)}/{args.runs}: {time.time() - t:.0f} s (load {load:.2f})", flush=True
        )
    out = []
    for r in runs[: args.runs]:
        out.append({k: list(ProfileDocument.from_json(r[k]).workloads) for k in KINDS})
    return out


Run = dict[SeriesId, np.ndarray]


def series_of(profiles: list[WorkloadProfile]) -> Run:
    out: Run = {}
    for p in profiles:
        out[SeriesId(p.name, (), p.name, p.shape, p.dtype)] = np.asarray(p.device_time_us)
        for o in p.ops:
            out[SeriesId(p.name, (), p.name, p.shape, p.dtype, o.op)] = np.asarray(
                o.self_device_time_us
            )
    return out


def side_of(run: dict, kind_naive: str) -> Run:
    """One run's series: the naive RMSNorm (or its changed version) plus the fused one."""
    return {**series_of(run[kind_naive]), **series_of(run["rmsnorm.fused"])}


def inject(r: Run, amount: float) -> Run:
    if not amount:
        return r
    out = dict(r)
    for sid, x in r.items():
        if sid.workload == TARGET[0] and sid.op == TARGET[1]:
            extra = x * amount
            out[sid] = x + extra
            tot = SeriesId(sid.benchmark, (), sid.workload, sid.shape, sid.dtype)
            out[tot] = out[tot] + extra  # same samples: the total grows by the op's extra
    return out


def floors_from(runs: list[Run], n: int) -> dict:
    """Floors as main-branch history would give them: medians of n-sample runs in order
    (the history's runs have as many samples as the compared ones)."""
    from neuronasv.analyse.floors import floor_key

    out = {}
    for sid in runs[0]:
        vals = [samples.median(r[sid][:n]) for r in runs if sid in r]
        got = stats.noise_floor(vals)
        if got is not None and got[1] >= 5:
            out[floor_key(sid)] = NoiseFloor(*got)
    return out


def pairs_for(base: list[Run], head: list[Run], n: int, rng) -> list[PairInput]:
    """One PairInput per common series; rounds = the runs of each side, n samples each.

    The same sample positions are drawn for every series of a run: a sample is one
    profiler step, and a workload's total and its ops in that step belong together.
    """
    common = sorted(set.intersection(*(set(r) for r in base + head)), key=lambda s: s.label)
    size = min(x.size for r in base + head for x in r.values())
    ib = [np.sort(rng.choice(size, min(n, size), replace=False)) for _ in base]
    ih = [np.sort(rng.choice(size, min(n, size), replace=False)) for _ in head]
    out = []
    for sid in common:
        br = tuple(tuple(r[sid][i]) for r, i in zip(base, ib, strict=True))
        hr = tuple(tuple(r[sid][i]) for r, i in zip(head, ih, strict=True))
        pb = [x for rnd in br for x in rnd]
        ph = [x for rnd in hr for x in rnd]
        out.append(
            PairInput(
                sid,
                "µs",
                Point("a", 0, samples.median(pb), tuple(pb)),
                Point("b", 1, samples.median(ph), tuple(ph)),
                br if len(br) > 1 else (),
                hr if len(hr) > 1 else (),
            )
        )
    return out


def asv_rule(a, b) -> str:
    from asv.commands.compare import _is_result_better
    from asv_runner.statistics import compute_stats

    va, sa = compute_stats(list(a), 1)
    vb, sb = compute_stats(list(b), 1)
    if _is_result_better(va, vb, (sa, list(a)), (sb, list(b)), 1.1):
        return "regression"
    if _is_result_better(vb, va, (sb, list(b)), (sa, list(a)), 1.1):
        return "improvement"
    return "unchanged"


def threshold_rule(a, b, limit: float = 2.0) -> str:
    ra = float(np.median(b)) / float(np.median(a))
    return "regression" if ra >= limit else "improvement" if ra <= 1 / limit else "unchanged"


#: A row's timing decision (its time axis) in the words the tables count.
_DECISION = {"slower": "regression", "faster": "improvement", "undecided": "noisy",
             "noise": "unchanged"}  # fmt: skip


def decision(f) -> str:  # type: ignore[no-untyped-def]
    """``regression``/``improvement``/``noisy``/``unchanged`` from the row's time axis (a
    side missing: its presence)."""
    st = f.state
    return _DECISION.get(st.time, st.presence)


def trial(sides_base, sides_head, rest, n, rng, settings, methods) -> dict[str, dict]:
    """Verdicts of every method on one comparison: {method: {series: verdict}}."""
    out: dict[str, dict] = {}
    fl = floors_from(rest, n) if any(m.endswith("+floor") for m in methods) else {}
    for m in methods:
        if m.startswith("rounds"):
            r = rounds_of(m)
            pairs = pairs_for(sides_base[:r], sides_head[:r], n, rng)
            fs = judge(pairs, settings, fl if m.endswith("+floor") else None)
        else:
            pairs = pairs_for(sides_base[:1], sides_head[:1], n, rng)
            if m in ("single", "single+floor"):
                fs = judge(pairs, settings, fl if m == "single+floor" else None)
            else:
                rule = asv_rule if m == "asv" else threshold_rule
                out[m] = {
                    p.series: rule(np.array(p.base.samples), np.array(p.head.samples))
                    for p in pairs
                }
                continue
        out[m] = {f.series: decision(f) for f in fs}
    return out


def rounds_of(m: str) -> int:
    return int(m.split("+")[0].removeprefix("rounds")) if m.startswith("rounds") else 1


def is_target(s: SeriesId) -> bool:
    return s.workload == TARGET[0] and s.op in (TARGET[1], None)


def evaluate(runs, n: int, trials: int, seed: int, settings: Settings, methods, kinds=INJECT):
    rng = np.random.default_rng(seed)
    res: dict = {}
    rmax = max(rounds_of(m) for m in methods)
    for amount in kinds:
        cnt = {m: [0, 0, 0] for m in methods}  # false alarm, op hit, total hit
        for _ in range(trials):
            order = rng.permutation(len(runs))
            bi, hi = order[:rmax], order[rmax : 2 * rmax]
            rest = [side_of(runs[i], "rmsnorm.naive") for i in order[2 * rmax :]]
            base = [side_of(runs[i], "rmsnorm.naive") for i in bi]
            head = [inject(side_of(runs[i], "rmsnorm.naive"), amount) for i in hi]
            got = trial(base, head, rest, n, rng, settings, methods)
            for m, vs in got.items():
                flagged = [s for s, v in vs.items() if v in ("regression", "improvement")]
                others = [s for s in flagged if not (amount and is_target(s))]
                cnt[m][0] += bool(others)
                cnt[m][1] += any(v == "regression" for s, v in vs.items() if is_target(s) and s.op)
                cnt[m][2] += any(
                    v == "regression" for s, v in vs.items() if is_target(s) and not s.op
                )
        res[amount] = {m: tuple(c / trials for c in cnt[m]) for m in methods}
    return res


def real_change(runs, n: int, trials: int, seed: int, settings: Settings, methods):
    """Head = the naive RMSNorm with one more aten::mul, from other processes."""
    rng = np.random.default_rng(seed)
    rmax = max(rounds_of(m) for m in methods)
    det = {m: [0, 0] for m in methods}
    for _ in range(trials):
        order = rng.permutation(len(runs))
        base = [side_of(runs[i], "rmsnorm.naive") for i in order[:rmax]]
        head = [side_of(runs[i], "changed") for i in order[rmax : 2 * rmax]]
        rest = [side_of(runs[i], "rmsnorm.naive") for i in order[2 * rmax :]]
        got = trial(base, head, rest, n, rng, settings, methods)
        for m, vs in got.items():
            det[m][0] += any(v == "regression" for s, v in vs.items() if is_target(s) and s.op)
            det[m][1] += any(v == "regression" for s, v in vs.items() if is_target(s) and not s.op)
    # The sentence a reviewer reads: rounds test, attribution from one run's op tables.
    base = [side_of(runs[i], "rmsnorm.naive") for i in range(3)]
    head = [side_of(runs[i], "changed") for i in range(3, 6)]
    fs = judge(pairs_for(base, head, n, np.random.default_rng(seed)), settings)
    fs = attribute(fs, base_profiles=runs[0]["rmsnorm.naive"], head_profiles=runs[3]["changed"])
    sentences = []
    for f in fs:
        if f.series.op is None and f.series.workload == TARGET[0]:
            # headline() formats seconds: the bench works in µs.
            f = replace(
                f,
                estimate=replace(
                    f.estimate,
                    unit="seconds",
                    base=(f.base or 0) * 1e-6,
                    head=(f.head or 0) * 1e-6,
                ),
                attribution=tuple(replace(c, delta=c.delta * 1e-6) for c in f.attribution),
            )
            sentences.append(f"{decision(f)}: {headline(f)}")
    return {m: (a / trials, b / trials) for m, (a, b) in det.items()}, sentences


def work_eval(runs, trials: int, seed: int) -> tuple[float, float, int]:
    """Exact work evidence: A/A false alarms and detection of the real one-more-mul change.

    Each trial compares the profiles of two different runs (processes): of the same code
    (A/A: naive and fused) and of the real change (naive vs naive + one more aten::mul).
    Returns (A/A share with any work change, share detecting aten::mul's extra call, runs
    without signatures).
    """
    from neuronasv.analyse.evidence import has_evidence, work_changes

    missing = sum(1 for r in runs if not all(has_evidence(p) for p in r["rmsnorm.naive"]))
    rng = np.random.default_rng(seed)
    fa = hit = 0
    for _ in range(trials):
        i, j = rng.choice(len(runs), 2, replace=False)
        same = work_changes(
            runs[i]["rmsnorm.naive"] + runs[i]["rmsnorm.fused"],
            runs[j]["rmsnorm.naive"] + runs[j]["rmsnorm.fused"],
        )
        fa += bool(same)
        got = work_changes(runs[i]["rmsnorm.naive"], runs[j]["changed"])
        hit += any(
            w.op == "aten::mul" and w.kind == "calls" and (w.calls_head or 0) > (w.calls_base or 0)
            for w in got
        )
    return fa / trials, hit / trials, missing


def adaptive_eval(runs, n: int, trials: int, seed: int, first: int, last: int, kinds=INJECT):
    """The PR flow: one run a side nominates suspects, then confirm() adds interleaved
    rounds to undecided suspects from 2·last fresh runs, alpha spent over the looks.

    Returns ``{amount: (A/A share with a false alarm, op power, total power, mean rounds)}``.
    """
    from neuronasv.analyse.confirm import confirm
    from neuronasv.model import FindingsDocument, RunRef

    rng = np.random.default_rng(seed)
    st = Settings(resamples=0)
    out = {}
    for amount in kinds:
        fa = op_hit = tot_hit = 0
        used = 0
        for _ in range(trials):
            order = rng.permutation(len(runs))
            if len(order) < 2 * last + 2:
                raise SystemExit(f"adaptive up to {last} rounds needs {2 * last + 2} runs")
            b0 = side_of(runs[order[0]], "rmsnorm.naive")
            h0 = inject(side_of(runs[order[1]], "rmsnorm.naive"), amount)
            fs = judge(pairs_for([b0], [h0], n, rng), st)
            ref_a, ref_b = RunRef("a" * 40, "m"), RunRef("b" * 40, "m")
            doc = FindingsDocument("compare", ref_a, ref_b, tuple(fs))
            bases = [side_of(runs[i], "rmsnorm.naive") for i in order[2 : 2 + last]]
            heads = [
                inject(side_of(runs[i], "rmsnorm.naive"), amount)
                for i in order[2 + last : 2 + 2 * last]
            ]

            def runner(side, series, r, bases=bases, heads=heads):
                src = (bases if side == "base" else heads)[r]
                size = min(x.size for x in src.values())
                idx = np.sort(rng.choice(size, min(n, size), replace=False))
                return {sid: list(src[sid][idx]) for sid in series if sid in src}

            got = confirm(doc, runner, rounds=first, max_rounds=last, settings=st)
            used += int(got.settings.get("rounds", 0) or 0)
            flagged = [f for f in got.findings if decision(f) in ("regression", "improvement")]
            fa += any(not (amount and is_target(f.series)) for f in flagged)
            op_hit += any(
                decision(f) == "regression" and is_target(f.series) and f.series.op
                for f in got.findings
            )
            tot_hit += any(
                decision(f) == "regression" and is_target(f.series) and not f.series.op
                for f in got.findings
            )
        out[amount] = (fa / trials, op_hit / trials, tot_hit / trials, used / trials)
    return out


def spread(runs) -> None:
    """Within-run vs between-run spread per series (the reason for the rounds test)."""
    sides = [side_of(r, "rmsnorm.naive") for r in runs]
    rows = []
    for sid in sides[0]:
        if not all(sid in s for s in sides):
            continue
        meds = np.array([np.median(s[sid]) for s in sides])
        within = np.median([samples.noise(s[sid][:10]) or 0 for s in sides])
        between = stats.MAD_K * np.median(np.abs(np.log(meds / np.median(meds))))
        rows.append((sid.label, within, between))
    rows.sort(key=lambda r: -r[2])
    w = np.median([r[1] for r in rows])
    b = np.median([r[2] for r in rows])
    print(
        f"  {len(rows)} series: within-run IQR/median (10 samples) median {w:.1%};"
        f" between-run sd of run medians median {b:.1%}, max {rows[0][2]:.1%} ({rows[0][0]})"
    )


def table(res, methods, trials: int, n: int, title: str) -> None:
    print(f"\n{title}: n={n} samples a round, {trials} trials per row")
    print(
        f"{'method':<22}{'A/A FA':>8}"
        + "".join(f"{f'{a:.0%}':>11}" for a in INJECT[1:])
        + "   MDE (op, power≥95 %, FA≤1 %)"
    )
    for m in methods:
        fa = res[0.0][m][0]
        cells = "".join(f"{res[a][m][1]:>5.0%}/{res[a][m][2]:<5.0%}" for a in INJECT[1:])
        ok = [a for a in INJECT[1:] if res[a][m][1] >= 0.95]
        mde = (f"{min(ok):.0%}" if ok else "> 20 %") if fa <= 0.01 else f"n/a (FA {fa:.1%})"
        print(f"{TITLES[m]:<22}{fa:>8.1%}{cells}   {mde}")
    print("  (cells: power op/total; FA = share of A/A comparisons with any false alarm)")
    fa_inj = {m: max(res[a][m][0] for a in INJECT[1:]) for m in methods}
    print(
        "  false alarms on other series in injected trials, max:",
        ", ".join(f"{TITLES[m]} {v:.1%}" for m, v in fa_inj.items()),
    )


def synthetic(seed: int, count: int, length: int):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        k = int(rng.integers(0, 4))
        cps = sorted(rng.choice(np.arange(15, length - 15), k, replace=False).tolist()) if k else []
        # keep change points at least 10 apart
        cps = [c for i, c in enumerate(cps) if i == 0 or c - cps[i - 1] >= 10]
        level, x, last = 100.0, [], 0
        for c in [*cps, length]:
            x += list(rng.normal(level, 0.02 * level, c - last))
            level *= 1 + float(rng.choice([-1, 1])) * float(rng.uniform(0.05, 0.2))
            last = c
        out.append((np.array(x), cps))
    return out


OTAVA_SNIPPET = r"""
import json, sys
from otava.analysis import compute_change_points
data = json.load(sys.stdin)
out = []
for xs in data["series"]:
    cps, _ = compute_change_points(
        xs, window_len=data["window"], max_pvalue=data["p"], min_magnitude=0.0)
    out.append([int(c.index) for c in cps])
print(json.dumps(out))
"""


def match(found, truth, tol=2):
    tp = sum(1 for t in truth if any(abs(f - t) <= tol for f in found))
    return tp, len(found), len(truth)


def changepoints(otava_python: str | None, seed: int) -> None:
    series = synthetic(seed, 60, 200)
    st = CPSettings(window=50, max_pvalue=0.001, min_magnitude=0.0)
    ours = [[c.index for c in detect(x, st)] for x, _ in series]
    theirs = None
    if otava_python and os.path.exists(otava_python):
        payload = json.dumps({"series": [x.tolist() for x, _ in series], "window": 50, "p": 0.001})
        proc = subprocess.run(
            [otava_python, "-c", OTAVA_SNIPPET],
            input=payload,
            text=True,
            capture_output=True,
            check=False,
        )
        if proc.returncode == 0:
            theirs = json.loads(proc.stdout)
        else:
            print("otava failed:", proc.stderr.strip().splitlines()[-1:])
    print(
        "\nChange points: 60 synthetic series x 200 commits, 0-3 steps of 5-20 %, noise 2 %,"
        " window 50, p 0.001; a hit is within ±2 commits"
    )
    print(f"{'method':<12} {'precision':>9} {'recall':>7} {'found':>6} {'true':>5}")
    for name, res in (("neuronasv", ours), ("otava", theirs)):
        if res is None:
            print(f"{name:<12} (not run: give --otava-python, e.g. /tmp/otava-venv/bin/python)")
            continue
        tp = nf = nt = 0
        fp_hits = 0
        for found, (_, truth) in zip(res, series, strict=True):
            a, b, c = match(found, truth)
            tp, nf, nt = tp + a, nf + b, nt + c
            fp_hits += sum(1 for f in found if any(abs(f - t) <= 2 for t in truth))
        print(f"{name:<12} {fp_hits / max(nf, 1):>9.1%} {tp / max(nt, 1):>7.1%} {nf:>6} {nt:>5}")
    if theirs is not None:
        both = sum(match(o, t)[0] for o, t in zip(ours, theirs, strict=True))
        total = sum(len(set(o) | set(t)) for o, t in zip(ours, theirs, strict=True))
        same = sum(
            1 for o, t in zip(ours, theirs, strict=True) if match(o, t)[0] == len(o) == len(t)
        )
        print(
            f"agreement: {both} change points found by both (±2) of {total} distinct;"
            f" identical sets on {same}/{len(series)} series"
        )


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--shapes", nargs="+", default=list(SHAPES))
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--samples", type=int, default=30, help="samples per run")
    ap.add_argument("--active", type=int, default=3, help="iterations per sample (suite: 3)")
    ap.add_argument("--runs", type=int, default=20, help="profiling processes (cached)")
    ap.add_argument("--n", type=int, default=10, help="samples a round (the suite's repeat)")
    ap.add_argument("--trials", type=int, default=300)
    ap.add_argument("--asv-trials", type=int, default=100, help="asv's rule is slow")
    ap.add_argument("--cache", default=CACHE)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--otava-python", default="/tmp/otava-venv/bin/python")
    ap.add_argument("--worker", metavar="OUT", help=argparse.SUPPRESS)
    ap.add_argument("--collect-only", action="store_true")
    ap.add_argument(
        "--adaptive", nargs=2, type=int, default=[3, 6], metavar=("FIRST", "LAST"),
        help="adaptive confirmation: rounds before the first look, most rounds (3 6)",
    )  # fmt: skip
    ap.add_argument("--adaptive-trials", type=int, default=100)
    ap.add_argument("--skip-profile", action="store_true", help="only the change-point part")
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, args.shapes, args.dtype, args.samples, args.active, args.seed)
        return
    t0 = time.time()
    if not args.skip_profile:
        print(
            f"Runs: {args.runs} processes x (naive, fused, naive+mul) x {args.shapes}"
            f" {args.dtype}, {args.samples} samples of {args.active} iterations; load now"
            f" {os.getloadavg()[0]:.2f}, cache {args.cache}",
            flush=True,
        )
        runs = collect(args)
        if args.collect_only:
            return
        loads = [r.get("load1", float("nan")) for r in _raw_runs(args)]
        print(f"  load average (1 min) while collecting: {min(loads):.2f}–{max(loads):.2f}")
        spread(runs)
        settings = Settings(resamples=0)  # CIs do not change verdicts; saves time
        fast = [m for m in METHODS if m != "asv"]
        res = evaluate(runs, args.n, args.trials, args.seed, settings, fast)
        res_asv = evaluate(runs, args.n, args.asv_trials, args.seed + 1, settings, ["asv"])
        for a in res:
            res[a].update(res_asv[a])
        nser = len(side_of(runs[0], "rmsnorm.naive"))
        table(
            res,
            METHODS,
            args.trials,
            args.n,
            f"Injected into {TARGET[0]} {TARGET[1]} (all shapes), {nser} series a comparison"
            f" (asv: {args.asv_trials} trials)",
        )
        det, sentences = real_change(runs, args.n, 100, args.seed, Settings(), METHODS)
        print(f"\nReal code change (one more aten::mul in rmsnorm.naive), n={args.n}, 100 trials:")
        for m in METHODS:
            print(
                f"  {TITLES[m]:<22} op flagged {det[m][0]:>4.0%}, total flagged {det[m][1]:>4.0%}"
            )
        for s in sentences:
            print(f"  {s}")
        wfa, whit, missing = work_eval(runs, 300, args.seed)
        print(
            f"\nExact work evidence (calls, input shapes; 300 pairs of runs): A/A false alarms"
            f" {wfa:.1%} (naive + fused, every shape), one-more-mul detected {whit:.0%}"
            + (f" ({missing} runs lack signatures: recollect)" if missing else "")
        )
        first, last = args.adaptive
        ad = adaptive_eval(runs, args.n, args.adaptive_trials, args.seed + 2, first, last)
        print(
            f"\nAdaptive confirmation (1 run a side nominates, then {first} rounds, up to"
            f" {last}), {args.adaptive_trials} trials:"
        )
        print(f"{'inject':>8} {'A/A or other FA':>16} {'op':>6} {'total':>6} {'rounds used':>12}")
        for a, (fa, op, tot, used) in ad.items():
            print(f"{a:>8.0%} {fa:>16.1%} {op:>6.0%} {tot:>6.0%} {used:>12.1f}")
        ok = [a for a, v in ad.items() if a and v[1] >= 0.95]
        mde = f"{min(ok):.0%}" if ok and ad[0.0][0] <= 0.01 else "> 20 %"
        print(f"  MDE (op, power >= 95 %, FA <= 1 %): {mde}")
    changepoints(args.otava_python, args.seed)
    print(f"\n(total {time.time() - t0:.0f} s)")


def _raw_runs(args) -> list:
    with open(args.cache, encoding="utf-8") as fh:
        return json.load(fh)["runs"][: args.runs]


if __name__ == "__main__":
    main()
