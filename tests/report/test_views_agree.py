"""One renderer of truth, as a property: every view agrees with the stored row states.

Seeded generators (no new dependency: ``random.Random(seed)``) build many findings
documents — timing decisions against the sign of their Δ, Δ that rounds to ``+0.0 %``,
work decided by new carrying ops or by calls of zero-cost views, confirmations,
refutations, acknowledgements, plain asv series, new/removed/failed ones — run them
through the real analyse path (:func:`time_axis`, :func:`with_states`), render every
view, and parse the states and signs back:

- no ``slower`` beside a Δ ≤ 0 and no ``faster`` beside a Δ ≥ 0 (as displayed);
- no ``regression``/``improvement`` word on a line of a compare view that carries a Δ;
- ``confirmed`` only of a time whose stored state the rounds confirmed;
- no "not decided" / "within the noise" beside an interval that excludes zero at the
  level the decision used: such an interval is the per-row 95 % one and says so ("95 %
  CI, not adjusted for the rows tested together"), and "within the noise" never stands
  beside an interval beyond zero (that is "within the minimum effect");
- the terminal text, annotation titles and JSON give back each row's stored state.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Iterator
from dataclasses import replace

import pytest

from neuronasv.analyse.states import (
    Gate,
    change_text,
    newest_state,
    shown_change,
    time_axis,
    with_states,
)
from neuronasv.demo import verdict_sentence
from neuronasv.github.statuses import status_payload
from neuronasv.model import Finding, FindingsDocument, RunRef, SeriesId, WorkChange
from neuronasv.model.findings import RunnerShift
from neuronasv.report.annotations import render_annotations
from neuronasv.report.document import render_document
from neuronasv.report.markdown import render_comment
from neuronasv.report.rowwords import state_cell, state_words
from neuronasv.report.summary import render_summary
from neuronasv.report.tables import compare_markdown, compare_text, history_text
from neuronasv.report.terminal import terminal_text
from tests.builders import finding

DOCS = 120
OUTCOMES = ("slower", "faster", "noise", "undecided")
RATIOS = (1.0, 1.0004, 0.9996, 1.3, 0.7, 1.06, 0.95, 2.5, 0.4)


def _ratio(rng: random.Random) -> float:
    return rng.choice(RATIOS) if rng.random() < 0.5 else math.exp(rng.gauss(0.0, 0.3))


def _finding(rng: random.Random, sid: SeriesId) -> Finding:
    """A row as analyse decides one: any timing outcome, whatever the sign of its Δ (the
    time axis then agrees with the sign: :func:`time_axis`); measured once, or re-measured
    in rounds that confirmed it or not."""
    ratio = _ratio(rng)
    width = rng.choice((0.02, 0.2, 0.5))
    time = time_axis(rng.choice(OUTCOMES), ratio)  # type: ignore[arg-type]
    rounds = rng.random() < 0.4
    confirmed = rounds and time in ("slower", "faster") and rng.random() < 0.6
    if rounds and time in ("slower", "faster") and not confirmed:
        time = "undecided"  # the rounds did not reproduce it
    return finding(
        sid,
        base=1e-5,
        head=1e-5 * ratio,
        ci=(ratio * (1 - width), ratio * (1 + width)),
        time=time,
        confirmed=confirmed,
        source="rounds" if rounds else "first run",
        p_value=rng.random(),
        acknowledged="expected" if rng.random() < 0.08 else None,
    )


def _work(rng: random.Random, wl: str, shape: str) -> list[WorkChange]:
    kind = rng.choice(("carry-more", "carry-less", "view-calls", "mixed", "none"))
    cfg = (wl, shape, "float32")
    if kind == "carry-more":
        return [WorkChange(*cfg, op="aten::full_like", kind="new", calls_head=1.0,
                           bytes_head=4096.0, flops_head=0.0)]  # fmt: skip
    if kind == "carry-less":
        return [WorkChange(*cfg, op="aten::add", kind="removed", calls_base=1.0,
                           bytes_base=4096.0, flops_base=512.0)]  # fmt: skip
    if kind == "view-calls":
        zero = {"bytes_base": 0.0, "bytes_head": 0.0, "flops_base": 0.0, "flops_head": 0.0}
        return [WorkChange(*cfg, op="aten::view", kind="calls", calls_base=1.0, calls_head=3.0,
                           **zero)]  # fmt: skip
    if kind == "mixed":
        return [
            WorkChange(
                *cfg, op="aten::bmm", kind="new", calls_head=1.0, bytes_head=8e3, flops_head=1e6
            ),
            WorkChange(
                *cfg,
                op="aten::sdpa",
                kind="removed",
                calls_base=1.0,
                bytes_base=9e3,
                flops_base=2e6,
            ),
        ]
    return []


def generate(seed: int) -> FindingsDocument:
    rng = random.Random(seed)
    findings: list[Finding] = []
    work: list[WorkChange] = []
    for wl in rng.sample(["wla", "wlb", "wlc"], rng.randint(1, 3)):
        for shape in rng.sample(["4x8", "2x16"], rng.randint(1, 2)):
            base = SeriesId(f"b.{wl}", (shape,), wl, shape, "float32")
            findings.append(_finding(rng, base))
            for op in rng.sample(["aten::mul", "aten::add", "aten::view"], rng.randint(0, 2)):
                findings.append(_finding(rng, SeriesId(f"b.{wl}.op", (shape,), wl, shape,
                                                       "float32", op)))  # fmt: skip
            work += _work(rng, wl, shape)
    if rng.random() < 0.5:
        findings.append(_finding(rng, SeriesId("bench.time_sum", ("1000",))))
    for presence in rng.sample(["new", "removed", "failed"], rng.randint(0, 2)):
        sid = SeriesId("b.wlz", ("4x8",), "wlz", "4x8", "float32", f"aten::{presence}_op")
        findings.append(finding(sid, presence))
    settings: dict[str, object] = {"alpha": 0.01, "rounds": rng.choice((0, 0, 3))}
    if rng.random() < 0.5:
        settings["confirm"] = "ABAB, 3 rounds"
    doc = FindingsDocument(
        mode="compare",
        base=RunRef("a" * 40, "ci-cpu"),
        head=RunRef("b" * 40, "ci-cpu"),
        findings=tuple(findings),
        settings=settings,
        work=tuple(sorted(work, key=lambda w: (w.workload, w.shape, w.op))),
    )
    if rng.random() < 0.3:  # the runner shifted: first-run rows judged over its factor
        doc = _shifted(doc, math.exp(rng.gauss(0.0, 0.5)), rng)
    gate = Gate(rng.choice(("confirmed", "slower", "never")), rng.choice(("undecided", "more")))
    return with_states(doc, gate)


def _shifted(doc: FindingsDocument, factor: float, rng: random.Random) -> FindingsDocument:
    """``doc`` as ``compare`` leaves it under a runner shift (issue 39): every first-run
    row measured on both sides carries the factor, its time decided on its change over it
    (any outcome, the axis agreeing with that change's sign)."""
    out = []
    for f in doc.findings:
        if f.estimate.source != "first run" or f.state.presence != "both" or f.ratio is None:
            out.append(f)
            continue
        est = replace(f.estimate, shift=factor)
        time = time_axis(rng.choice(OUTCOMES), est.against)  # type: ignore[arg-type]
        out.append(replace(f, estimate=est, state=replace(f.state, time=time)))
    runner = RunnerShift("runner", factor=factor, spread=0.2, series=12, along=10, counted=12,
                         canary=factor)  # fmt: skip
    return replace(doc, findings=tuple(out), runner=runner)


def views(doc: FindingsDocument) -> Iterator[tuple[str, str]]:
    yield "comment", render_comment(doc)
    yield "summary", render_summary(doc)
    yield "compare text", compare_text(doc)
    yield "compare markdown", compare_markdown(doc)
    yield "terminal", terminal_text(doc, width=400, show_unchanged=True)
    yield "annotations", "\n".join(render_annotations(doc, max_per_kind=1000))
    yield "status", status_payload(doc)["description"]
    yield "demo", verdict_sentence(doc)
    yield "regressions", history_text(_history(doc))


def _history(doc: FindingsDocument) -> FindingsDocument:
    """``neuronasv regressions``' document around the same newest-commit findings."""
    return FindingsDocument(
        mode="history",
        base=doc.base,
        head=doc.head,
        findings=doc.findings,
        settings={"newest": {"checked": True, "source": "compare", "confirmed_run": False}},
    )


_NUM = re.compile(r"[+-]\d+(?:\.\d+)?")
# "slower (+18 %, CI …)" / "slower at 2 (+12 … +59 %, 2 confirmed)": the Δ in the parenthesis
_PAREN = re.compile(r"\b(slower|faster)\b([^()\n|│]{0,40}?)\(([^)]*)\)")
_PCT_CELL = re.compile(r"^\**([+-]\d+(?:\.\d+)?) %")
_TIME_WORD = re.compile(r"\b(slower|faster)\b(?! time| or|, or)")


def _sign_ok(word: str, value: float) -> bool:
    return value > 0 if word == "slower" else value < 0


# "above the runner's shift (+24 %, CI … over its +8 %; …)": the change over the shift
_OVER = re.compile(r"\b(above|below) the runner's shift \(([^)]*)\)")


def check_parentheses(text: str) -> list[str]:
    bad = []
    for m in _OVER.finditer(text):
        first = _NUM.search(m.group(2))
        word = "slower" if m.group(1) == "above" else "faster"
        if first is None or not _sign_ok(word, float(first.group(0))):
            bad.append(m.group(0))
    for m in _PAREN.finditer(text):
        if "rows" in m.group(2) or "gate" in m.group(2):
            continue
        figures = m.group(3).split("CI")[0]
        nums = [float(x) for x in _NUM.findall(figures)]
        if any(not _sign_ok(m.group(1), x) for x in nums):
            bad.append(m.group(0))
    return bad


def check_table_rows(text: str) -> list[str]:
    """Markdown/terminal rows: a state cell's time word against the row's first Δ cell."""
    bad = []
    for line in text.splitlines():
        sep = "|" if line.startswith("|") else ("│" if line.startswith("│") else None)
        if sep is None:
            continue
        cells = [c.strip() for c in line.strip(sep).split(sep)]
        words = [m.group(1) for c in cells for m in [_TIME_WORD.search(c)] if m and "(" not in c]
        deltas = [m.group(1) for c in cells for m in [_PCT_CELL.match(c)] if m]
        if words and deltas and not _sign_ok(words[0], float(deltas[0])):
            bad.append(line)
    return bad


def check_plain_rows(text: str) -> list[str]:
    """``compare`` text rows: ``<state>  <Δ>  <CI> ...``."""
    bad = []
    for line in text.splitlines():
        m = re.match(r"^(?P<state>\S.*?)\s{2,}(?P<chg>[+-]\d+(?:\.\d+)?) %", line)
        if m is None:
            continue
        w = _TIME_WORD.search(m.group("state"))
        if w and not _sign_ok(w.group(1), float(m.group("chg"))):
            bad.append(line)
    return bad


_UNDECIDED = re.compile(r"\b(not decided|within the noise)\b(?! in \d)(?: \(([^()]*)\))?")
_INTERVAL = re.compile(r"([+-]?\d+(?:\.\d+)?) … ([+-]?\d+(?:\.\d+)?) %")


def _beyond_zero(lo: str, hi: str) -> bool:
    return float(lo) > 0 or float(hi) < 0


def check_undecided_intervals(text: str) -> list[str]:
    """An undecided time beside an interval that excludes zero: the interval must say it
    is the per-row one, not the decision's ("not adjusted"); "within the noise" never
    stands beside one. The interval is the parenthesis' ``CI lo … hi`` or, in a table
    row, the row's CI cell."""
    bad = []
    for line in text.splitlines():
        for m in _UNDECIDED.finditer(line):
            paren = m.group(2) or ""
            at = paren.split("CI", 1)[1] if "CI" in paren else line
            iv = _INTERVAL.search(at)
            if iv is None or not _beyond_zero(iv.group(1), iv.group(2)):
                continue
            said = paren if "CI" in paren else line
            if m.group(1) == "within the noise" or "not adjusted" not in said:
                bad.append(line)
    return bad


def check_verdict_words(text: str) -> list[str]:
    """No regression/improvement word on a line that shows a Δ (compare views)."""
    return [
        line
        for line in text.splitlines()
        if _NUM.search(line) and "%" in line
        and re.search(r"(?i)\b(regression|improvement)s?\b", line)
    ]  # fmt: skip


def check_confirmed(doc: FindingsDocument, text: str) -> list[str]:
    """``slower/faster …, confirmed`` only where some stored state has that confirmation."""
    have = {f.state.time for f in doc.findings if f.state.confirmed}
    said = set(re.findall(r"\b(slower|faster)\b(?: \([^)]*\))?, confirmed", text))
    said |= set(re.findall(r"\b(slower|faster) at \d+ \([^)]*\d+ confirmed\)", text))
    return sorted(said - have)


@pytest.mark.parametrize("seed", range(DOCS))
def test_every_view_agrees_with_the_stored_states(seed: int) -> None:
    doc = generate(seed)
    for name, escaped in views(doc):
        text = escaped.replace("\\", "")  # markdown escapes (\+0\.5 %) read as the figure
        problems = (
            check_parentheses(text)
            + check_table_rows(text)
            + check_plain_rows(text)
            + check_confirmed(doc, text)
            + check_undecided_intervals(text)
            + (check_verdict_words(text) if name != "regressions" else [])
        )
        assert not problems, f"seed {seed}, {name}: {problems[:3]}"


def test_the_interval_check_can_fail() -> None:
    """The check catches the words the demo once printed (no test that cannot fail)."""
    said = "rmsnorm.naive 2x128x512 fp32 more work · time not decided (+77 %, CI +41 … +122 %)"
    assert check_undecided_intervals(said) == [said]
    row = "| `wl 4x8` | _total_ | +25 % | +22 … +27 % | 0.29 | more work · time within the noise |"
    assert check_undecided_intervals(row) == [row]
    assert not check_undecided_intervals("time not decided (-0.3 %, CI -17 … +20 %)")
    assert not check_undecided_intervals(
        "time not decided (+77 %, 95 % CI +41 … +122 %, not adjusted for the rows tested"
        " together)"
    )
    assert not check_undecided_intervals("time not decided in 5 (+5.8 … +77 %)")


@pytest.mark.parametrize("seed", range(0, DOCS, 3))
def test_states_parse_back_from_the_views(seed: int) -> None:
    doc = generate(seed)
    # JSON: the stored states come back as they are
    back = FindingsDocument.loads(render_document(doc, "json"))
    assert [f.state for f in back.findings] == [f.state for f in doc.findings]
    # compare text: each row's state cell is the stored state's words
    rows = compare_text(doc).splitlines()
    for f in doc.findings:
        want = state_cell(f) + (" (acknowledged)" if f.acknowledged is not None else "")
        line = next(r for r in rows if r.endswith("  " + f.series.label))
        assert line.startswith(want + "  "), (seed, line, want)
    # annotations: a moved row's title is "<label>: <state words>"
    titles = "\n".join(render_annotations(doc, max_per_kind=1000))
    for f in doc.findings:
        if f.acknowledged is None and f.state.direction is not None:
            title = f"{f.series.label}: {state_words(f)}".replace("%", "%25")
            assert title.replace(",", "%2C").replace(":", "%3A") in titles
    # the site and `neuronasv regressions`: a state's sign agrees with its change text
    for f in doc.findings:
        state = newest_state(f)
        assert f.state is not None
        if state in ("confirmed", "suspect"):
            assert f.ratio is not None and shown_change(f.ratio) > 0, change_text(f)
        if state == "improved":
            assert f.ratio is not None and shown_change(f.ratio) < 0, change_text(f)
        if state == "confirmed":
            assert f.state.confirmed
