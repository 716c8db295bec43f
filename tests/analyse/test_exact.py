"""Instruction counts judged as exact facts (analyse/exact.py) and as work evidence."""

from __future__ import annotations

from neuronasv.analyse.exact import count_changes, judge_exact
from neuronasv.model import OpProfile, Point, SeriesId, WorkloadProfile
from neuronasv.model.counts import PassCounts
from tests.builders import finding


def prof(
    ops: dict[str, float],
    total: float,
    *,
    deterministic: bool = True,
    unstable: tuple[str, ...] = ("aten::mean",),
) -> WorkloadProfile:
    return WorkloadProfile(
        name="rmsnorm.naive", backend="cpu", shape="4x512", dtype="float32",
        device_time_us=(10.0,),
        ops=tuple(OpProfile(op, 1.0, (1.0,), (1.0,)) for op in ops),
        counted=PassCounts(
            total=total, ops=ops, deterministic=deterministic,
            unstable=() if deterministic else unstable,
            valgrind="3.19.0", torch="2.13.0+cpu",
        ),
    )  # fmt: skip


def sid(op: str | None, bench: str = "rmsnorm.Naive.instr_op") -> SeriesId:
    params = ("'4x512'", "'float32'") + ((repr(op),) if op else ())
    return SeriesId(bench, params, "rmsnorm.naive", "4x512", "float32", op)


def pt(v: float | None) -> Point:
    return Point("c" * 40, 0, v)


def test_equal_counts_are_unchanged_any_difference_is_a_fact_with_its_size() -> None:
    base, head = prof({"aten::mul": 12_102.0}, 68_722.0), prof({"aten::mul": 14_545.0}, 71_165.0)
    found = judge_exact(
        [
            (sid("aten::mul"), pt(12_102.0), pt(14_545.0)),
            (sid(None, "rmsnorm.Naive.instr_total"), pt(68_722.0), pt(68_722.0)),
        ],
        [base],
        [head],
    )
    mul, total = found
    assert mul.state.exact == "more" and mul.state.time == "none"
    assert mul.estimate.source == "exact count" and mul.ratio == 14_545 / 12_102
    assert mul.ci_low is None and (mul.n_base, mul.n_head) == (1, 1)
    assert "aten::mul +2,443 instructions per iteration (+20 %, exact)" in mul.reason
    assert "no statistics" in mul.reason and mul.p_value is None
    assert total.state.exact == "same"
    assert "68,722 instructions per iteration" in total.reason


def test_a_one_percent_change_is_reported_and_fewer_is_an_improvement() -> None:
    (up,) = judge_exact([(sid("aten::mean"), pt(24_920.0), pt(25_169.0))])
    assert up.state.exact == "more" and "+1.0 %" in up.reason
    assert up.state.direction == "worse"
    (down,) = judge_exact([(sid("aten::mean"), pt(24_920.0), pt(24_919.0))])
    assert down.state.exact == "fewer" and "aten::mean -1 instructions" in down.reason
    assert down.state.direction == "better"


def test_counts_that_were_not_deterministic_are_said_and_never_judged() -> None:
    base = prof({"aten::mean": 1.0}, 5.0, deterministic=False)
    (f,) = judge_exact([(sid("aten::mean"), pt(24_920.0), pt(30_000.0))], [base], [prof({}, 5.0)])
    assert f.state.exact == "unsteady" and f.state.direction is None
    assert "count of aten::mean not deterministic at base" in f.reason
    assert "not judged" in f.reason


