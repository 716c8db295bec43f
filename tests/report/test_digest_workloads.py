"""The headline of a cause seen in several workloads names them all (issue 20 item 7)."""

from __future__ import annotations

from neuronasv.analyse.causes import with_causes
from neuronasv.analyse.states import with_states
from neuronasv.model import FindingsDocument, RunRef, SeriesId, WorkChange
from neuronasv.report.digest import digest
from tests.builders import finding


def _doc() -> FindingsDocument:
    findings, work = [], []
    for wl, ratio in (("transformer.attention", 1.28), ("transformer.block", 1.04)):
        sid = SeriesId(f"b.{wl}", ("1x32",), wl, "1x32", "float32")
        findings.append(
            finding(sid, "regression", base=1e-4, head=1e-4 * ratio,
                    ci=(ratio - 0.02, ratio + 0.02), p_value=1e-4, confirmed=True,
                    source="rounds")
        )  # fmt: skip
        work.append(
            WorkChange(wl, "1x32", "float32", "aten::bmm", "new", calls_head=1.0,
                       bytes_head=8e3, flops_head=1e6)
        )  # fmt: skip
    doc = FindingsDocument(
        "compare", RunRef("a" * 40, "m"), RunRef("b" * 40, "m"),
        tuple(findings), work=tuple(work),
    )  # fmt: skip
    return with_causes(with_states(doc))


def test_a_cause_across_workloads_lists_every_workload_in_the_headline() -> None:
    doc = _doc()
    assert len(doc.causes) == 1 and len(doc.causes[0].workloads) == 2, doc.causes
    head = digest(doc).headline
    assert "one change in 2 workloads: transformer.attention, transformer.block" in head, head
    # the quoted row is named by its own workload
    assert "— transformer.attention 1x32 fp32 (via aten::bmm) more work" in head, head
