"""Cells of a cause's table: the fraction of peak and the work-decided total's change."""

from __future__ import annotations

from neuronasv.analyse.evidence import apply_work
from neuronasv.model import Finding, SeriesId, WorkChange

CFG = ("rmsnorm.naive", "4x512", "float32")


def total(verdict: str) -> Finding:
    sid = SeriesId("rmsnorm.Naive.devtime_total", (), *CFG)
    return Finding(sid, verdict, "seconds", 1.0, 1.05, ratio=1.05)  # type: ignore[arg-type]


def wc(op: str, kind: str, **kw: object) -> WorkChange:
    return WorkChange(*CFG, op=op, kind=kind, **kw)  # type: ignore[arg-type]


def test_a_fraction_above_the_roof_reads_as_such() -> None:
    from neuronasv.report.causes import of_peak

    assert of_peak(0.048, 1.19, "memory") == "4.8 % → >100 % of peak (memory)"
    assert of_peak(0.62, 0.21, "memory") == "62 % → 21 % of peak (memory)"
    assert of_peak(None, 1.5, None) == ">100 % of peak"


def test_a_work_decided_total_is_not_bolded_as_a_timed_change() -> None:
    from neuronasv.report.causes import total_cells

    (w,) = apply_work([total("noisy")], [wc("aten::full_like", "new")])
    _, change, state = total_cells(w)
    assert not change.startswith("**") and state == "✓ certain: more work"
    _, timed, _ = total_cells(total("regression"))
    assert timed.startswith("**")
