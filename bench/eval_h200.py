"""Detection quality on real NVIDIA H200 runs (prints tables; no asserts).

    .venv/bin/python bench/eval_h200.py [--data ../shared/data/h200] [--trials 400]

The data (``../shared/data/h200/README.md``): 4 profiling processes of the base code and 8
of the eps example, each ``neuronasv profile --backend cuda`` of rmsnorm naive + fused at
4x512 and 8x1024x4096 bf16, 30 samples. Between processes the per-op medians move
0.1–0.2 % (SD); within a run IQR/median is 0–4 %.

- **A/A.** Runs of the *same code* (the 8 eps runs; the 4 base runs for single-run
  comparisons too) are dealt into base and head: one run a side (single) or R interleaved
  rounds. Every series of the comparison (totals and ops, both workloads, both shapes) is
  judged together; a false alarm is any regression/improvement verdict in a comparison.
- **Power at +1 %.** The same draws with one op of >= 10 µs (median) slowed by 1 % at head
  (its total grows by the same absolute amount); the op picked at random per trial. Found
  = that op's series is a regression.
- **Noise floors** (the rounds test's prior and the single run's threshold) come from the
  runs *not* drawn for the comparison, as main-branch history would give them: consecutive
  runs in order, the pair across the base→eps boundary skipped (a change point). With 12
  runs that is little history (df ~ 0.37 x pairs); a real runner's floors rest on its
  main-branch commits. ``--oracle-floors`` uses every run (optimistic: the comparison's own
  runs are in the floor) to show what a long history gives.
- Pool mode (``--runs``) also takes ``--active K`` (judge means of K iterations, as the
  asv suite's samples are; ``--history-active`` for the floors alone), ``--floor-rms EFF``
  (an experimental floor estimator) and ``--decompose`` (process offset vs the median's
  sampling error, projected to more samples); docs/analysis.md has what each showed.
- Rule ``median:0.5%`` (a minimum effect below the 1 % to be found; at ``median:1%`` a true
  +1 % is above the rule only half the time), alpha 0.01, gatekeeping over all series.
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from eval_detection import pairs_for, series_of

from neuronasv import samples
from neuronasv.analyse import stats
from neuronasv.analyse.floors import NoiseFloor, floor_key
from neuronasv.analyse.pairwise import Settings, judge
from neuronasv.analyse.rules import RuleSet
from neuronasv.model import ProfileDocument, SeriesId

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "h200")
Run = dict[SeriesId, np.ndarray]


def read_run(path: str) -> Run:
    with open(path, encoding="utf-8") as fh:
        doc = ProfileDocument.loads(fh.read(), source=path)
    return series_of(list(doc.workloads))


def load(folder: str) -> tuple[list[Run], list[Run]]:
    base = [read_run(os.path.join(folder, f"base-run{i}.json")) for i in range(1, 5)]
    eps = [read_run(os.path.join(folder, f"eps-run{i}.json")) for i in range(1, 9)]
    return base, eps


def as_means(run: Run, active: int) -> Run:
    """The run as a suite with ``active`` iterations averaged per sample would have taken
    it: consecutive groups of ``active`` single-iteration samples, averaged (a remainder
    is dropped)."""
    if active <= 1:
        return run
    out = {}
    for sid, x in run.items():
        k = (len(x) // active) * active
        out[sid] = np.asarray(x[:k], dtype=float).reshape(-1, active).mean(axis=1)
    return out


def load_glob(pattern: str) -> list[Run]:
    """Runs in the order they were made (run1, run2, ... run10: by name length, then name)."""
    paths = sorted(glob.glob(pattern), key=lambda p: (len(p), p))
    if not paths:
        raise SystemExit(f"no profile documents match {pattern!r}")
    return [read_run(p) for p in paths]


#: ``--floor-rms EFF``: floors as the RMS of the consecutive log-ratios (the variance the
#: moderated t assumes) worth EFF x pairs degrees of freedom, instead of the product's
#: robust MAD floor worth 0.37 x pairs. An experiment, not what the product does.
FLOOR_RMS: float | None = None


def _rms_floor(values: list[float], breaks: list[int]) -> NoiseFloor | None:
    got = stats.noise_floor(values, breaks)  # the same pairs, the same checks
    lr = stats.same_level_log_ratios(values, breaks)
    if got is None or lr is None or FLOOR_RMS is None:
        return None
    rms = max(float(np.sqrt(np.mean(lr**2))), stats.MIN_FLOOR)
    # NoiseFloor.df is MAD_EFFICIENCY x pairs: scale the pairs to credit FLOOR_RMS x pairs.
    return NoiseFloor(rms, max(1, round(got[1] * FLOOR_RMS / stats.MAD_EFFICIENCY)))


def floors(history: list[list[Run]], n: int) -> dict:
    """Floors from runs in order, one list per code version (no pair across versions)."""
    vals: dict[SeriesId, list[tuple[int, float]]] = {}
    for g, runs in enumerate(history):
        for r in runs:
            for sid, x in r.items():
                vals.setdefault(sid, []).append((g, samples.median(list(x[:n]))))
    out = {}
    for sid, seq in vals.items():
        breaks = [i for i in range(1, len(seq)) if seq[i][0] != seq[i - 1][0]]
        got = stats.noise_floor([v for _, v in seq], breaks)
        if got is not None and got[1] >= 3:
            rms = _rms_floor([v for _, v in seq], breaks)
            out[floor_key(sid)] = rms if rms is not None else NoiseFloor(*got)
    return out


def inject(r: Run, target: SeriesId, amount: float) -> Run:
    out = dict(r)
    extra = r[target] * amount
    out[target] = r[target] + extra
    tot = SeriesId(target.benchmark, (), target.workload, target.shape, target.dtype)
    out[tot] = r[tot] + extra
    return out


def targets(runs: list[Run], min_us: float = 10.0) -> list[SeriesId]:
    common = set.intersection(*(set(r) for r in runs))
    return sorted(
        (s for s in common if s.op and float(np.median(runs[0][s])) >= min_us),
        key=lambda s: s.label,
    )


def trial(
    rng, base_runs, eps_runs, rounds, amount, st, oracle, n, target_pool
) -> tuple[bool, bool | None]:
    """One comparison: (any false alarm, target found or None in A/A)."""
    pool = eps_runs
    if rounds == 1 and rng.random() < 1 / 3:
        pool = base_runs  # single-run A/A draws from both groups
    order = rng.permutation(len(pool))
    b = [pool[i] for i in order[:rounds]]
    h = [pool[i] for i in order[rounds : 2 * rounds]]
    used = {id(x) for x in b + h}
    if oracle:
        fl = floors([base_runs, eps_runs], n)
    else:
        rest_b = [r for r in base_runs if id(r) not in used]
        rest_e = [r for r in eps_runs if id(r) not in used]
        fl = floors([rest_b, rest_e], n)
    target = None
    if amount:
        cands = [t for t in target_pool if all(t in r for r in h)]
        target = cands[rng.integers(len(cands))]
        h = [inject(r, target, amount) for r in h]
    fs = judge(pairs_for(b, h, n, rng), st, fl)
    flagged = [f for f in fs if f.state.time in ("slower", "faster")]
    if target is None:
        return bool(flagged), None
    tot = SeriesId(target.benchmark, (), target.workload, target.shape, target.dtype)
    others = [f for f in flagged if f.series not in (target, tot)]
    found = any(f.series == target and f.state.time == "slower" for f in fs)
    return bool(others), found


def pool_trial(
    rng, pool, history, design, amount, st, n, target_pool, max_rounds, oracle=False
) -> tuple[bool, bool | None, int, SeriesId | None]:
    """One comparison drawn from ``pool`` (runs of one code, in time order).

    ``design`` is R (fixed interleaved rounds; 1 = one run a side) or ``"adaptive"`` (one
    run a side nominates suspects, then :func:`confirm` adds rounds 3 .. ``max_rounds``
    from fresh runs). Floors: every ``history`` group plus the pool runs not drawn.
    Returns (any false alarm, target found or None in A/A, rounds used).
    """
    from neuronasv.analyse.confirm import confirm
    from neuronasv.model import FindingsDocument, RunRef

    need = 2 + 2 * max_rounds if design == "adaptive" else 2 * int(design)
    order = rng.permutation(len(pool))[:need]
    used = set(order.tolist())
    rest = pool if oracle else [r for i, r in enumerate(pool) if i not in used]
    fl = floors([*history, rest], n)
    target = None
    if amount:
        target = target_pool[rng.integers(len(target_pool))]

    def side(i: int, head: bool) -> Run:
        r = pool[i]
        return inject(r, target, amount) if head and target is not None else r

    if design == "adaptive":
        b0, h0 = side(order[0], False), side(order[1], True)
        fs = judge(pairs_for([b0], [h0], n, rng), st, fl)
        doc = FindingsDocument("compare", RunRef("a" * 40, "m"), RunRef("b" * 40, "m"), tuple(fs))
        bases = [side(i, False) for i in order[2 : 2 + max_rounds]]
        heads = [side(i, True) for i in order[2 + max_rounds :]]

        def runner(which, series, r):
            src = (bases if which == "base" else heads)[r]
            size = min(x.size for x in src.values())
            idx = np.sort(rng.choice(size, min(n, size), replace=False))
            return {sid: list(src[sid][idx]) for sid in series if sid in src}

        got = confirm(doc, runner, rounds=3, max_rounds=max_rounds, settings=st, floors=fl)
        fs = list(got.findings)
        rounds_used = int(got.settings.get("rounds", 0) or 0)
    else:
        r = int(design)
        b = [side(i, False) for i in order[:r]]
        h = [side(i, True) for i in order[r:]]
        fs = judge(pairs_for(b, h, n, rng), st, fl)
        rounds_used = r
    flagged = [f for f in fs if f.state.time in ("slower", "faster")]
    if target is None:
        return bool(flagged), None, rounds_used, None
    tot = SeriesId(target.benchmark, (), target.workload, target.shape, target.dtype)
    others = [f for f in flagged if f.series not in (target, tot)]
    found = any(f.series == target and f.state.time == "slower" for f in fs)
    return bool(others), found, rounds_used, target


def between_sd(runs: list[Run], sid: SeriesId, n: int) -> float:
    """Between-process SD of the series' n-sample medians, in % of their mean."""
    meds = np.array([stats.median(list(r[sid][:n])) for r in runs if sid in r])
    return float(np.std(meds, ddof=1) / np.mean(meds) * 100.0)


