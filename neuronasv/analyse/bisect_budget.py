"""How many rounds a device-time bisection needs, from the measured noise (pure).

A device-time search (:func:`neuronasv.analyse.bisect.time_search`) runs up to
``1 + ceil(log2 n)`` rounds tests for ``n`` candidates, each at ``alpha / tests`` spent
evenly over its looks. It names the culprit only when *every* test shows the step, so a
search that must be right with probability ``target`` needs each test at power
``target ** (1 / tests)`` (0.95 over 7 tests: 99.3 %).

The power of one test by its last look is the ends' test's (the weakest: no earlier test
lends it a prior): ``R`` per-round log-ratios of sd ``round_sd`` give a t statistic with
noncentrality ``log(step) / (round_sd / sqrt(R))`` on ``R - 1`` degrees of freedom, against
the two-sided ``alpha / tests / looks`` quantile (:func:`one_test_power`). The rounds a search
needs are the fewest ``max_rounds`` whose test has that power (:func:`rounds_for`): at this
CPU's replayed noise (round sd 0.423) a +30 % step over 64 commits needs **134** rounds; 48
rounds need a round sd of at most 0.239 (:func:`round_sd_for`); the H200's noise a handful
(``bench/eval_bisect.py`` prints both, from these functions).

The round sd comes from a pilot: a few fresh processes of GOOD before the search
(:func:`round_sd_of_levels`: ``sqrt(2)`` times the sd of their log medians, a round being
the ratio of two processes). The history's noise floor is not used: it is a robust (MAD)
spread, below the variance of heavy-tailed process offsets, so it would size too few
rounds. The sizing only sets how hard the search tries: the chance of a wrong answer stays
at most ``alpha`` whatever the estimate, and an under-powered search ends "undecided".

:func:`size_search` puts it together with the caps (``--max-rounds``, the time budget) and
:func:`budget_line` says it, before the search measures anything.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from neuronasv.analyse.bisect import RoundsPlan, max_probes
from neuronasv.errors import UsageError
from neuronasv.format import format_count, format_delta_pct, format_pct, format_wall, plural

__all__ = [
    "ROUNDS_LIMIT",
    "Goal",
    "SearchBudget",
    "budget_line",
    "one_test_power",
    "processes_per_round",
    "round_sd_for",
    "round_sd_of_levels",
    "rounds_for",
    "search_tests",
    "size_search",
]

#: No search is sized past this many rounds a test (the answer is then "more than").
ROUNDS_LIMIT = 5000


def search_tests(candidates: int) -> int:
    """Tests of a search over ``candidates`` commits: the ends, then one per probe."""
    return 1 + max_probes(candidates)


def processes_per_round(tests: int) -> int:
    """Processes one round of every test starts: 2 for the ends, 3 per probe."""
    return 2 + 3 * max(0, tests - 1)


def one_test_power(
    round_sd: float, step: float, alpha: float, tests: int, plan: RoundsPlan
) -> float:
    """The chance that one test shows ``step`` by its last look (``plan.max_rounds``).

    A noncentral t: ``R`` rounds of sd ``round_sd``, noncentrality ``|log step| /
    (round_sd / sqrt(R))`` on ``R - 1`` df, against the two-sided level ``alpha / tests /
    looks``. A probe's test borrows a few df from the earlier tests, so it does a little
    better: this is the search's weakest test.
    """
    from scipy.special import nctdtr, stdtrit

    r = plan.max_rounds
    if round_sd <= 0.0:
        return 1.0
    df = r - 1
    need = float(stdtrit(df, 1.0 - alpha / tests / plan.looks / 2.0))
    nc = abs(math.log(step)) / (round_sd / math.sqrt(r))
    return float(1.0 - nctdtr(df, nc, need))


def rounds_for(
    round_sd: float, step: float, alpha: float, tests: int, want: float, *, rounds: int = 3
) -> int | None:
    """The fewest ``max_rounds`` whose test has :func:`one_test_power` ``>= want`` (None: more
    than :data:`ROUNDS_LIMIT`). ``rounds``: the first look (the plan's)."""
    for r in range(rounds, ROUNDS_LIMIT + 1):
        if one_test_power(round_sd, step, alpha, tests, RoundsPlan(alpha, rounds, r)) >= want:
            return r
    return None


def round_sd_for(step: float, alpha: float, tests: int, want: float, rounds: int) -> float:
    """The largest round sd at which ``rounds`` rounds give :func:`one_test_power` ``>= want``."""
    lo, hi = 1e-4, 2.0
    plan = RoundsPlan(alpha=alpha, max_rounds=rounds)
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if one_test_power(mid, step, alpha, tests, plan) >= want else (lo, mid)
    return lo


def round_sd_of_levels(levels: Sequence[float]) -> float:
    """The sd of one round's log-ratio from independent processes' levels (medians) of the
    same code: ``sqrt(2) * sd(log levels)`` (a round is the ratio of two processes).

    Raises:
        UsageError: fewer than 2 levels, or one not finite and positive.
    """
    x = np.asarray(levels, dtype=float)
    if x.size < 2 or not np.all(np.isfinite(x)) or np.any(x <= 0.0):
        raise UsageError(f"a noise estimate needs 2 or more positive levels, got {list(levels)}")
    return math.sqrt(2.0) * float(np.std(np.log(x), ddof=1))


@dataclass(frozen=True)
class SearchBudget:
    """What a device-time search will spend, said before it measures.

    Attributes:
        round_sd: the sd of one round's log-ratio it was sized for.
        source: where ``round_sd`` came from, in words.
        step: the change it is sized to find (a ratio: 1.3 = +30 %).
        target: the chance of naming the culprit it is sized for (every test showing).
        alpha: the bound on a wrong answer.
        tests: 1 + ceil(log2 candidates).
        needed: rounds a test needs for ``target`` (None: more than :data:`ROUNDS_LIMIT`).
        rounds: the max rounds the search will use (``needed``, or the cap).
        capped_by: what held ``rounds`` below ``needed`` (``--max-rounds``), or "".
        test_power: one test's power at ``rounds``.
        seconds_per_process: one process's wall time (None: unknown).
        budget_seconds: the time budget (None: none).
        budget_power: one test's power at :attr:`budget_rounds` when the budget covers
            fewer rounds than ``rounds`` (None otherwise).
    """

    round_sd: float
    source: str
    step: float
    target: float
    alpha: float
    tests: int
    needed: int | None
    rounds: int
    capped_by: str
    test_power: float
    seconds_per_process: float | None = None
    budget_seconds: float | None = None
    budget_power: float | None = None

    @property
    def search_power(self) -> float:
        """The chance that every test shows the step (the culprit named)."""
        return self.test_power**self.tests

    @property
    def max_processes(self) -> int:
        """Processes if every test ran all its rounds (most stop at an earlier look)."""
        return self.rounds * processes_per_round(self.tests)

    @property
    def max_seconds(self) -> float | None:
        if self.seconds_per_process is None:
            return None
        return self.max_processes * self.seconds_per_process

    @property
    def budget_rounds(self) -> int | None:
        """Rounds a test can have within the budget when every test runs them all."""
        if self.budget_seconds is None or not self.seconds_per_process:
            return None
        per_round = processes_per_round(self.tests) * self.seconds_per_process
        return int(self.budget_seconds // per_round)

    def to_json(self) -> dict[str, object]:
        return {
            "round_sd": self.round_sd, "source": self.source, "step": self.step,
            "target": self.target, "tests": self.tests, "rounds_needed": self.needed,
            "max_rounds": self.rounds, "capped_by": self.capped_by,
            "test_power": self.test_power, "search_power": self.search_power,
            "max_processes": self.max_processes, "seconds_per_process": self.seconds_per_process,
            "budget_seconds": self.budget_seconds, "budget_power": self.budget_power,
        }  # fmt: skip


@dataclass(frozen=True)
class Goal:
    """What a search is sized for.

    Attributes:
        step: the change to find (a ratio: 1.3 = +30 %; 1/1.3 the same size).
        target: the chance of naming the culprit (every test showing the step).
        alpha: the bound on a wrong answer (the search's: split over its tests).
        rounds: the rounds before a test's first look.
    """

    step: float = 1.3
    target: float = 0.95
    alpha: float = 0.001
    rounds: int = 3


def size_search(
    round_sd: float,
    candidates: int,
    goal: Goal = Goal(),
    *,
    source: str = "",
    cap: int | None = None,
    seconds_per_process: float | None = None,
    budget_seconds: float | None = None,
) -> SearchBudget:
    """The rounds a search over ``candidates`` commits needs to find ``goal.step`` with
    chance ``goal.target`` at ``round_sd``, held at ``cap`` when given (see the module doc).

    Raises:
        UsageError: a step of 1 (nothing to find), a target outside (0, 1), a bad round sd.
    """
    step, target, alpha, rounds = goal.step, goal.target, goal.alpha, goal.rounds
    if not (math.isfinite(step) and step > 0.0) or step == 1.0:
        raise UsageError(f"the step to size for must be a ratio other than 1, got {step}")
    if not 0.0 < target < 1.0:
        raise UsageError(f"the target chance must be in (0, 1), got {target}")
    if not (math.isfinite(round_sd) and round_sd >= 0.0):
        raise UsageError(f"the round sd must be a finite number >= 0, got {round_sd}")
    tests = search_tests(candidates)
    want = target ** (1.0 / tests)
    needed = rounds_for(round_sd, step, alpha, tests, want, rounds=rounds)
    chosen = needed if needed is not None else ROUNDS_LIMIT
    capped_by = ""
    if cap is not None and cap < chosen:
        chosen, capped_by = max(cap, rounds), "--max-rounds"
    power = one_test_power(round_sd, step, alpha, tests, RoundsPlan(alpha, rounds, chosen))
    out = SearchBudget(
        round_sd, source, step, target, alpha, tests, needed, chosen, capped_by, power,
        seconds_per_process, budget_seconds,
    )  # fmt: skip
    br = out.budget_rounds
    if br is not None and rounds <= br < chosen:
        bp = one_test_power(round_sd, step, alpha, tests, RoundsPlan(alpha, rounds, br))
        out = replace(out, budget_power=bp)
    return out


def budget_line(b: SearchBudget) -> str:
    """The search's budget in one line, said before it measures, e.g. ``noise 30 % between
    processes (round sd 0.423, 5 pilot processes of GOOD) → 134 rounds a test for a 95 %
    chance to find +30 % (7 tests, alpha 0.1 %); ≤ 2,546 measurements, ≤ 16 h``."""
    need = "more than " + format_count(ROUNDS_LIMIT) if b.needed is None else str(b.needed)
    src = f", {b.source}" if b.source else ""
    head = (
        f"noise {format_pct(b.round_sd / math.sqrt(2.0))} between processes (round sd"
        f" {b.round_sd:.3g}{src}) → {need} rounds a test for a {format_pct(b.target)} chance"
        f" to find {format_delta_pct(b.step)} ({plural(b.tests, 'test')}, alpha"
        f" {format_pct(b.alpha)})"
    )
    if b.capped_by:
        head += (
            f"; held at {b.rounds} by {b.capped_by}: {format_pct(b.test_power)} a test,"
            f" {format_pct(b.search_power)} a search — going on (an under-powered search"
            " ends undecided, never wrong)"
        )
    cost = f"≤ {format_count(b.max_processes)} measurements"
    if b.max_seconds is not None and b.seconds_per_process is not None:
        each = format_wall(b.seconds_per_process)
        cost += f", ≤ {format_wall(b.max_seconds)} at {each} a process"
    line = f"{head}; {cost}"
    br = b.budget_rounds
    if b.budget_seconds is not None and br is not None and br < b.rounds:
        power = ""
        if b.budget_power is not None:
            power = (
                f" ({format_pct(b.budget_power)} a test,"
                f" {format_pct(b.budget_power**b.tests)} a search)"
            )
        line += (
            f"; the budget of {format_wall(b.budget_seconds)} covers {br} rounds of every"
            f" test{power} — the search stops, undecided, where it runs out"
        )
    return line
