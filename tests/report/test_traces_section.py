"""The comment's Traces section and of-peak cells with hostile names and links (pure)."""

from __future__ import annotations

import dataclasses

from neuronasv.analyse.causes import with_causes
from neuronasv.model import FindingsDocument, OpContribution, RunRef, SeriesId
from neuronasv.report.escape import md_code, md_text
from neuronasv.report.markdown import render_comment
from neuronasv.report.traces import flagged_workloads, trace_path, with_trace_links
from tests.builders import finding

BASE, HEAD = "a" * 40, "e" * 40
EVIL_OP = "aten::mul`](javascript:alert(1)) @org <b>x</b>"
EVIL_WL = "rms|norm\n## <img src=x>"


def _doc(workload: str = "rmsnorm.naive", op: str = "aten::mul") -> FindingsDocument:
    total = SeriesId("b.devtime", ("'total'",), workload, "4x512", "bfloat16")
    ops = SeriesId("b.devtime", (f"'{op}'",), workload, "4x512", "bfloat16", op)
    f = finding(total, "regression", base=1e-5, head=2e-5,
                attribution=(OpContribution(op, 5e-6, 15e-6, 1e-5, 1.0, roofline_base=0.8,
                                            roofline_head=0.27, roofline_bound="memory"),))
    g = finding(ops, "regression", base=5e-6, head=15e-6, roofline_base=0.8,
                roofline_head=0.27, roofline_bound="compute; assumed causal")  # fmt: skip
    return with_causes(FindingsDocument(mode="compare", base=RunRef(BASE, "m"),
                                        head=RunRef(HEAD, "m"), findings=(f, g)))  # fmt: skip


def test_traces_and_of_peak_render_per_flagged_workload() -> None:
    url = "https://github.example/o/r/actions/runs/5/artifacts/77"
    doc = with_trace_links(_doc(), url)
    assert doc.head is not None and doc.head.traces == {
        "rmsnorm.naive[4x512,bfloat16]": trace_path("head", HEAD, "rmsnorm.naive", "4x512",
                                                    "bfloat16")
    }  # fmt: skip
    body = render_comment(doc)
    assert (
        "- `rmsnorm.naive` `4x512 bf16` — look for `aten::mul`:"
        f" [base `base-{BASE[:8]}/rmsnorm.naive-4x512-bfloat16.json.gz`]({url})"
        f" · [head `head-{HEAD[:8]}/rmsnorm.naive-4x512-bfloat16.json.gz`]({url})"
    ) in body
    assert "| `aten::mul` 80 % → 27 % of peak (memory) |" in body
    assert "| 80 % → 27 % of peak (compute; assumed causal) |" in body
    # Round trip: the new fields survive JSON.
    assert FindingsDocument.loads(doc.dumps()) == doc
    # A document without them reads as before (no traces section, no of-peak column).
    plain = dataclasses.replace(_doc(), findings=tuple(
        dataclasses.replace(f, roofline_base=None, roofline_head=None, roofline_bound=None,
                            attribution=()) for f in _doc().findings))  # fmt: skip
    text = render_comment(plain)
    assert "### Traces" not in text and "of peak" not in text.lower()
    assert "roofline" not in plain.dumps() and '"traces"' not in plain.dumps()


def test_hostile_names_and_links_are_inert() -> None:
    doc = with_trace_links(_doc(EVIL_WL, EVIL_OP), "javascript:alert(1)")
    (fw,) = flagged_workloads(doc)
    assert doc.base is not None
    name = doc.base.traces[fw.key]
    assert name.startswith(f"base-{BASE[:8]}/") and "<" not in name and "\n" not in name
    body = render_comment(dataclasses.replace(
        doc,
        findings=tuple(dataclasses.replace(f, roofline_bound="memory](javascript:x) <b>")
                       for f in doc.findings),
    ))  # fmt: skip
    # The bound label is text: escaped, never a link.
    assert f"of peak ({md_text('memory](javascript:x) <b>', max_len=60)})" in body
    assert "(javascript:x)" not in body
    # No URL survived for the traces: the names are shown unlinked, as code.
    line = body.split("### Traces", 1)[1].split("\n\n", 2)[2].splitlines()[0]
    assert f": base `{name}` · head `" in line and "](" not in line.split(": base ", 1)[1]
    # Names from code are code spans (inert), one line each.
    assert line.startswith(f"- {md_code(EVIL_WL)} `4x512 bf16` — look for {md_code(EVIL_OP)}:")


def test_terminal_shows_the_flagged_ops_fraction_of_peak() -> None:
    from neuronasv.report.terminal import terminal_text

    text = terminal_text(_doc(), width=220)
    assert "Of peak" in text and "80 % → 27 % of peak (compute; assumed causal)" in text
