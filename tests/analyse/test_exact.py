"""Instruction counts judged as exact facts (analyse/exact.py) and as work evidence."""

from __future__ import annotations

from neuronasv.analyse.evidence import apply_work
from neuronasv.analyse.exact import instruction_changes, judge_exact
from neuronasv.model import Finding, OpProfile, Point, SeriesId, WorkloadProfile
from neuronasv.model.instructions import InstructionCounts


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
        instructions=InstructionCounts(
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
    assert mul.verdict == "regression" and mul.basis == "work" and mul.confirmed
    assert "aten::mul +2,443 instructions per iteration (+20 %, exact)" in mul.reason
    assert "no statistics" in mul.reason and mul.p_value is None
    assert total.verdict == "unchanged" and "68,722 instructions per iteration" in total.reason


def test_a_one_percent_change_is_reported_and_fewer_is_an_improvement() -> None:
    (up,) = judge_exact([(sid("aten::mean"), pt(24_920.0), pt(25_169.0))])
    assert up.verdict == "regression" and "+1.0 %" in up.reason
    (down,) = judge_exact([(sid("aten::mean"), pt(24_920.0), pt(24_919.0))])
    assert down.verdict == "improvement" and "aten::mean -1 instructions" in down.reason


def test_counts_that_were_not_deterministic_are_said_and_never_judged() -> None:
    base = prof({"aten::mean": 1.0}, 5.0, deterministic=False)
    (f,) = judge_exact([(sid("aten::mean"), pt(24_920.0), pt(30_000.0))], [base], [prof({}, 5.0)])
    assert f.verdict == "noisy" and f.confirmed is None
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
    assert step.verdict == "noisy"
    assert "whole step not deterministic at base and head" in step.reason
    assert mm.verdict == "regression" and mm.confirmed
    assert [w.op for w in instruction_changes([base], [head])] == ["aten::mm"]
    # An older sidecar: not deterministic, no target named -> nothing of it is judged.
    legacy = prof({"aten::mm": 10.0}, 5.0, deterministic=False, unstable=())
    (f,) = judge_exact([(sid("aten::mm"), pt(10.0), pt(12.0))], [legacy], [head])
    assert f.verdict == "noisy"
    assert instruction_changes([legacy], [head]) == ()


def test_absent_sides() -> None:
    new, gone = judge_exact(
        [(sid("aten::abs"), None, pt(5.0)), (sid("aten::abs"), pt(5.0), pt(None))]
    )
    assert (new.verdict, gone.verdict) == ("new", "removed")


def test_an_op_instruction_change_decides_the_noisy_timing_row() -> None:
    base = prof({"aten::mul": 12_102.0, "aten::add": 15_079.0}, 68_722.0)
    head = prof({"aten::mul": 14_545.0, "aten::add": 15_079.0}, 71_165.0)
    work = instruction_changes([base], [head])
    assert [(w.op, w.kind, w.instructions_base, w.instructions_head) for w in work] == [
        ("aten::mul", "instructions", 12_102.0, 14_545.0)
    ]
    timing_sid = SeriesId("rmsnorm.Naive.devtime_op", (), "rmsnorm.naive", "4x512", "float32",
                          "aten::mul")  # fmt: skip
    noisy = Finding(timing_sid, "noisy", "seconds", 1e-6, 1.05e-6, ratio=1.05,
                    reason="within the noise of this runner")  # fmt: skip
    (decided,) = apply_work([noisy], work)
    assert decided.verdict == "regression" and decided.basis == "work"
    assert "aten::mul +2,443 instructions per iteration (+20 %, exact)" in decided.reason
    assert "the timing alone did not decide: within the noise of this runner" in decided.reason


def test_identical_counts_give_no_work_change_and_unstable_sides_none() -> None:
    same = prof({"aten::mul": 12_102.0}, 68_722.0)
    assert instruction_changes([same], [same]) == ()
    shaky = prof({"aten::mul": 1.0}, 68_722.0, deterministic=False, unstable=("aten::mul",))
    assert instruction_changes([shaky], [same]) == ()
    other = prof({"aten::mul": 1.0}, 68_722.0, deterministic=False, unstable=("aten::mean",))
    assert [w.op for w in instruction_changes([other], [same])] == ["aten::mul"]
    known = [(("rmsnorm.naive", "4x512", "float32"), "aten::mul")]
    assert instruction_changes([same], [prof({"aten::mul": 2.0}, 1.0)], known=known) == ()


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
    assert mul.verdict == "regression" and "+2,443 instructions per iteration" in mul.reason
    assert mul.series.label.endswith("(instructions)")
    assert rows[("rmsnorm.Naive.instr_op", "aten::add")].verdict == "unchanged"
    assert rows[("rmsnorm.Naive.instr_total", None)].verdict == "regression"
    timing = rows[("rmsnorm.Naive.devtime_op", "aten::mul")]
    assert timing.verdict == "regression" and timing.basis == "work"  # decided by the count
    assert [w.kind for w in doc.work] == ["instructions"]


def test_an_instruction_row_reads_as_exact_work_never_as_an_undecided_time() -> None:
    """Row states (issue 20) on an instruction row: no time axis (nothing was timed), the
    exact delta in its words, and a non-deterministic count said, never judged."""
    from dataclasses import replace

    from neuronasv.analyse.rowstate import Gate, row_state
    from neuronasv.report.rowwords import state_cell, state_words

    sid = SeriesId("rmsnorm.Naive.instr_total", (), "rmsnorm.naive", "4x512", "float32")
    up = Finding(sid, "regression", "instructions", 12102.0, 14545.0, ratio=14545 / 12102)
    noisy = replace(up, verdict="noisy")
    for f, words in (
        (up, "+2,443 instructions per iteration (+20 %), exact"),
        (noisy, "instruction count not deterministic, not judged"),
    ):
        state = row_state(f, (), evidence=False, rounds=False, gate=Gate())
        assert state.time == "none"
        f = replace(f, state=state)
        assert state_words(f) == words and state_cell(f) == words
        assert "time" not in state_words(f)


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
        Finding(dev, "regression", "seconds", 1e-5, 2e-5, ratio=2.0),
        Finding(ins, "regression", "instructions", 100.0, 150.0, ratio=1.5),
    ]
    work = [WorkChange(wl, shape, dtype, "aten::add", "new", calls_head=1.0)]
    for order in (findings, findings[::-1]):
        causes = find_causes(order, work)
        assert causes and all(ins not in c.totals for c in causes)
        assert any(dev in c.totals for c in causes)


