"""``neuronasv bisect``'s device-time sizing: a pilot of GOOD, then the budget said in one
line, then the search (measurements injected; the real processes are the slow e2e's)."""

from __future__ import annotations

import math

import pytest

from neuronasv.analyse.bisect import time_search
from neuronasv.analyse.bisect_budget import Goal, round_sd_of_levels, size_search
from neuronasv.errors import CaptureError
from neuronasv.model import SeriesId
from neuronasv.run.bisect import BisectOptions, sized_plan

CHAIN = [f"{i:040x}" for i in range(16)]
SID = SeriesId("b.C.devtime_op", ("'4x512'", "'float32'", "'aten::mul'"), "w", "4x512", "float32",
               "aten::mul")  # fmt: skip
LEVELS = [1.0, 1.1, 0.95, 1.05, 1.02]  # the pilot's process levels (ms)


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _opts(**kw: object) -> BisectOptions:
    return BisectOptions(repo=".", good=CHAIN[0], bad=CHAIN[-1], pattern="*", **kw)  # type: ignore[arg-type]


def _setup(step_at: int = 9):
    clock = _Clock()
    events: list[tuple[str, str]] = []
    pilot = iter(LEVELS)

    def measure(commit: str, call: int) -> list[float]:
        events.append(("measure", commit))
        clock.now += 10.0  # a process: 10 s
        level = next(pilot, None) if len(events) <= len(LEVELS) else None
        if level is None:  # the search: a +100 % step at ``step_at``, a little noise
            level = (2.0 if CHAIN.index(commit) >= step_at else 1.0) * (1 + 0.01 * (call % 3))
        return [level * 1e-3] * 5

    def say(line: str) -> None:
        events.append(("say", line))

    return clock, events, measure, say


def test_the_pilot_sizes_the_rounds_and_the_budget_is_said_before_the_search() -> None:
    clock, events, measure, say = _setup()
    plan, sized = sized_plan(_opts(), CHAIN, measure, progress=say, clock=clock)
    want = size_search(round_sd_of_levels(LEVELS), 15, Goal(), cap=None)
    assert plan.max_rounds == want.rounds == sized.budget.rounds
    assert plan.max_rounds != 48  # the old fixed budget
    assert sized.budget.source == "5 pilot processes of GOOD"
    assert sized.budget.seconds_per_process == pytest.approx(10.0)
    assert sized.pilot_seconds == pytest.approx(50.0)
    kinds = [k for k, _ in events]
    assert kinds[:7] == ["say", "measure", "measure", "measure", "measure", "measure", "say"]
    assert all(c == CHAIN[0] for k, c in events[1:6])  # the pilot measures GOOD only
    line = events[6][1]
    assert line.startswith("noise ") and f"→ {want.needed} rounds a test" in line
    assert "(5 tests, alpha 0.1 %)" in line and "at 10 s a process" in line
    res = time_search(CHAIN, SID, "seconds", measure, plan, progress=say, clock=clock)
    assert res.outcome == "culprit" and res.hi == CHAIN[9]
    assert events[7][0] == "measure" and len(events) > 8  # the search measures after the line


def test_a_cap_below_the_need_is_said_with_its_power_and_the_search_goes_on() -> None:
    clock, events, measure, say = _setup()
    need = size_search(round_sd_of_levels(LEVELS), 15).rounds
    assert need > 4
    plan, sized = sized_plan(_opts(max_rounds=4), CHAIN, measure, progress=say, clock=clock)
    assert plan.max_rounds == 4 and sized.budget.capped_by == "--max-rounds"
    line = next(x for k, x in events if k == "say" and x.startswith("noise "))
    assert f"→ {need} rounds a test" in line and "held at 4 by --max-rounds" in line
    assert "going on" in line


def test_the_pilot_counts_against_the_time_budget() -> None:
    clock, _events, measure, say = _setup()
    plan, sized = sized_plan(_opts(budget_seconds=600.0), CHAIN, measure, progress=say,
                             clock=clock)  # fmt: skip
    assert plan.budget_seconds == pytest.approx(550.0)
    assert sized.budget.budget_seconds == pytest.approx(550.0)


def test_a_round_sd_given_needs_no_pilot() -> None:
    clock, events, measure, say = _setup()
    plan, sized = sized_plan(_opts(round_sd=0.423), CHAIN, measure, progress=say, clock=clock)
    assert [k for k, _ in events] == ["say"]
    assert sized.budget.source == "given" and sized.budget.seconds_per_process is None
    assert plan.max_rounds == size_search(0.423, 15).rounds


def test_a_pilot_process_that_fails_is_a_capture_error() -> None:
    def measure(commit: str, call: int) -> None:
        return None

    with pytest.raises(CaptureError, match="noise pilot"):
        sized_plan(_opts(), CHAIN, measure, progress=lambda _l: None, clock=_Clock())


def test_the_step_and_target_reach_the_sizing() -> None:
    clock, _, measure, say = _setup()
    small, _ = sized_plan(_opts(step=1.1, target=0.99), CHAIN, measure, progress=say, clock=clock)
    sd = round_sd_of_levels(LEVELS)
    assert small.max_rounds == size_search(sd, 15, Goal(step=1.1, target=0.99)).rounds
    assert small.max_rounds > size_search(sd, 15).rounds
    assert math.isfinite(sd)


def test_no_pilot_process_starts_that_would_end_past_the_budget() -> None:
    clock, events, measure, say = _setup()
    plan, sized = sized_plan(_opts(budget_seconds=35.0), CHAIN, measure, progress=say,
                             clock=clock)  # fmt: skip
    assert [k for k, _ in events].count("measure") == 3  # 10 s each: a 4th would end at 40 s
    assert sized.budget is not None and sized.budget.source == "3 pilot processes of GOOD"
    assert plan.budget_seconds == pytest.approx(5.0) and clock.now <= 35.0


def test_a_budget_spent_in_the_pilot_sizes_nothing_and_measures_no_round() -> None:
    clock, events, measure, say = _setup()
    plan, sized = sized_plan(_opts(budget_seconds=15.0), CHAIN, measure, progress=say,
                             clock=clock)  # fmt: skip
    assert sized.budget is None and plan.budget_seconds == 0.0
    assert "ran out in the noise pilot" in events[-1][1]
    assert sized.to_json()["note"] == "the budget ran out in the pilot"
    res = time_search(CHAIN, SID, "seconds", measure, plan, progress=say, clock=clock)
    assert res.outcome == "undecided" and res.measured == ()  # no round started