def decompose(runs: list[Run], sids: list[SeriesId], n_max: int, seed: int) -> None:
    """Between-process variance of an op's per-run median = process offset + sampling error.

    For m <= n_max samples a run, a random m-subset of a run's samples is itself m draws of
    that run, so the across-run variance of the subset medians estimates
    ``s_proc^2 + s_w^2 / m`` (the median's sampling variance falls as 1/m). A least-squares
    fit over several m splits the two and projects the SD at m beyond the data, assuming
    samples of one run are exchangeable (no drift within a run). A round's log-ratio ``d``
    has twice this variance.
    """
    rng = np.random.default_rng(seed)
    ms = sorted({m for m in (10, 15, 20, 25, 50, n_max) if m <= n_max})  # the 1/m regime
    proj = (30, 100, 200, 500)
    print(f"\nbetween-process SD of a run's median ({len(runs)} runs x up to {n_max} samples),"
          " by samples a run; fit s_proc^2 + s_w^2/m; projected where m exceeds the data")
    head = " ".join(f"{'m=' + str(m):>7}" for m in ms)
    print(f"{'op':<40} {head} {'s_proc':>7} {'s_w':>6} | "
          + " ".join(f"{'~' + str(m):>6}" for m in proj))
    for sid in sids:
        xs = [np.asarray(r[sid][:n_max]) for r in runs if sid in r]
        var = []
        for m in ms:
            reps = 1 if m == n_max else 300
            vs = [
                np.var(np.log([np.median(rng.choice(x, m, replace=False)) for x in xs]), ddof=1)
                for _ in range(reps)
            ]
            var.append(float(np.mean(vs)))
        a = np.c_[np.ones(len(ms)), 1.0 / np.array(ms, dtype=float)]
        (sp, sw), *_ = np.linalg.lstsq(a, np.array(var), rcond=None)
        sp, sw = max(float(sp), 0.0), max(float(sw), 0.0)
        cells = " ".join(f"{np.sqrt(v) * 100:>6.2f}%" for v in var)
        projected = " ".join(f"{np.sqrt(sp + sw / m) * 100:>5.2f}%" for m in proj)
        print(f"{sid.op + ' ' + str(sid.shape):<40} {cells} {np.sqrt(sp) * 100:>6.2f}%"
              f" {np.sqrt(sw) * 100:>5.2f}% | {projected}")


