"""Cause sentences by weight, one cause per change across workloads (issue 20 item 7).

Synthetic documents shaped like what was seen: a transformer change that replaced the
fused attention by its explicit formula, in ``transformer.attention`` and in the
``transformer.block`` that contains it.
"""

from __future__ import annotations

import re

from neuronasv.analyse.causes import find_causes, is_helper, op_order, with_causes
from neuronasv.model import Finding, FindingsDocument, RunRef, SeriesId, WorkChange
from neuronasv.report import render_comment
from neuronasv.report.causes import cause_views, work_sentence
from tests.builders import finding

SDPA = "aten::_scaled_dot_product_flash_attention_for_cpu"
ATT, BLOCK = "transformer.attention", "transformer.block"


def _changes(wl: str, shape: str) -> list[WorkChange]:
    def w(op: str, kind: str, **kw: object) -> WorkChange:
        return WorkChange(wl, shape, "float32", op, kind, **kw)  # type: ignore[arg-type]

    return [
        # helpers first, as the evidence sorts them by name: the sentence must not
        w("aten::as_strided", "calls", calls_base=6, calls_head=7, bytes_base=0, bytes_head=0),
        w("aten::empty", "calls", calls_base=3, calls_head=2, bytes_base=0, bytes_head=0),
        w("aten::empty_like", "new", calls_head=1, bytes_head=0, flops_head=0, time_head=1e-6),
        w("aten::transpose", "calls", calls_base=6, calls_head=1, bytes_base=0, bytes_head=0),
        w(SDPA, "removed", calls_base=1, bytes_base=3.1e6, flops_base=4.2e8, time_base=244e-6),
        w("aten::bmm", "new", calls_head=2, bytes_head=4.2e6, flops_head=4.2e8, time_head=184e-6),
        w("aten::masked_fill_", "new", calls_head=1, bytes_head=2.1e6, time_head=44.8e-6),
        w("aten::_softmax", "new", calls_head=1, bytes_head=2.1e6, flops_head=5e6, time_head=30e-6),
    ]


def _total(wl: str, shape: str, ratio: float) -> Finding:
    sid = SeriesId("b", (), wl, shape, "float32")
    return finding(sid, "regression", base=1e-3, head=1e-3 * ratio, confirmed=True)


def _doc() -> FindingsDocument:
    findings = (_total(ATT, "1x128x512", 1.28), _total(BLOCK, "1x128x512x4", 1.033))
    work = (*_changes(ATT, "1x128x512"), *_changes(BLOCK, "1x128x512x4"))
    base, head = RunRef("a" * 40, "m"), RunRef("b" * 40, "m")
    return with_causes(FindingsDocument("compare", base, head, findings, work=work))


def test_helpers_are_view_stride_and_allocation_ops_without_work() -> None:
    helpers = {w.op for w in _changes(ATT, "s") if is_helper(w)}
    assert helpers == {"aten::as_strided", "aten::empty", "aten::empty_like", "aten::transpose"}
    # removed and new ops that carry work lead, heaviest bytes first; helpers last
    order = op_order(_changes(ATT, "s"))
    assert order[:4] == (SDPA, "aten::bmm", "aten::_softmax", "aten::masked_fill_")
    assert set(order[4:]) == helpers


def test_the_attention_replaced_in_a_block_is_one_cause_listing_both_workloads() -> None:
    doc = _doc()
    (cause,) = doc.causes
    assert cause.kind == "work" and cause.direction == "regression"
    assert cause.workloads == (ATT, BLOCK)  # the worst first
    assert cause.places == ((ATT, "1x128x512", "float32"), (BLOCK, "1x128x512x4", "float32"))
    assert len(cause.totals) == 2
    # stored in the document and read back; the views render it without regrouping
    assert FindingsDocument.loads(doc.dumps()) == doc
    (view,) = cause_views(doc)
    assert len(view.totals) == 2 and len(view.work) == 16
    body = render_comment(doc)
    assert "### 1." in body and "### 2." not in body, body
    heading = next(ln for ln in body.splitlines() if ln.startswith("### 1."))
    assert "`transformer.attention`, `transformer.block`" in heading, heading
    # the configuration labels are untrusted text: quoted in code spans (issue 22)
    assert "at `transformer.block" in heading and "at `transformer.attention" in heading


def test_the_sentence_leads_with_the_ops_that_carry_the_work() -> None:
    text = work_sentence(cause_views(_doc())[0].work)
    assert text == (
        f"removed op {SDPA}; new ops aten::bmm, aten::_softmax and aten::masked_fill_;"
        " +4 helper ops (views, strides, allocations)."
    ), text
    assert "aten::transpose" not in text and "aten::empty_like" not in text


def test_workloads_sharing_only_a_helper_change_stay_apart() -> None:
    def w(wl: str) -> WorkChange:
        return WorkChange(wl, "s", "f", "aten::empty", "calls", 1, 2, 0.0, 0.0)

    findings = [finding(SeriesId("b", (), wl, "s", "f"), "regression", base=1.0, head=1.2)
                for wl in ("a.one", "b.two")]  # fmt: skip
    causes = find_causes(findings, [w("a.one"), w("b.two")])
    assert [c.workloads for c in causes] == [("a.one",), ("b.two",)]
    assert all(c.where == () for c in causes)


def test_a_document_without_where_reads_as_one_workload() -> None:
    doc = _doc()
    data = doc.to_json()
    for c in data["causes"]:
        c.pop("where", None)
    old = FindingsDocument.from_json(data)
    assert old.causes[0].places == ((ATT, "1x128x512", "float32"),)
    assert re.search(r"\bwhere\b", doc.dumps())
