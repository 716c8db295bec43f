"""The site in a real browser: no console errors, charts drawn (pixels), from file://.

One Chromium serves the whole run (session fixture); every wait in it is bounded and fails
with a message (see ``browser.py``), so these tests fail rather than hang.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from neuronasv.model import FindingsDocument
from neuronasv.publish import PublishOptions, publish_site, scan_results
from tests.builders import finding

from .browser import CHROMIUM, Browser, BrowserTimeout
from .test_site import NOW, _cp

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        CHROMIUM is None, reason="chromium not installed (ci/setup-system.sh installs it)"
    ),
]


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    b = Browser(timeout=60.0)
    try:
        yield b
    finally:
        b.close()


@pytest.fixture(scope="module")
def site(tiny_history: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = scan_results(tiny_history / "results", repo=tiny_history / "repo", workers=1)
    md = data.machines[0]
    doc = FindingsDocument(
        mode="history", base=None, head=None,
        change_points=(_cp(md.series[1].series, md.name, md.commits[23], md.commits[24]),),
    )  # fmt: skip
    out = tmp_path_factory.mktemp("site")
    publish_site(
        data,
        out,
        findings=doc,
        options=PublishOptions(now=NOW, commit_url="https://example.invalid/c/{commit}"),
    )
    return out


def _pixels(png: Path) -> np.ndarray:
    from PIL import Image

    with Image.open(png) as im:
        return np.asarray(im.convert("RGB")).astype(int)


def test_workload_page_draws_charts_without_console_errors(
    browser: Browser, site: Path, tmp_path: Path
) -> None:
    page = sorted((site / "m").rglob("*.html"))[0]
    png = tmp_path / "w.png"
    console = browser.render(page.as_uri(), png, height=1800)
    assert console == []
    px = _pixels(png)
    # the total chart sits under the first heading: its median line is dark blue (#1f4e79)
    # and its band light blue; a blank or failed chart leaves that area white
    chart = px[150:450, 40:-40]
    line = (np.abs(chart - [0x1F, 0x4E, 0x79]).sum(axis=2) < 60).sum()
    assert line > 300, f"only {line} median-line pixels: chart not drawn"
    band = ((chart[..., 2] > chart[..., 0] + 20) & (chart.sum(axis=2) < 740)).sum()
    assert band > 3000
    # the change point's red marker and the stacked area (several colours) are drawn too
    red = (np.abs(px - [0xD6, 0x27, 0x28]).sum(axis=2) < 60).sum()
    assert red > 50


def test_index_and_regressions_render_without_console_errors(
    browser: Browser, site: Path, tmp_path: Path
) -> None:
    for name in ("index.html", "regressions.html"):
        png = tmp_path / f"{name}.png"
        assert browser.render((site / name).as_uri(), png, height=700) == []
        px = _pixels(png)
        assert (px.sum(axis=2) < 300).sum() > 1000  # text and header drawn


def test_console_errors_are_caught(browser: Browser, tmp_path: Path) -> None:
    """The harness: a page that throws, logs or misses a file must be reported (else the
    tests above prove nothing)."""
    bad = tmp_path / "bad.html"
    bad.write_text(
        "<html><body><script>console.log('hello');</script>"
        "<script src='missing.js'></script>"
        "<script>setTimeout(() => undefinedFn(), 1000);</script></body></html>"
    )
    console = browser.render(bad.as_uri(), tmp_path / "bad.png", width=400, height=300)
    assert any("undefinedFn" in line for line in console), console  # after 1 s virtual time
    assert any("hello" in line for line in console), console
    assert any("missing.js" in line for line in console), console


def test_a_page_that_never_settles_fails_with_a_message(tmp_path: Path) -> None:
    """Bounded waits: a page whose script never returns (the renderer is stuck, virtual
    time cannot run out) fails the wait with a message naming it instead of hanging."""
    b = Browser(timeout=3.0)
    try:
        (tmp_path / "stuck.html").write_text("<html><script>for(;;){}</script></html>")
        started = time.monotonic()
        expected = r"timed out waiting for .* \(rendering .*stuck\.html\)"
        with pytest.raises(BrowserTimeout, match=expected):
            b.render((tmp_path / "stuck.html").as_uri(), tmp_path / "s.png")
        assert time.monotonic() - started < 30
    finally:
        b.close()


# -- the workload-led index and the newest commit's state (separate fixture on purpose) ---


@pytest.fixture(scope="module")
def truth_site(tiny_history: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """No change points; the newest commit's total of one workload is a suspect regression
    and one of its ops a confirmed one (as a compare/confirm document gives them)."""
    from neuronasv.model import RunRef

    data = scan_results(tiny_history / "results", repo=tiny_history / "repo", workers=1)
    md = data.machines[0]
    wl = md.series[-1].series.workload
    rows = [r for r, s in enumerate(md.series) if s.series.workload == wl]
    total = next(r for r in rows if md.series[r].series.op is None)
    op = next(r for r in rows if md.series[r].series.op is not None)
    newest = FindingsDocument(
        mode="compare",
        base=RunRef(md.commits[-2], md.name),
        head=RunRef(md.commits[-1], md.name),
        findings=(
            finding(md.series[total].series, "regression", base=1.0, head=1.4),
            finding(md.series[op].series, "regression", base=1.0, head=24.0, confirmed=True,
                    source="rounds"),
        ),
    )  # fmt: skip
    out = tmp_path_factory.mktemp("truth-site")
    publish_site(data, out, findings=newest, options=PublishOptions(now=NOW))
    return out


_PROBE = """<script>
document.addEventListener("DOMContentLoaded", function () {  // after site.js's own handler
  function shown(sel) {
    return Array.prototype.filter.call(document.querySelectorAll(sel),
      function (e) { return e.offsetParent !== null; }).length;
  }
  var out = { groups: shown("tbody.wl"), leads: shown("tr.lead"), ops: shown("tr.op") };
  var alarm = document.querySelector('tbody.wl[data-alarm="1"]');
  alarm.querySelector("button.tog").click();
  out.opsAfterToggle = shown("tr.op");
  out.expanded = alarm.querySelector("button.tog").getAttribute("aria-expanded");
  var only = document.getElementById("only-reg");
  only.checked = true; only.dispatchEvent(new Event("change"));
  out.groupsRegOnly = shown("tbody.wl");
  only.checked = false; only.dispatchEvent(new Event("change"));
  var q = document.getElementById("q");
  q.value = "aten::"; q.dispatchEvent(new Event("input"));
  out.opsAfterSearch = shown("tr.op");
  console.log("NASV-PROBE " + JSON.stringify(out));
});
</script>"""


def test_index_ops_collapse_beneath_workloads_and_filters_work(
    browser: Browser, truth_site: Path, tmp_path: Path
) -> None:
    import json
    import re

    idx = (truth_site / "index.html").read_text()
    probe = truth_site / "probe.html"  # same folder: the same relative asset paths
    probe.write_text(idx.replace("</body>", _PROBE + "</body>"))
    console = browser.render(probe.as_uri(), tmp_path / "probe.png", height=900)
    got = [m.group(1) for line in console if (m := re.search(r"NASV-PROBE (\{.*?\})", line))]
    assert got, console
    assert not [c for c in console if "NASV-PROBE" not in c], console  # no errors
    res = json.loads(got[0].replace('\\"', '"'))
    n_ops = idx.count('<tr class="op"')
    assert res["groups"] == 3 and res["leads"] == 3 and res["ops"] == 0  # collapsed
    assert res["opsAfterToggle"] == n_ops // 3 and res["expanded"] == "true"
    assert res["groupsRegOnly"] == 1  # the workload with the suspect total
    assert res["opsAfterSearch"] == n_ops  # a search matching ops opens their workloads


def test_op_chart_marks_the_newest_commits_regression(
    browser: Browser, truth_site: Path, tmp_path: Path
) -> None:
    """No change points here: the red line at the right edge of the total chart is the
    newest commit's regression against its parent (before, the chart showed none)."""
    pages = sorted((truth_site / "m").rglob("*.html"))
    page = next(p for p in pages if '"state":"suspect"' in p.read_text())
    png = tmp_path / "w.png"
    assert browser.render(page.as_uri(), png, height=1800) == []
    px = _pixels(png)
    chart = px[150:450]
    red = np.abs(chart - [0xD6, 0x27, 0x28]).sum(axis=2) < 60
    cols = np.flatnonzero(red.sum(axis=0) > 20)  # a vertical line: many red pixels a column
    assert cols.size, "no red marker on the total chart"
    assert cols.min() > px.shape[1] * 0.8  # at the newest commit: the right edge


