"""Work decides where timing cannot: one-sided work changes settle undecided series."""

from __future__ import annotations

from dataclasses import replace

import pytest

from neuronasv.analyse.confirm import _settle
from neuronasv.analyse.evidence import apply_work, change_direction, config_directions
from neuronasv.model import Finding, SeriesId, WorkChange

CFG = ("rmsnorm.naive", "4x512", "float32")


def wc(op: str, kind: str, **kw: object) -> WorkChange:
    return WorkChange(*CFG, op=op, kind=kind, **kw)  # type: ignore[arg-type]


def total(verdict: str = "noisy", **kw: object) -> Finding:
    sid = SeriesId("rmsnorm.Naive.devtime_total", (), *CFG)
    return Finding(sid, verdict, "seconds", 1.0, 1.05, ratio=1.05,  # type: ignore[arg-type]
                   reason="+5 %, p=0.3", **kw)


def op(name: str, verdict: str = "noisy") -> Finding:
    sid = SeriesId("rmsnorm.Naive.devtime_op", (), *CFG, op=name)
    return Finding(sid, verdict, "seconds", 1.0, 1.1, ratio=1.1,  # type: ignore[arg-type]
                   reason="+10 %, p=0.2")


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
    work = [wc("aten::full_like", "new"),
            wc("aten::add", "shapes", bytes_base=16, bytes_head=8192, flops_base=4,
               flops_head=2048)]
    t, o = apply_work([total("noisy", warnings=("not confirmed on re-measurement",)),
                       op("aten::add", "unchanged")], work)
    assert (t.verdict, t.basis, t.confirmed) == ("regression", "work", True)
    assert t.ratio == 1.05 and "not confirmed on re-measurement" not in t.warnings
    assert "more work at head (new op aten::full_like, aten::add bytes ×512)" in t.reason
    assert "+5 %, p=0.3" in t.reason  # the timing stays beside it
    assert (o.verdict, o.basis) == ("regression", "work")


def test_less_work_is_an_improvement_and_mixed_work_is_left_to_the_timing() -> None:
    (t,) = apply_work([total("unchanged")], [wc("aten::fill_", "removed")])
    assert (t.verdict, t.basis) == ("improvement", "work")
    mixed = [wc("aten::fill_", "removed"), wc("aten::full_like", "new")]
    (u,) = apply_work([total("noisy")], mixed)
    assert (u.verdict, u.basis, u.confirmed) == ("noisy", "timing", None)


def test_a_significant_timing_verdict_stands_with_a_warning_when_it_contradicts_the_work() -> None:
    (t,) = apply_work([total("improvement")], [wc("aten::full_like", "new")])
    assert (t.verdict, t.basis) == ("improvement", "timing")
    assert any("more work at head" in w and "other way" in w for w in t.warnings)
    (r,) = apply_work([total("regression")], [wc("aten::full_like", "new")])
    assert r == total("regression")


def test_no_work_change_changes_nothing_and_acks_are_left_alone() -> None:
    fs = [total("noisy"), op("aten::mul", "unchanged")]
    assert apply_work(fs, []) == fs
    acked = replace(total("noisy"), acknowledged="known")
    assert apply_work([acked], [wc("aten::full_like", "new")]) == [acked]


def test_rounds_that_do_not_decide_keep_the_work_verdict_and_bring_their_figures() -> None:
    (f,) = apply_work([total("noisy")], [wc("aten::full_like", "new")])
    g = replace(total("noisy"), ratio=1.04, ci_low=0.9, ci_high=1.2, reason="rounds say +4 %")
    s = _settle(f, g, decided=False, rounds=3)
    assert (s.verdict, s.basis, s.confirmed) == ("regression", "work", True)
    assert (s.ratio, s.ci_low, s.ci_high) == (1.04, 0.9, 1.2)
    # A rounds verdict that decides the same way is a timing confirmation.
    g2 = replace(total("regression"), ratio=1.2, reason="rounds: +20 %")
    s2 = _settle(f, g2, decided=True, rounds=3)
    assert (s2.verdict, s2.basis, s2.confirmed) == ("regression", "timing", True)


def test_basis_round_trips_and_old_documents_read_as_timing() -> None:
    (f,) = apply_work([total("noisy")], [wc("aten::full_like", "new")])
    back = Finding.from_json(f.to_json(), "t")
    assert back.basis == "work"
    old = f.to_json()
    del old["basis"]
    assert Finding.from_json(old, "t").basis == "timing"
    bad = {**f.to_json(), "basis": "vibes"}
    with pytest.raises(Exception, match="unknown basis"):
        Finding.from_json(bad, "t")


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
    (t, c) = apply_work([total("noisy"), op("aten::copy_", "noisy")], work)
    assert (t.verdict, t.basis) == ("regression", "work")
    assert "over the changed ops calls" not in t.reason  # calls stay 5 -> 5
    assert "bytes ×" in t.reason and "FLOPs ×" in t.reason
    assert (c.verdict, c.basis) == ("improvement", "work")  # that op does less


def test_fewer_calls_against_more_bytes_has_no_direction() -> None:
    work = [
        wc("aten::to", "calls", calls_base=3, calls_head=1),
        wc("aten::add", "shapes", calls_base=1, calls_head=1, bytes_base=40, bytes_head=400),
    ]
    assert config_directions(work) == {CFG: "mixed"}

