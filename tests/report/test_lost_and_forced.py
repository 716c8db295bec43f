"""Issue 13 #2/#3: every view (status, comment, summary, terminal, text) reads the same data
on the document: ``FindingsDocument.lost`` and ``FindingsDocument.forced``."""

from __future__ import annotations

from neuronasv.analyse.pairwise import Settings, compare
from neuronasv.github.statuses import check_run_payload, status_payload
from neuronasv.model import Finding, FindingsDocument, RunRef, SeriesId
from neuronasv.model.findings import FINDINGS_SCHEMA_VERSION
from neuronasv.report.digest import digest
from neuronasv.report.markdown import render_comment
from neuronasv.report.summary import render_summary
from neuronasv.report.tables import compare_markdown, compare_text
from neuronasv.store.history import load_history
from tests.analyse.analyse_asvdata import neuronasv_run
from tests.builders import finding

A, B = "a" * 40, "b" * 40


def _table(us: float) -> dict[str, tuple[float, list[float]]]:
    return {f"aten::op{i}": (1.0, [us * (1 + 0.01 * j) for j in range(8)]) for i in range(3)}


def test_a_head_that_lost_every_series_is_no_green_check(tmp_path):
    rd = str(tmp_path / "r")
    neuronasv_run(rd, "ci", A, 1, {("w1", "4x4", "float32"): _table(10.0)})
    # The head measured only an unrelated workload: every series of w1 is gone.
    neuronasv_run(rd, "ci", B, 2, {("w2", "4x4", "float32"): _table(10.0)})
    doc = compare(load_history(rd), A, B, settings=Settings(resamples=100))
    assert doc.count("removed") == 4
    assert not any(f.state.direction == "worse" for f in doc.findings)
    assert len(doc.lost) == 4 and {f.state.presence for f in doc.lost} == {"removed"}
    head = digest(doc).headline
    assert "4 series lost at head (4 removed)" in head
    assert status_payload(doc)["state"] == "error"
    assert "4 series lost at head" in status_payload(doc)["description"]
    assert check_run_payload(doc, B)["conclusion"] != "success"
    comment = render_comment(doc)
    assert comment.splitlines()[1].startswith(
        "## :red_circle: neuronasv: 4 series lost at head \\(4 removed\\); no change"
    )
    assert "4 series lost at head \\(4 removed\\)" in comment.splitlines()[1]
    assert "4 series lost at head" in render_summary(doc)
    assert compare_text(doc).startswith("LOST: 4 series lost at head (4 removed)")
    assert "LOST: 4 series lost at head" in compare_markdown(doc).splitlines()[0]


def test_an_op_gone_from_a_measured_workload_is_not_lost():
    def f(op: str | None, verdict: str, head: float | None) -> Finding:
        sid = SeriesId("b", (op or "total",), "w", "4x4", "float32", op)
        return finding(sid, verdict, base=1.0, head=head)

    doc = FindingsDocument(
        "compare", RunRef(A, "m"), RunRef(B, "m"),
        (f(None, "unchanged", 1.0), f("aten::add", "removed", None)),
    )
    assert doc.lost == ()
    assert status_payload(doc)["state"] == "success"
    assert digest(doc).also == "1 removed"
    failed = FindingsDocument("compare", RunRef(A, "m"), RunRef(B, "m"),
                              (f(None, "failed", None),))
    assert [x.state.presence for x in failed.lost] == ["failed"]
    assert "1 series lost at head (1 failed)" in digest(failed).headline


def test_forced_reasons_survive_the_json_round_trip():
    doc = FindingsDocument("compare", RunRef(A, "m"), RunRef(B, "m"),
                           forced=("backend unknown at head (no fingerprint)",))
    back = FindingsDocument.loads(doc.dumps())
    assert back.forced == doc.forced and back.to_json()["schema_version"] == FINDINGS_SCHEMA_VERSION
    assert digest(back).headline.startswith("FORCED comparison (backend unknown at head")
    assert status_payload(back)["state"] == "error"
