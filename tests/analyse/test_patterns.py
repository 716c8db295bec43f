"""Series patterns: parsed once, matched on the structured id, never on the label (issue 40,
item 4). Rules, acknowledgements and bisect's ``--series`` share them."""

from __future__ import annotations

import fnmatch
import json
from pathlib import Path

import pytest

from neuronasv.analyse.acks import Acknowledgement, dumps_acks, loads_acks, match_ack
from neuronasv.analyse.patterns import SeriesPattern, ambiguous_error, no_match_error
from neuronasv.analyse.rules import Rule, RuleSet
from neuronasv.errors import CorruptResultsError, SchemaVersionError, UsageError
from neuronasv.model import SeriesId


def _sid(op: str | None, *, metric: str = "devtime", workload: str = "rmsnorm.naive",
         shape: str = "4x512", dtype: str = "bfloat16", cls: str = "RmsnormNaive") -> SeriesId:
    kind = "total" if op is None else "op"
    params = (f"'{shape}'", f"'{dtype}'", *((f"'{op}'",) if op is not None else ()))
    return SeriesId(f"devtime.{cls}.{metric}_{kind}", params, workload, shape, dtype, op)


MUL = _sid("aten::mul")
MUL_I = _sid("aten::mul", metric="instr")
TOTAL = _sid(None)
ADD_FP32 = _sid("aten::add", dtype="float32")
FUSED = _sid("aten::_fused_rms_norm", workload="rmsnorm.fused", cls="RmsnormFused")
PLAIN = SeriesId("bench.TimeSort.time_sort", ("1000", "'int'"))
ALL = (MUL, MUL_I, TOTAL, ADD_FP32, FUSED, PLAIN)


def _old_names(s: SeriesId) -> list[str]:
    """What the code matched before issue 40 (rules.series_names): the label of the day,
    the benchmark, ``benchmark(params)`` — written out here as it was."""
    if s.workload is not None:
        text = " ".join(p for p in (s.workload, s.shape or "", s.dtype or "") if p)
        text = f"{text} · {s.op}" if s.op else text
        label = f"{text} (instructions)" if ".instr_" in s.benchmark else text
    else:
        label = f"{s.benchmark}({', '.join(s.params)})" if s.params else s.benchmark
    names = [label, s.benchmark]
    if s.params:
        names.append(f"{s.benchmark}({', '.join(s.params)})")
    return names


def test_the_metric_is_read_in_one_place() -> None:
    assert (MUL.metric, MUL_I.metric, TOTAL.metric, PLAIN.metric) == (
        "devtime", "instructions", "devtime", None
    )  # fmt: skip
    assert MUL_I.label.endswith(" (instructions)") and not MUL.label.endswith(")")


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("workload=rmsnorm.naive op=aten::mul", {MUL, MUL_I}),
        ("workload=rmsnorm.naive op=aten::mul metric=devtime", {MUL}),
        ("op=aten::mul shape=4x512 workload=rmsnorm.naive", {MUL, MUL_I}),  # any order
        ("workload=rmsnorm.naive op=", {TOTAL}),  # op= is the total
        ("workload=rmsnorm.* op=?* dtype=bfloat16", {MUL, MUL_I, FUSED}),
        ("workload=rmsnorm.naive op=*", {MUL, MUL_I, TOTAL, ADD_FP32}),
        ('op="aten::mul" dtype=\'bfloat16\'', {MUL, MUL_I}),  # shell quoting
        ("metric=instructions", {MUL_I}),
        ("benchmark=bench.* params=\"1000, 'int'\"", {PLAIN}),
        ("workload=rmsnorm.naive shape=4x5", set()),  # a glob matches a whole value
    ],
)
def test_the_field_form_matches_the_fields(text: str, want: set[SeriesId]) -> None:
    pattern = SeriesPattern.parse(text)
    assert pattern.structured
    assert set(pattern.select(ALL)) == want


@pytest.mark.parametrize(
    "text",
    [
        "rmsnorm.naive*",
        "*aten::add*",
        "*naive*4x512*bfloat16 · aten::mul",  # across fields, as commands/bisect.py's doc
        "rmsnorm.naive 4x512 bfloat16 · aten::mul (instructions)",
        "rmsnorm.naive 4x512 bfloat16 · aten::mul",
        "rmsnorm.naive 4x512 bfloat16",
        "devtime.RmsnormNaive.*",
        "bench.TimeSort.time_sort(1000, 'int')",
        "*(instructions)",
        "nothing*",
    ],
)
def test_the_earlier_form_matches_as_it_did(text: str) -> None:
    pattern = SeriesPattern.parse(text)
    assert not pattern.structured
    old = {s for s in ALL if any(fnmatch.fnmatchcase(n, text) for n in _old_names(s))}
    assert set(pattern.select(ALL)) == old


