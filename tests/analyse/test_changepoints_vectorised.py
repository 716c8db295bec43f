"""The batched change-point detector against the former one (``changepoints_reference``).

Same change points (indices), the same means around them (bit for bit: ``numpy.mean``
of the same slices), the same p-values within floating tolerance (Welch's t from array
sums instead of ``scipy.stats.ttest_ind``'s, the same ``stdtr``), on generated series of
every shape the detector meets: flat noise, steps up and down, several steps, exact
instruction counts with a few unstable points, log-normal timings, quantised timings,
outliers, short series and series longer than the window; under several settings; and
whole histories with the exact-count rule, environment changes and acknowledgements.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator
from pathlib import Path

import changepoints_reference as ref
import numpy as np
import pytest

from neuronasv.analyse.acks import Acknowledgement
from neuronasv.analyse.changepoints import (
    CPSettings,
    RawChange,
    detect,
    detect_history,
    detect_many,
)
from neuronasv.analyse.edivisive import window_candidates
from neuronasv.analyse.patterns import SeriesPattern
from neuronasv.model import History, Point, Series, SeriesId, WorkloadProfile
from neuronasv.model.counts import PassCounts
from neuronasv.store.history import load_history
from tests.publish.conftest import load_synth

SETTINGS = [
    CPSettings(),
    CPSettings(window=8, max_pvalue=0.05, min_magnitude=0.0),
    CPSettings(window=20, max_pvalue=0.3, min_magnitude=0.05),
    CPSettings(window=120, max_pvalue=0.001, min_magnitude=0.0),
]
KINDS = 7


def series_of(kind: int, rng: np.random.Generator, n: int) -> np.ndarray:
    """One generated series of ``n`` points (``kind`` 0-6)."""
    i = np.arange(n)
    if kind == 0:  # flat noise
        return rng.normal(100.0, 2.0, n)
    if kind == 1:  # one step, up or down
        at, to = int(rng.integers(1, n)), float(rng.uniform(85.0, 120.0))
        return np.where(i < at, rng.normal(100.0, 2.0, n), rng.normal(to, 2.0, n))
    if kind == 2:  # exact counts: a step of any size, a few unstable points
        x = 1e9 + (i >= int(rng.integers(0, n))) * float(rng.integers(1, 10**6))
        x[rng.random(n) < 0.05] += 7.0
        return x
    if kind == 3:  # quantised timings (1.5 µs read at 10 ns)
        return np.round(rng.lognormal(np.log(1.5e-6), 0.01, n), 8)
    if kind == 4:  # log-normal device time, +30 % at two thirds, one outlier
        x = rng.lognormal(np.log(1e-3), 0.05, n) * np.where(i > 2 * n // 3, 1.3, 1.0)
        x[int(rng.integers(0, n))] *= 8.0
        return x
    if kind == 5:  # several steps
        levels = rng.uniform(50.0, 150.0, 4)
        return levels[np.minimum(i * 4 // n, 3)] + rng.normal(0.0, 1.0, n)
    return rng.normal(1e-4, 1e-6, n) + (i >= n // 2) * 3e-6  # a small shift in small values


def generated(seed: int, count: int, max_n: int = 200) -> Iterator[np.ndarray]:
    rng = np.random.default_rng(seed)
    for k in range(count):
        yield series_of(k % KINDS, rng, int(rng.integers(4, max_n)))


def same(old: list[RawChange], new: list[RawChange]) -> bool:
    return [c.index for c in old] == [c.index for c in new] and all(
        a.before == b.before
        and a.after == b.after
        and math.isclose(a.p_value, b.p_value, rel_tol=1e-7, abs_tol=1e-300)
        for a, b in zip(old, new, strict=True)
    )


def check(series: list[np.ndarray], settings: CPSettings) -> int:
    """Compare both detectors on ``series``; the number of series with change points."""
    with warnings.catch_warnings():  # scipy's "catastrophic cancellation" on flat stretches
        warnings.simplefilter("ignore", RuntimeWarning)
        old = [ref.detect(x, settings) for x in series]
        old_cands = [ref.candidates(x, settings) for x in series]
    new = detect_many(series, settings)
    found = window_candidates(series, settings.window, settings.max_pvalue)
    for x, o, nw, oc, per in zip(series, old, new, old_cands, found, strict=True):
        assert oc == {c for cs in per.values() for c in cs}, x.tolist()
        assert same(o, nw), (x.tolist(), o, nw)
    return sum(bool(o) for o in old)


@pytest.mark.parametrize("settings", SETTINGS[:2], ids=["default", "w8-p05"])
def test_same_change_points_as_the_former_detector(settings: CPSettings) -> None:
    found = check(list(generated(7, 35, max_n=120)), settings)
    assert found >= 12  # the comparison covered change points, not only their absence


#: (setting, seed): 280 series a setting, 140 for w20-p3 — its former detector's t-tests over
#: a wide window take ~40 s a seed, the most of this module (4 seeds cost CI ~5 min).
MANY = [
    pytest.param(SETTINGS[k], seed, id=f"{seed}-{name}")
    for seed in range(2)
    for k, name in enumerate(["default", "w8-p05", "w20-p3", "w120"])
    if not (name == "w20-p3" and seed == 1)
]


@pytest.mark.slow
@pytest.mark.parametrize(("settings", "seed"), MANY)
def test_same_change_points_on_many_series(settings: CPSettings, seed: int) -> None:
    found = check(list(generated(100 + seed, 140, max_n=400)), settings)
    assert found >= 40


def test_a_constant_stretch_has_no_rounding_change_points() -> None:
    """0.1 then 0.2, exactly: one change. A side whose values are all equal has variance
    exactly 0 here; the former detector's ``numpy.std`` left ~1e-17 of rounding on such a
    side (its mean of 0.1s is not exactly 0.1), so its t-test saw huge t's inside the flat
    stretches and, with no minimum magnitude, reported change points of size 1e-16."""
    x = np.array([0.1] * 61 + [0.2] * 59)
    got = detect(x, CPSettings(min_magnitude=0.0))
    assert [(c.index, c.p_value, c.before, c.after) for c in got] == [
        (61, 0.0, float(np.mean(x[:61])), float(np.mean(x[61:])))
    ]


def test_known_windows_are_not_searched_again_and_give_the_same_answer() -> None:
    xs = list(generated(3, 14, max_n=300))
    fresh: dict[int, dict[int, tuple[int, ...]]] = {}
    want = detect_many(xs, searched=lambda i, per: fresh.__setitem__(i, per))
    # every window but each series' last one known: only those are searched again
    known = [{s: c for s, c in sorted(per.items())[:-1]} for _i, per in sorted(fresh.items())]
    seen: dict[int, dict[int, tuple[int, ...]]] = {}
    got = detect_many(xs, known=known, searched=lambda i, per: seen.__setitem__(i, per))
    assert got == want and seen == fresh
    # a window the caller claims is known is taken as given: the cache's job is to
    # offer only windows whose values it checked (store/cpcache.py)
    lie = [dict.fromkeys(per, ()) for _i, per in sorted(fresh.items())]
    assert all(r == [] for r in detect_many(xs, known=lie))


def _instr_history(rng: np.random.Generator) -> History:
    """Device time and instruction counts of one workload over 90 commits: steps, an
    unstable count, a torch upgrade, several environments."""
    n = 90
    commits = tuple(f"{i:08x}" + "c" * 32 for i in range(n))
    i = np.arange(n)

    def series(
        bench: str, unit: str, op: str | None, values: np.ndarray, env: str = "py"
    ) -> Series:
        params = ("'4x512'", "'float32'") + ((repr(op),) if op else ())
        sid = SeriesId(f"rmsnorm.Naive.{bench}", params, "rmsnorm.naive", "4x512", "float32", op)
        pts = tuple(
            Point(c, k, None if math.isnan(v) else float(v))
            for k, (c, v) in enumerate(zip(commits, values, strict=True))
        )
        return Series("m", env, sid, unit, pts)

    mul_t = rng.lognormal(np.log(2e-4), 0.02, n) * np.where(i >= 40, 1.25, 1.0)
    mul_t[10] = math.nan
    add_t = rng.lognormal(np.log(5e-5), 0.03, n) * np.where((i >= 20) & (i < 55), 0.8, 1.0)
    tot_t = mul_t + add_t + 1e-4
    mul_i = np.where(i >= 30, 12_126.0, 12_102.0)
    tot_i = np.where(i >= 60, 68_729.0, 68_722.0) + np.where(i == 70, 3.0, 0.0)
    shaky = PassCounts(total=1.0, deterministic=False, unstable=("total",))
    profiles = {
        ("m", c): (
            WorkloadProfile("rmsnorm.naive", "cpu", "4x512", "float32", (1.0,), (),
                            counted=shaky if k in (70, 71, 80) else None),
        )
        for k, c in enumerate(commits)
    }  # fmt: skip
    fps = {("m", c): {"backend": "cpu", "torch": "2.13.0" if k >= 40 else "2.12.0"}
           for k, c in enumerate(commits)}  # fmt: skip
    rows = (
        series("devtime_op", "seconds", "aten::mul", np.where(np.isnan(mul_t), math.nan, mul_t)),
        series("devtime_op", "seconds", "aten::add", add_t),
        series("devtime_total", "seconds", None, tot_t),
        series("devtime_total", "seconds", None, tot_t * 1.01, env="py-other"),
        series("instr_op", "instructions", "aten::mul", mul_i),
        series("instr_total", "instructions", None, tot_i),
    )
    return History(rows, commits, fingerprints=fps, profiles=profiles)


def _same_documents(history: History, settings: CPSettings | None = None) -> int:
    settings = settings or CPSettings()
    acks = [Acknowledgement(SeriesPattern.parse("*aten::add*"), "*", "expected")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        old = ref.detect_history(history, settings=settings, acks=acks, created="t")
    new = detect_history(history, settings=settings, acks=acks, created="t")
    assert len(old.change_points) == len(new.change_points)
    for a, b in zip(old.change_points, new.change_points, strict=True):
        assert math.isclose(a.p_value, b.p_value, rel_tol=1e-7, abs_tol=1e-300)
    strip = [c.__class__(**{**c.__dict__, "p_value": 0.0, "reason": ""})
             for d in (old, new) for c in d.change_points]  # fmt: skip
    assert strip[: len(old.change_points)] == strip[len(old.change_points) :]
    assert [c.reason.split(" (t-test")[0] for c in old.change_points] == [
        c.reason.split(" (t-test")[0] for c in new.change_points
    ]
    assert old.head == new.head and old.settings == new.settings
    return len(new.change_points)


@pytest.mark.parametrize("seed", range(3))
def test_history_documents_match_with_exact_counts_envs_and_acks(seed: int) -> None:
    h = _instr_history(np.random.default_rng(seed))
    assert _same_documents(h) >= 4
    assert _same_documents(h, CPSettings(window=20, max_pvalue=0.01, min_magnitude=0.0)) >= 4


def test_history_documents_match_on_a_synthetic_asv_history(tmp_path: Path) -> None:
    dest = tmp_path / "h"
    load_synth().generate(dest, commits=150, workloads=4, ops=6)
    h = load_history(dest / "results", repo=dest / "repo")
    assert not h.load_errors
    assert _same_documents(h) >= 3  # the synthetic steps (+20 %, -25 %) are found
