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


def test_a_configuration_has_a_direction_only_when_every_change_agrees() -> None:
    more = [wc("aten::full_like", "new"), wc("aten::add", "bytes", bytes_base=1, bytes_head=9)]
    assert config_directions(more) == {CFG: "more"}
    assert config_directions([*more, wc("aten::fill_", "removed")]) == {CFG: "mixed"}


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
    with pytest.raises(Exception, match="basis"):
        Finding.from_json(bad, "t")
