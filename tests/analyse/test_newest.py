"""The newest commit's state: compare with the parent until change points take over."""

from __future__ import annotations

import os
from dataclasses import replace

import numpy as np
import pytest
from analyse_asvdata import neuronasv_run

from neuronasv.analyse.newest import check_newest, newest_pair, regressions_document
from neuronasv.analyse.pairwise import compare
from neuronasv.analyse.states import MIN_POINTS, Coverage, coverage_of, series_state, with_states
from neuronasv.errors import UsageError
from neuronasv.model import ChangePoint, Finding, FindingsDocument, SeriesId
from neuronasv.report.tables import history_text
from neuronasv.store.history import load_history
from tests.analyse.conftest import DATA
from tests.builders import finding

PR = os.path.join(DATA, "pr")
SID = SeriesId("b", ("x",), "w", "4x512", "float32", "aten::rsqrt")


def _f(verdict: str, confirmed: bool | None = None, ack: str | None = None) -> Finding:
    """A row as analyse leaves it: ``confirmed`` True = the rounds confirmed its time,
    False = the rounds re-measured it and did not (its time is then not decided)."""
    ratio = 0.5 if verdict == "improvement" else 24.0  # the sign agrees with the time
    f = finding(SID, "noisy" if confirmed is False else verdict, base=1e-6,
                head=1e-6 * ratio, confirmed=bool(confirmed), acknowledged=ack,
                source="first run" if confirmed is None else "rounds")  # fmt: skip
    return with_states(FindingsDocument("compare", None, None, findings=(f,))).findings[0]


def _cp(kind: str, *, open_: bool, index: int = 5, ack: str | None = None) -> ChangePoint:
    return ChangePoint(SID, "m", "a" * 40, "b" * 40, index, 1.0, 1.3 if kind == "regression"
                       else 0.7, 1.3, 1e-6, "seconds", kind, open=open_,  # type: ignore[arg-type]
                       acknowledged=ack)  # fmt: skip


def test_state_rule_most_severe_wins() -> None:
    assert series_state([], None) == "ok"
    assert series_state([], _f("regression")) == "suspect"
    assert series_state([], _f("regression", True)) == "confirmed"
    assert series_state([], _f("regression", False)) == "ok"  # disproved by the re-run
    assert series_state([], _f("regression", ack="expected")) == "acknowledged"
    assert series_state([], _f("failed")) == "failed"
    assert series_state([], _f("noisy")) == "ok"  # noise is a level, never a state
    assert series_state([], _f("improvement")) == "ok"  # unconfirmed: not claimed
    assert series_state([], _f("improvement", True)) == "improved"
    assert series_state([_cp("regression", open_=True)], _f("regression", True)) == "regression"
    assert series_state([_cp("regression", open_=True, ack="x")], None) == "acknowledged"
    assert series_state([_cp("regression", open_=False)], None) == "ok"
    # the latest change point decides "improved"; a newer suspect still outranks it
    cps = [_cp("regression", open_=False, index=3), _cp("improvement", open_=False, index=9)]
    assert series_state(cps, None) == "improved"
    assert series_state(cps, _f("regression")) == "suspect"


def test_two_commits_say_too_few_for_change_points_and_give_suspects() -> None:
    h = load_history(PR)
    newest = check_newest(h, "ci-cpu-1")
    assert newest is not None and newest.source == "compare"
    doc = regressions_document(h, newest=newest)
    assert coverage_of(doc) == [Coverage("ci-cpu-1", 2, MIN_POINTS)]
    assert coverage_of(doc)[0].sentence == "too few commits for change points (have 2, need 4)"
    assert doc.change_points == ()
    assert doc.base is not None and doc.base.commit.startswith("1a2b3c4d")
    assert doc.head is not None and doc.head.commit.startswith("5e6f7a8b")
    # the findings are compare()'s for that pair, unchanged
    direct = compare(h, doc.base.commit, doc.head.commit)
    assert [(f.series, f.estimate, f.state) for f in doc.findings] == [
        (f.series, f.estimate, f.state) for f in direct.findings
    ]
    back = FindingsDocument.loads(doc.dumps())
    assert coverage_of(back) == coverage_of(doc) and back.findings == doc.findings
    text = history_text(back)
    assert "0 change points" not in text and "0 open regressions" not in text
    assert text.splitlines()[-1] == (
        "summary: too few commits for change points (have 2, need 4);"
        " newest commit 5e6f7a8b: 0 confirmed slower, 2 suspect slower (single run, suspects"
        " to re-measure)"
    )
    assert "compared here, not re-measured" in text
    assert "suspect  same work · slower (+19 %" in text


