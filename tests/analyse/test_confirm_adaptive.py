"""Adaptive confirmation: rounds added to undecided suspects, alpha spent over the looks.

Simulated runs (seeded, so every run of this file gives the same numbers): each process
shifts all its samples by one random offset (``BETWEEN``, CPU-like), on top of within-run
noise; a real change multiplies the head's samples.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from neuronasv.analyse.confirm import confirm
from neuronasv.model import FindingsDocument, SeriesId, WorkChange
from tests.builders import compare_doc, finding, verdict_of

CONFIGS = [(s, d) for s in ("4x512", "4x64x256", "2x128x512") for d in ("bfloat16", "float32")]
BETWEEN, WITHIN = 0.08, 0.05


def totals(workload: str) -> list[SeriesId]:
    return [SeriesId("b", (s, d), workload, s, d) for s, d in CONFIGS]


def doc_for(suspect_verdict: str = "noisy") -> FindingsDocument:
    ids = totals("rmsnorm.naive") + totals("rmsnorm.fused")
    findings = tuple(
        finding(s, suspect_verdict if s.workload == "rmsnorm.naive" else "improvement",
                base=1.0, head=1.3)
        for s in ids
    )  # fmt: skip
    work = tuple(WorkChange("rmsnorm.naive", s, d, "aten::add", "shapes") for s, d in CONFIGS)
    return compare_doc(*findings, work=work)


def runner_for(rng: np.random.Generator, shift: dict[str, float]):
    calls: list[tuple[str, int]] = []

    def runner(side, series, rnd):
        calls.append((side, rnd))
        out = {}
        for wl in {s.workload for s in series}:
            offset = math.exp(rng.normal(0.0, BETWEEN))  # one process per workload
            k = shift.get(wl or "", 1.0) if side == "head" else 1.0
            for s in series:
                if s.workload == wl:
                    out[s] = list(100.0 * offset * k * np.exp(rng.normal(0.0, WITHIN, 10)))
        return out

    return runner, calls


def test_real_change_confirmed_everywhere_and_control_left_alone() -> None:
    rng = np.random.default_rng(3)
    runner, calls = runner_for(rng, {"rmsnorm.naive": 1.45})
    got = confirm(doc_for(), runner, rounds=3, max_rounds=8)
    by = {(f.series.workload, f.series.shape, f.series.dtype): f for f in got.findings}
    for s, d in CONFIGS:
        f = by[("rmsnorm.naive", s, d)]
        assert f.state.time == "slower" and f.state.confirmed, f.reason
        g = by[("rmsnorm.fused", s, d)]
        assert g.remeasured and not g.state.decided and not g.state.confirmed, g.reason
    (cause,) = got.causes
    assert cause.workload == "rmsnorm.naive" and cause.direction == "regression"
    assert max(r for _, r in calls) + 1 == got.settings["rounds"] <= 8


def test_budget_in_seconds_stops_adding_rounds() -> None:
    rng = np.random.default_rng(4)
    runner, _calls = runner_for(rng, {"rmsnorm.naive": 1.02})  # too small to decide
    now = [0.0]

    def clock() -> float:
        now[0] += 10.0  # every clock read: 10 s later
        return now[0]

    got = confirm(doc_for(), runner, rounds=3, max_rounds=20, budget_seconds=100, clock=clock)
    assert got.settings["rounds"] < 20
    undecided = [f for f in got.findings if f.series.workload == "rmsnorm.naive"]
    assert all(f.remeasured and not f.state.confirmed for f in undecided)
    assert all(f.state.time != "slower" for f in undecided)


@pytest.mark.slow  # a seeded simulation of many comparisons: the full lane
def test_aa_false_confirmations_per_comparison_at_most_alpha() -> None:
    """80 A/A comparisons, every total a suspect, up to 6 rounds: any false verdict."""
    rng = np.random.default_rng(11)
    hits = 0
    for _ in range(80):
        runner, _calls = runner_for(rng, {})
        got = confirm(doc_for("regression"), runner, rounds=3, max_rounds=6)
        hits += any(f.state.confirmed for f in got.findings)
    # Binomial(80, 0.01): P(X >= 3) = 4.7 %; the seed makes it deterministic.
    assert hits <= 2


def test_a_single_suspect_workload_is_measured_with_a_reference_workload() -> None:
    """The rounds prior comes from other workloads: one goes along when all suspects are
    in one workload, and the unchanged reference is not itself judged."""
    ids = totals("rmsnorm.naive") + totals("rmsnorm.fused")
    findings = tuple(
        finding(s, "noisy" if s.workload == "rmsnorm.naive" else "unchanged", base=1.0,
                head=1.3)
        for s in ids
    )  # fmt: skip
    doc = compare_doc(*findings)
    rng = np.random.default_rng(5)
    asked: set[str] = set()
    inner, _calls = runner_for(rng, {"rmsnorm.naive": 1.45})

    def runner(side, series, rnd):
        asked.update(s.workload or "" for s in series)
        return inner(side, series, rnd)

    got = confirm(doc, runner, rounds=3, max_rounds=8)
    assert asked == {"rmsnorm.naive", "rmsnorm.fused"}
    fused = [f for f in got.findings if f.series.workload == "rmsnorm.fused"]
    assert all(not f.remeasured and verdict_of(f) == "unchanged" for f in fused)
    naive = [f for f in got.findings if f.series.workload == "rmsnorm.naive"]
    assert all(f.state.time == "slower" and f.state.confirmed for f in naive)
    assert "pooled over other workloads" in naive[0].reason


def _work_doc(shift_work: tuple[WorkChange, ...]) -> FindingsDocument:
    from dataclasses import replace

    base = doc_for()
    quiet = tuple(
        f if f.series.workload == "rmsnorm.naive" else replace(f, state=replace(f.state,
                                                                              time="noise"))
        for f in base.findings
    )  # fmt: skip
    return replace(base, findings=quiet, work=shift_work)


def test_work_decided_suspects_are_remeasured_until_their_time_is_decided() -> None:
    """More work (a new op) decides the naive totals' *work*, not their time: the rounds
    go on, under the same alpha spending, until the time is decided (here a +45 % shift:
    slower, confirmed) instead of stopping at the first look."""
    rng = np.random.default_rng(11)
    runner, calls = runner_for(rng, {"rmsnorm.naive": 1.45})
    work = tuple(
        WorkChange("rmsnorm.naive", s, d, "aten::full_like", "new", calls_head=1.0,
                   bytes_head=4096.0)
        for s, d in CONFIGS
    )  # fmt: skip
    got = confirm(_work_doc(work), runner, rounds=3, max_rounds=8)
    naive = [f for f in got.findings if f.series.workload == "rmsnorm.naive"]
    for f in naive:
        assert f.state is not None and f.state.work == "more", f.reason
        assert f.state.time == "slower" and f.state.confirmed, f.reason
    assert got.settings["rounds"] > 3  # the first look's alpha was too small to decide
    assert max(r for _, r in calls) == got.settings["rounds"] - 1


def test_work_decided_suspects_with_a_small_shift_use_the_whole_budget() -> None:
    """A +2 % shift under 8 % run-to-run noise: the time stays undecided and the rounds
    run to the budget (never a confirmation the rounds did not give)."""
    rng = np.random.default_rng(11)
    runner, calls = runner_for(rng, {"rmsnorm.naive": 1.02})
    work = tuple(
        WorkChange("rmsnorm.naive", s, d, "aten::full_like", "new", calls_head=1.0)
        for s, d in CONFIGS
    )
    got = confirm(_work_doc(work), runner, rounds=3, max_rounds=8)
    naive = [f for f in got.findings if f.series.workload == "rmsnorm.naive"]
    assert all(f.state.direction == "worse" and f.state.work == "more" for f in naive)
    assert all(f.state.time != "slower" and not f.state.confirmed for f in naive)
    assert got.settings["rounds"] == 8
    assert max(r for _, r in calls) == 7


def test_a_work_decided_row_is_not_a_confirmed_time() -> None:
    """Two axes: the exact work says "more work"; the rounds did not decide the time, so
    the stored state says so and never calls that time confirmed; the default gate fires
    on the work and says which rule did. The runner's noise comes from these rounds when
    the document has no floors."""
    from dataclasses import replace

    from neuronasv.analyse.runnernoise import sentence

    rng = np.random.default_rng(11)
    runner, _ = runner_for(rng, {"rmsnorm.naive": 1.02})
    base = doc_for()
    work = tuple(
        WorkChange("rmsnorm.naive", s, d, "aten::full_like", "new", calls_head=1.0,
                   bytes_head=4096.0)
        for s, d in CONFIGS
    )  # fmt: skip
    quiet = tuple(
        f if f.series.workload == "rmsnorm.naive" else replace(f, state=replace(f.state,
                                                                              time="noise"))
        for f in base.findings
    )  # fmt: skip
    got = confirm(replace(base, findings=quiet, work=work), runner, rounds=3)
    naive = [f for f in got.findings if f.series.workload == "rmsnorm.naive"]
    for f in naive:
        assert f.state is not None and f.state.work == "more"
        assert f.state.time in ("undecided", "noise") and not f.state.confirmed
        assert f.remeasured
        if f.state.time == "undecided":
            assert f.state.gate == "more work, time undecided"
    noise = got.settings["runner_noise"]
    assert noise["from"] == "rounds" and noise["rounds"] == 3
    assert set(noise["min_change"]) == {"rmsnorm.naive", "rmsnorm.fused"}
    assert sentence(noise).startswith("on m, timing changes under ~")


def test_confirm_judges_with_the_documents_settings() -> None:
    """alpha, rules and the gate that compare recorded, not the defaults (item 9)."""
    from dataclasses import replace

    from neuronasv.analyse.pairwise import Settings
    from neuronasv.analyse.rules import RuleSet
    from neuronasv.analyse.states import Gate

    st = Settings(rules=RuleSet.parse(["median:90%"]), alpha=0.2, gate=Gate("slower", "never"))
    back = Settings.from_json(st.to_json())
    assert (back.alpha, back.rules.describe(), back.gate) == (0.2, ["median:90%"], st.gate)
    rng = np.random.default_rng(3)
    runner, _ = runner_for(rng, {"rmsnorm.naive": 1.45})
    doc = replace(doc_for(), settings=st.to_json())
    got = confirm(doc, runner, rounds=3, max_rounds=8)
    # +45 % is below the recorded 90 % minimum effect: no confirmed regression, and the
    # document keeps the recorded gate
    assert not any(f.state.time == "slower" and f.state.confirmed for f in got.findings)
    assert got.settings["gate"] == {"time": "slower", "work": "never"}
    again, _ = runner_for(np.random.default_rng(3), {"rmsnorm.naive": 1.45})
    default = confirm(doc_for(), again, rounds=3, max_rounds=8)
    assert any(f.state.time == "slower" and f.state.confirmed for f in default.findings)
