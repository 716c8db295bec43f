from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path
from types import ModuleType
from xml.etree import ElementTree as ET

import pytest

from neuronasv.model import ChangePoint, FindingsDocument, History, Point, Series, SeriesId
from neuronasv.publish import PublishOptions, from_history, output, publish_site, scan_results, site
from neuronasv.publish.feeds import ATOM_NS

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
EVIL = '</script><img src=x onerror=alert(1)>"&\x01]]>'


def _strict(text: str) -> object:
    def no_const(name: str) -> object:
        raise AssertionError(f"{name} in data shipped to the browser")

    return json.loads(text, parse_constant=no_const)


def _cp(
    sid: SeriesId,
    machine: str,
    before: str,
    after: str,
    *,
    kind: str = "regression",
    open_: bool = True,
) -> ChangePoint:
    return ChangePoint(
        series=sid, machine=machine, commit_before=before, commit_after=after, index=5,
        before=1e-3, after=1.2e-3 if kind == "regression" else 0.8e-3,
        ratio=1.2 if kind == "regression" else 0.8, p_value=1e-5, unit="seconds",
        kind=kind, open=open_, reason=f"{EVIL} +20 %",  # type: ignore[arg-type]
    )  # fmt: skip


def hostile_history() -> tuple[History, FindingsDocument]:
    commits = [f"{i:040x}" for i in range(1, 13)]
    total = SeriesId("b.devtime", ("'total'",), workload=f"w{EVIL}", shape="4x512", dtype="bf16")
    op = SeriesId(
        "b.devtime", (f"'{EVIL}'",), workload=f"w{EVIL}", shape="4x512", dtype="bf16", op=EVIL
    )
    series = []
    for sid, base in ((total, 2e-3), (op, 1e-3)):
        pts = tuple(
            Point(
                c,
                i,
                base * (1.2 if i >= 6 else 1.0),
                samples=(base * 0.99, base, base * 1.01),
                date=1_700_000_000_000 + i,
            )
            for i, c in enumerate(commits)
        )
        series.append(Series(f"m{EVIL}", "env", sid, "seconds", pts))
    fps = {(f"m{EVIL}", c): {"torch": EVIL if i > 8 else "2.13"} for i, c in enumerate(commits)}
    hist = History(series=tuple(series), commits=tuple(commits), fingerprints=fps)
    doc = FindingsDocument(
        mode="history", base=None, head=None,
        change_points=(_cp(op, f"m{EVIL}", commits[5], commits[6]),),
    )  # fmt: skip
    return hist, doc


def test_hostile_text_is_escaped_everywhere(tmp_path: Path) -> None:
    hist, doc = hostile_history()
    publish_site(from_history(hist), tmp_path, findings=doc, options=PublishOptions(now=NOW))
    for path in tmp_path.rglob("*"):
        # regressions.json is data (application/json), the exact document: not checked here
        if path.suffix not in (".html", ".js", ".atom") or "assets" in path.parts:
            continue
        text = path.read_text()
        assert "<img src=x" not in text, path
    idx = (tmp_path / "index.html").read_text()
    assert "&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;" in idx
    # the embedded metadata is strict JSON and gives the op name back exactly
    page = next((tmp_path / "m").rglob("*.html")).read_text()
    meta = re.search(r'<script type="application/json" id="meta">(.*?)</script>', page, re.S)
    assert meta is not None
    labels = [r["label"] for r in _strict(meta.group(1))["rows"]]  # type: ignore[index]
    assert EVIL in labels
    feed = ET.fromstring((tmp_path / "regressions.atom").read_bytes())
    titles = [e.findtext(f"{{{ATOM_NS}}}title") for e in feed.iter(f"{{{ATOM_NS}}}entry")]
    assert titles and "</script><img src=x" in titles[0]  # text survives, safely encoded