def test_report_of_the_same_pair_brings_its_confirmations() -> None:
    h = load_history(PR)
    parent, newest = newest_pair(h, "ci-cpu-1") or ("", "")
    doc = compare(h, parent, newest)
    confirmed = with_states(
        replace(
            doc,
            findings=tuple(
                (
                    replace(
                        f,
                        state=replace(f.state, confirmed=True),
                        estimate=replace(f.estimate, source="rounds"),
                    )
                    if f.series.op == "aten::mul"
                    else replace(
                        f,
                        state=replace(f.state, time="undecided"),
                        estimate=replace(f.estimate, source="rounds"),
                    )
                )
                if f.state.time == "slower"
                else f
                for f in doc.findings
            ),
            settings={**doc.settings, "confirm": "ABAB, 3 rounds"},
        )
    )
    got = check_newest(h, "ci-cpu-1", report=confirmed)
    assert got is not None and got.source == "report" and got.confirmed_run
    text = history_text(regressions_document(h, newest=got))
    assert "confirmed  same work · slower (+19 %" in text
    assert "newest commit 5e6f7a8b: 1 confirmed slower, 0 suspect slower" in text
    # the total was disproved by the re-run: not listed at all
    assert "rmsnorm.naive 4x512 bfloat16\n" not in text
    swapped = compare(h, newest, parent)
    with pytest.raises(UsageError, match="but the newest commit on 'ci-cpu-1' is 5e6f7a8b"):
        check_newest(h, "ci-cpu-1", report=swapped)


def test_parent_follows_the_first_parent_chain() -> None:
    h = load_history(PR)
    parent, newest = newest_pair(h, "ci-cpu-1") or ("", "")
    # unmeasured ancestors are skipped; without a measured one, the previous measured commit
    assert newest_pair(h, "ci-cpu-1", ["f" * 40, parent]) == (parent, newest)
    assert newest_pair(h, "ci-cpu-1", ["f" * 40]) == (parent, newest)
    assert newest_pair(h, "nope") is None


def _history(tmp_path: object, levels: list[float]) -> str:
    """One workload; ``aten::rsqrt`` at ``levels[i]`` µs at commit i, 10 samples a commit."""
    rd = str(tmp_path)
    rng = np.random.default_rng(7)
    for i, lv in enumerate(levels):
        neuronasv_run(
            rd, "m", f"{i:08x}" + "c" * 32, 1_000_000 + i,
            {("rmsnorm.naive", "4x512", "float32"): {
                "aten::rsqrt": (1.0, list(rng.normal(lv, 0.01 * lv, 10))),
                "aten::mul": (2.0, list(rng.normal(50.0, 0.5, 10))),
            }},
        )  # fmt: skip
    return rd


def _states(rd: str) -> dict[str | None, str]:
    h = load_history(rd)
    doc = regressions_document(h, newest=check_newest(h, "m"))
    newest = {f.series: f for f in doc.findings}
    return {
        s.series.op: series_state(
            [c for c in doc.change_points if c.series == s.series], newest.get(s.series)
        )
        for s in h.series
    }


def test_a_jump_at_the_newest_commit_is_suspect_then_change_points_take_over(tmp_path) -> None:
    """The site's case: a 24x jump at the newest commit. Change points cannot see it (one
    point after it); the comparison with the parent does. Five commits later the change
    point is open and the newest comparison has nothing left to say."""
    flat = [2.0] * 12
    rd = _history(tmp_path / "a", [*flat, 48.0])
    h = load_history(rd)
    doc = regressions_document(h, newest=check_newest(h, "m"))
    assert coverage_of(doc)[0].ran and not [c for c in doc.change_points if c.open]
    assert _states(rd)["aten::rsqrt"] == "suspect"
    assert _states(rd)["aten::mul"] == "ok"
    rd = _history(tmp_path / "b", [*flat] + [48.0] * 6)
    assert _states(rd)["aten::rsqrt"] == "regression"
    assert _states(rd)["aten::mul"] == "ok"


def test_a_backend_change_at_the_newest_commit_is_said_not_raised(tmp_path) -> None:
    """compare() refuses base/head of different backends; regressions must still run and
    say why the newest commit was not compared."""
    rd = str(tmp_path)
    for i, backend in enumerate(["cpu", "cpu", "cuda"]):
        neuronasv_run(
            rd, "m", f"{i:08x}" + "c" * 32, 1_000_000 + i,
            {("rmsnorm.naive", "4x512", "float32"): {"aten::mul": (1.0, [50.0] * 10)}},
            fingerprint={"backend": backend, "device_model": backend},
        )  # fmt: skip
    h = load_history(rd)
    newest = check_newest(h, "m")
    assert newest is not None and newest.doc is None and "backend 'cpu' vs 'cuda'" in newest.note
    doc = regressions_document(h, newest=newest)
    assert doc.findings == () and doc.settings["newest"]["checked"] is False
    text = history_text(doc)
    assert "newest commit not checked: not compared with its parent 00000001cccc" in text
    assert "too few commits for change points (have 3, need 4)" in text
    from neuronasv.publish import from_history, publish_site

    publish_site(from_history(h), tmp_path / "site", findings=doc)
    idx = (tmp_path / "site" / "index.html").read_text()
    assert "not checked (not compared with its parent 00000001cccc" in idx
