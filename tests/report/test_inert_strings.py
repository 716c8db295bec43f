"""Every view rendered from a document whose every string field is hostile (issue 22 item 1).

The document is realistic (a compare with totals, ops, attribution, work changes, causes,
module chains, roofline bounds, environment changes, load errors, device health; a history
with change points), then *every* string a run or a person can choose is replaced by a
hostile one: op, module, workload, shape, dtype, benchmark, params, machine, label,
fingerprint values, reasons, warnings, acknowledgements, load errors, URLs. The mapping is
consistent (the same original string always becomes the same hostile string) so the
document's identities still join up and every section renders.

Each view must show no live link, mention, heading, HTML or sticky marker: the hostile
text may appear only in forms where it is inert.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from neuronasv.cli import main
from neuronasv.github.issues_sync import render_body, render_title
from neuronasv.github.statuses import check_run_payload, status_payload
from neuronasv.model import (
    Cause,
    ChangePoint,
    EnvChange,
    FindingsDocument,
    OpContribution,
    SeriesId,
    WorkChange,
)
from neuronasv.model.findings import CanaryCheck, DeviceHealth
from neuronasv.report import (
    comment_marker,
    render_annotations,
    render_comment,
    render_comment_trimmed,
    render_markdown,
    render_summary,
    terminal_text,
)
from neuronasv.report.tables import compare_markdown, compare_text, history_text
from tests.report.fixtures import compare_doc, history_doc

EVIL = "evil.example"

#: Keys whose values are the document's own vocabulary or structure, not untrusted text.
_STRUCTURAL = {
    "kind", "mode", "unit", "created", "status", "side", "direction",
    "commit", "commit_before", "commit_after",
    "source", "time", "work", "instructions", "presence", "gate",  # a row's estimate, state
}  # fmt: skip


def hostile(original: str) -> str:
    """``original`` with every trick a renderer could fall for around it."""
    return (
        f"{original}\n## Injected heading\n[Approve](https://{EVIL}/a) @org/team "
        f"<b>html</b> <!-- neuronasv:comment:other --> ![i](https://{EVIL}/i.png) "
        f"https://{EVIL}/auto www.{EVIL} `tick` | cell | ::error::x %0A [link=https://{EVIL}]t"
    )


def _poison(obj: Any, key: str = "") -> Any:
    if isinstance(obj, dict):
        return {_poison_key(k, key): _poison(v, k) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_poison(v, key) for v in obj]
    if isinstance(obj, str) and key not in _STRUCTURAL and key not in _URL_KEYS:
        return hostile(obj)
    if isinstance(obj, str) and key in _URL_KEYS:
        return f"javascript:alert('{EVIL}')"
    return obj


_URL_KEYS = {"trace_url", "history_url", "report_url", "evil_url"}
_KEYED = {"fingerprint", "traces", "device_state"}  # objects whose keys are data too


def _poison_key(k: str, parent: str) -> str:
    return hostile(k) if parent in _KEYED else k


def _rich_compare() -> FindingsDocument:
    doc = compare_doc()
    total = next(f for f in doc.findings if f.series.op is None)
    s = total.series
    work = WorkChange(
        s.workload or "", s.shape or "", s.dtype or "", "aten::mul", "calls",
        calls_base=3.0, calls_head=4.0, bytes_base=1.0, bytes_head=2.0,
        signature_base=("3×bf16[4, 512]",), signature_head=("4×bf16[4, 512]",),
        time_base=1e-6, time_head=2e-6,
    )  # fmt: skip
    new_op = WorkChange(s.workload or "", s.shape or "", s.dtype or "", "aten::new", "new",
                        calls_head=1.0)  # fmt: skip
    cause = Cause("work", s.workload or "", "regression", ops=("aten::mul",),
                  configs=((s.shape or "", s.dtype or ""),), totals=(s,))  # fmt: skip
    check = CanaryCheck(
        side="head", commit="b" * 40, machine="trn2-runner-1", status="ok", reason="steady",
        level_us=12.0, baseline_us=10.0, change=0.02, threshold=0.1, history_n=7, readings=2,
        device_state={"end.sm_clock": "1410"},
    )  # fmt: skip
    data = doc.to_json()
    data["work"] = [w.to_json() for w in (work, new_op)]
    data["causes"] = [cause.to_json()]
    data["forced"] = ["different machine"]
    data["health"] = DeviceHealth("ok", "canary steady", (check,)).to_json()
    for f in data["findings"]:
        if f["series"].get("op") == "aten::mul":
            f["roofline_bound"] = "memory"
            f["module_chain"] = [
                OpContribution(m, 1e-3, 2e-3, 1e-3, 0.9).to_json() for m in ("block", "block.mlp")
            ]
    data["head"]["traces"] = {s.label: "traces/head.json"}
    return FindingsDocument.from_json(data)


def _history() -> FindingsDocument:
    doc = history_doc()
    cp = doc.change_points[0]
    extra = ChangePoint(
        series=SeriesId("b.time_x", ("p",), "w", "4x4", "float32", "aten::add"), machine="m",
        commit_before="c" * 40, commit_after="d" * 40, index=2, before=1.0, after=1.5,
        ratio=1.5, p_value=0.001, unit="seconds", kind="regression", open=True,
        env_changes=(EnvChange("torch", "2.12", None),), reason="step",
    )  # fmt: skip
    data = doc.to_json()
    data["change_points"] = [cp.to_json(), extra.to_json()]
    return FindingsDocument.from_json(data)


def poisoned(doc: FindingsDocument) -> FindingsDocument:
    return FindingsDocument.from_json(_poison(doc.to_json()))


def _strip_code(text: str) -> str:
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    return re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", text, flags=re.S)


_OUR_HTML = re.compile(r"</?(details|summary|sub|sup|br|code)\b[^>]*>|<!-- neuronasv:comment -->")


def assert_inert_markdown(text: str, marker: str = comment_marker()) -> None:
    """No live link, image, autolink, mention, heading, HTML or foreign marker."""
    assert "<!-- neuronasv:comment:other" not in text  # not even in a code span: raw body
    assert text.count("<!-- neuronasv:comment") <= 1
    live = _strip_code(text)
    for dest in re.findall(r"\]\(([^)]*)\)", live):
        assert EVIL not in dest and "javascript" not in dest, dest
    assert not re.search(r"https?://" + re.escape(EVIL), live), "autolink"
    assert f"www.{EVIL}" not in live, "www autolink"
    assert not re.search(r"@(?!\u200d)[A-Za-z]", live.replace("\\@", "@")), "mention"
    for line in live.splitlines():
        assert not re.match(r"\s{0,3}#{1,6}\s+Injected", line), line
    html = re.findall(r"<[A-Za-z/!?][^ ]{0,20}", _OUR_HTML.sub("", live))  # tag, comment
    assert not html, html
    for block in re.findall(r"((?:^\|.*\n)+)", text, flags=re.M):  # tables keep their columns
        rows = block.splitlines()
        assert len({len(re.findall(r"(?<!\\)\|", _strip_code(r))) for r in rows}) == 1, rows


def _views(doc: FindingsDocument) -> dict[str, str]:
    out = {
        "comment": render_comment(doc),
        "comment trimmed": render_comment_trimmed(doc, max_chars=3000),
        "markdown": render_markdown(doc),
        "summary": render_summary(doc),
        "check run": check_run_payload(doc, "a" * 40)["output"]["summary"],
    }
    if doc.mode == "compare":
        out["compare markdown"] = compare_markdown(doc)
    return out


@pytest.mark.parametrize("build", [_rich_compare, _history], ids=["compare", "history"])
def test_every_markdown_view_is_inert(build: Any) -> None:
    doc = poisoned(build())
    for name, text in _views(doc).items():
        try:
            assert_inert_markdown(text)
        except AssertionError as e:
            raise AssertionError(f"{name}: {e}\n{text}") from None


def test_the_hostile_text_is_still_shown() -> None:
    """Inert, not dropped: the op name is there for people to read."""
    text = render_comment(poisoned(_rich_compare()))
    assert "aten::mul" in text and "Injected heading" in text


@pytest.mark.parametrize("build", [_rich_compare, _history], ids=["compare", "history"])
def test_plain_views_are_one_line_per_value_without_markup(build: Any) -> None:
    doc = poisoned(build())
    plain = {
        "terminal": terminal_text(doc, show_unchanged=True),
        "compare text": compare_text(doc) if doc.mode == "compare" else history_text(doc),
        "status": status_payload(doc)["description"],
        "check title": check_run_payload(doc, "a" * 40)["output"]["title"],
    }
    for name, text in plain.items():
        for line in text.splitlines():
            assert not re.match(r"\s{0,3}## Injected", line), (name, line)
        assert "\x1b" not in text, name  # no terminal escape sequence (hyperlink, colour)


def test_annotations_are_one_command_per_line() -> None:
    doc = poisoned(_rich_compare())
    lines = render_annotations(doc)
    assert lines
    for line in lines:
        assert "\n" not in line and "\r" not in line
        # ::kind title=...::message — the properties cannot end early (``:`` and ``,``
        # escaped); what follows the second ``::`` is the message, where ``::`` is inert.
        m = re.match(r"::(error|warning|notice)( title=[^:,]*)?::", line)
        assert m, line


def test_issue_title_and_body_are_inert() -> None:
    doc = poisoned(_history())
    for cp in doc.change_points:
        title = render_title(cp)
        assert "\n" not in title
        body = render_body(cp, "k", site_url=f"javascript:{EVIL}", repository="o/r")
        assert_inert_markdown(body.replace(body.splitlines()[0], "", 1))


def test_comment_dry_run_and_summary_commands_are_inert(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same through the CLI: ``comment --dry-run`` (body written out) and ``summary``."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    (tmp_path / "f.json").write_text(poisoned(_rich_compare()).dumps())
    argv = ["comment", "--pr", "1", "--report", "f.json", "--dry-run", "--body-out", "body.md"]
    assert main(argv) == 0
    assert_inert_markdown((tmp_path / "body.md").read_text())
    capsys.readouterr()
    assert main(["summary", "--report", "f.json", "--no-annotations"]) == 0
    out = capsys.readouterr().out
    assert "Injected heading" in out
    assert_inert_markdown(out)


def test_site_pages_and_feed_are_inert(tmp_path: Path) -> None:
    """The site renders the same hostile strings as text (HTML-escaped), never as markup:
    a history whose machine, workload, shape, dtype and op are hostile, and its change
    points with every string field poisoned."""
    from datetime import datetime, timezone
    from xml.etree import ElementTree as ET

    from neuronasv.model import History, Point, Series
    from neuronasv.publish import PublishOptions, from_history, publish_site

    commits = [f"{i:040x}" for i in range(1, 13)]
    sid = SeriesId("b.devtime", (hostile("p"),), hostile("w"), hostile("4x4"), hostile("f32"),
                   hostile("aten::mul"))  # fmt: skip
    pts = tuple(Point(c, i, 1e-3 * (1.2 if i >= 6 else 1.0), (1e-3, 1e-3), 1_700_000_000_000 + i)
                for i, c in enumerate(commits))  # fmt: skip
    machine = "m1"  # a folder name (checked by the store); the other strings are text
    hist = History((Series(machine, "env", sid, "seconds", pts),), tuple(commits))
    cp = ChangePoint(series=sid, machine=machine, commit_before=commits[5],
                     commit_after=commits[6], index=6, before=1e-3, after=1.2e-3, ratio=1.2,
                     p_value=1e-4, unit="seconds", kind="regression", open=True,
                     env_changes=(EnvChange(hostile("torch"), hostile("1"), hostile("2")),),
                     acknowledged=hostile("ack"), reason=hostile("reason"))  # fmt: skip
    doc = FindingsDocument(mode="history", base=None, head=None, change_points=(cp,))
    now = datetime(2026, 1, 2, tzinfo=timezone.utc)
    publish_site(from_history(hist), tmp_path, findings=doc, options=PublishOptions(now=now))
    pages = [p for p in tmp_path.rglob("*.html") if "assets" not in p.parts]
    assert any("Injected heading" in p.read_text() for p in pages)  # shown, as text
    for page in pages:
        text = page.read_text()
        assert "<b>html</b>" not in text and "<!-- neuronasv:comment:other" not in text, page
        assert f'href="https://{EVIL}' not in text and 'href="javascript' not in text, page
    feed = ET.fromstring((tmp_path / "regressions.atom").read_bytes())
    assert "Injected heading" in ET.tostring(feed, encoding="unicode")  # text, parsed fine
