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
6. **Comments under load** (issue 39; ``--loaded-runs N``: N more processes measured
   beside ``--busy`` spinning ones, cached with the others): the PR comment of a quiet
   base against a head measured quiet or under load — A/A, a pure refactor (the same ops
   from other Python), one more ``aten::mul``, ``aten::mul`` +30 % — through ``compare``
   and the comment's digest: false causes per comment, gate, the first line naming the
   runner's shift, the real change named; time only, and with instruction counts
   *modelled* as a deterministic callgrind pass gives them (:func:`with_counts`).
   ``--comments-only`` runs only this part. The same cache analysed by another tree
   (``PYTHONPATH=<tree>``, run from ``bench/``) gives its before/after figures.
"""

from __future__ import annotations

import argparse
import json
import math
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
KINDS = ("rmsnorm.naive", "rmsnorm.fused", "changed", "refactor")
CACHE = "/tmp/neuronasv-eval-detection-runs.json"


def worker(out: str, shapes: list[str], dtype: str, samples: int, active: int, seed: int) -> None:
    """One profiling run in this (fresh) process: every kind x shape, shuffled order."""
    import random

    from neuronasv.measure import workloads
    from neuronasv.measure.backends import get_backend
    from neuronasv.measure.profiling import ProfileOptions, profile_workload
    from neuronasv.measure.workloads import Workload
    from neuronasv.measure.workloads.rmsnorm import EPS, make_inputs

    def changed(x, weight, eps=EPS):  # the real code change: one more aten::mul
        import torch

        rms = torch.rsqrt((x * x).mean(dim=-1, keepdim=True) + eps)
        return (x * rms) * weight * 1.0

    def build(shp, dt, device, s):
        x, w = make_inputs(shp, dt, device, s)
        return lambda: changed(x, w)

    def _mean_square(x):  # the refactor: the same ops, other Python
        return (x * x).mean(dim=-1, keepdim=True)

    def _inv_rms(x, eps):
        import torch

        return torch.rsqrt(_mean_square(x) + eps)

    def refactored(x, weight, eps=EPS):
        scale = _inv_rms(x, eps)
        return (x * scale) * weight

    def build_refactor(shp, dt, device, s):
        x, w = make_inputs(shp, dt, device, s)
        return lambda: refactored(x, w)

    change = Workload(
        name="rmsnorm.naive",
        description="naive + extra mul",
        default_shape=shapes[0],
        build_fn=build,
        tags=("rmsnorm",),
    )
    refactor = Workload(
        name="rmsnorm.naive",
        description="naive, refactored (same ops)",
        default_shape=shapes[0],
        build_fn=build_refactor,
        tags=("rmsnorm",),
    )
    backend = get_backend("cpu")
    wl = {
        "rmsnorm.naive": workloads.get("rmsnorm.naive"),
        "rmsnorm.fused": workloads.get("rmsnorm.fused"),
        "changed": change,
        "refactor": refactor,
    }
    # The first profiler session of a process pays one-off start-up costs: not a sample.
    profile_workload(
        wl["rmsnorm.naive"],
        backend,
        shape=shapes[0],
        dtype=dtype,
        options=ProfileOptions(samples=2, roofline=False),
    )
    plan = [(k, s) for k in KINDS for s in shapes]
    random.Random(seed).shuffle(plan)
    got: dict[str, list[WorkloadProfile]] = {k: [] for k in KINDS}
    for k, s in plan:
        got[k].append(
            profile_workload(
                wl[k],
                backend,
                shape=s,
                dtype=dtype,
                options=ProfileOptions(
                    samples=samples, active=active, roofline=False, canary=True
                ),
            )
        )
    with open(out, "w", encoding="utf-8") as fh:
        json.dump({k: ProfileDocument("cpu", tuple(v)).to_json() for k, v in got.items()}, fh)


def _cpu_mhz() -> float | None:
    try:
        with open("/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq", encoding="ascii") as fh:
            return int(fh.read()) / 1000
    except (OSError, ValueError):
        return None


def _busy(n: int) -> list[subprocess.Popen]:
    """``n`` busy processes (a spinning Python loop each): the load of a shared runner."""
    return [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)
    ]


def _one_run(args, seed: int, busy: int) -> dict:
    """One worker process (with ``busy`` spinning processes beside it), and the machine's
    load (1 min) and CPU 0 clock at its start and end."""
    tmp = f"{args.cache}.part"
    spin = _busy(busy)
    try:
        if spin:
            time.sleep(3)  # let the load take hold before the worker starts
        t, load = time.time(), os.getloadavg()[0]
        mhz = _cpu_mhz()
        cmd = [
            sys.executable, os.path.abspath(__file__), "--worker", tmp, "--shapes",
            *args.shapes, "--dtype", args.dtype, "--samples", str(args.samples),
            "--active", str(args.active), "--seed", str(seed),
        ]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        end = os.getloadavg()[0]
    finally:
        for p in spin:
            p.kill()
            p.wait()
    if proc.returncode != 0:
        sys.exit(f"worker failed: {proc.stderr.strip()[-2000:]}")
    with open(tmp, encoding="utf-8") as fh:
        got = json.load(fh)
    os.remove(tmp)
    return {
        **got, "load1": load, "load1_end": end, "mhz": mhz, "mhz_end": _cpu_mhz(),
        "busy": busy, "seconds": time.time() - t,
    }  # fmt: skip


def collect(args) -> tuple[list[dict[str, list[WorkloadProfile]]], list[dict]]:
    """Cached runs (``args.cache``), topped up with fresh processes to ``args.runs`` quiet
    ones and ``args.loaded_runs`` measured beside ``args.busy`` spinning processes.

    Returns the quiet runs' profiles (the head of the A/A and power parts) and the raw
    records of every run (loaded ones included; :func:`profiles_of` reads them)."""
    key = {
        "shapes": list(args.shapes),
        "dtype": args.dtype,
        "samples": args.samples,
        "active": args.active,
        "threads": os.environ.get("NEURONASV_CPU_THREADS", "1"),
        "kinds": list(KINDS),
    }
    runs: list = []
    if os.path.exists(args.cache):
        with open(args.cache, encoding="utf-8") as fh:
            cached = json.load(fh)
        if cached.get("key") == key:
            runs = cached["runs"]

    def count(busy: bool) -> int:
        return sum(1 for r in runs if bool(r.get("busy", 0)) == busy)

    while count(False) < args.runs or count(True) < args.loaded_runs:
        busy = args.busy if count(False) >= args.runs else 0
        rec = _one_run(args, len(runs), busy)
        runs.append(rec)
        with open(args.cache + ".tmp", "w", encoding="utf-8") as fh:
            json.dump({"key": key, "runs": runs}, fh)
        os.replace(args.cache + ".tmp", args.cache)
        which = (
            f"loaded {count(True)}/{args.loaded_runs}" if busy else f"{count(False)}/{args.runs}"
        )
        print(
            f"  run {which}: {rec['seconds']:.0f} s (load {rec['load1']:.2f} → "
            f"{rec['load1_end']:.2f}{f', {busy} busy processes' if busy else ''})",
            flush=True,
        )
    quiet = [r for r in runs if not r.get("busy", 0)][: args.runs]
    return [profiles_of(r) for r in quiet], runs


def profiles_of(rec: dict) -> dict[str, list[WorkloadProfile]]:
    """The profiles of one cached run, per kind."""
    return {k: list(ProfileDocument.from_json(rec[k]).workloads) for k in KINDS}


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


# -- comments under load (issue 39) ---------------------------------------------------------

#: The cases of :func:`comment_eval`: what the head ran (kind of the naive RMSNorm, and a
#: factor on its aten::mul samples), and whether the code changed.
LOAD_CASES = {
    "A/A, both quiet": ("rmsnorm.naive", 0.0),
    "A/A under load": ("rmsnorm.naive", 0.0),
    "refactor under load": ("refactor", 0.0),
    "one more aten::mul under load": ("changed", 0.0),
    "aten::mul +30 % under load": ("rmsnorm.naive", 0.30),
}


def _with_mul(profiles: list[WorkloadProfile], amount: float) -> list[WorkloadProfile]:
    """The naive RMSNorm's aten::mul samples times ``1 + amount`` (its total grows by the
    same µs per sample): a timing-only change of one op, same work and calls."""
    if not amount:
        return profiles
    out = []
    for p in profiles:
        mul = p.op(TARGET[1]) if p.name == TARGET[0] else None
        if mul is None:
            out.append(p)
            continue
        extra = [x * amount for x in mul.self_device_time_us]
        ops = tuple(
            replace(o, self_device_time_us=tuple(x * (1 + amount) for x in o.self_device_time_us))
            if o.op == TARGET[1] else o
            for o in p.ops
        )  # fmt: skip
        total = tuple(t + e for t, e in zip(p.device_time_us, extra, strict=False))
        out.append(replace(p, ops=ops, device_time_us=total))
    return out


def with_counts(profiles: list[WorkloadProfile]) -> list[WorkloadProfile]:
    """Profiles with *modelled* instruction counts, as a deterministic callgrind pass gives
    them: the same for the same code in every run, an op's count its calls per iteration
    times a constant of the op and the shape, the total their sum (so one more
    ``aten::mul`` call counts more). Not a measurement: it stands for the CPU default
    metric, which this bench does not run (callgrind costs minutes a variant)."""
    from neuronasv.model.counts import PassCounts

    out = []
    for p in profiles:
        scale = len(p.shape)  # any constant of the configuration: the counts only compare
        per = {o.op: round(o.calls_per_iter * (1000 + 17 * len(o.op)) * scale) for o in p.ops}
        counts = PassCounts(total=float(sum(per.values()) + 5000),
                                   ops={k: float(v) for k, v in per.items()},
                                   valgrind="model", torch="model")  # fmt: skip
        out.append(replace(p, counted=counts))
    return out


def _history(base: list[WorkloadProfile], head: list[WorkloadProfile], states: tuple):
    """A two-commit History of two runs' profiles, as the loader gives it (the series are
    the profiles' own: :meth:`WorkloadProfile.series_samples`, and their instruction counts
    where counted), with each run's machine state where this neuronasv records one
    (``History.run_states``)."""
    from neuronasv.model import History, Series

    a, b = "a" * 40, "b" * 40
    points: dict[SeriesId, list[Point]] = {}
    units: dict[SeriesId, str] = {}
    for order, (commit, profs) in enumerate(((a, base), (b, head))):
        for p in profs:
            for op, xs in p.series_samples("seconds").items():
                sid = SeriesId(f"devtime.{p.name}", (p.shape, p.dtype, op or "total"), p.name,
                               p.shape, p.dtype, op)  # fmt: skip
                points.setdefault(sid, []).append(
                    Point(commit, order, samples.median(xs), tuple(xs))
                )
                units[sid] = "seconds"
            if p.counted is None:
                continue
            for op, n in ((None, p.counted.total), *p.counted.ops.items()):
                sid = SeriesId(f"instr.{p.name}", (p.shape, p.dtype, op or "total"), p.name,
                               p.shape, p.dtype, op)  # fmt: skip
                points.setdefault(sid, []).append(Point(commit, order, n, (n,)))
                units[sid] = "instructions"
    fp = {"backend": "cpu", "device_model": "cpu"}
    kw = {}
    if "run_states" in getattr(History, "__dataclass_fields__", {}):
        kw["run_states"] = {("m", c): st for c, st in zip((a, b), states, strict=True) if st}
    h = History(
        series=tuple(Series("m", "env", sid, units[sid], tuple(v)) for sid, v in points.items()),
        commits=(a, b),
        fingerprints={("m", a): fp, ("m", b): fp},
        profiles={("m", a): tuple(base), ("m", b): tuple(head)},
        **kw,
    )
    return h, a, b


def _state_of(rec: dict):
    """The machine state a run recorded (load at its start and end, the clock), as the
    sidecar records it; None where this neuronasv has no such record."""
    try:
        from neuronasv.model.sidecar import MachineReading, RunState
    except ImportError:
        return None
    return RunState(
        start=MachineReading(load_1m=rec.get("load1"), cpu_mhz=rec.get("mhz")),
        end=MachineReading(load_1m=rec.get("load1_end"), cpu_mhz=rec.get("mhz_end")),
    )


def _moved_together(base: list[WorkloadProfile], head: list[WorkloadProfile]) -> bool:
    """Whether the series of the code no case changes (the fused RMSNorm: total and ops)
    moved by 5 % or more together between the two runs (the median of their log-ratios):
    the bench's own reading of what the load did, independent of the code under test."""
    b, h = series_of(base), series_of(head)
    d = [math.log(np.median(h[s]) / np.median(b[s])) for s in b if s in h]
    return bool(d) and abs(float(np.median(d))) >= math.log(1.05)


