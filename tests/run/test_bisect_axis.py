"""``--axis auto`` (issue 40): an exact axis decides whenever the range's ends differ on it
(each exact metric of the registry, then the work), time only when they read the same."""

from __future__ import annotations

from dataclasses import replace

import pytest

from neuronasv.analyse.readings import reading_at
from neuronasv.errors import UsageError
from neuronasv.metrics import names as metric_names
from neuronasv.model import History, Series, SeriesId
from neuronasv.model.counts import PassCounts
from neuronasv.run.bisect import _metrics_for, _pick
from tests.builders import op, profile

GOOD, BAD = "a" * 40, "b" * 40


def _id(method: str) -> SeriesId:
    return SeriesId(f"devtime.RmsnormNaive.{method}", (), "rmsnorm.naive", "4x512", "bfloat16",
                    "aten::mul")  # fmt: skip


TIMED = Series("m", "env", _id("devtime_op"), "seconds", ())
COUNTED = Series("m", "env", _id("instr_op"), "instructions", ())


def _history(calls: tuple[float, float], counts: tuple[float, float] | None) -> History:
    profiles = {}
    for i, commit in enumerate((GOOD, BAD)):
        instr = None if counts is None else PassCounts(100.0, {"aten::mul": counts[i]})
        p = profile("rmsnorm.naive", op("aten::mul", 1.0, calls=calls[i]), counted=instr)
        profiles[("m", commit)] = (p,)
    return History((TIMED, COUNTED), profiles=profiles)


@pytest.mark.parametrize(
    ("calls", "counts", "found", "axis", "series"),
    [
        ((1, 1), (10, 20), (TIMED, COUNTED), "instructions", COUNTED),
        ((1, 1), (10, 20), (TIMED,), "instructions", TIMED),  # the time series' own count
        ((1, 2), (10, 10), (TIMED, COUNTED), "work", TIMED),
        ((1, 2), None, (TIMED,), "work", TIMED),  # the case: no counts, work moved
        ((1, 1), (10, 10), (TIMED, COUNTED), "time", TIMED),  # nothing exact moved: time
        ((1, 1), None, (TIMED,), "time", TIMED),
        ((1, 1), (10, 10), (COUNTED,), "instructions", COUNTED),  # no time series: its count
    ],
)
def test_auto_takes_the_first_exact_axis_the_ends_differ_on(
    calls, counts, found, axis, series
) -> None:
    h = _history(calls, counts)
    got = _pick(list(found), "p", "m", "auto", history=h, ends=(GOOD, BAD))
    assert got == (series, axis)


def test_an_explicit_axis_is_kept_and_a_missing_series_said() -> None:
    h = _history((1, 2), (10, 20))
    assert _pick([TIMED, COUNTED], "p", "m", "time", history=h, ends=(GOOD, BAD)) == (
        TIMED,
        "time",
    )
    with pytest.raises(UsageError, match="matches no instructions per iteration series"):
        _pick([TIMED], "p", "m", "instructions")


def test_the_probes_measure_the_metric_of_their_axis() -> None:
    assert _metrics_for("instructions", ()) == ("devtime", "instructions")
    assert _metrics_for("work", ()) == ("devtime",)
    assert _metrics_for("auto", metric_names()) is None  # run's default
    # a pattern naming some metrics: only those are measured at the ends
    assert _metrics_for("auto", ("devtime", "instructions")) == ("devtime", "instructions")
    assert _metrics_for("auto", ("instructions",)) == ("devtime", "instructions")
    assert _metrics_for("auto", ("devtime",)) == ("devtime",)


# -- memory: its values are in the asv results only (no sidecar counts) ---------------

ALLOC = Series("m", "env", _id("alloc_op"), "bytes allocated", ())


def _memory_history(
    mul: tuple[tuple[float, ...], tuple[float, ...]], calls: tuple[float, float] = (1, 1)
) -> History:
    """Device time and memory of ``aten::mul`` at GOOD and BAD (``mul``: each end's memory
    samples; an empty tuple: the op has no memory point there, while ``aten::add``'s
    memory was measured), the sidecar profiles with no counts of memory."""
    from neuronasv.model import Point

    add = SeriesId("devtime.RmsnormNaive.alloc_op", (), "rmsnorm.naive", "4x512", "bfloat16",
                   "aten::add")  # fmt: skip
    pts = tuple(Point(c, i, s[len(s) // 2], s)
                for i, (c, s) in enumerate(zip((GOOD, BAD), mul, strict=True)) if s)  # fmt: skip
    add_pts = tuple(Point(c, i, 64.0, (64.0, 64.0)) for i, c in enumerate((GOOD, BAD)))
    profiles = {("m", c): (profile("rmsnorm.naive", op("aten::mul", 1.0, calls=calls[i])),)
                for i, c in enumerate((GOOD, BAD))}  # fmt: skip
    return History(
        (TIMED, replace(ALLOC, points=pts), Series("m", "env", add, ALLOC.unit, add_pts)),
        profiles=profiles,
    )


def test_auto_takes_memory_when_the_ends_allocate_differently() -> None:
    """The brief's case: one more temporary (the bytes double; the calls too, but memory
    comes first in the registry's order), for the op's memory series or its time series."""
    h = _memory_history(((8192.0,) * 3, (16384.0,) * 3), calls=(1, 2))
    series = h.series[1]
    assert _pick([TIMED, series], "p", "m", "auto", history=h, ends=(GOOD, BAD)) == (
        series, "memory",
    )  # fmt: skip
    assert _pick([TIMED], "p", "m", "auto", history=h, ends=(GOOD, BAD)) == (TIMED, "memory")
    assert _pick([TIMED, series], "p", "m", "memory") == (series, "memory")
    got = reading_at(h, "m", BAD, TIMED.series, "memory")
    assert got is not None and got.value == 16384.0
    assert got.words == "16,384 self allocated bytes per iteration"


def test_memory_samples_that_differ_are_no_reading_and_an_absent_op_is_not_run() -> None:
    h = _memory_history(((8192.0, 8192.0, 8200.0), ()), calls=(1, 2))
    series = h.series[1]
    assert reading_at(h, "m", GOOD, series.series, "memory") is None  # not exact there
    gone = reading_at(h, "m", BAD, series.series, "memory")
    assert gone is not None and gone.value == "not run"  # aten::add's memory was measured
    assert reading_at(h, "m", "c" * 40, series.series, "memory") is None  # nothing stored
    # the same bytes at both ends: auto goes on to the work, which moved
    same = _memory_history(((8192.0,) * 3, (8192.0,) * 3), calls=(1, 2))
    assert _pick([TIMED], "p", "m", "auto", history=same, ends=(GOOD, BAD)) == (TIMED, "work")