def test_op_charts_with_traces_and_fractions_of_peak_render_without_console_errors(
    browser: Browser, tmp_path: Path
) -> None:
    """Issue 14 items 4-5: the legend's of-peak text, the line under each op chart's title
    and the newest commit's trace link (the details panel opens on it) in a real browser."""
    from . import test_site_traces as st

    # publishes tmp_path/site with traces and fractions, and checks the data it ships
    st.test_op_charts_link_the_stored_traces_and_show_the_fraction_of_peak(tmp_path)
    page = next((tmp_path / "site" / "m").rglob("*.html"))
    png = tmp_path / "t.png"
    assert browser.render(page.as_uri(), png, height=1400) == []
    assert (_pixels(png).sum(axis=2) < 300).sum() > 1000  # text and charts drawn


# -- charts: one unit per chart, distinct legend colours, axis labels drawn whole ---------


_CHART_PROBE = """<script>
// runs before site.js: record every text drawn on a canvas (tick labels, axis titles)
window.__drawn = [];
var fill = CanvasRenderingContext2D.prototype.fillText;
CanvasRenderingContext2D.prototype.fillText = function (t, x, y) {
  var m = this.getTransform();
  window.__drawn.push({ t: String(t), x: m.a * x + m.c * y + m.e, align: this.textAlign,
                        w: this.measureText(t).width, rotated: m.b !== 0 });
  return fill.apply(this, arguments);
};
window.addEventListener("load", function () { setTimeout(function () {
  var out = { stacks: [], drawn: window.__drawn };
  Array.prototype.forEach.call(document.querySelectorAll('[id^="chart-stack-"]'), function (n) {
    out.stacks.push(Array.prototype.map.call(
      n.querySelectorAll(".u-legend .u-series .u-marker"),
      function (m) { return getComputedStyle(m).backgroundColor; }).filter(function (c) {
        return c !== "rgba(0, 0, 0, 0)"; }));
  });
  console.log("NASV-PROBE " + JSON.stringify(out));
}, 500); });
</script>"""