def test_feeds_validate(tiny_history: Path, tmp_path: Path) -> None:
    data = scan_results(tiny_history / "results", repo=tiny_history / "repo", workers=1)
    md = data.machines[0]
    sid = md.series[1].series
    doc = FindingsDocument(
        mode="history", base=None, head=None,
        change_points=(
            _cp(sid, md.name, md.commits[23], md.commits[24]),
            _cp(sid, md.name, md.commits[10], md.commits[11], kind="improvement", open_=False),
        ),
    )  # fmt: skip
    publish_site(
        data,
        tmp_path,
        findings=doc,
        options=PublishOptions(base_url="https://ex.invalid/site", now=NOW),
    )
    back = FindingsDocument.loads((tmp_path / "regressions.json").read_text())
    assert back == doc
    _strict((tmp_path / "regressions.json").read_text())
    root = ET.fromstring((tmp_path / "regressions.atom").read_bytes())
    assert root.tag == f"{{{ATOM_NS}}}feed"
    entries = list(root.iter(f"{{{ATOM_NS}}}entry"))
    assert len(entries) == 1  # regressions only
    e = entries[0]
    assert e.findtext(f"{{{ATOM_NS}}}id", "").startswith("urn:uuid:")
    link = e.find(f"{{{ATOM_NS}}}link")
    assert link is not None and link.get("href", "").startswith("https://ex.invalid/site/m/")
    assert (tmp_path / link.get("href", "").removeprefix("https://ex.invalid/site/")).exists()
    assert e.findtext(f"{{{ATOM_NS}}}updated") == datetime.fromtimestamp(
        int(md.dates[24]) / 1000, tz=timezone.utc
    ).strftime("%Y-%m-%dT%H:%M:%SZ")
    # states: the regressed op is "regression", filterable on the index
    idx = (tmp_path / "index.html").read_text()
    assert idx.count('data-state="regression"') == 1


def test_data_files_are_strict_json_and_round_trip(tiny_history: Path, tmp_path: Path) -> None:
    data = scan_results(tiny_history / "results", workers=1)
    publish_site(data, tmp_path, options=PublishOptions(now=NOW))
    md = data.machines[0]
    chunks = sorted((tmp_path / "m").rglob("c*.js"))
    assert len(chunks) == 3  # one per workload
    got_nulls = False
    for path in chunks:
        m = re.fullmatch(r'NASV\.chunk\(("[^\n]*?"),(\{.*\})\);\n', path.read_text(), re.S)
        assert m, path
        gid, payload = _strict(m.group(1)), _strict(m.group(2))
        assert isinstance(gid, str) and isinstance(payload, dict)
        got_nulls |= any(v is None for row in payload["v"] for v in row)
        assert payload["commits"] == [c[:12] for c in md.commits]
        # values decode to the medians within the 5-significant-digit encoding
        wl = json.loads(gid)[3]
        rows = [r for r, s in enumerate(md.series) if s.series.workload == wl]
        total = next(r for r in rows if md.series[r].series.op is None)
        got = [x * payload["scale"][0] for x in payload["v"][0]]
        for a, b in zip(got, md.value[total], strict=True):
            assert abs(a - b) <= 1e-4 * abs(b)
    assert got_nulls  # the op absent in early commits is null, not NaN


