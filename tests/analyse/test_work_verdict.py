"""Work decides where timing cannot: a one-sided work change gives an undecided row its
direction (:attr:`RowState.direction`), the timing staying beside it as measured."""

from __future__ import annotations

from dataclasses import replace

import pytest

from neuronasv.analyse.confirm import _settle
from neuronasv.analyse.evidence import change_direction, config_directions
from neuronasv.analyse.states import with_states
from neuronasv.model import Finding, FindingsDocument, SeriesId, WorkChange
from tests.builders import finding

CFG = ("rmsnorm.naive", "4x512", "float32")


def wc(op: str, kind: str, **kw: object) -> WorkChange:
    return WorkChange(*CFG, op=op, kind=kind, **kw)  # type: ignore[arg-type]


def total(verdict: str = "noisy", **kw: object) -> Finding:
    sid = SeriesId("rmsnorm.Naive.devtime_total", (), *CFG)
    return finding(sid, verdict, base=1.0, head=1.05, reason="+5 %, p=0.3", **kw)


def op(name: str, verdict: str = "noisy") -> Finding:
    sid = SeriesId("rmsnorm.Naive.devtime_op", (), *CFG, op=name)
    return finding(sid, verdict, base=1.0, head=1.1, reason="+10 %, p=0.2")


def states(fs: list[Finding], work: list[WorkChange]) -> list[Finding]:
    doc = FindingsDocument("compare", None, None, findings=tuple(fs), work=tuple(work))
    return list(with_states(doc).findings)


@pytest.mark.parametrize(
    ("change", "direction"),
    [
        (wc("aten::full_like", "new"), "more"),
        (wc("aten::fill_", "removed"), "less"),
        (wc("aten::mul", "calls", calls_base=3, calls_head=4), "more"),
        (wc("aten::mul", "calls", calls_base=4, calls_head=3, bytes_base=8, bytes_head=6), "less"),
        (wc("aten::add", "shapes", bytes_base=16, bytes_head=8192, flops_base=4, flops_head=2048),
         "more"),
        (wc("aten::add", "bytes", bytes_base=16, bytes_head=8192, flops_base=4, flops_head=4),
         "more"),
        (wc("aten::add", "shapes", bytes_base=16, bytes_head=8192, flops_base=4, flops_head=2),
         "mixed"),
        (wc("aten::add", "shapes"), "mixed"),  # other shapes, no cost known: no direction
        (wc("aten::mul", "calls", calls_base=3, calls_head=4, bytes_base=8, bytes_head=6),
         "mixed"),
    ],
)
def test_direction_of_one_change(change: WorkChange, direction: str) -> None:
    assert change_direction(change) == direction


def test_a_configuration_has_a_direction_when_its_changes_or_their_totals_agree() -> None:
    more = [wc("aten::full_like", "new"), wc("aten::add", "bytes", bytes_base=1, bytes_head=9)]
    assert config_directions(more) == {CFG: "more"}
    fewer_calls = wc("aten::fill_", "removed", calls_base=1, bytes_base=4)
    assert config_directions([*more, fewer_calls]) == {CFG: "mixed"}  # calls down, bytes up


def test_more_work_decides_an_undecided_total_and_op_and_keeps_the_timing_beside() -> None:
    work = [wc("aten::full_like", "new", calls_head=1, bytes_head=4096),
            wc("aten::add", "shapes", bytes_base=16, bytes_head=8192, flops_base=4,
               flops_head=2048)]  # fmt: skip
    t, o = states([total("noisy"), op("aten::add", "unchanged")], work)
    assert (t.state.work, t.state.time, t.state.direction) == ("more", "undecided", "worse")
    assert t.ratio == 1.05 and t.reason == "+5 %, p=0.3"  # the timing stays beside it
    assert (o.state.work, o.state.time, o.state.direction) == ("more", "noise", "worse")


