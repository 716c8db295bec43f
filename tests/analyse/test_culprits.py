"""The culprit explained (compare of the culprit with its parent) and named on change points."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from neuronasv.analyse.bisect import SearchResult
from neuronasv.analyse.culprits import (
    attach_culprits,
    culprit_of,
    explain,
    explain_pair,
    pull_from_subject,
)
from neuronasv.model import ChangePoint, FindingsDocument, History, SeriesId
from neuronasv.model.bisect import BisectDocument
from neuronasv.store.history import load_history
from tests.analyse.analyse_asvdata import neuronasv_run
from tests.builders import history_doc

WL = ("w", "4x4", "float32")
C = [f"{i:x}" * 40 for i in range(1, 6)]  # five commits, oldest first


def stored_history(tmp_path: Path) -> History:
    """Five commits; ``aten::mul`` runs twice per iteration from the fourth on."""
    rd = str(tmp_path / "results")
    for i, c in enumerate(C):
        calls = 2.0 if i >= 3 else 1.0
        neuronasv_run(rd, "m", c, 1000 + i, {WL: {"aten::mul": (calls, [10.0 * calls] * 6),
                                                   "aten::add": (1.0, [5.0] * 6)}})  # fmt: skip
    h = load_history(rd, machine="m")
    return replace(h, commits=tuple(C))  # no git here: the commits' order by hand


def mul_series(h: History) -> SeriesId:
    return next(s.series for s in h.series if s.series.op == "aten::mul")


def test_explain_keeps_the_configuration_and_its_exact_work(tmp_path: Path) -> None:
    h = stored_history(tmp_path)
    doc = explain(h, C[2], C[3], "m", mul_series(h))
    assert doc is not None and doc.mode == "compare"
    assert [(w.op, w.kind, w.calls_base, w.calls_head) for w in doc.work] == [
        ("aten::mul", "calls", 1.0, 2.0)
    ]
    assert {f.series.workload for f in doc.findings} == {"w"} and doc.causes
    assert explain(h, C[2], "0" * 40, "m", mul_series(h)) is None  # not stored: no comparison


def test_pull_from_subject() -> None:
    assert pull_from_subject("Fold the scale (#123)").number == 123  # type: ignore[union-attr]
    assert pull_from_subject("Merge pull request #7 from a/b").number == 7  # type: ignore[union-attr]
    assert pull_from_subject("issue #5 is fixed") is None


def _cp(h: History, before: str, after: str) -> ChangePoint:
    sid = mul_series(h)
    return ChangePoint(sid, "m", before, after, 3, 1e-5, 2e-5, 2.0, 0.0001, "seconds",
                       "regression", open=True, reason="shift")  # fmt: skip


def _record(h: History, good: str, bad: str, culprit: str, parent: str) -> BisectDocument:
    res = SearchResult("culprit", parent, culprit, (), (culprit,), "two readings")
    return BisectDocument(mul_series(h), "m", "seconds", good, bad, 4,
                          culprit_of(res, "work", subject="s"), created="2026-12-01")  # fmt: skip


def test_a_record_names_the_culprit_of_the_change_point_whose_range_holds_it(tmp_path) -> None:
    h = stored_history(tmp_path)
    doc = history_doc(_cp(h, C[0], C[4]), machine="m")
    rec = _record(h, C[0], C[4], C[3], C[2])
    out = attach_culprits(doc, [rec], h.commits)
    (cp,) = out.change_points
    assert cp.culprit is not None and cp.culprit.commit == C[3]
    # another series, another machine, or a culprit outside the range: not attached
    other = replace(rec, series=replace(rec.series, op="aten::add"))
    elsewhere = replace(rec, machine="n")
    outside = _record(h, C[0], C[4], C[1], C[0])
    narrow = history_doc(_cp(h, C[2], C[4]), machine="m")
    assert attach_culprits(doc, [other, elsewhere], h.commits).change_points[0].culprit is None
    assert attach_culprits(narrow, [outside], h.commits).change_points[0].culprit is None
    # the JSON carries it (issues-sync, publish and the feed read that document)
    back = FindingsDocument.loads(out.dumps())
    assert back.change_points[0].culprit == cp.culprit


def test_a_one_commit_range_names_its_commit_without_a_bisection(tmp_path) -> None:
    h = stored_history(tmp_path)
    doc = history_doc(_cp(h, C[2], C[3]), machine="m")
    parents = {C[i]: C[i - 1] for i in range(1, 5)}

    def explainer(wanted):
        return [explain_pair(h, w.parent, w.commit, w.machine, [w.series])[0] for w in wanted]

    out = attach_culprits(doc, [], h.commits, explainer=explainer, first_parent=parents.get,
                          subject=lambda c: "double the mul (#9)")  # fmt: skip
    (cp,) = out.change_points
    assert cp.culprit is not None and cp.culprit.commit == C[3] and cp.culprit.measured == 0
    assert cp.culprit.pull is not None and cp.culprit.pull.number == 9
    assert cp.culprit.explanation  # the comparison of the two, for the cause sentence
    assert "no bisection needed" in cp.culprit.decided_by
    wide = history_doc(_cp(h, C[1], C[3]), machine="m")
    wide_out = attach_culprits(wide, [], h.commits, first_parent=parents.get)
    assert wide_out.change_points[0].culprit is None


def test_explain_pair_is_explain_of_each_series_with_one_comparison(tmp_path: Path) -> None:
    h = stored_history(tmp_path)
    sids = [s.series for s in h.series if s.series.op in ("aten::mul", "aten::add")]
    got = explain_pair(h, C[2], C[3], "m", sids)
    assert got == [explain(h, C[2], C[3], "m", s).to_json() for s in sids]  # type: ignore[union-attr]
    assert explain_pair(h, C[2], "0" * 40, "m", sids) == [{}, {}]  # not stored: none


def test_the_explainer_is_asked_once_for_at_most_max_adjacent_in_order(tmp_path: Path) -> None:
    from neuronasv.analyse.culprits import MAX_ADJACENT

    h = stored_history(tmp_path)
    parents = {C[i]: C[i - 1] for i in range(1, 5)}
    cps = [_cp(h, C[2], C[3])] * (MAX_ADJACENT + 3)
    doc = replace(history_doc(cps[0], machine="m"), change_points=tuple(cps))
    calls: list[int] = []

    def explainer(wanted):
        calls.append(len(wanted))
        return [{"n": i} for i in range(len(wanted))]

    out = attach_culprits(doc, [], h.commits, explainer=explainer, first_parent=parents.get)
    assert calls == [MAX_ADJACENT]
    whys = [cp.culprit.explanation if cp.culprit else None for cp in out.change_points]
    assert whys == [{"n": i} for i in range(MAX_ADJACENT)] + [None] * 3