def test_charts_keep_units_apart_with_distinct_colours_and_whole_axis_labels(
    browser: Browser, tmp_path: Path
) -> None:
    """Issue 28: the stacked chart mixed instruction counts with times, its y axis read
    "…structions" and legend colours repeated. A workload with 14 timed ops and 3 counted
    ones: a time stack of 11 coloured ops and one grey "3 other ops" layer (12 distinct
    colours), an instruction stack of its own, axis titles "device time" and
    "instructions per iteration", and every tick label narrower than its axis."""
    import json
    import re

    from neuronasv.model import SeriesId
    from neuronasv.publish.sitedata import MachineData, SeriesInfo, SiteData
    from neuronasv.publish.workload import OTHER_COLOUR, PALETTE

    rng = np.random.default_rng(3)
    series, rows = [], []
    for kind, unit, ops, level in (("devtime", "seconds", 14, 50e-6),
                                   ("instr", "instructions", 3, 1_500_000.0)):  # fmt: skip
        for i in range(-1, ops):
            op = None if i < 0 else f"aten::op{i:02d}"
            params = ("'4x8'", "'float32'", *((f"'{op}'",) if op else ()))
            sid = SeriesId(f"b.w.{kind}_{'op' if op else 'total'}", params, "w", "4x8",
                           "float32", op)  # fmt: skip
            series.append(SeriesInfo("py", sid, unit))
            scale = level * (ops if op is None else 1) / (1 + (i if i >= 0 else 0))
            rows.append(scale * np.exp(rng.normal(0, 0.05, 30)))
    value = np.array(rows)
    band = np.where([[s.unit == "seconds"] for s in series], value, np.nan).astype(np.float32)
    md = MachineData("m", [f"{i:040x}" for i in range(30)],
                     np.arange(30, dtype=np.int64) * 3_600_000 + 1_790_000_000_000,
                     series, value, band * 0.97, band * 1.03)  # fmt: skip
    out = tmp_path / "site"
    publish_site(SiteData([md]), out, options=PublishOptions(now=NOW))
    page = next((out / "m").rglob("*.html"))
    probe = page.with_name("probe.html")
    probe.write_text(page.read_text().replace("</head>", _CHART_PROBE + "</head>"))
    console = browser.render(probe.as_uri(), tmp_path / "c.png", height=2400)
    got = [m.group(1) for line in console if (m := re.search(r"NASV-PROBE (\{.*\})", line))]
    assert got and not [c for c in console if "NASV-PROBE" not in c], console
    res = json.loads(got[0].replace('\\"', '"'))
    time_stack, instr_stack = res["stacks"]
    assert len(time_stack) == len(set(time_stack)) == len(PALETTE) + 1  # 11 ops + "other"
    assert len(instr_stack) == len(set(instr_stack)) == 3

    def rgb(hex_colour: str) -> str:
        r, g, b = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
        return f"rgb({r}, {g}, {b})"

    assert set(time_stack) == {rgb(c) for c in (*PALETTE, OTHER_COLOUR)}
    drawn = res["drawn"]
    texts = {d["t"] for d in drawn}
    assert {"device time", "instructions per iteration"} <= texts  # the axes' titles
    meta = json.loads(
        re.search(r'id="meta">(.*?)</script>', page.read_text(), re.S).group(1)  # type: ignore[union-attr]
    )
    ticks = {t for r in meta["rows"] + meta["stacks"] if r["y"] for t in r["y"]["labels"]}
    assert ticks <= texts and "1,500,000" in ticks  # every digit of a count, drawn
    # a value label is drawn right-aligned against its axis: whole when its left end is
    # inside the canvas (the old axis cut "1,500,000 instructions" to "…structions")
    cut = [d for d in drawn if d["t"] in ticks and d["align"] == "right" and d["x"] - d["w"] < 0]
    assert not cut, cut