def pool_main(args, st) -> None:
    t0 = time.time()
    pool = [as_means(r, args.active) for r in load_glob(args.runs)]
    h_active = args.active if args.history_active is None else args.history_active
    history = [[as_means(r, h_active) for r in load_glob(g)] for g in args.history]
    if args.active > 1:
        args.n = min(args.n, min(min(x.size for x in r.values()) for r in pool))
    tp = targets(pool)
    if args.decompose:
        decompose(pool, tp, args.n, args.seed)
        return
    print(
        f"pool: {len(pool)} processes of one code ({args.runs}); floors from"
        f" {' + '.join(str(len(h)) for h in history) or 'no'} history runs + the pool runs"
        f" {'all in the pool (oracle)' if args.oracle_floors else 'not drawn'}; op share"
        f" {st.op_share:.0%}; {len(pool[0])} series a comparison, n={args.n}"
        f"{f' means of {args.active} iterations' if args.active > 1 else ''}, rule {args.rule},"
        f" alpha {st.alpha}, {args.trials} trials"
    )
    print(f"ops >= 10 µs (targets): {', '.join(s.label for s in tp)}")
    print(f"\n{'design':<30} {'A/A false alarms':>17} {'+1 % found':>11} {'+2 % found':>11}"
          f" {'rounds':>7}")
    designs: list = [int(x) for x in args.designs.split(",") if x]
    if args.max_rounds:
        designs.append("adaptive")
    for design in designs:
        rng = np.random.default_rng(args.seed + (99 if design == "adaptive" else int(design)))
        res = []
        for amount in (0.0, 0.01, 0.02):
            got = [
                pool_trial(
                    rng, pool, history, design, amount, st, args.n, tp, args.max_rounds,
                    oracle=args.oracle_floors,
                )
                for _ in range(args.trials)
            ]
            res.append(got)
        fa = sum(g[0] for g in res[0]) / args.trials
        p1 = sum(bool(g[1]) for g in res[1]) / args.trials
        p2 = sum(bool(g[1]) for g in res[2]) / args.trials
        mean_r = np.mean([g[2] for r in res for g in r])
        name = (
            f"adaptive 1 + 3..{args.max_rounds} rounds"
            if design == "adaptive"
            else "one run a side" if design == 1 else f"{design} interleaved rounds"
        )
        print(f"{name:<30} {fa:>16.1%} {p1:>10.1%} {p2:>10.1%} {mean_r:>7.1f}", flush=True)
        per = []
        for t in tp:
            hits = [bool(g[1]) for g in res[1] if g[3] == t]
            if hits:
                sd = between_sd(pool, t, args.n)
                per.append(f"{t.op} {t.shape} (sd {sd:.2f} %): {sum(hits) / len(hits):.0%}")
        print(f"{'':<30} +1 % by op: {'; '.join(per)}")
    print(f"\n(total {time.time() - t0:.0f} s, load {os.getloadavg()[0]:.2f})")


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--trials", type=int, default=400)
    ap.add_argument("--n", type=int, default=30, help="samples a run (the data has 30)")
    ap.add_argument("--rule", default="median:0.5%")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--oracle-floors", action="store_true")
    ap.add_argument("--runs", help="glob of profile JSONs of one code (pool mode)")
    ap.add_argument("--history", action="append", default=[],
                    help="glob of history runs for the floors (repeatable; one code each)")
    ap.add_argument("--designs", default="1,2,3,4", help="fixed round counts (pool mode)")
    ap.add_argument("--op-share", type=float, default=None,
                    help="share of alpha the op series start with (default: the product's)")
    ap.add_argument("--active", type=int, default=1,
                    help="judge samples that average this many iterations, as the asv suite"
                         " (and so confirm) takes them: 3 (pool mode; n becomes 30/3)")
    ap.add_argument("--history-active", type=int, default=None,
                    help="iterations per sample of the history runs (the floors) when they"
                         " differ from the compared runs' (default: --active)")
    ap.add_argument("--floor-rms", type=float, default=None, metavar="EFF",
                    help="experiment: RMS floors worth EFF x pairs degrees of freedom")
    ap.add_argument("--decompose", action="store_true",
                    help="split each target op's between-run noise into process offset and"
                         " the median's sampling error, projected to more samples (pool mode)")
    ap.add_argument("--max-rounds", type=int, default=0,
                    help="also the adaptive design up to this many rounds (pool mode)")
    args = ap.parse_args()
    global FLOOR_RMS
    FLOOR_RMS = args.floor_rms
    if args.runs:
        kw = {} if args.op_share is None else {"op_share": args.op_share}
        pool_main(args, Settings(rules=RuleSet.parse([args.rule]), resamples=0, **kw))
        return
    t0 = time.time()
    base_runs, eps_runs = load(args.data)
    st = Settings(rules=RuleSet.parse([args.rule]), resamples=0)
    pool = targets(eps_runs)
    nser = len(eps_runs[0])
    print(
        f"H200 runs: {len(base_runs)} base + {len(eps_runs)} eps processes, {nser} series a"
        f" comparison, n={args.n}, rule {args.rule}, alpha {st.alpha},"
        f" {'oracle' if args.oracle_floors else 'held-out'} floors, {args.trials} trials"
    )
    print(f"ops >= 10 µs (targets): {', '.join(s.label for s in pool)}")
    print(f"\n{'design':<22} {'A/A false alarms':>18} {'+1 % found':>12} {'+2 % found':>12}")
    for rounds in (1, 2, 3, 4):
        rng = np.random.default_rng(args.seed + rounds)
        fa = sum(
            trial(rng, base_runs, eps_runs, rounds, 0.0, st, args.oracle_floors, args.n, pool)[0]
            for _ in range(args.trials)
        )
        found = {}
        for amount in (0.01, 0.02):
            oracle = args.oracle_floors
            hits = [
                trial(rng, base_runs, eps_runs, rounds, amount, st, oracle, args.n, pool)
                for _ in range(args.trials)
            ]
            found[amount] = sum(bool(h[1]) for h in hits)
        name = "one run a side" if rounds == 1 else f"{rounds} interleaved rounds"
        print(
            f"{name:<22} {fa / args.trials:>17.1%} {found[0.01] / args.trials:>11.1%}"
            f" {found[0.02] / args.trials:>11.1%}"
        )
    print(f"\n(total {time.time() - t0:.0f} s, load {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
