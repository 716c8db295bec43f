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
- Rule ``median:0.5%`` (a minimum effect below the 1 % to be found; at ``median:1%`` a true
  +1 % is above the rule only half the time), alpha 0.01, gatekeeping over all series.
"""

from __future__ import annotations

import argparse
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


def load(folder: str) -> tuple[list[Run], list[Run]]:
    def read(name: str) -> Run:
        with open(os.path.join(folder, name), encoding="utf-8") as fh:
            doc = ProfileDocument.loads(fh.read(), source=name)
        return series_of(list(doc.workloads))

    base = [read(f"base-run{i}.json") for i in range(1, 5)]
    eps = [read(f"eps-run{i}.json") for i in range(1, 9)]
    return base, eps


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
            out[floor_key(sid)] = NoiseFloor(*got)
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
    flagged = [f for f in fs if f.verdict in ("regression", "improvement")]
    if target is None:
        return bool(flagged), None
    tot = SeriesId(target.benchmark, (), target.workload, target.shape, target.dtype)
    others = [f for f in flagged if f.series not in (target, tot)]
    found = any(f.series == target and f.verdict == "regression" for f in fs)
    return bool(others), found


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
    args = ap.parse_args()
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