# -- the numbers a reader sees are the comment's (issue 28: 194 µs on the page, 155 µs in
# -- the comment) -------------------------------------------------------------------------


_NUMBERS_PROBE = """<script>
window.addEventListener("load", function () { setTimeout(function () {
  function cells(tr) { return Array.prototype.map.call(tr.children, function (c) {
    return c.innerText.trim(); }); }
  var out = { details: [], titles: [], index: [] };
  var box = document.getElementById("details");
  if (box) Array.prototype.forEach.call(box.querySelectorAll("tr"), function (tr) {
    out.details.push(cells(tr)); });
  out.head = box ? box.querySelector("strong").innerText : "";
  Array.prototype.forEach.call(document.querySelectorAll("#ops h3"), function (h) {
    out.titles.push(h.innerText); });
  Array.prototype.forEach.call(document.querySelectorAll("tbody.wl tr"), function (tr) {
    out.index.push(cells(tr)); });
  console.log("NASV-PROBE " + JSON.stringify(out));
}, 300); });
</script>"""


def _probe(browser: Browser, page: Path, png: Path) -> dict:  # type: ignore[type-arg]
    import json
    import re

    probe = page.with_name("probe-numbers.html")  # same folder: the same asset paths
    probe.write_text(page.read_text().replace("</body>", _NUMBERS_PROBE + "</body>"))
    console = browser.render(probe.as_uri(), png, height=1200)
    got = [m.group(1) for line in console if (m := re.search(r"NASV-PROBE (\{.*\})", line))]
    assert got and not [c for c in console if "NASV-PROBE" not in c], console
    res = json.loads(got[0].replace('\\"', '"'))
    assert isinstance(res, dict)
    return res


