"""Every view of a culprit says the same words: the bisect output, the regression issue, the
site's regressions page and the Atom feed; hostile text (commit subjects, op names) inert."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from xml.etree import ElementTree as ET

from neuronasv.analyse.bisect import SearchResult
from neuronasv.analyse.culprits import culprit_of, explain
from neuronasv.github.issues_sync import plan_sync
from neuronasv.model import ChangePoint
from neuronasv.model.bisect import BisectDocument, Probe
from neuronasv.model.culprit import Culprit, PullRef
from neuronasv.publish.feeds import atom_feed
from neuronasv.publish.pages import regressions_page
from neuronasv.report.bisect import (
    cause_sentence,
    culprit_line,
    culprit_markdown,
    culprit_plain,
    render_text,
)
from tests.analyse.test_culprits import C, mul_series, stored_history
from tests.builders import history_doc

HOSTILE = "fix <script>alert(1)</script> @octocat [x](http://evil.example) #12"


def _culprit(tmp_path: Path, subject: str = "double the mul") -> tuple[Culprit, ChangePoint]:
    h = stored_history(tmp_path)
    sid = mul_series(h)
    why = explain(h, C[2], C[3], "m", sid)
    res = SearchResult("culprit", C[2], C[3], (), (C[1], C[2], C[3]), "1 calls at x, 2 calls at y",
                       seconds=250.0)  # fmt: skip
    c = culprit_of(res, "work", subject=subject, pull=PullRef(41, "Keep sq", source="github"),
                   explanation=why)  # fmt: skip
    cp = ChangePoint(sid, "m", C[0], C[4], 3, 1e-5, 2e-5, 2.0, 0.0001, "seconds", "regression",
                     open=True, reason="shift", culprit=c)  # fmt: skip
    return c, cp


def test_the_culprit_in_words(tmp_path: Path) -> None:
    c, _ = _culprit(tmp_path)
    assert culprit_line(c) == f"culprit {C[3][:12]} “double the mul” (PR #41: Keep sq)"
    cause = cause_sentence(c)
    assert cause.startswith("w — ") and "aten::mul 1 → 2 calls" in cause, cause
    assert culprit_plain(c).endswith("(3 commits measured in 4.2 min; exact (work))")
    undecided = replace(c, outcome="undecided", commit="", subject="", pull=None)
    assert culprit_line(undecided) == f"undecided between {C[2][:12]} and {C[3][:12]}"
    assert culprit_plain(undecided).startswith("bisection undecided between")
    assert culprit_markdown(replace(c, outcome="no change", commit="")) == []
    none = replace(c, outcome="no change", commit="", subject="", pull=None, lo=C[0], hi=C[4])
    assert culprit_line(none) == f"no change between {C[0][:12]} and {C[4][:12]}"  # exact: a fact
    # Device time: the rounds did not show a change, which is no proof that there is none.
    timed = replace(none, axis="time", alpha=0.001)
    assert culprit_line(timed) == f"no change shown between {C[0][:12]} and {C[4][:12]}"


def test_the_issue_names_the_culprit_its_pr_and_cause(tmp_path: Path) -> None:
    _, cp = _culprit(tmp_path)
    (action,) = plan_sync([history_doc(cp, head=C[4], machine="m")], [], authors=["bot"],
                          repository="octo/kernels")  # fmt: skip
    body = action.body
    assert f"- **Culprit:** `{C[3][:12]}` “double the mul” (PR #41: Keep sq)" in body
    assert "PR #41: Keep sq" in body and "3 commits measured in 4.2 min" in body
    assert f"https://github.com/octo/kernels/commit/{C[3]}" in body
    assert "- Cause: `w` — more work in 1/1 configurations" in body
    assert "`aten::mul` 1 → 2 calls" in body
    assert "- Work between its parent and it (exact): `aten::mul`: calls 1 → 2" in body


def test_hostile_subjects_stay_inert_in_every_view(tmp_path: Path) -> None:
    _, cp = _culprit(tmp_path, subject=HOSTILE)
    doc = history_doc(cp, head=C[4], machine="m")
    (action,) = plan_sync([doc], [], authors=["bot"])
    assert "<script>" not in action.body and "](http://evil" not in action.body
    assert "@octocat" not in action.body  # no mention pinged
    page = regressions_page(doc, [], lambda _: None, {}, lambda sha: sha[:8])
    assert "<script>alert" not in page and "&lt;script&gt;" in page
    assert f"culprit {C[3][:12]}" in page
    feed = atom_feed(doc, feed_url="https://x.example/regressions.atom",
                     site_url="https://x.example/", page_url=lambda _: None,
                     now=datetime(2026, 12, 1, tzinfo=timezone.utc))  # fmt: skip
    summary = ET.fromstring(feed).find(".//{http://www.w3.org/2005/Atom}summary")
    assert summary is not None and summary.text is not None
    assert f"culprit {C[3][:12]}" in summary.text and "aten::mul 1 → 2 calls" in summary.text


def test_render_text_says_found_why_and_cost(tmp_path: Path) -> None:
    c, cp = _culprit(tmp_path)
    doc = BisectDocument(cp.series, "m", "seconds", C[0], C[4], 4, c,
                         probes=(Probe(C[4], "bad", "stored", 2.0), Probe(C[3], "bad", "measured",
                                 2.0)))  # fmt: skip
    text = render_text(doc)
    lines = text.splitlines()
    head = f"culprit {C[3][:12]} “double the mul” (PR #41: Keep sq)"
    assert lines[0] == f"{cp.series.label} on m: {head}"
    assert lines[1].startswith(f"  first parent {C[2][:12]}; 1 calls at x")
    assert "  work between the parent and the culprit (exact):" in lines
    assert "    aten::mul: calls 1 → 2" in text
    assert "3 commits measured in 4.2 min; exact (work); 4 candidate commits" in text