def test_only_the_target_that_moved_is_left_unjudged() -> None:
    # transformer.block.backward: the step moves by a few hundred instructions from run to
    # run (autograd's hash tables keyed by addresses); its ops repeat exactly.
    base = prof({"aten::mm": 10.0}, 306_420_235.0, deterministic=False, unstable=("total",))
    head = prof({"aten::mm": 12.0}, 306_420_425.0, deterministic=False, unstable=("total",))
    step, mm = judge_exact(
        [
            (sid(None, "transformer.BlockBackward.instr_total"), pt(306_420_235.0),
             pt(306_420_425.0)),
            (sid("aten::mm"), pt(10.0), pt(12.0)),
        ],
        [base],
        [head],
    )  # fmt: skip
    assert step.state.exact == "unsteady"
    assert "whole step not deterministic at base and head" in step.reason
    assert step.state.exact_why == ""  # an older sidecar says no why
    assert mm.state.exact == "more"
    assert [w.op for w in count_changes([base], [head])] == ["aten::mm"]
    # An older sidecar: not deterministic, no target named -> nothing of it is judged.
    legacy = prof({"aten::mm": 10.0}, 5.0, deterministic=False, unstable=())
    (f,) = judge_exact([(sid("aten::mm"), pt(10.0), pt(12.0))], [legacy], [head])
    assert f.state.exact == "unsteady"
    assert count_changes([legacy], [head]) == ()


def test_absent_sides() -> None:
    new, gone = judge_exact(
        [(sid("aten::abs"), None, pt(5.0)), (sid("aten::abs"), pt(5.0), pt(None))]
    )
    assert (new.state.presence, gone.state.presence) == ("new", "removed")


def test_an_op_that_still_runs_nested_is_uncounted_never_removed() -> None:
    """Issue 28: ``aten::slice`` was listed as removed (11,876 → n/a) while it still ran 8
    times at head, inside another op: the replay counts top-level calls only. The
    profiler, which sees nested calls, says it runs: the row is ``uncounted`` there."""
    from neuronasv.report.rowwords import state_words

    base = prof({"aten::slice": 11_876.0}, 50_000.0)
    nested = WorkloadProfile(
        "rmsnorm.naive", "cpu", "4x512", "float32", (10.0,),
        (OpProfile("aten::slice", 8.0, (1.0,), (1.0,)),),
        counted=PassCounts(total=51_000.0, ops={}),
    )  # fmt: skip
    (f,) = judge_exact([(sid("aten::slice"), pt(11_876.0), None)], [base], [nested])
    assert f.state.presence == "both" and f.state.exact == "uncounted"
    assert "still runs, but only inside other ops" in f.reason
    assert "removed" not in state_words(f)
    assert "not counted at head" in state_words(f)
    gone = WorkloadProfile("rmsnorm.naive", "cpu", "4x512", "float32", (10.0,), ())
    (r,) = judge_exact([(sid("aten::slice"), pt(11_876.0), None)], [base], [gone])
    assert r.state.presence == "removed"  # the profiler does not see it at head: removed


def test_identical_counts_give_no_work_change_and_unstable_sides_none() -> None:
    same = prof({"aten::mul": 12_102.0}, 68_722.0)
    assert count_changes([same], [same]) == ()
    shaky = prof({"aten::mul": 1.0}, 68_722.0, deterministic=False, unstable=("aten::mul",))
    assert count_changes([shaky], [same]) == ()
    other = prof({"aten::mul": 1.0}, 68_722.0, deterministic=False, unstable=("aten::mean",))
    assert [w.op for w in count_changes([other], [same])] == ["aten::mul"]
    known = [(("rmsnorm.naive", "4x512", "float32"), "aten::mul")]
    assert count_changes([same], [prof({"aten::mul": 2.0}, 1.0)], known=known) == ()


