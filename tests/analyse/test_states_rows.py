"""Row states on their axes and the gate per axis (analyse/states.py)."""

from __future__ import annotations

import pytest

from neuronasv.analyse.floors import NoiseFloor
from neuronasv.analyse.runnernoise import min_change, runner_noise, sentence
from neuronasv.analyse.states import Gate, carried_direction, time_axis, with_states
from neuronasv.model import Finding, FindingsDocument, RowState, SeriesId, WorkChange
from tests.builders import finding

CFG = ("wl", "4x8", "float32")
TOTAL = SeriesId("b", (), *CFG)


def wc(op: str, kind: str, **kw: float) -> WorkChange:
    return WorkChange(*CFG, op=op, kind=kind, **kw)  # type: ignore[arg-type]


def test_more_work_means_more_bytes_or_flops_not_more_view_calls() -> None:
    views = [wc("aten::view", "calls", calls_base=1, calls_head=4, bytes_base=0, bytes_head=0)]
    assert carried_direction(views) == "different"
    new = [wc("aten::full_like", "new", calls_head=1, bytes_head=4096)]
    assert carried_direction(views + new) == "more"
    gone = [wc("aten::add", "removed", calls_base=1, bytes_base=4096, flops_base=512)]
    assert carried_direction(gone) == "less"
    swap = [wc("aten::bmm", "new", calls_head=1, bytes_head=10, flops_head=100),
            wc("aten::sdpa", "removed", calls_base=1, bytes_base=20, flops_base=50)]  # fmt: skip
    assert carried_direction(swap) == "different"
    # without any cost estimate the calls decide, as the work verdict does
    assert carried_direction([wc("aten::mul", "calls", calls_base=3, calls_head=4)]) == "more"
    assert carried_direction([]) == "same"


def _state(f: Finding, work: tuple[WorkChange, ...] = (), gate: Gate | None = None) -> RowState:
    doc = FindingsDocument("compare", None, None, findings=(f,), work=work)
    state = with_states(doc, gate).findings[0].state
    assert state is not None
    return state


@pytest.mark.parametrize(
    ("outcome", "ratio", "time"),
    [
        ("slower", 1.3, "slower"),
        ("slower", 0.9, "undecided"),  # a decision against its Δ is never "slower"
        ("slower", 1.0004, "undecided"),  # +0.0 % as displayed
        ("faster", 0.7, "faster"),
        ("faster", 1.1, "undecided"),
        ("noise", 1.01, "noise"),
        ("undecided", 1.4, "undecided"),
        ("slower", None, "none"),
    ],
)
def test_the_time_axis_agrees_with_the_sign_of_its_delta(
    outcome: str, ratio: float | None, time: str
) -> None:
    assert time_axis(outcome, ratio) == time  # type: ignore[arg-type]


def test_the_gate_per_axis_and_the_rule_it_names() -> None:
    more = (wc("aten::full_like", "new", calls_head=1, bytes_head=4096),)
    undecided = finding(TOTAL, "noisy", base=1.0, head=0.9)
    slower = finding(TOTAL, "regression", base=1.0, head=1.3, confirmed=True)
    single = finding(TOTAL, "regression", base=1.0, head=1.3)
    assert _state(undecided, more).gate == "more work, time undecided"  # default, Δ < 0
    assert _state(undecided, more, Gate(work="never")).gate == ""
    assert _state(slower).gate == "confirmed slower time"
    assert _state(single).gate == ""  # default: a single run's slower time does not gate
    assert _state(single, gate=Gate(time="slower")).gate == "slower time"
    assert _state(single, more).gate == "more work, time undecided"  # not confirmed
    views = (wc("aten::view", "calls", calls_base=1, calls_head=4, bytes_base=0, bytes_head=0),)
    assert _state(undecided, views).gate == ""  # extra view calls are not more work


def test_instruction_changes_are_not_work_and_instruction_rows_fire_no_gate() -> None:
    """Issue 28: the gate's "time undecided, 9 rows" counted 6 instruction rows that have no
    time; and the work axis mixed instruction counts in. An instruction row is on its own
    axis (no work word, no gate); a time row states its series' count on the instruction
    axis, which fires the exact rule under its own name."""
    count = (wc("aten::mul", "instructions", calls_base=3, calls_head=3,
                count_base=100, count_head=120),)  # fmt: skip
    assert carried_direction(count) == "same"
    instr = SeriesId("b.instr", (), *CFG)
    row = finding(instr, unit="instructions", base=100.0, head=120.0, source="exact count",
                  exact="more")  # fmt: skip
    time_row = finding(TOTAL, "noisy", base=1.0, head=1.1)
    doc = FindingsDocument("compare", None, None, findings=(time_row, row), work=count)
    t, i = with_states(doc).findings
    assert (i.state.work, i.state.time, i.state.gate) == ("unknown", "none", "")
    assert (t.state.work, t.state.exact) == ("same", "more")
    assert t.state.gate == "more instructions, time undecided"


def test_runner_noise_sentence_from_the_floors() -> None:
    key = ("w", "rmsnorm.naive", "4x8", "float32")
    floors = {(*key, None): NoiseFloor(0.2, 20), (*key, "aten::mul"): NoiseFloor(0.9, 20)}
    noise = runner_noise(floors, "demo-cpu", 6, 0.01)
    # ops are not workloads: only the total's floor counts
    assert set(noise["min_change"]) == {"rmsnorm.naive"}
    assert noise["min_change"]["rmsnorm.naive"] == pytest.approx(min_change(0.2, 7.4, 6, 0.01))
    assert min_change(0.2, 7.4, 12, 0.01) < min_change(0.2, 7.4, 6, 0.01)  # more rounds
    text = sentence(noise)
    assert text.startswith("on demo-cpu, timing changes under ~") and "(rmsnorm.naive)" in text
    assert text.endswith("are not measurable at 6 rounds")
    assert sentence({}) == "" and runner_noise({}, "m", 6, 0.01) == {}
