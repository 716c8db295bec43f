"""The CPU roof's rules, without a clock: every call's wall and CPU time is injected.

Seen (issue 28): ``doctor --calibrate`` three times a minute apart gave float32 0.00015,
0.195 and 0.00007 TFLOP/s: the first size stopped the search when one call took > 20 ms,
torch's 2 threads were measured while the suite runs with 1, and whatever came out was
stored. These tests pin what replaces that: the suite's threads, calls long enough to time,
repeated until steady, refused under load, with a spread over 2x, or out of a CPU's bounds.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Sequence

import pytest

from neuronasv.errors import CalibrationRefused, CaptureError
from neuronasv.measure import cpu_roof as R
from neuronasv.measure.cpu_roof import Probe, Rules, Timing

RULES = Rules()


def walls(*seconds: float, share: float = 1.0) -> list[Timing]:
    return [Timing(s, s * share) for s in seconds]


def script(timings: Sequence[Timing]) -> Callable[[Callable[[], object]], Timing]:
    """A timer that calls the kernel and returns the next scripted timing."""
    it = iter(timings)

    def timer(fn: Callable[[], object]) -> Timing:
        fn()
        return next(it)

    return timer


def probe(what: str = "float32", sizes: tuple[int, ...] = (128, 256, 512),
          made: list[int] | None = None, work: float = 2.0 * 1024**3) -> Probe:  # fmt: skip
    """A kernel that does nothing, said to do ``work`` (the timer says how long it took)."""

    def make(size: int) -> R.Kernel:
        if made is not None:
            made.append(size)
        return (lambda: None), work, f"{size}² {what} matmul"

    unit = "B/s" if what == "bandwidth" else "FLOP/s"
    return Probe(what, unit, sizes, make)


class Pinned:
    """A backend whose measuring context pins torch to ``threads`` (as the CPU backend does)."""

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self.entered = 0

    @contextlib.contextmanager
    def measuring(self) -> Iterator[None]:
        import torch

        before = torch.get_num_threads()
        torch.set_num_threads(self.threads)
        self.entered += 1
        try:
            yield
        finally:
            torch.set_num_threads(before)


# --- sampling: repeated until steady -------------------------------------------------------


def test_calls_are_repeated_until_the_three_fastest_agree() -> None:
    # Five calls at least; the sixth makes the three fastest agree within 10 %: stop there.
    timings = walls(0.030, 0.020, 0.025, 0.040, 0.0215, 0.0213, 0.5, 0.5)
    got = R.sample(lambda: None, script(timings), RULES)
    assert [t.wall_s for t in got] == [0.030, 0.020, 0.025, 0.040, 0.0215, 0.0213]


def test_a_loaded_machine_is_not_kept_busy_for_nothing() -> None:
    # 20 % of the CPU over the first five calls: refused anyway, so the sampling stops.
    loaded = walls(*[0.010 * 1.1**i for i in range(100)], share=0.2)
    assert len(R.sample(lambda: None, script(loaded), RULES)) == RULES.min_calls
    two = walls(*[0.010 * 1.1**i for i in range(100)], share=1.2)  # 60 % of 2 CPUs
    assert len(R.sample(lambda: None, script(two), RULES, threads=2)) == RULES.max_calls


def test_an_unsteady_kernel_runs_to_the_most_calls_or_the_budget() -> None:
    unsteady = walls(*[0.010 * 1.1**i for i in range(100)])  # never three alike; 1.6 s in 30
    assert len(R.sample(lambda: None, script(unsteady), RULES)) == RULES.max_calls
    slow = walls(*[1.0 + 0.3 * i for i in range(100)])  # 1 s calls: the 4 s budget ends it
    assert len(R.sample(lambda: None, script(slow), RULES)) == RULES.min_calls


# --- the size: long enough to time, chosen on the fastest call ---------------------------


def test_the_size_is_the_first_whose_fastest_call_is_long_enough_to_time() -> None:
    made: list[int] = []
    # 128²: one call preempted for 30 ms, the fastest 0.2 ms -> not chosen (the old search
    # stopped at the first size whose one call took > 20 ms); 256²: 2 ms; 512²: 15 ms.
    timer = script(walls(0.030, 0.0002, 0.0002, 0.002, 0.002, 0.002, 0.015, 0.016, 0.015))
    _, _, label = R._size_for(probe(made=made), timer, RULES)
    assert made == [128, 256, 512] and label == "512² float32 matmul"


# --- the judgement -------------------------------------------------------------------------


def judged(timings: Sequence[Timing], what: str = "float32", threads: int = 1,
           work: float = 2.0 * 1024**3) -> str | None:  # fmt: skip
    r = R.reading_of(what, f"1024² {what} matmul", work, timings, threads)
    return R.judge(r, timings, threads, RULES)


def test_a_steady_unloaded_reading_is_a_roof() -> None:
    steady = walls(0.0230, 0.0229, 0.0231, 0.0240, 0.0232)  # 2.1 GFLOP in 23 ms: 93 GFLOP/s
    assert judged(steady) is None
    r = R.reading_of("float32", "1024² float32 matmul", 2.0 * 1024**3, steady, 1)
    assert r.rate == pytest.approx(2.0 * 1024**3 / 0.0230)  # the median of the 3 fastest
    assert (r.fastest_s, r.median_s, r.calls) == (0.0229, 0.0231, 5)


def test_a_reading_under_load_is_refused_with_its_figures() -> None:
    # Four busy processes on two cores: every call sliced alike (steady, no spread), but the
    # measuring thread had 12 % of its CPU.
    loaded = walls(0.25, 0.251, 0.252, 0.25, 0.251, share=0.12)
    why = judged(loaded)
    assert why is not None and why.startswith("under load: the 1024² float32 matmul had 12 %")
    assert "of 1 CPU over 5 calls (needs ≥ 50 %; it measured 8.59 GFLOP/s)" in why


def test_a_roof_from_calls_that_waited_for_their_cpu_is_refused() -> None:
    # Most calls had their CPU, but the fastest ones (the roof's) did not.
    mixed = [*walls(0.030, 0.031, 0.032, 0.033), *walls(0.0200, 0.0201, 0.0202, share=0.6)]
    why = judged(mixed)
    assert why is not None and "a fastest call of the 1024² float32 matmul had 60 %" in why


def test_a_spread_over_two_is_refused() -> None:
    spread = walls(0.020, 0.020, 0.020, 0.050, 0.051, 0.052, 0.053)
    why = judged(spread)
    assert why is not None and why.startswith("spread ×2.5 (> ×2) over 7 calls")
    assert "median 42.9 GFLOP/s, fastest 107 GFLOP/s" in why


def test_three_fastest_calls_that_never_agree_are_refused() -> None:
    why = judged(walls(0.020, 0.023, 0.0225, 0.027, 0.028, 0.029))
    assert why is not None and why.startswith("unsteady: the three fastest of 6 calls")


@pytest.mark.parametrize(
    ("what", "rate", "refused"),
    [
        ("float32", 7e7, True),  # seen: 0.00007 TFLOP/s
        ("float32", 1.5e8, True),  # seen: 0.00015 TFLOP/s
        ("float32", 9.4e10, False),
        ("float32", 5e12, True),  # no CPU core does 5 TFLOP/s of float32
        ("bfloat16", 1.3e8, True),  # seen: 0.00013 TFLOP/s
        ("bfloat16", 1e9, False),  # bf16 converted in software
        ("bfloat16", 2e11, False),
        ("bandwidth", 5e8, True),
        ("bandwidth", 2.6e10, False),
        ("bandwidth", 5e11, True),  # from cache, not DRAM
    ],
)
def test_a_rate_no_cpu_has_is_refused(what: str, rate: float, refused: bool) -> None:
    assert (R.implausible(what, rate, 1) is not None) is refused


def test_the_highest_plausible_rate_scales_with_the_threads() -> None:
    assert R.implausible("float32", 1.5e12, 1) is not None
    assert R.implausible("float32", 1.5e12, 2) is None
    why = R.implausible("float32", 7e7, 1)
    assert (
        why == "float32 70.0 MFLOP/s is outside what a CPU does with 1 thread"
        " (1.00 GFLOP/s … 1.00 TFLOP/s)"
    )


# --- the whole measurement -----------------------------------------------------------------


def test_the_roof_is_measured_with_the_suites_threads_not_torchs_default() -> None:
    import torch

    before = torch.get_num_threads()
    seen: list[int] = []

    def timer(fn: Callable[[], object]) -> Timing:
        seen.append(torch.get_num_threads())
        return Timing(0.02, 0.02)

    backend = Pinned(threads=1)
    threads, readings = R.measure_cpu_roof(backend, timer=timer, probes=[probe()])
    assert threads == 1 and backend.entered == 1 and set(seen) == {1}
    assert torch.get_num_threads() == before
    assert [r.what for r in readings] == ["float32"]
    assert readings[0].rate == pytest.approx(2.0 * 1024**3 / 0.02)


def test_the_first_refused_quantity_stops_the_measurement() -> None:
    made: list[int] = []
    loaded = [Timing(0.05, 0.01)] * 100  # 20 % of the CPU on every call
    with pytest.raises(CalibrationRefused) as err:
        R.measure_cpu_roof(Pinned(1), timer=script(loaded),
                           probes=[probe("bandwidth", (64,)), probe(made=made)])  # fmt: skip
    assert made == []  # the matmul was never built
    assert isinstance(err.value, CaptureError) and err.value.exit_code == 4
    assert err.value.message.startswith("calibration refused, nothing stored: under load: ")
    assert "\n" not in err.value.message
    assert err.value.hint is not None and "neuronasv doctor --calibrate" in err.value.hint


def test_each_passed_quantity_is_said_as_it_is_measured(logged: pytest.LogCaptureFixture) -> None:
    logged.set_level(logging.DEBUG, logger="neuronasv")
    R.measure_cpu_roof(Pinned(1), timer=script([Timing(0.02, 0.02)] * 100),
                       probes=[probe()])  # fmt: skip
    assert logged.messages == [
        "float32: 107 GFLOP/s (128² float32 matmul, 5 calls, spread ×1, 100 % of the CPU,"
        " 100 % in the fastest calls)"
    ]
