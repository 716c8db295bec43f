"""The "of peak" column in every view: absent without a roof, never advice to recalibrate.

Seen (issue 28): the demo comment said "above the calibrated peak: recalibrate" 26-60
times, mostly above the fold — the roof was measured on a loaded machine with other threads
than the suite's. A roof that cannot be measured honestly is not stored (measure/cpu_roof),
so there is no fraction and no column; a fraction above an honest roof is a fact about the
op ("above peak": served from cache), never a request to the reviewer.
"""

from __future__ import annotations

import pytest

from neuronasv.analyse.causes import with_causes
from neuronasv.model import FindingsDocument, OpContribution, RunRef, SeriesId
from neuronasv.report.document import render_document
from neuronasv.report.markdown import render_comment
from neuronasv.report.summary import render_summary
from neuronasv.report.terminal import terminal_text
from tests.builders import finding

BASE, HEAD = "a" * 40, "e" * 40


def _doc(base_fraction: float | None, head_fraction: float | None) -> FindingsDocument:
    bound = "memory" if head_fraction is not None else None
    total = SeriesId("b.devtime", ("'total'",), "rmsnorm.naive", "4x512", "bfloat16")
    ops = SeriesId("b.devtime", ("'aten::mul'",), "rmsnorm.naive", "4x512", "bfloat16",
                   "aten::mul")  # fmt: skip
    part = OpContribution("aten::mul", 5e-6, 15e-6, 1e-5, 1.0, roofline_base=base_fraction,
                          roofline_head=head_fraction, roofline_bound=bound)  # fmt: skip
    f = finding(total, "regression", base=1e-5, head=2e-5, attribution=(part,))
    g = finding(ops, "regression", base=5e-6, head=15e-6, roofline_base=base_fraction,
                roofline_head=head_fraction, roofline_bound=bound)  # fmt: skip
    return with_causes(FindingsDocument(mode="compare", base=RunRef(BASE, "m"),
                                        head=RunRef(HEAD, "m"), findings=(f, g)))  # fmt: skip


def views(doc: FindingsDocument) -> dict[str, str]:
    return {
        "comment": render_comment(doc),
        "compare text": render_document(doc, "text"),
        "compare markdown": render_document(doc, "markdown"),
        "terminal": terminal_text(doc, width=220),
        "summary": render_summary(doc),
    }


def test_without_a_roof_no_view_has_an_of_peak_column_or_text() -> None:
    for name, text in views(_doc(None, None)).items():
        low = text.lower()
        assert "of peak" not in low and "above peak" not in low, name
        assert "calibrat" not in low and "roof" not in low, name


@pytest.mark.parametrize(("base", "head"), [(0.048, 1.19), (1.3, 4.79), (None, 1.5)])
def test_above_the_roof_every_view_says_a_fact_never_recalibrate(
    base: float | None, head: float | None
) -> None:
    for name, text in views(_doc(base, head)).items():
        assert "recalibrate" not in text.lower() and "calibrated peak" not in text, name
        assert "479 %" not in text and "119 %" not in text, name  # never a figure above 100 %
    assert "above peak (memory)" in render_comment(_doc(base, head))


def test_a_document_with_fractions_then_without_drops_the_column() -> None:
    with_roof = render_comment(_doc(0.62, 0.21))
    assert "62 % → 21 % of peak (memory)" in with_roof and "Of peak" in with_roof
    assert "Of peak" not in render_comment(_doc(None, None))