def _true_cause(c, case: str) -> bool:
    """Whether a comment's cause is the real change of ``case`` (none for A/A, refactor)."""
    kind, amount = LOAD_CASES[case]
    if kind == "changed" or amount:
        return c.workload == TARGET[0] and TARGET[1] in c.ops
    return False


def comment_eval(
    records: list[dict], trials: int, seed: int, counts: bool = False
) -> dict[str, dict[str, float]]:
    """The PR comment of a quiet base against a head measured beside busy processes, per
    :data:`LOAD_CASES`: ``compare`` on the two runs (no history floors: a young history,
    the adopter's case), then the comment's digest. Per case: false causes per comment
    (causes above the fold that name no real change), comments with any, comments whose
    gate fired without a real change, the first line naming the runner's shift, and the
    real change named (a cause of the naive RMSNorm naming aten::mul). ``counts``: with
    :func:`with_counts`' modelled instruction counts."""
    from neuronasv.analyse.pairwise import compare
    from neuronasv.report.digest import digest

    quiet = [r for r in records if not r.get("busy", 0)]
    loaded = [r for r in records if r.get("busy", 0)]
    pools = {
        "loaded": [(q, h) for q in quiet for h in loaded],
        "quiet": [(q, h) for q in quiet for h in quiet if q is not h],
    }
    out: dict[str, dict[str, float]] = {}
    for case, (kind, amount) in LOAD_CASES.items():
        pairs = pools["quiet" if "quiet" in case else "loaded"]
        pick = np.random.default_rng(seed).permutation(len(pairs))[: min(trials, len(pairs))]
        false = anyf = gate = shifted = named = ops_named = moved = 0
        for i in pick:
            qb, rh = pairs[i]
            pb, ph = profiles_of(qb), profiles_of(rh)
            base = pb["rmsnorm.naive"] + pb["rmsnorm.fused"]
            head = _with_mul(ph[kind], amount) + ph["rmsnorm.fused"]
            if counts:
                base, head = with_counts(base), with_counts(head)
            moved += _moved_together(pb["rmsnorm.fused"], ph["rmsnorm.fused"])
            h, a, b = _history(base, head, (_state_of(qb), _state_of(rh)))
            d = digest(compare(h, a, b, floors={}))
            wrong = [v for v in d.causes if not _true_cause(v.cause, case)]
            false += len(wrong)
            anyf += bool(wrong)
            real = kind == "changed" or amount
            gate += bool(d.gate) and not real
            shifted += d.headline.startswith("the runner shifted")
            named += any(_true_cause(v.cause, case) for v in d.causes)
            ops_named += "aten::" in d.headline and not real
        n = len(pick)
        out[case] = {
            "comments": n,
            "fused series moved ≥ 5 % together (median)": moved / n,
            "false causes per comment": false / n,
            "comments with a false cause": anyf / n,
            "gate fired, no real change": gate / n,
            "op named in the headline, no real change": ops_named / n,
            "first line: the runner shifted": shifted / n,
            "real change named": named / n if (kind == "changed" or amount) else float("nan"),
        }
    return out