def test_less_work_is_the_better_way_and_mixed_work_is_left_to_the_timing() -> None:
    (t,) = states([total("unchanged")], [wc("aten::fill_", "removed", calls_base=1,
                                             bytes_base=64)])  # fmt: skip
    assert (t.state.work, t.state.direction) == ("less", "better")
    mixed = [wc("aten::fill_", "removed", bytes_base=64), wc("aten::full_like", "new",
                                                              flops_head=9)]  # fmt: skip
    (u,) = states([total("noisy")], mixed)
    assert (u.state.work, u.state.direction) == ("different", None)


def test_a_decided_time_stands_beside_work_that_says_the_other_way() -> None:
    (t,) = states([total("improvement")], [wc("aten::full_like", "new", bytes_head=64)])
    assert (t.state.time, t.state.work, t.state.direction) == ("faster", "more", "better")
    (r,) = states([total("regression")], [wc("aten::full_like", "new", bytes_head=64)])
    assert r.state.direction == "worse"


def test_no_work_change_changes_nothing_and_acks_fire_no_gate() -> None:
    t, o = states([total("noisy"), op("aten::mul", "unchanged")], [])
    assert (t.state.work, t.state.direction, o.state.direction) == ("same", None, None)
    acked = replace(total("noisy"), acknowledged="known")
    (a,) = states([acked], [wc("aten::full_like", "new", bytes_head=64)])
    assert a.state.direction == "worse" and a.state.gate == ""


def test_rounds_that_do_not_decide_keep_the_work_direction_and_bring_their_figures() -> None:
    work = [wc("aten::full_like", "new", bytes_head=64)]
    (f,) = states([total("noisy")], work)
    g = finding(f.series, "noisy", base=1.0, head=1.04, ci=(0.9, 1.2), source="rounds",
                reason="rounds say +4 %")  # fmt: skip
    (s,) = states([_settle(f, g, decided=False, rounds=3)], work)
    assert (s.state.time, s.state.confirmed, s.state.direction) == ("undecided", False, "worse")
    assert (s.ratio, s.ci_low, s.ci_high, s.remeasured) == (1.04, 0.9, 1.2, True)
    # A rounds decision the same way is a confirmed time.
    g2 = finding(f.series, "regression", base=1.0, head=1.2, source="rounds",
                 reason="rounds: +20 %")  # fmt: skip
    (s2,) = states([_settle(f, g2, decided=True, rounds=3)], work)
    assert (s2.state.time, s2.state.confirmed) == ("slower", True)
    assert s2.state.gate == "confirmed slower time"


def test_the_demo_change_is_more_work_in_total_though_a_scalar_copy_is_gone() -> None:
    """The eps patch on the CPU: one scalar-to-tensor copy fewer, but add/rsqrt/fill_ now
    run over every element and full_like/empty_like are new: more work in total."""
    work = [
        wc("aten::to", "calls", calls_base=2, calls_head=1),
        wc("aten::copy_", "calls", calls_base=2, calls_head=1, bytes_base=24, bytes_head=12,
           flops_base=0, flops_head=0),
        wc("aten::add", "shapes", calls_base=1, calls_head=1, bytes_base=40, bytes_head=16400,
           flops_base=4, flops_head=4),
        wc("aten::rsqrt", "shapes", calls_base=1, calls_head=1, bytes_base=32,
           bytes_head=16384, flops_base=4, flops_head=2048),
        wc("aten::full_like", "new", calls_head=1),
        wc("aten::empty_like", "new", calls_head=1, bytes_head=0, flops_head=0),
    ]
    assert config_directions(work) == {CFG: "more"}
    t, c = states([total("noisy"), op("aten::copy_", "noisy")], work)
    assert (t.state.work, t.state.direction) == ("more", "worse")
    assert (c.state.work, c.state.direction) == ("less", "better")  # that op does less


def test_fewer_calls_against_more_bytes_has_no_direction() -> None:
    work = [
        wc("aten::to", "calls", calls_base=3, calls_head=1),
        wc("aten::add", "shapes", calls_base=1, calls_head=1, bytes_base=40, bytes_head=400),
    ]
    assert config_directions(work) == {CFG: "mixed"}

