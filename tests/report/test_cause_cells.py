"""Cells of a cause's table: the fraction of peak and the work-decided total's change."""

from __future__ import annotations

from neuronasv.analyse.states import with_states
from neuronasv.model import Finding, FindingsDocument, SeriesId, WorkChange
from tests.builders import finding

CFG = ("rmsnorm.naive", "4x512", "float32")


def total(verdict: str) -> Finding:
    sid = SeriesId("rmsnorm.Naive.devtime_total", (), *CFG)
    return finding(sid, verdict, base=1.0, head=1.05)


def wc(op: str, kind: str, **kw: object) -> WorkChange:
    return WorkChange(*CFG, op=op, kind=kind, **kw)  # type: ignore[arg-type]


def test_a_fraction_above_the_roof_is_never_shown_as_a_figure_nor_as_advice() -> None:
    from neuronasv.report.causes import of_peak

    assert of_peak(0.048, 1.19, "memory") == "above peak (memory)"
    assert of_peak(0.62, 0.21, "memory") == "62 % → 21 % of peak (memory)"
    assert of_peak(None, 1.5, None) == "above peak"
    assert "%" not in of_peak(1.3, 4.79, "compute")  # seen: aten::mm 130 %, aten::mul 479 %
    # A reviewer is never told to recalibrate (issue 28): the roof is the machine's business.
    assert "calibrat" not in of_peak(1.3, 4.79, "compute")


def test_a_work_decided_total_is_not_bolded_as_a_timed_change() -> None:
    from neuronasv.report.causes import total_cells

    work = [wc("aten::full_like", "new")]
    doc = with_states(
        FindingsDocument(
            mode="compare", base=None, head=None, findings=(total("noisy"),), work=tuple(work)
        )
    )
    _, change, state = total_cells(doc.findings[0])
    # the two axes, each in its own words: no certainty word on the undecided time
    assert not change.startswith("**") and state == "more work · time not decided"
    timed_doc = with_states(
        FindingsDocument(mode="compare", base=None, head=None, findings=(total("regression"),))
    )
    _, timed, state = total_cells(timed_doc.findings[0])
    assert timed.startswith("**")
    assert state == "same work · slower, single run, a suspect to re-measure"