def test_incremental_rewrites_only_the_last_chunk(
    history_copy: Path, synth: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(output, "CHUNK", 16)  # 40 commits -> 3 chunks per workload
    out = tmp_path / "site"
    r1 = publish_site(
        scan_results(history_copy / "results", workers=1), out, options=PublishOptions(now=NOW)
    )
    assert sum(p.endswith(".js") and "/m/" in f"/{p}" for p in r1.written) == 9
    again = publish_site(
        scan_results(history_copy / "results", workers=1), out, options=PublishOptions(now=NOW)
    )
    assert not [p for p in again.written if p.startswith("m/") and p.endswith(".js")]
    synth.generate(history_copy, commits=1, append=True)
    r2 = publish_site(
        scan_results(history_copy / "results", workers=1), out, options=PublishOptions(now=NOW)
    )
    chunks = sorted(p for p in r2.written if p.startswith("m/") and p.endswith(".js"))
    assert len(chunks) == 3 and all(p.endswith("c00002.js") for p in chunks)
    # a removed workload's data does not linger
    assert r2.skipped >= 6


@pytest.mark.slow
def test_cli_publish_end_to_end(history_copy: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    out = tmp_path / "site"
    cmd = [
        sys.executable, "-m", "neuronasv", "publish",
        "--results-dir", str(history_copy / "results"),
        "--repo", str(history_copy / "repo"), "--out", str(out), "--detect",
        "--commit-url", "https://github.com/o/r/commit/{commit}",
    ]  # fmt: skip
    p = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert p.returncode == 0, p.stderr
    assert "published 12 series, 3 workload pages" in p.stdout
    doc = FindingsDocument.loads((out / "regressions.json").read_text())
    assert doc.mode == "history"
    kinds = {(c.series.op, c.kind) for c in doc.change_points}
    assert ("aten::mul", "regression") in kinds  # the known +20 % step of workload 0
    # again, without detection: everything from the cache
    p2 = subprocess.run(cmd[:-3] + cmd[-2:], capture_output=True, text=True, check=False)
    assert "cache 40 hits / 0 misses" in p2.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "neuronasv", "publish", "--results-dir", str(tmp_path / "none")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert bad.returncode == 5 and "results folder" in bad.stderr and "not found" in bad.stderr


def test_results_dir_defaults_to_asv_conf_like_the_other_commands(
    history_copy: Path, tmp_path: Path
) -> None:
    """No --results-dir: asv.conf.json's ``results_dir`` (here ``results``), as compare uses."""
    import json
    import subprocess
    import sys

    conf = json.loads((history_copy / "asv.conf.json").read_text())
    conf["results_dir"] = ".asv/results"  # this project's layout
    (history_copy / "asv.conf.json").write_text(json.dumps(conf))
    (history_copy / ".asv").mkdir()
    (history_copy / "results").rename(history_copy / ".asv" / "results")
    out = tmp_path / "site"
    cmd = [sys.executable, "-m", "neuronasv.publish", "--out", str(out), "--no-cache"]
    p = subprocess.run(cmd, cwd=history_copy, capture_output=True, text=True, check=False)
    assert p.returncode == 0, p.stderr
    assert "published 12 series" in p.stdout and (out / "index.html").is_file()


# -- one truth across views: the newest commit, coverage, noise as a level, sparklines ----


def _meta(page: Path) -> dict:  # type: ignore[type-arg]
    m = re.search(
        r'<script type="application/json" id="meta">(.*?)</script>', page.read_text(), re.S
    )
    assert m is not None
    got = _strict(m.group(1))
    assert isinstance(got, dict)
    return got


def _newest_doc(
    md: site.MachineData, verdicts: dict[int, tuple[str, bool | None]]
) -> FindingsDocument:
    from neuronasv.analyse.states import with_states
    from neuronasv.model import RunRef
    from tests.builders import finding

    return with_states(
        FindingsDocument(
            mode="compare",
            base=RunRef(md.commits[-2], md.name),
            head=RunRef(md.commits[-1], md.name),
            findings=tuple(
                finding(
                    md.series[r].series,
                    "noisy" if c is False else v,
                    base=1e-6,
                    head=24e-6,
                    confirmed=bool(c),
                    source="first run" if c is None else "rounds",
                )
                for r, (v, c) in verdicts.items()
            ),
            # a document confirm wrote says so in its settings
            settings={"confirm": "ABAB"}
            if any(c is not None for _, c in verdicts.values())
            else {},
        )
    )


def test_index_leads_with_workloads_and_states_come_from_the_newest_commit(
    tiny_history: Path, tmp_path: Path
) -> None:
    data = scan_results(tiny_history / "results", repo=tiny_history / "repo", workers=1)
    md = data.machines[0]
    ops = [r for r, s in enumerate(md.series) if s.series.op is not None]
    wl = md.series[ops[-1]].series.workload
    total = next(
        r for r, s in enumerate(md.series) if s.series.workload == wl and s.series.op is None
    )
    newest = _newest_doc(md, {ops[-1]: ("regression", True), total: ("regression", None)})
    history = FindingsDocument(
        mode="history", base=None, head=None,
        change_points=(_cp(md.series[1].series, md.name, md.commits[23], md.commits[24]),),
    )  # fmt: skip
    publish_site(data, tmp_path, findings=[history, newest], options=PublishOptions(now=NOW))
    idx = (tmp_path / "index.html").read_text()
    groups = re.findall(r'<tbody class="wl" data-alarm="(\d)" data-worst="(\w+)">(.*?)</tbody>',
                        idx, re.S)  # fmt: skip
    assert len(groups) == 3  # one per workload, not one row per series
    # alarms first (most severe first): the open change point's workload, then the one
    # whose total is suspect and an op confirmed, then the quiet one
    assert [g[:2] for g in groups] == [("1", "regression"), ("1", "confirmed"), ("0", "ok")]
    assert f">{wl} " in groups[1][2]
    for _alarm, _worst, body in groups:
        rows = re.findall(r"<tr class=\"(lead|op)\"[^>]*?( hidden)?>", body)
        assert rows[0] == ("lead", "") and all(r == ("op", " hidden") for r in rows[1:])
    lead = re.search(r'<tr class="lead" data-state="(\w+)">', groups[1][2])
    assert lead is not None and lead.group(1) == "suspect"
    assert "1 confirmed" in groups[1][2]  # the collapsed op's state is named on the lead row
    # the total's badge is its own state (issue 28: a total was badged "confirmed" for its
    # ops' sake); the workload's worst state stands beside it, named as the ops'
    lead_badges = re.findall(r'class="st st-([\w-]+)"', groups[1][2].split("</td>")[0])
    assert lead_badges == ["suspect"]
    assert '<span class="worst"' in groups[1][2].split("</td>")[0]
    assert "ops: confirmed" in groups[1][2].split("</td>")[0]
    # noise is a level (a badge), never a state
    assert "st-noisy" not in idx and idx.count('class="nz nz-') == len(md.series)
    assert "Newest commit" in idx and "re-measured by <code>neuronasv confirm</code>" in idx
    # the op chart page says the same
    page = next(p for p in (tmp_path / "m").rglob("*.html") if _meta(p)["title"].startswith(wl))
    meta = _meta(page)
    states = {r["label"]: (r["state"], r["change"]) for r in meta["rows"]}
    assert states["total"] == ("suspect", "+2300 %")
    assert states[md.series[ops[-1]].series.op] == ("confirmed", "+2300 %")
    assert meta["newest"] == {"index": len(md.commits) - 1, "parent": len(md.commits) - 2}
    assert all(set(r["noise"]) == {"cls", "text", "title"} for r in meta["rows"])
    # and the numbers are the comparison's, as the comment prints them (not asv's run)
    from .readback import against_the_comment

    assert against_the_comment(tmp_path, newest, at_least=2) == []
    regs = (tmp_path / "regressions.html").read_text()
    assert regs.count('<tr data-state="confirmed" data-alarm="1">') == 1
    assert regs.count('<tr data-state="suspect" data-alarm="1">') == 1


def test_a_check_of_an_older_commit_is_not_shown_as_the_newest(
    tiny_history: Path, tmp_path: Path
) -> None:
    data = scan_results(tiny_history / "results", workers=1)
    md = data.machines[0]
    stale = _newest_doc(md, {0: ("regression", None)})
    stale = FindingsDocument(
        mode="compare", base=stale.base, head=replace_commit(stale.head, md.commits[-2]),
        findings=stale.findings,
    )  # fmt: skip
    publish_site(data, tmp_path, findings=stale, options=PublishOptions(now=NOW))
    idx = (tmp_path / "index.html").read_text()
    assert 'data-state="suspect"' not in idx
    assert "not the newest commit here" in idx
    # no change-point findings at all: said, not "0 open regressions"
    assert "Change points</strong>: none given" in idx


def replace_commit(ref: object, commit: str) -> object:
    from dataclasses import replace

    return replace(ref, commit=commit)  # type: ignore[type-var]


def _spark_ys(svg: str) -> list[float]:
    m = re.search(r'points="([^"]+)"', svg)
    assert m is not None
    return [float(p.split(",")[1]) for p in m.group(1).split()]


def test_sparkline_scale_shows_a_24x_jump_as_one_and_a_wobble_as_flat() -> None:
    """The rule (render.spark_scale): log scale, at least a factor 2 tall. Under min–max
    scaling a -1 % wobble and a 24x jump were the same full-height step."""
    import numpy as np

    from neuronasv.publish.render import spark_scale, sparkline_svg

    def extent(values: list[float]) -> float:
        ys = _spark_ys(sparkline_svg(np.array(values), height=24))
        return (max(ys) - min(ys)) / 20  # the drawable height is height - 4

    assert extent([1e-6] * 10 + [24e-6]) == pytest.approx(1.0, abs=0.01)
    assert extent([1e-6] * 10 + [0.99e-6]) < 0.02
    assert extent([1e-6] * 10 + [1.45e-6]) == pytest.approx(0.536, abs=0.01)
    up = _spark_ys(sparkline_svg(np.array([1.0] * 10 + [24.0])))
    assert up[-1] < up[0]  # up is up (SVG y grows downwards)
    assert "range ×24" in sparkline_svg(np.array([1.0, 24.0]))
    # zeros or negatives: linear from zero, still proportional
    h, note = spark_scale(np.array([0.0, 0.0, 5.0, 10.0]))
    assert h.tolist() == [0.0, 0.0, 0.5, 1.0] and note == "linear from zero"
