"""Between-run variance: the rounds test, noise floors, confirmation (simulated runs).

A simulated run gives every sample of a series the same random offset (``between``), the
way a separate profiling process does, on top of within-run noise (``within``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from neuronasv.analyse import stats
from neuronasv.analyse.confirm import confirm
from neuronasv.analyse.floors import NoiseFloor, floor_key, noise_floors
from neuronasv.analyse.pairwise import PairInput, Settings, judge
from neuronasv.model import (
    Finding,
    History,
    Point,
    Series,
    SeriesId,
)
from tests.builders import compare_doc, finding, verdict_of

M = 60  # series per comparison (the CPU suite's small shapes have 58)


def sid(i: int) -> SeriesId:
    # Two workloads: each series' rounds prior is pooled from the other workload's.
    wl = "w" if i % 2 else "v"
    return SeriesId(f"b.devtime_{i:03d}", (), wl, "4x512", "bfloat16", f"op{i:03d}")


def run(rng, level: float, between: float, within: float, n: int = 10) -> tuple[float, ...]:
    offset = math.exp(rng.normal(0.0, between))
    return tuple(level * offset * np.exp(rng.normal(0.0, within, n)))


def pairs_for(rng, rounds: int, between, within=0.05, shift=None) -> list[PairInput]:
    shift = shift or {}
    out = []
    for i in range(M):
        br = tuple(run(rng, 100.0, between[i], within) for _ in range(rounds))
        hr = tuple(run(rng, 100.0 * shift.get(i, 1.0), between[i], within) for _ in range(rounds))
        pb, ph = [x for r in br for x in r], [x for r in hr for x in r]
        out.append(
            PairInput(
                sid(i),
                "seconds",
                Point("a", 0, float(np.median(pb)), tuple(pb)),
                Point("b", 1, float(np.median(ph)), tuple(ph)),
                br if rounds > 1 else (),
                hr if rounds > 1 else (),
            )
        )
    return out


def alarms(fs: list[Finding]) -> list[str]:
    return [f.series.op or "" for f in fs if verdict_of(f) in ("regression", "improvement")]


# Per-series between-run sd: 3 % to 15 % (a tiny op is much noisier than a large one).
BETWEEN = np.exp(np.linspace(math.log(0.03), math.log(0.15), M))


@pytest.mark.slow  # a seeded simulation of many comparisons: the full lane
@pytest.mark.parametrize("rounds", [2, 3])
def test_aa_with_run_offsets_false_alarms_per_comparison_at_most_nominal(rounds):
    """100 A/A comparisons x 60 series with per-run offsets: alpha 0.01 per comparison."""
    rng = np.random.default_rng(10 + rounds)
    st = Settings(resamples=0)
    trials, hits, single_hits = 100, 0, 0
    for _ in range(trials):
        pairs = pairs_for(rng, rounds, BETWEEN)
        hits += bool(alarms(judge(pairs, st)))
        if _ < 10:  # the within-run test on one run a side: what the rounds test fixes
            one = [PairInput(p.series, p.unit, p.base, p.head) for p in pairs_for(rng, 1, BETWEEN)]
            single_hits += bool(alarms(judge(one, st, {})))
    # Binomial(100, 0.01): P(X >= 4) = 1.8 %; an anti-conservative test would be far above.
    assert hits <= 3
    assert single_hits >= 8  # of 10: run offsets alone make it alarm


def test_injected_ten_percent_found_with_rounds_and_nothing_else():
    rng = np.random.default_rng(5)
    between = np.full(M, 0.01)  # a quiet runner: 1 % run-to-run, 2 % within a run
    pairs = pairs_for(rng, 4, between, within=0.02, shift={17: 1.10})
    fs = judge(pairs, Settings(resamples=0))
    assert alarms(fs) == ["op017"]
    f = fs[17]
    assert verdict_of(f) == "regression" and f.ci_low is not None and f.ci_low > 1.0
    assert f.ci_high is not None and f.ci_high > 1.10 > f.ci_low
    assert "moderated t over 4 rounds" in f.reason and "every round the same way" in f.reason
    assert f.p_adjusted is not None and f.p_adjusted < 0.01


def test_round_inconsistent_shift_is_not_a_verdict():
    base = ((100.0, 101.0, 99.0), (100.0, 101.0, 99.0), (100.0, 101.0, 99.0))
    head = ((130.0, 131.0, 129.0), (128.0, 129.0, 127.0), (96.0, 97.0, 95.0))
    pi = PairInput(
        sid(0),
        "seconds",
        Point("a", 0, 100.0, sum(base, ())),
        Point("b", 1, 120.0, sum(head, ())),
        base,
        head,
    )
    # A tight floor (1 %, 200 pairs) makes the mean shift significant on its own...
    fl = {floor_key(sid(0)): NoiseFloor(0.01, 200)}
    (f,) = judge([pi], Settings(resamples=0), fl)
    assert f.p_adjusted is not None and f.p_adjusted < 0.01
    # ...but one round went the other way: not a regression.
    assert verdict_of(f) == "noisy" and "rounds disagree" in f.reason and "-4.0 %" in f.reason


def test_floor_widens_single_run_threshold():
    rng = np.random.default_rng(2)
    a = tuple(100.0 * np.exp(rng.normal(0, 0.01, 20)))
    b = tuple(108.0 * np.exp(rng.normal(0, 0.01, 20)))
    pi = PairInput(sid(1), "seconds", Point("a", 0, 100.0, a), Point("b", 1, 108.0, b))
    (plain,) = judge([pi], Settings(resamples=0))
    assert verdict_of(plain) == "regression"  # within-run test: +8 % is plainly significant
    fl = {floor_key(sid(1)): NoiseFloor(0.03, 59)}
    (f,) = judge([pi], Settings(resamples=0), fl)
    k = stats.floor_k(0.01, 1, 0.37 * 59)
    assert k == pytest.approx(sps.t.isf(0.005, 0.37 * 59))
    assert verdict_of(f) == "noisy" and f.p_value == plain.p_value
    band = (math.exp(k * 0.03) - 1) * 100
    assert f"within the between-run noise floor (±{band:.1f} %" in f.reason
    assert "3.0 % from 59 main-branch run pairs" in f.reason and "neuronasv confirm" in f.reason
    # A change beyond the floor is still a regression, and the reason names the floor.
    big = PairInput(
        sid(1), "seconds", Point("a", 0, 100.0, a), Point("b", 1, 130.0, tuple(x * 1.3 for x in a))
    )
    (g,) = judge([big], Settings(resamples=0), fl)
    assert verdict_of(g) == "regression" and f"±{band:.1f} % noise floor" in g.reason


def test_noise_floors_from_history_skip_change_points():
    rng = np.random.default_rng(4)
    n = 60
    vals = 100.0 * np.exp(rng.normal(0, 0.03, n))
    vals[30:] *= 1.5  # a real change point: must not inflate the floor
    commits = [f"{i:040x}" for i in range(n)]
    s = Series(
        "m",
        "env",
        sid(2),
        "seconds",
        tuple(Point(c, i, float(v)) for i, (c, v) in enumerate(zip(commits, vals, strict=True))),
    )
    short = Series(
        "m", "env", sid(3), "seconds", tuple(Point(c, i, 1.0) for i, c in enumerate(commits[:4]))
    )
    h = History(series=(s, short), commits=tuple(commits))
    fl = noise_floors(h, "m", exclude=(commits[-1],))
    assert set(fl) == {floor_key(sid(2))}  # 4 points: too little history for a floor
    f = fl[floor_key(sid(2))]
    # Consecutive log-ratios of iid 3 % noise have sd 3 % x sqrt(2) = 4.2 %.
    assert 0.025 < f.sd < 0.065 and f.pairs == n - 3  # head excluded, the step skipped
    lr = np.diff(np.log(vals[: n - 1]))
    assert stats.MAD_K * np.median(np.abs(lr)) > f.sd  # with the step it would be wider


def test_moderated_t():
    d = [0.05, 0.08, 0.02, 0.06]
    mean, se, df, p = stats.moderated_t(d)
    ref = sps.ttest_1samp(d, 0.0)
    assert p == pytest.approx(ref.pvalue) and df == 3 and mean == pytest.approx(0.0525)
    # A prior pulls the variance toward itself and adds its df.
    _, se2, df2, _ = stats.moderated_t(d, 0.1**2, 10)
    assert df2 == 13 and se2 > se


def test_confirm_uses_rounds_and_rejects_inconsistent_rounds():
    ids = [sid(i) for i in range(8)]
    findings = tuple(
        finding(s, "regression" if i < 2 else "unchanged", base=1.0, head=1.2)
        for i, s in enumerate(ids)
    )
    doc = compare_doc(*findings)
    rng = np.random.default_rng(8)
    head_shift = {0: [1.15, 1.15, 1.15], 1: [1.30, 1.25, 0.95]}  # op001 flips in round 3

    def runner(side, series, rnd):
        offset = math.exp(rng.normal(0, 0.01))
        return {
            s: [
                100.0
                * offset
                * (head_shift.get(i, [1, 1, 1])[rnd] if side == "head" else 1.0)
                * math.exp(rng.normal(0, 0.01))
                for _ in range(10)
            ]
            for i, s in enumerate(ids)
            if s in series
        }

    got = confirm(doc, runner, rounds=3)
    by = {f.series.op: f for f in got.findings}
    op0, op1 = by["op000"], by["op001"]
    assert op0.state.confirmed and "every round the same way" in op0.reason
    assert op0.ratio == pytest.approx(1.15, rel=0.03)  # the rounds' estimate now
    assert op0.remeasured and op0.estimate.rounds == 3
    # the rounds' estimate: geometric means of the round medians, their ratio the judged one
    assert op0.ratio == op0.head / op0.base  # type: ignore[operator]
    assert op1.remeasured and not op1.state.confirmed and op1.state.time == "undecided"
    assert "(+32 %, +25 %, -5.6 %" in op1.reason
    assert all(not by[f"op{i:03d}"].remeasured for i in range(2, 8))
    assert "rounds test" in got.settings["confirm"]
