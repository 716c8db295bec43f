"""Sizing a device-time bisection from the measured noise (the bench's power computation)."""

from __future__ import annotations

import math

import pytest

from neuronasv.analyse.bisect import RoundsPlan
from neuronasv.analyse.bisect_budget import (
    Goal,
    budget_line,
    one_test_power,
    processes_per_round,
    round_sd_for,
    round_sd_of_levels,
    rounds_for,
    search_tests,
    size_search,
)
from neuronasv.errors import UsageError
from neuronasv.format import format_pct

WANT7 = 0.95 ** (1 / 7)  # every one of a 64-commit search's 7 tests: ~95 % of searches


@pytest.mark.parametrize(
    ("round_sd", "candidates", "step", "rounds"),
    [
        # docs/analysis.md "Measured": this CPU's replayed noise (round sd 0.423), +30 %,
        # 64 commits: 134 rounds (the replay: 99.0 % right at 134)
        (0.423, 63, 1.3, 134),
        # the largest round sd 48 rounds cover (the bench: "at 48 rounds that needs 0.239")
        (0.2387, 63, 1.3, 48),
        (0.239, 63, 1.3, 49),
        # half this CPU's noise (--noise-scale 0.5: round sd 0.246; 93.5 % right at 48)
        (0.246, 63, 1.3, 51),
        # the H200's recorded noise (0.23 % between processes): a handful
        (0.0033, 63, 1.3, 4),
        # a larger step and a shorter range need fewer (16 commits: 5 tests)
        (0.423, 15, 2.0, 25),
        (0.423, 15, 1.45, 67),
    ],
)
def test_rounds_are_sized_from_the_noise_not_a_fixed_48(round_sd, candidates, step, rounds):
    b = size_search(round_sd, candidates, Goal(step=step))
    assert (b.needed, b.rounds, b.capped_by) == (rounds, rounds, "")
    assert b.tests == search_tests(candidates)
    # the fewest: one round fewer misses the target
    want = 0.95 ** (1 / b.tests)
    assert b.test_power >= want
    if rounds > 3:
        fewer = RoundsPlan(max_rounds=rounds - 1)
        assert one_test_power(round_sd, step, 0.001, b.tests, fewer) < want


@pytest.mark.parametrize(
    ("max_rounds", "power"),
    # the bench table's "power (ends)" column at round sd 0.423 (docs/analysis.md)
    [(12, 0.003), (24, 0.033), (48, 0.306), (134, 0.993)],
)
def test_power_reproduces_the_bench_table(max_rounds: int, power: float) -> None:
    got = one_test_power(0.423, 1.3, 0.001, 7, RoundsPlan(max_rounds=max_rounds))
    assert got == pytest.approx(power, abs=0.0015)


def test_round_sd_for_inverts_rounds_for() -> None:
    sd = round_sd_for(1.3, 0.001, 7, WANT7, 48)
    assert sd == pytest.approx(0.239, abs=0.001)
    assert rounds_for(sd, 1.3, 0.001, 7, WANT7) == 48
    assert rounds_for(sd * 1.001, 1.3, 0.001, 7, WANT7) > 48


def test_a_step_the_noise_hides_needs_more_than_the_limit() -> None:
    b = size_search(3.0, 63, Goal(step=1.01))
    assert b.needed is None and b.rounds == 5000
    assert "more than 5,000 rounds" in budget_line(b)


def test_a_cap_below_the_need_says_the_power_it_leaves_and_goes_on() -> None:
    b = size_search(0.423, 63, cap=48, seconds_per_process=23.1)
    assert (b.needed, b.rounds, b.capped_by) == (134, 48, "--max-rounds")
    assert b.test_power == pytest.approx(0.306, abs=0.0015)
    assert b.search_power == pytest.approx(b.test_power**7)
    line = budget_line(b)
    assert "134 rounds a test" in line and "held at 48 by --max-rounds" in line
    assert f"{format_pct(b.test_power)} a test" in line and "going on" in line
    assert b.max_processes == 48 * (2 + 3 * 6) == 960
    assert "≤ 960 measurements, ≤ 6.2 h at 23 s a process" in line


def test_a_cap_above_the_need_changes_nothing() -> None:
    assert size_search(0.0033, 63, cap=48).rounds == 4


def test_the_budget_line_says_rounds_measurements_and_minutes_up_front() -> None:
    b = size_search(0.423, 63, source="5 pilot processes of GOOD", seconds_per_process=23.1)
    assert budget_line(b) == (
        "noise 30 % between processes (round sd 0.423, 5 pilot processes of GOOD) → 134"
        " rounds a test for a 95 % chance to find +30 % (7 tests, alpha 0.1 %);"
        " ≤ 2,680 measurements, ≤ 17 h at 23 s a process"
    )
    assert processes_per_round(7) == 20 and b.max_seconds == pytest.approx(2680 * 23.1)


def test_a_budget_shorter_than_the_worst_case_is_said() -> None:
    b = size_search(0.1, 15, seconds_per_process=10.0, budget_seconds=25 * 60)
    per_round = processes_per_round(5) * 10.0  # 14 processes
    assert b.budget_rounds == int(25 * 60 // per_round) == 10
    assert b.rounds > 10
    assert b.budget_power == pytest.approx(
        one_test_power(0.1, 1.3, 0.001, 5, RoundsPlan(max_rounds=10))
    )
    assert b.budget_power < b.test_power
    words = f"({format_pct(b.budget_power)} a test, {format_pct(b.budget_power**5)} a search)"
    assert f"the budget of 25 min covers 10 rounds of every test {words}" in budget_line(b)
    roomy = size_search(0.1, 15, seconds_per_process=10.0, budget_seconds=10 * 3600)
    assert roomy.budget_power is None and "budget" not in budget_line(roomy)


def test_round_sd_of_pilot_levels() -> None:
    a = 0.1
    levels = [math.exp(a), math.exp(-a)]  # log levels ±a: sd a·√2, a round's sd 2a
    assert round_sd_of_levels(levels) == pytest.approx(2 * a)
    assert round_sd_of_levels([2.0, 2.0, 2.0]) == 0.0


@pytest.mark.parametrize("bad", [[], [1.0], [1.0, float("nan")], [1.0, 0.0], [1.0, -2.0]])
def test_round_sd_of_bad_levels_is_a_clear_error(bad: list[float]) -> None:
    with pytest.raises(UsageError, match="noise estimate"):
        round_sd_of_levels(bad)


@pytest.mark.parametrize(
    ("goal", "sd", "words"),
    [
        (Goal(step=1.0), 0.1, "ratio other than 1"),
        (Goal(step=float("nan")), 0.1, "ratio other than 1"),
        (Goal(target=1.0), 0.1, "target chance"),
        (Goal(), float("inf"), "round sd"),
        (Goal(), -0.1, "round sd"),
    ],
)
def test_bad_goals_are_clear_errors(goal: Goal, sd: float, words: str) -> None:
    with pytest.raises(UsageError, match=words):
        size_search(sd, 63, goal)


def test_an_improvement_is_sized_as_the_same_step() -> None:
    assert size_search(0.2, 63, Goal(step=1 / 1.3)).needed == size_search(0.2, 63).needed
