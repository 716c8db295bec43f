"""One measurement per row (issue 20 item 2): a re-measured total's breakdown and module
chain come from the same rounds as its figures, never from the first run.

The bug seen: a row's total rose 2.1 µs while every "where the time went" entry was
negative (totals from the rounds, breakdown from the first run).
"""

from __future__ import annotations

import pytest

from neuronasv.analyse.confirm import confirm
from neuronasv.analyse.pairwise import Settings, compare
from neuronasv.analyse.profile_samples import paired_rounds
from neuronasv.analyse.replay import RecordingRunner, ReplayRunner
from neuronasv.model import (
    FindingsDocument,
    OpContribution,
    OpProfile,
    ProfileDocument,
    RunRef,
    SeriesId,
    WorkChange,
    WorkloadProfile,
)
from tests.builders import finding, verdict_of
from tests.profile_history import history_from_profiles

WL, SHAPE, DTYPE = "rmsnorm.naive", "4x512", "bfloat16"
TOTAL = SeriesId("b.total", (), WL, SHAPE, DTYPE)
MUL = SeriesId("b.op", ("'aten::mul'",), WL, SHAPE, DTYPE, "aten::mul")
# µs per side in the rounds: the total rises 2.1 µs, every op rises or is new
ROUNDS = {None: (10.0, 12.1), "aten::mul": (5.0, 6.0), "aten::add": (5.0, 5.6),
          "aten::fill_": (None, 0.5)}  # fmt: skip


def _doc() -> FindingsDocument:
    # The first run: the total fell and so did every op (its breakdown all negative).
    first = (
        OpContribution("aten::mul", 5.2, 4.9, -0.3, 0.5, 3.0, 3.0),
        OpContribution("aten::add", 5.1, 4.8, -0.3, 0.5, 1.0, 1.0),
    )
    total = finding(TOTAL, "noisy", unit="us", base=10.3, head=9.7, attribution=first)
    mul = finding(MUL, "noisy", unit="us", base=5.2, head=4.9)
    work = (WorkChange(WL, SHAPE, DTYPE, "aten::fill_", "new", calls_head=1.0),)
    return FindingsDocument(
        "compare", RunRef("a" * 40, "m"), RunRef("b" * 40, "m"), (total, mul), work=work
    )


def _runner(side: str, series, round_index: int):
    out = {}
    for s in series:
        b, h = ROUNDS.get(s.op, (None, None))
        v = b if side == "base" else h
        if v is not None:  # a new op has no base samples
            out[s] = [v * (1.0 + 0.001 * (i - 2)) for i in range(5)]
    return out


def test_a_re_measured_total_takes_its_breakdown_from_the_same_rounds() -> None:
    got = confirm(_doc(), _runner, rounds=3)
    total = next(f for f in got.findings if f.series == TOTAL)
    assert total.remeasured
    assert total.base is not None and total.head is not None
    assert abs(total.head - total.base - 2.1) < 1e-9
    # the parts and the rest add up to the row's change: the same rounds, one estimator
    assert sum(a.delta for a in total.attribution) == pytest.approx(2.1, abs=1e-9)
    parts = {a.op: a for a in total.attribution}
    assert set(parts) == {"aten::mul", "aten::add", "aten::fill_"}  # the new op was measured
    for op, (b, h) in ROUNDS.items():
        if op is None:
            continue
        a = parts[op]
        assert a.base == pytest.approx(b) and a.head == pytest.approx(h) and a.delta > 0, a
    # calls are exact work and stay from the first run
    assert parts["aten::mul"].calls_base == 3.0
    # written and read back
    assert FindingsDocument.loads(got.dumps()) == got


def test_the_rounds_record_per_op_samples_and_a_replay_gives_the_same_row() -> None:
    rec = RecordingRunner(_runner)
    got = confirm(_doc(), rec, rounds=2)
    rounds = rec.document("a" * 40, "b" * 40, 2)
    recorded = {s.op for m in rounds.measurements for s, _ in m.samples}
    assert {"aten::mul", "aten::add", "aten::fill_", None} <= recorded
    again = confirm(_doc(), ReplayRunner(rounds), rounds=2)
    assert again.findings == got.findings