def _acks(*texts: str) -> list[Acknowledgement]:
    """Acknowledgements as a file holds them (the field form as ``series``, version 2)."""
    entries = [{("series" if "=" in t.split(" ")[0] else "pattern"): t, "commit": "*",
                "reason": t} for t in texts]  # fmt: skip
    version = 2 if any("series" in e for e in entries) else 1
    doc = {"kind": "neuronasv.acknowledgements", "schema_version": version,
           "acknowledgements": entries}  # fmt: skip
    return loads_acks(json.dumps(doc), "acks.json")


def test_patterns_keep_matching_when_the_label_changes_wording(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Rules, acknowledgements and bisect's patterns read the fields (and, for the earlier
    form, version 1's wording kept in the pattern module), not ``SeriesId.label``: with a
    new wording every existing rule, acknowledgement and ``--series`` names what it did."""
    from neuronasv.model.history import History, Series
    from neuronasv.run.bisect import match_series

    labels = ["rmsnorm.naive 4x512 bfloat16 · aten::mul (instructions)", "*aten::add*"]
    fields = ["workload=rmsnorm.naive op=aten::mul metric=devtime"]
    rules = RuleSet.parse(["median:5%", *(f"{t}=median:{i + 20}%" for i, t in enumerate(labels))])
    ruled = {s: rules.for_series(s).text for s in ALL}
    assert ruled[MUL_I] == "median:20%" and ruled[ADD_FP32] == "median:21%"
    acks = _acks(*labels)
    acked = {s: getattr(match_ack(acks, s, "c0ffee"), "reason", None) for s in ALL}
    assert acked[MUL_I] == labels[0] and acked[ADD_FP32] == labels[1]
    history = History(tuple(Series("m", "py", s, "seconds", ()) for s in ALL))
    bisected = [[x.series for x in match_series(history, "m", t)] for t in [*labels, *fields]]
    assert bisected == [[MUL_I], [ADD_FP32], [MUL]]
    # A new wording: slashes between the fields, the metric left out.
    reworded = property(lambda s: f"{s.workload}/{s.shape}/{s.dtype}/{s.op}")
    monkeypatch.setattr(SeriesId, "label", reworded)
    assert MUL_I.label == MUL.label == "rmsnorm.naive/4x512/bfloat16/aten::mul"
    assert {s: rules.for_series(s).text for s in ALL} == ruled
    assert {s: getattr(match_ack(acks, s, "c0ffee"), "reason", None) for s in ALL} == acked
    assert [[x.series for x in match_series(history, "m", t)] for t in [*labels, *fields]] == (
        bisected
    )


def test_series_whose_labels_collide_are_told_apart_by_their_fields() -> None:
    """An op named ``x (instructions)`` (device time) and the op ``x``'s instruction count
    have one label; so have an op ``a · b`` of one configuration and an op ``b`` of a
    dtype ``f32 · a``. A rule, an acknowledgement and ``--series`` in the field form name
    each alone; the earlier form cannot, and the error that refuses it names each by its
    fields."""
    from neuronasv.model.history import History, Series
    from neuronasv.run.bisect import match_series

    timed = _sid("x (instructions)")
    counted = _sid("x", metric="instr")
    dotted = _sid("a · b", dtype="f32")
    other = _sid("b", dtype="f32 · a")
    four = [timed, counted, dotted, other]
    assert timed.label == counted.label and dotted.label == other.label
    named = {
        timed: 'op="x (instructions)" metric=devtime',
        counted: "op=x metric=instructions",
        dotted: 'dtype=f32 op="a · b"',
        other: 'dtype="f32 · a" op=b',
    }
    rules = RuleSet.parse(["median:5%", *(f"{t}=median:{i + 10}%" for i, t in
                                          enumerate(named.values()))])  # fmt: skip
    assert [rules.for_series(s).text for s in four] == ["median:10%", "median:11%",
                                                         "median:12%", "median:13%"]  # fmt: skip
    acks = _acks(*named.values())
    assert [getattr(match_ack(acks, s, "c"), "reason", None) for s in four] == list(named.values())
    history = History(tuple(Series("m", "py", s, "seconds", ()) for s in four))
    assert [[x.series for x in match_series(history, "m", t)] for t in named.values()] == [
        [s] for s in four
    ]
    for s in four:
        assert SeriesPattern.naming(s).select(four) == [s]
    by_label = SeriesPattern.parse(timed.label)
    assert by_label.select(four) == [timed, counted]
    err = ambiguous_error(by_label, [timed, counted], "on 'm'")
    assert "matches 2 series on 'm'" in err.message
    assert "op=\"x (instructions)\" metric=devtime" in err.message
    assert "op=x metric=instructions" in err.message


@pytest.mark.parametrize(
    "op",
    ["aten::mul", "x (instructions)", "a · b", "## Call CompiledFxGraph ##", "[unattributed]",
     "*?[]", 'say "hi"\\', "it's", "tab\there", "module:blocks.0.attn", "", "=", "op=x"],
)  # fmt: skip
def test_the_exact_pattern_of_an_id_names_it_alone_and_reads_back(op: str) -> None:
    """What the CI bisect step hands ``neuronasv bisect``: from the id's fields to text and
    back, the same series and no other, whatever the op's name holds."""
    target = _sid(op or None)
    near = [_sid(op + "x" if op else "x"), _sid(op or None, metric="instr"),
            _sid(op or None, shape="4x5120"),
            SeriesId(target.benchmark, target.params)]  # fmt: skip
    exact = SeriesPattern.exact(target)
    again = SeriesPattern.parse(exact.text)
    assert again == exact and again.structured
    assert again.select([*near, target]) == [target]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "empty series pattern"),
        ("workload=a opp=aten::mul", "did you mean op=?"),
        ("workload=a aten::mul", "'aten::mul' is no FIELD=GLOB term"),
        ("op=a op=b", "op= given twice"),
        ("op='aten::mul", "No closing quotation"),
    ],
)
def test_a_bad_pattern_is_one_clear_line(text: str, words: str) -> None:
    with pytest.raises(UsageError, match=None) as got:
        SeriesPattern.parse(text)
    assert words in got.value.message and "\n" not in got.value.message