def test_compare_judges_instruction_series_exactly_beside_the_timing() -> None:
    from neuronasv.analyse.pairwise import compare
    from neuronasv.model import History, Series

    b, h = "b" * 40, "h" * 40
    fp = {"backend": "cpu", "device_model": "cpu"}
    base = prof({"aten::mul": 12_102.0, "aten::add": 15_079.0}, 68_722.0)
    head = prof({"aten::mul": 14_545.0, "aten::add": 15_079.0}, 71_165.0)

    def series(s: SeriesId, unit: str, bv: float, hv: float, samples: int = 0) -> Series:
        def point(commit: str, order: int, v: float) -> Point:
            return Point(
                commit, order, v, tuple(v * (1 + 0.2 * (i % 3 - 1)) for i in range(samples))
            )

        return Series("m", "env", s, unit, (point(b, 0, bv), point(h, 1, hv)))

    timed = SeriesId("rmsnorm.Naive.devtime_op", ("'4x512'", "'float32'", "'aten::mul'"),
                     "rmsnorm.naive", "4x512", "float32", "aten::mul")  # fmt: skip
    history = History(
        series=(
            series(sid("aten::mul"), "instructions", 12_102.0, 14_545.0),
            series(sid("aten::add"), "instructions", 15_079.0, 15_079.0),
            series(sid(None, "rmsnorm.Naive.instr_total"), "instructions", 68_722.0, 71_165.0),
            series(timed, "seconds", 1e-6, 1.02e-6, samples=10),
        ),
        commits=(b, h),
        fingerprints={("m", b): fp, ("m", h): fp},
        profiles={("m", b): (base,), ("m", h): (head,)},
    )
    doc = compare(history, b, h, floors={})
    rows = {(f.series.benchmark, f.series.op): f for f in doc.findings}
    mul = rows[("rmsnorm.Naive.instr_op", "aten::mul")]
    assert mul.state.exact == "more" and "+2,443 instructions per iteration" in mul.reason
    assert mul.series.label.endswith("(instructions)")
    assert mul.state.work == "unknown" and mul.state.gate == ""  # its own axis, no gate
    assert rows[("rmsnorm.Naive.instr_op", "aten::add")].state.exact == "same"
    assert rows[("rmsnorm.Naive.instr_total", None)].state.exact == "more"
    timing = rows[("rmsnorm.Naive.devtime_op", "aten::mul")]
    # the count is the time row's instruction axis: its direction where the time is open
    assert timing.state.exact == "more" and timing.state.work == "same"
    assert timing.state.direction == "worse" and timing.state.time != "slower"
    assert [w.kind for w in doc.work] == ["instructions"]


def test_a_target_not_deterministic_says_why_in_its_reason_and_its_row() -> None:
    from dataclasses import replace

    from neuronasv.report.rowwords import state_words

    why = "the autograd engine's hash tables are keyed by node addresses (the heap's history)"
    base = prof({"aten::mm": 10.0}, 306_420_235.0, deterministic=False, unstable=("total",))
    assert base.counted is not None
    base = replace(base, counted=replace(base.counted, why={"total": why}))
    head = prof({"aten::mm": 10.0}, 306_420_425.0, deterministic=False, unstable=("total",))
    step, mm = judge_exact(
        [(sid(None, "rmsnorm.Naive.instr_total"), pt(306_420_235.0), pt(306_420_425.0)),
         (sid("aten::mm"), pt(10.0), pt(10.0))],
        [base], [head],
    )  # fmt: skip
    assert step.state.exact_why == why and f"({why})" in step.reason
    assert state_words(step) == f"instruction count not deterministic, not judged: {why}"
    assert mm.state.exact_why == "" and mm.state.exact == "same"  # the ops: judged
    # an op's why is the configuration's "ops" line
    both = replace(base.counted, unstable=("aten::mm",), why={"ops": "moved in x +1"})
    (op,) = judge_exact([(sid("aten::mm"), pt(10.0), pt(10.0))],
                        [replace(base, counted=both)], [head])  # fmt: skip
    assert op.state.exact_why == "moved in x +1"


def test_an_instruction_row_reads_on_its_own_axis_never_as_a_time_or_work() -> None:
    """Row states on an instruction row: no time axis (nothing was timed), no work words
    (issue 28: ``aten::add 9,206 instructions -39 %`` read "more work"), the count's own
    words that follow its sign, and a non-deterministic count said, never judged."""
    from neuronasv.analyse.states import with_states
    from neuronasv.model import FindingsDocument, RunRef, WorkChange
    from neuronasv.report.rowwords import state_cell, state_words

    s = SeriesId("rmsnorm.Naive.instr_op", (), "rmsnorm.naive", "4x512", "float32", "aten::add")
    # the op's *work* grew (a broadcast add moves more bytes) while its count fell
    more_bytes = WorkChange("rmsnorm.naive", "4x512", "float32", "aten::add", "shapes",
                            calls_base=1.0, calls_head=1.0, bytes_base=40.0,
                            bytes_head=16e3)  # fmt: skip
    for base, head, axis, words in (
        (15_073.0, 9_206.0, "fewer", "fewer instructions (-5,867 per iteration, -39 %), exact"),
        (12_102.0, 14_545.0, "more", "more instructions (+2,443 per iteration, +20 %), exact"),
        (12_102.0, 12_102.0, "same", "same instructions, exact"),
        (1.0, 2.0, "unsteady", "instruction count not deterministic, not judged"),
    ):
        row = finding(s, unit="instructions", base=base, head=head, source="exact count",
                      exact=axis)  # fmt: skip
        doc = FindingsDocument("compare", RunRef("a" * 40, "m"), RunRef("b" * 40, "m"), (row,),
                               work=(more_bytes,))  # fmt: skip
        (f,) = with_states(doc).findings
        assert f.state.time == "none" and f.state.work == "unknown" and f.state.gate == ""
        assert state_words(f) == words and state_cell(f) == words
        assert "time" not in state_words(f) and "work" not in state_words(f)