def test_a_total_that_stops_moving_keeps_no_first_run_breakdown() -> None:
    def flat(side: str, series, round_index: int):
        return {s: [10.0 + 0.01 * ((round_index + i) % 3) for i in range(5)] for s in series}

    doc = _doc()
    doc = FindingsDocument(
        "compare", doc.base, doc.head, doc.findings, work=()
    )  # no work change: the timing decides
    got = confirm(doc, flat, rounds=3)
    total = next(f for f in got.findings if f.series == TOTAL)
    assert total.remeasured and verdict_of(total) not in ("regression", "improvement")
    assert total.attribution == () and total.module_chain == ()


def _profile(scale: float, ops: dict[str, float]) -> WorkloadProfile:
    xs = [scale * (1.0 + 0.001 * i) for i in range(5)]
    rows = tuple(
        OpProfile(op, 1.0, tuple(v * x / scale for x in xs), tuple(v * x / scale for x in xs))
        for op, v in ops.items()
    )
    total = tuple(sum(ops.values()) * x / scale for x in xs)
    return WorkloadProfile(WL, "cpu", SHAPE, DTYPE, total, rows)


def test_compare_with_rounds_explains_the_row_from_the_same_rounds() -> None:
    base = _profile(1.0, {"aten::mul": 5.2, "aten::add": 5.1})  # the first run: it fell
    head = _profile(1.0, {"aten::mul": 4.9, "aten::add": 4.8})
    names: list[str | None] = [None, "aten::mul", "aten::add"]
    history = history_from_profiles(
        base, head, names,
        lambda op: SeriesId("b.total" if op is None else "b.op", (repr(op),), WL, SHAPE,
                            DTYPE, op),
        commits=("a" * 40, "b" * 40), machine="m", fingerprint={"backend": "cpu"},
    )  # fmt: skip
    rb = [ProfileDocument("cpu", (_profile(1.0, {"aten::mul": 5.0, "aten::add": 5.0}),))] * 3
    rh = [ProfileDocument("cpu", (_profile(1.0, {"aten::mul": 6.0, "aten::add": 5.6,
                                                 "aten::fill_": 0.5}),))] * 3  # fmt: skip
    doc = compare(history, "a" * 40, "b" * 40, settings=Settings(resamples=100), floors={},
                  rounds=paired_rounds(rb, rh), force=True)  # fmt: skip
    total = next(f for f in doc.findings if f.series.op is None)
    assert total.remeasured and verdict_of(total) == "regression", total.reason
    parts = {a.op: a for a in total.attribution}
    # µs in the profiles, seconds in the series: the rounds' medians, new op included
    assert parts["aten::mul"].delta > 0 and parts["aten::add"].delta > 0
    assert parts["aten::fill_"].base is None and parts["aten::fill_"].head is not None
    assert abs(parts["aten::mul"].head / parts["aten::mul"].base - 1.2) < 1e-6


def test_instruction_counts_are_never_re_measured_by_the_rounds() -> None:
    """An ``instr_`` row is exact (docs/instructions.md): the rounds measure time, so
    confirm neither asks the runner for it nor replaces its counts with round samples.
    Seen in the demo: the instruction totals read "0.00 instructions" after confirm had
    written device-time seconds into them."""
    instr = SeriesId("rmsnorm.Naive.instr_total", (), WL, SHAPE, DTYPE)
    counts = finding(instr, unit="instructions", base=12102.0, head=14545.0,
                     source="exact count", exact="more")  # fmt: skip
    doc = _doc()
    doc = FindingsDocument(doc.mode, doc.base, doc.head, (*doc.findings, counts), work=doc.work)
    asked: list[SeriesId] = []

    def runner(side: str, series, round_index: int):
        asked.extend(series)
        return _runner(side, series, round_index)

    got = confirm(doc, runner, rounds=2)
    assert asked and instr not in asked
    after = next(f for f in got.findings if f.series == instr)
    assert (after.base, after.head, after.unit) == (12102.0, 14545.0, "instructions")
    assert not after.remeasured and after.estimate.source == "exact count"
