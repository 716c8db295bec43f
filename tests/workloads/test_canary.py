"""Device-health canary: readings from a real kernel, and judging them against history."""

from __future__ import annotations

import itertools

import pytest

from neuronasv.errors import UsageError
from neuronasv.measure.backends import get_backend
from neuronasv.measure.canary import CANARY_KERNELS, CanaryRun, judge, readings_for_machine
from neuronasv.model.findings import SeriesId
from neuronasv.model.history import History, Point, Series
from neuronasv.model.profile import CanaryReading, WorkloadProfile

NAME = CANARY_KERNELS["cpu"].name("cpu")


def reading(start: float, end: float | None = None, name: str = NAME) -> CanaryReading:
    end = start if end is None else end
    return CanaryReading(name=name, start_us=(start, start * 1.01, start * 0.99),
                         end_us=(end, end * 1.01, end * 0.99))


HISTORY = [reading(v) for v in (1000, 1010, 990, 1005, 995, 1020, 985)]


def test_a_reading_like_the_history_is_healthy() -> None:
    v = judge(HISTORY, reading(1012))
    assert v.status == "healthy" and not v.degraded
    assert v.reasons == ()
    assert v.baseline_us == pytest.approx(1000)
    assert v.history_n == 7
    assert v.noise_fraction is not None and 0 < v.noise_fraction < 0.05


def test_a_slow_device_is_degraded_and_says_why() -> None:
    v = judge(HISTORY, reading(1400))
    assert v.degraded
    assert v.deviation is not None and v.deviation > 5
    assert "40 % slower than this machine's median over 7 runs" in v.reasons[0]


def test_a_faster_device_is_noted_but_not_blamed() -> None:
    v = judge(HISTORY, reading(600))
    assert v.status == "healthy"
    assert "faster" in v.reasons[0]


@pytest.mark.parametrize(("start", "end", "word"), [(1000, 1250, "slowed by 25 %"),
                                                      (1250, 1000, "slower at the start")])
def test_drift_within_a_run_is_degraded_even_without_history(
    start: float, end: float, word: str
) -> None:
    v = judge([], reading(start, end))
    assert v.status == "degraded"
    assert word in v.reasons[0]
    assert judge([], reading(1000, 1050)).status == "unknown"


def test_other_kernels_and_short_histories_give_unknown() -> None:
    other = [reading(5.0, name="canary.cuda.mm4096-bfloat16+copy512MiB")] * 10
    v = judge(other + HISTORY[:3], reading(5000))
    assert v.status == "unknown"
    assert v.history_n == 3
    assert "only 3 earlier canary reading(s)" in v.reasons[0]


def test_a_perfectly_steady_history_does_not_flag_a_tiny_wobble() -> None:
    steady = [reading(1000)] * 10
    assert judge(steady, reading(1030)).status == "healthy"  # noise floored at 1 %
    assert judge(steady, reading(1100)).status == "degraded"


def test_bad_readings_are_refused() -> None:
    with pytest.raises(UsageError, match="non-positive"):
        judge(HISTORY, CanaryReading(name=NAME, start_us=(0.0,), end_us=(1.0,)))
    with pytest.raises(UsageError, match="no start or end"):
        judge(HISTORY, CanaryReading(name=NAME, start_us=(), end_us=(1.0,)))


def test_canary_run_times_the_real_kernel_on_the_cpu() -> None:
    backend = get_backend("cpu")
    run = CanaryRun(backend, repeats=3)
    with pytest.raises(UsageError, match="before start"):
        run.finish()
    run.start()
    got = run.finish()
    assert got.name == NAME
    assert len(got.start_us) == len(got.end_us) == 3
    assert all(t > 0 for t in (*got.start_us, *got.end_us))
    # An injected clock makes the timing itself deterministic.
    ticks = itertools.count()
    fixed = CanaryRun(backend, repeats=2, clock=lambda: next(ticks) * 0.001)
    fixed.start()
    assert fixed.finish().start_us == pytest.approx((1000.0, 1000.0))


def test_readings_for_machine_follow_commit_order() -> None:
    def prof(r: CanaryReading | None) -> WorkloadProfile:
        return WorkloadProfile(name="w", backend="cpu", shape="1", dtype="float32",
                               device_time_us=(1.0,), ops=(), canary=r)

    series = Series(machine="m1", env_name="e", series=SeriesId("w", "1", "float32", None),
                    unit="seconds", points=(Point(commit="a", order=0, value=1.0),))
    history = History(
        series=(series,),
        commits=("a", "b", "c"),
        profiles={
            ("m1", "c"): (prof(reading(3)),),
            ("m1", "a"): (prof(reading(1)), prof(None)),
            ("m1", "b"): (prof(reading(2)),),
            ("m2", "a"): (prof(reading(9)),),
        },
    )
    got = readings_for_machine(history, "m1", exclude_commit="c")
    assert [r.start_us[0] for r in got] == [1, 2]
    assert [r.start_us[0] for r in readings_for_machine(history, "m1", commits=["c"])] == [3]