def test_a_cause_keeps_the_device_time_total_beside_an_instruction_total() -> None:
    """Causes are regrouped after confirm from every finding: the ``instr_total`` of a
    configuration must not take its device-time total's place (the demo's cause table
    once showed only instruction rows)."""
    from neuronasv.analyse.causes import find_causes
    from neuronasv.model import WorkChange

    wl, shape, dtype = "rmsnorm.naive", "4x512", "float32"
    dev = SeriesId("rmsnorm.Naive.devtime_total", (), wl, shape, dtype)
    ins = SeriesId("rmsnorm.Naive.instr_total", (), wl, shape, dtype)
    findings = [
        finding(dev, "regression", base=1e-5, head=2e-5),
        finding(ins, unit="instructions", base=100.0, head=150.0, exact="more"),
    ]
    work = [WorkChange(wl, shape, dtype, "aten::add", "new", calls_head=1.0)]
    for order in (findings, findings[::-1]):
        causes = find_causes(order, work)
        assert causes and all(ins not in c.totals for c in causes)
        assert any(dev in c.totals for c in causes)


def test_an_undecided_time_row_states_its_exact_instruction_count() -> None:
    """Issue 24: where the timing cannot decide, the row says so and gives the exact
    instruction delta of the same series ("time not decided; more instructions (+2,169 per
    iteration, +3.2 %), exact"); a decided time or a non-deterministic count adds none."""
    from dataclasses import replace

    from neuronasv.analyse.states import with_states
    from neuronasv.model import Finding, FindingsDocument, RunRef
    from neuronasv.report.rowwords import state_cell, state_words

    wl, shape, dtype = "rmsnorm.naive", "4x512", "float32"
    dev = SeriesId("rmsnorm.Naive.devtime_total", (), wl, shape, dtype)
    ins = SeriesId("rmsnorm.Naive.instr_total", (), wl, shape, dtype)
    timed = finding(dev, "noisy", base=1.89e-5, head=2.09e-5)
    counted = finding(ins, unit="instructions", base=68590.0, head=70759.0,
                      source="exact count", exact="more")  # fmt: skip

    def state_of(*fs: Finding) -> Finding:
        doc = FindingsDocument("compare", RunRef("a" * 40, "m"), RunRef("b" * 40, "m"), fs)
        return next(f for f in with_states(doc).findings if f.series == dev)

    row = state_of(timed, counted)
    tail = "; more instructions (+2,169 per iteration, +3.2 %), exact"
    assert state_cell(row).endswith(tail) and state_words(row).endswith(tail)
    assert "time not decided" in state_cell(row)
    # the exact axis fires the gate under its own name, on the time row
    assert row.state.exact == "more"
    assert row.state.gate == "more instructions, time undecided"
    doc = FindingsDocument("compare", RunRef("a" * 40, "m"), RunRef("b" * 40, "m"), (row,))
    assert FindingsDocument.loads(doc.dumps()).findings[0].state == row.state
    # beside a decided time too (issue 39: a slower time says what the counts did)
    slower = state_of(replace(timed, state=replace(timed.state, time="slower")), counted)
    assert state_cell(slower).endswith(tail) and state_words(slower).endswith(tail)
    for other, counts in (
        (timed, replace(counted, state=replace(counted.state, exact="unsteady"))),
    ):
        quiet = state_of(other, counts)
        assert "instructions" not in state_cell(quiet)