def _cell(name: str, v: float) -> str:
    if v != v:  # nan: not asked of this case
        return "—"
    return f"{v:.2f}" if name.startswith("false causes") else f"{v:.0%}"


def print_comment_eval(
    res: dict[str, dict[str, float]], records: list[dict], title: str = ""
) -> None:
    """The table of :func:`comment_eval`, with the loads the runs were measured at."""
    import neuronasv

    quiet = [r for r in records if not r.get("busy", 0)]
    loaded = [r for r in records if r.get("busy", 0)]

    def span(rs: list[dict], key: str) -> str:
        vals = [r[key] for r in rs if r.get(key) is not None]
        return f"{min(vals):.2f}–{max(vals):.2f}" if vals else "n/a"

    busy = loaded[0].get("busy", 0) if loaded else 0
    print(
        f"\nComments under load (issue 39): base a quiet run ({len(quiet)} runs, load"
        f" {span(quiet, 'load1')} at start), head another quiet run or one beside {busy} busy"
        f" processes ({len(loaded)} runs, load {span(loaded, 'load1')} at start,"
        f" {span(loaded, 'load1_end')} at end); no history floors;"
        f" neuronasv from {os.path.dirname(os.path.dirname(neuronasv.__file__))}"
        + (f"\n  {title}" if title else "")
    )
    cols = [c for c in next(iter(res.values())) if c != "comments"] if res else []
    for k, c in enumerate(cols):
        print(f"  ({k}) {c}")
    print(f"{'case':<32}{'pairs':>6}" + "".join(f"{f'({k})':>8}" for k in range(len(cols))))
    for case, row in res.items():
        print(f"{case:<32}{row['comments']:>6.0f}"
              + "".join(f"{_cell(c, row[c]):>8}" for c in cols))  # fmt: skip


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
    ap.add_argument("--loaded-runs", type=int, default=0,
                    help="more processes measured beside --busy spinning ones (cached)")
    ap.add_argument("--busy", type=int, default=4, help="spinning processes of a loaded run")
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
    ap.add_argument("--comments-only", action="store_true",
                    help="only the comments under load (needs --loaded-runs)")  # fmt: skip
    ap.add_argument("--comment-trials", type=int, default=144)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, args.shapes, args.dtype, args.samples, args.active, args.seed)
        return
    t0 = time.time()
    if not args.skip_profile:
        print(
            f"Runs: {args.runs} processes x (naive, fused, naive+mul, refactor) x {args.shapes}"
            f" {args.dtype}, {args.samples} samples of {args.active} iterations; load now"
            f" {os.getloadavg()[0]:.2f}, cache {args.cache}",
            flush=True,
        )
        runs, records = collect(args)
        if args.collect_only:
            return
        if any(r.get("busy", 0) for r in records):
            for counts, title in (
                (False, "time only (no instruction counts: a GPU, or a CPU run without callgrind)"),
                (True, "with instruction counts, modelled (with_counts): equal for the same code"),
            ):
                got = comment_eval(records, args.comment_trials, args.seed, counts)
                print_comment_eval(got, records, title)
        if args.comments_only:
            print(f"\n(total {time.time() - t0:.0f} s)")
            return
        loads = [r.get("load1", float("nan")) for r in records if not r.get("busy", 0)]
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


if __name__ == "__main__":
    main()