def test_an_undecided_time_row_states_its_exact_instruction_count() -> None:
    """Issue 24: where the timing cannot decide, the row says so and gives the exact
    instruction delta of the same series ("time not decided; +2,169 instructions per
    iteration (+3.2 %), exact"); a decided time or a non-deterministic count adds none."""
    from dataclasses import replace

    from neuronasv.analyse.rowstate import with_states
    from neuronasv.model import FindingsDocument, RunRef
    from neuronasv.report.rowwords import state_cell, state_words

    wl, shape, dtype = "rmsnorm.naive", "4x512", "float32"
    dev = SeriesId("rmsnorm.Naive.devtime_total", (), wl, shape, dtype)
    ins = SeriesId("rmsnorm.Naive.instr_total", (), wl, shape, dtype)
    timed = Finding(dev, "noisy", "seconds", 1.89e-5, 2.09e-5, ratio=2.09 / 1.89)
    counted = Finding(ins, "regression", "instructions", 68590.0, 70759.0, ratio=70759 / 68590)

    def state_of(*fs: Finding) -> Finding:
        doc = FindingsDocument("compare", RunRef("a" * 40, "m"), RunRef("b" * 40, "m"), fs)
        return next(f for f in with_states(doc).findings if f.series == dev)

    row = state_of(timed, counted)
    tail = "; +2,169 instructions per iteration (+3.2 %), exact"
    assert state_cell(row).endswith(tail) and state_words(row).endswith(tail)
    assert "time not decided" in state_cell(row)
    assert (
        FindingsDocument.loads(
            FindingsDocument(
                "compare", RunRef("a" * 40, "m"), RunRef("b" * 40, "m"), (row,)
            ).dumps()
        )
        .findings[0]
        .state
        == row.state
    )  # stored in the document, read back
    for other in (replace(timed, verdict="regression"), timed):
        counts = replace(counted, verdict="noisy") if other is timed else counted
        quiet = state_of(other, counts)
        assert "instructions" not in state_cell(quiet)
