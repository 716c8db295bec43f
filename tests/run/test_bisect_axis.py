"""``--axis auto`` (issue 40): an exact axis decides whenever the range's ends differ on it
(each exact metric of the registry, then the work), time only when they read the same."""

from __future__ import annotations

import pytest

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
