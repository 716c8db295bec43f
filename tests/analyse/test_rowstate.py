"""Row states on two axes and the gate per axis (analyse/rowstate.py)."""

from __future__ import annotations

import pytest

from neuronasv.analyse.floors import NoiseFloor
from neuronasv.analyse.rowstate import Gate, carried_direction, with_states
from neuronasv.analyse.runnernoise import min_change, runner_noise, sentence
from neuronasv.model import Finding, FindingsDocument, RowState, SeriesId, WorkChange

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
    ("verdict", "ratio", "time"),
    [
        ("regression", 1.3, "slower"),
        ("regression", 0.9, "undecided"),  # a verdict against its Δ is never "slower"
        ("regression", 1.0004, "undecided"),  # +0.0 % as displayed
        ("improvement", 0.7, "faster"),
        ("improvement", 1.1, "undecided"),
        ("unchanged", 1.01, "noise"),
        ("noisy", 1.4, "undecided"),
        ("new", 1.0, "none"),
    ],
)
def test_the_time_axis_agrees_with_the_sign_of_its_delta(
    verdict: str, ratio: float, time: str
) -> None:
    f = Finding(TOTAL, verdict, "seconds", 1.0, ratio, ratio=ratio)  # type: ignore[arg-type]
    assert _state(f).time == time


def test_the_gate_per_axis_and_the_rule_it_names() -> None:
    more = (wc("aten::full_like", "new", calls_head=1, bytes_head=4096),)
    undecided = Finding(TOTAL, "noisy", "seconds", 1.0, 0.9, ratio=0.9)
    slower = Finding(TOTAL, "regression", "seconds", 1.0, 1.3, ratio=1.3, confirmed=True)
    single = Finding(TOTAL, "regression", "seconds", 1.0, 1.3, ratio=1.3)
    assert _state(undecided, more).gate == "more work, time undecided"  # default, Δ < 0
    assert _state(undecided, more, Gate(work="never")).gate == ""
    assert _state(slower).gate == "confirmed slower time"
    assert _state(single).gate == ""  # default: a single run's slower time does not gate
    assert _state(single, gate=Gate(time="slower")).gate == "slower time"
    assert _state(single, more).gate == "more work, time undecided"  # not confirmed
    views = (wc("aten::view", "calls", calls_base=1, calls_head=4, bytes_base=0, bytes_head=0),)
    assert _state(undecided, views).gate == ""  # extra view calls are not more work


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