def test_a_reader_sees_the_comments_numbers_not_the_first_run(
    browser: Browser, tmp_path: Path
) -> None:
    """The issue's row: asv's result of the newest commit's run is 194 µs, the comparison
    (interleaved rounds) says 86.1 µs → 155 µs, +80 %, and so does the comment. In the
    browser — the commit details the page opens on, each op's title, the index's cells —
    every figure is the comment's; 194 µs appears only named as asv's own result."""
    from neuronasv.analyse.states import with_states
    from neuronasv.model import RunRef, SeriesId
    from neuronasv.publish.sitedata import MachineData, SeriesInfo, SiteData
    from neuronasv.report.markdown import render_comment

    from .readback import comment_triples

    def sid(op: str | None) -> SeriesId:
        params = ("'2x128x512'", "'bfloat16'", *((f"'{op}'",) if op else ()))
        bench = f"b.rmsnorm.naive.devtime_{'op' if op else 'total'}"
        return SeriesId(bench, params, "rmsnorm.naive", "2x128x512", "bfloat16", op)

    series = [SeriesInfo("py", sid(op), "seconds") for op in (None, "aten::mul")]
    rng = np.random.default_rng(28)
    value = np.array([level * np.exp(rng.normal(0, 0.03, 20)) for level in (88e-6, 21e-6)])
    value[0, -1], value[1, -1] = 194e-6, 47.3e-6  # asv's first run of the newest commit
    md = MachineData("m", [f"{i:040x}" for i in range(20)],
                     np.arange(20, dtype=np.int64) * 3_600_000 + 1_790_000_000_000,
                     series, value, (value * 0.97).astype(np.float32),
                     (value * 1.03).astype(np.float32))  # fmt: skip
    doc = with_states(
        FindingsDocument(
            "compare", RunRef(md.commits[-2], "m"), RunRef(md.commits[-1], "m"),
            findings=(
                finding(sid(None), base=86.1e-6, head=155e-6, ci=(1.6, 2.0), n=(30, 30),
                        source="rounds", time="slower", confirmed=True),
                finding(sid("aten::mul"), base=20.9e-6, head=35.2e-6, ci=(1.5, 1.9),
                        n=(10, 10), time="slower"),
            ),
            settings={"confirm": "ABAB, 3 rounds"},
        )
    )  # fmt: skip
    comment = comment_triples(render_comment(doc))
    title = "rmsnorm.naive 2x128x512 bfloat16"
    total, mul = comment[(title, None, "time")], comment[(title, "aten::mul", "time")]
    assert total == ("86.1 µs", "155 µs", "+80 %") and mul[1] == "35.2 µs"
    out = tmp_path / "site"
    publish_site(SiteData([md]), out, findings=doc, options=PublishOptions(now=NOW))
    page = next((out / "m").rglob("*.html"))
    res = _probe(browser, page, tmp_path / "w.png")
    assert res["head"].startswith("Commit #19")  # the page opens on the newest commit
    rows = {r[0]: r[1:] for r in res["details"]}
    for label, (base, head, change) in (("total", total), ("aten::mul", mul)):
        value_cell, source = rows[label]
        assert value_cell == head, (label, rows[label])
        assert f"{base} → {head}, {change}" in source, (label, source)
    assert "asv's own result of this run: 194 µs" in rows["total"][1]
    assert not [r for r in res["details"] if r[1] == "194 µs"]
    mul_title = next(t for t in res["titles"] if t.startswith("aten::mul "))
    assert f" {mul[2]} vs parent" in mul_title, mul_title
    idx = _probe(browser, out / "index.html", tmp_path / "i.png")
    lead = next(r for r in idx["index"] if title in r[1] or "total" in r[1])
    assert lead[2] == "155 µs" and lead[3] == "+80 % from 86.1 µs", lead
