"""The site renders the stored row states (the property test of
``tests/report/test_views_agree.py``, for the site: index, regressions.html, workload pages).

Seeded documents about the synthetic history's own series — any decision against any sign,
confirmed or not, new ops — are published; every row's state badge is parsed back with the
change beside it: ``confirmed``/``suspect`` only beside a Δ > 0, ``improved`` only beside a
Δ < 0, a new op never ``ok``, and the words each workload page carries pass the parsers;
every base, head and Δ the site prints is the comment's for the same row.
"""

from __future__ import annotations

import json
import random
import re
from datetime import datetime, timezone
from pathlib import Path

import pytest

from neuronasv.analyse.states import newest_state, with_states
from neuronasv.model import Finding, FindingsDocument, RunRef
from neuronasv.publish import PublishOptions, publish_site, scan_results
from tests.builders import finding
from tests.report.test_views_agree import _finding, check_parentheses

from .readback import against_the_comment

NOW = datetime(2026, 1, 2, tzinfo=timezone.utc)


def _doc(md: object, seed: int) -> FindingsDocument:
    rng = random.Random(seed)
    series = [s.series for s in md.series]  # type: ignore[attr-defined]
    findings: list[Finding] = []
    for sid in rng.sample(series, min(len(series), 8)):
        f = _finding(rng, sid)
        if sid.op is not None and rng.random() < 0.2:
            f = finding(sid, "new", head=1e-5)
        findings.append(f)
    commits = md.commits  # type: ignore[attr-defined]
    name = md.name  # type: ignore[attr-defined]
    settings = {"confirm": "ABAB, 3 rounds"} if rng.random() < 0.5 else {}
    return with_states(
        FindingsDocument(
            "compare",
            RunRef(commits[-2], name),
            RunRef(commits[-1], name),
            findings=tuple(findings),
            settings=settings,
        )
    )


def _sign(text: str) -> float:
    m = re.match(r"\s*([+-]\d+(?:\.\d+)?) %", text)
    return float(m.group(1)) if m else 0.0


ROW = re.compile(r'data-state="([\w-]+)"[^>]*>.*?<td class="num chg[^"]*">([^<]*)', re.S)


@pytest.mark.parametrize("seed", range(6))
def test_site_states_agree_with_their_change(tiny_history: Path, tmp_path: Path, seed: int) -> None:
    data = scan_results(tiny_history / "results", repo=tiny_history / "repo", workers=1)
    doc = _doc(data.machines[0], seed)
    publish_site(data, tmp_path, findings=[doc], options=PublishOptions(now=NOW))
    pages = {p: p.read_text() for p in tmp_path.rglob("*.html")}
    checked = 0
    for text in pages.values():
        for state, change in ROW.findall(text):
            checked += 1
            if state in ("confirmed", "suspect"):
                assert _sign(change) > 0, (seed, state, change)
            if state == "improved":
                assert _sign(change) < 0, (seed, state, change)
        for state, change in re.findall(
            r'class="st st-([\w-]+)">[^<]*</span> <span class="chg">([^<]*) vs parent', text
        ):
            if state in ("confirmed", "suspect"):
                assert _sign(change) > 0, (seed, state, change)
        meta = re.search(r'<script type="application/json" id="meta">(.*?)</script>', text, re.S)
        if meta:
            for row in json.loads(meta.group(1))["rows"]:
                assert not check_parentheses(row["words"]), row
    assert checked
    # the Δ beside each badge is the comment's, with its base and head (issue 28)
    assert against_the_comment(tmp_path, doc) == []
    for f in doc.findings:
        assert f.state.presence != "new" or newest_state(f) in ("new", "more-work")
