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
