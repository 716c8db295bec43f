"""The site's op charts link each commit's trace and show the ops' fraction of peak
(issue 14 items 4-5)."""

from __future__ import annotations

import gzip
import json
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from neuronasv.model import FindingsDocument, History, Point, RunRef, Series, SeriesId
from neuronasv.publish import PublishOptions, from_history, publish_site
from tests.builders import finding

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
M = "h200"
WL = ("rmsnorm.naive", "4x512", "bfloat16")
KEY = "rmsnorm.naive[4x512,bfloat16]"


def _history() -> tuple[History, list[str], SeriesId]:
    commits = [f"{i:08x}" + "f" * 32 for i in range(1, 5)]
    total = SeriesId("b.devtime", ("'total'",), *WL)
    op = SeriesId("b.devtime", ("'aten::mul'",), *WL, op="aten::mul")
    series = tuple(
        Series(M, "env", sid, "seconds", tuple(
            Point(c, i, base * (1.5 if i == 3 else 1.0), date=1_700_000_000_000 + i)
            for i, c in enumerate(commits)
        ))
        for sid, base in ((total, 2e-6), (op, 1e-6))
    )  # fmt: skip
    return History(series=series, commits=tuple(commits)), commits, op


def _meta(page: Path) -> dict[str, Any]:
    m = re.search(r'<script type="application/json" id="meta">(.*?)</script>',
                  page.read_text(), re.S)  # fmt: skip
    assert m is not None
    got = json.loads(m.group(1))
    assert isinstance(got, dict)
    return got


def test_op_charts_link_the_stored_traces_and_show_the_fraction_of_peak(tmp_path: Path) -> None:
    hist, commits, op = _history()
    data = from_history(hist)
    (md,) = data.machines
    store = tmp_path / "traces"
    paths = {j: f"{M}/{c[:8]}/rmsnorm.naive-4x512-bfloat16.json.gz" for j, c in enumerate(commits)}
    for j, rel in paths.items():
        if j == 1:
            continue  # this commit's trace was not kept: no link
        f = store / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(gzip.compress(json.dumps({"traceEvents": [], "j": j}).encode()))
    (tmp_path / "secret").write_text("not a trace")
    md.traces = {j: {KEY: p} for j, p in paths.items()}
    md.traces[0] = {KEY: paths[0], "other[1,x]": "../secret"}  # a sidecar's path that climbs
    newest = FindingsDocument(
        mode="compare",
        base=RunRef(commits[-2], M),
        head=RunRef(commits[-1], M),
        findings=(
            finding(op, "regression", base=1e-6, head=1.5e-6, confirmed=True, source="rounds",
                    roofline_base=0.62, roofline_head=0.41, roofline_bound="memory"),
        ),
    )  # fmt: skip
    site = tmp_path / "site"
    publish_site(data, site, findings=newest,
                 options=PublishOptions(now=NOW, traces_dir=str(store)))  # fmt: skip
    page = next((site / "m").rglob("*.html"))
    meta = _meta(page)
    # Each commit with a kept trace links the copy in the site (relative to the page).
    assert meta["traceUrl"] == "../../traces/{path}"
    assert meta["traces"] == [[j, paths[j]] for j in (0, 2, 3)]
    for j in (0, 2, 3):
        copy = site / "traces" / paths[j]
        assert json.loads(gzip.decompress(copy.read_bytes()))["j"] == j
        assert (page.parent / meta["traceUrl"].replace("{path}", paths[j])).resolve() == copy
    assert not (site / "traces" / paths[1]).exists()
    assert not list(site.rglob("secret"))  # nothing outside the store is copied
    # The op's fraction of peak at the newest commit (base → head), for the chart's legend.
    rows = {r["label"]: r for r in meta["rows"]}
    assert rows["aten::mul"]["peak"] == "62 % → 41 % of peak (memory)"
    assert rows["total"]["peak"] == ""
    js = (site / "assets" / "site.js").read_text()
    assert "row.peak" in js and "https://ui.perfetto.dev" in js
    # Again, unchanged: the copies are not rewritten.
    again = publish_site(data, site, findings=newest,
                         options=PublishOptions(now=NOW, traces_dir=str(store)))  # fmt: skip
    assert not [w for w in again.written if w.startswith("traces/")]


def test_without_a_trace_store_no_trace_is_listed(tmp_path: Path) -> None:
    hist, commits, _ = _history()
    data = from_history(hist)
    data.machines[0].traces = {0: {KEY: f"{M}/{commits[0][:8]}/x.json.gz"}}
    publish_site(data, tmp_path, options=PublishOptions(now=NOW))
    meta = _meta(next((tmp_path / "m").rglob("*.html")))
    assert meta["traces"] == [] and meta["traceUrl"] is None
    # An explicit template links the sidecars' paths as before.
    publish_site(data, tmp_path, options=PublishOptions(now=NOW, trace_url="https://t/{path}"))
    meta = _meta(next((tmp_path / "m").rglob("*.html")))
    assert meta["traces"] == [[0, f"{M}/{commits[0][:8]}/x.json.gz"]]
