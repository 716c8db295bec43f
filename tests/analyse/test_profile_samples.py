"""Samples from profile documents: the one reader behind confirm and compare --round-*."""

from __future__ import annotations

import pytest

from neuronasv.analyse.floors import floor_key
from neuronasv.analyse.profile_samples import paired_rounds, profile_samples, samples_from_profile
from neuronasv.model import ProfileDocument, SeriesId
from neuronasv.model.profile import OpProfile, WorkloadProfile


def _doc(*workloads: tuple[str, float, dict[str, float]]) -> ProfileDocument:
    """Workloads ``(name, total µs, {op: µs})`` at 4x4 float32, two samples each."""
    return ProfileDocument(
        "cpu",
        tuple(
            WorkloadProfile(
                name,
                "cpu",
                "4x4",
                "float32",
                (total, total + 1),
                tuple(OpProfile(op, 1.0, (us, us + 1), (1.0, 1.0)) for op, us in ops.items()),
            )
            for name, total, ops in workloads
        ),
    )


def _sid(workload: str, op: str | None = None) -> SeriesId:
    return SeriesId("b", (), workload, "4x4", "float32", op)


def test_profile_samples_totals_and_ops_in_seconds_or_us() -> None:
    doc = _doc(("w", 10.0, {"aten::mul": 4.0}))
    got = profile_samples(doc)
    assert got == {
        ("w", "4x4", "float32", None): pytest.approx([10e-6, 11e-6]),
        ("w", "4x4", "float32", "aten::mul"): pytest.approx([4e-6, 5e-6]),
    }
    assert profile_samples(doc, unit="us")[("w", "4x4", "float32", None)] == [10.0, 11.0]


def test_first_profile_of_a_configuration_counts() -> None:
    doc = _doc(("w", 10.0, {"a": 1.0}), ("w", 99.0, {"a": 99.0, "b": 2.0}))
    got = profile_samples(doc, unit="us")
    assert got[("w", "4x4", "float32", None)] == [10.0, 11.0]
    assert got[("w", "4x4", "float32", "a")] == [1.0, 2.0]
    assert ("w", "4x4", "float32", "b") not in got  # from the ignored duplicate


def test_samples_from_profile_keeps_only_series_it_holds() -> None:
    doc = _doc(("w", 10.0, {"aten::mul": 4.0}))
    asked = [_sid("w"), _sid("w", "aten::mul"), _sid("w", "aten::add"), _sid("other")]
    asked.append(SeriesId("b", (), None, "", "", None))  # an asv-only series: no workload
    got = samples_from_profile(doc, asked, unit="us")
    assert got == {_sid("w"): [10.0, 11.0], _sid("w", "aten::mul"): [4.0, 5.0]}


def test_paired_rounds_pair_in_order_and_drop_after_a_gap() -> None:
    r1 = _doc(("w", 10.0, {"a": 1.0, "gap": 5.0}))
    r2 = _doc(("w", 20.0, {"a": 2.0}))  # "gap" missing in round 2 at base
    r3 = _doc(("w", 30.0, {"a": 3.0, "gap": 5.0}))
    h = _doc(("w", 12.0, {"a": 1.5, "gap": 6.0}))
    rounds = paired_rounds([r1, r2, r3], [h, h, h])
    base, head = rounds[floor_key(_sid("w"))]
    assert [r[0] for r in base] == pytest.approx([10e-6, 20e-6, 30e-6])
    assert len(head) == 3
    gap_base, gap_head = rounds[floor_key(_sid("w", "gap"))]
    assert len(gap_base) == 1 and len(gap_head) == 3  # the round after the gap is unusable


def test_paired_rounds_refuse_unpaired_documents() -> None:
    with pytest.raises(ValueError, match="2 base rounds but 1 head rounds"):
        paired_rounds([_doc(), _doc()], [_doc()])


def test_failing_is_one_rule_for_compare_and_confirm() -> None:
    """``--fail-on`` reads the gate each row's state records (the two commands once had
    their own copies): by default a confirmed slower time; with the time gate ``slower``
    any decided slower time beyond the rule that confirm did not disprove."""
    from neuronasv.analyse.rules import Rule, failing
    from neuronasv.analyse.states import Gate, with_states
    from neuronasv.model import Finding, FindingsDocument
    from tests.builders import finding

    def f(label: str, head: float, **kw: object) -> Finding:
        return finding(_sid(label), "regression", base=1.0, head=head, **kw)

    doc = FindingsDocument(
        mode="compare",
        base=None,
        head=None,
        findings=(
            f("small", 1.02),
            f("big", 1.5),
            f("confirmed", 1.5, confirmed=True, source="rounds"),
            f("disproved", 1.5, time="undecided", source="rounds"),
            f("acked", 1.5, acknowledged="expected"),
            finding(_sid("improved"), "improvement", base=1.0, head=0.5),
        ),
    )
    rule = Rule.parse("median:5%")
    labels = {s: _sid(s).label for s in ("big", "confirmed")}
    assert failing(with_states(doc), rule) == [labels["confirmed"]]
    doc = with_states(doc, Gate(time="slower"))
    assert failing(doc, rule) == [labels["big"], labels["confirmed"]]
    assert failing(doc, rule, confirmed_only=True) == [labels["confirmed"]]