def test_no_match_names_the_nearest_series_by_their_fields() -> None:
    pattern = SeriesPattern.parse("workload=rmsnorm.naive op=aten::mull")
    assert pattern.select(ALL) == []
    err = no_match_error(pattern, ALL, "on 'm'")
    assert err.message.startswith(
        "no series matches 'workload=rmsnorm.naive op=aten::mull' on 'm' (6 series; nearest: "
    )
    nearest = err.message.split("nearest: ", 1)[1]
    assert nearest.startswith("'rmsnorm.naive 4x512 bfloat16 · aten::mul' (workload=rmsnorm.naive")
    assert "rmsnorm.fused" not in nearest and "bench.TimeSort" not in nearest
    assert "op=" in (err.hint or "")


def test_a_rule_pattern_may_hold_equals_signs() -> None:
    rules = RuleSet.parse(["median:5%", "workload=rmsnorm.naive op==min:0.5",
                           "op=aten::mul metric=devtime=mean:20%"])  # fmt: skip
    assert rules.for_series(TOTAL) == Rule.parse("min:0.5")
    assert rules.for_series(MUL) == Rule.parse("mean:20%")
    assert rules.for_series(MUL_I) == Rule.parse("median:5%")
    assert rules.describe()[1:] == ["workload=rmsnorm.naive op==min:0.5",
                                    "op=aten::mul metric=devtime=mean:20%"]  # fmt: skip


V1_FILE = {
    "kind": "neuronasv.acknowledgements",
    "schema_version": 1,
    "acknowledgements": [
        {"pattern": "rmsnorm.naive*", "commit": "5e6f7a8b", "reason": "eps"},
        {"pattern": "op=*", "commit": "*", "reason": "a version-1 glob, not a field"},
    ],
}


def test_a_version_1_acknowledgements_file_reads_as_it_did_and_stays_version_1() -> None:
    acks = loads_acks(json.dumps(V1_FILE), "acks.json")
    assert [a.pattern.structured for a in acks] == [False, False]
    assert acks[0].matches(MUL_I, "5e6f7a8b00") and not acks[0].matches(FUSED, "5e6f7a8b00")
    assert not any(acks[1].matches(s, "x") for s in ALL)  # as in version 1: no label is "op=…"
    assert json.loads(dumps_acks(acks)) == V1_FILE  # nothing of version 2 used: still 1


def test_a_field_form_acknowledgement_makes_the_file_version_2(tmp_path: Path) -> None:
    acks = loads_acks(json.dumps(V1_FILE), "acks.json")
    new = Acknowledgement(SeriesPattern.parse("workload=rmsnorm.naive op=aten::mul"), "*", "x")
    text = dumps_acks([*acks, new])
    doc = json.loads(text)
    assert doc["schema_version"] == 2
    assert doc["acknowledgements"][-1] == {
        "series": "workload=rmsnorm.naive op=aten::mul", "commit": "*", "reason": "x"
    }  # fmt: skip
    again = loads_acks(text, "acks.json")
    assert again == [*acks, new]
    assert again[-1].matches(MUL, "c") and not again[-1].matches(TOTAL, "c")
    # A reader of version 1 only refuses it, naming the version, rather than read a field
    # form as a label glob.
    from neuronasv.model import _codec

    with pytest.raises(SchemaVersionError, match="schema version 2 is not supported"):
        _codec.check_schema(doc, kind="neuronasv.acknowledgements", supported=(1,),
                            source="acks.json")  # fmt: skip


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ({"series": "op=a", "pattern": "x", "commit": "*", "reason": "r"}, "exactly one"),
        ({"commit": "*", "reason": "r"}, "exactly one"),
        ({"series": "opp=a", "commit": "*", "reason": "r"}, "did you mean op=?"),
    ],
)
def test_a_bad_entry_names_the_file_and_the_entry(entry: dict, words: str) -> None:
    doc = {"kind": "neuronasv.acknowledgements", "schema_version": 2, "acknowledgements": [entry]}
    with pytest.raises(CorruptResultsError) as got:
        loads_acks(json.dumps(doc), "acks.json")
    assert got.value.message.startswith("acks.json acknowledgements[0]: ")
    assert words in got.value.message
