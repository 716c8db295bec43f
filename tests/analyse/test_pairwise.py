from __future__ import annotations

import os

import numpy as np
import pytest
from analyse_asvdata import neuronasv_run

from neuronasv import samples
from neuronasv.analyse import stats
from neuronasv.analyse.acks import Acknowledgement
from neuronasv.analyse.attribution import attribute
from neuronasv.analyse.pairwise import PairInput, Settings, compare, judge
from neuronasv.analyse.patterns import SeriesPattern
from neuronasv.analyse.rules import Rule, RuleSet
from neuronasv.errors import IncomparableError, UsageError
from neuronasv.model import FindingsDocument, OpContribution, Point, SeriesId
from neuronasv.report.headline import headline
from neuronasv.store.history import load_history
from tests.analyse.conftest import DATA
from tests.builders import finding, verdict_of

BASE = "1a2b3c4d" + "0" * 32
HEAD = "5e6f7a8b" + "1" * 32


def pair(i: int, a, b) -> PairInput:
    return PairInput(
        SeriesId(f"b.devtime_{i:03d}"),
        "seconds",
        Point("a", 0, float(np.median(a)), tuple(a)),
        Point("b", 1, float(np.median(b)), tuple(b)),
    )


def test_holm_and_bh_match_hand_computed():
    p = [0.01, 0.04, 0.03, 0.005]
    assert stats.holm(p) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert stats.benjamini_hochberg(p) == pytest.approx([0.02, 0.04, 0.04, 0.02])


def test_bootstrap_ci_is_deterministic_and_covers():
    rng = np.random.default_rng(0)
    a, b = rng.normal(100, 5, 30), rng.normal(110, 5, 30)
    ci1 = stats.bootstrap_ratio_ci(a, b, seed=7)
    assert ci1 == stats.bootstrap_ratio_ci(a, b, seed=7)
    assert ci1 is not None and ci1[0] < 1.1 < ci1[1] and ci1[0] > 1.0
    assert samples.noise([1.0, 2.0, 3.0, 4.0, 5.0]) == pytest.approx(2.0 / 3.0)


def test_rules_parse_and_overrides():
    rs = RuleSet.parse(["median:5%", "*aten::add*=min:20%", "rmsnorm.*=mean:0.001"])
    assert rs.default == Rule("median", 0.05, True, "median:5%")
    add = SeriesId("b", (), "rmsnorm.naive", "4x512", "bfloat16", "aten::add")
    assert rs.for_series(add).text == "mean:0.001"  # last matching override wins
    assert rs.for_series(SeriesId("x.time_y")).text == "median:5%"
    assert Rule.parse("min:20%").exceeded(1.0, 1.2) and not Rule.parse("min:20%").exceeded(
        1.0, 1.19
    )
    for bad in ("5%", "p90:5%", "median:", "median:x%"):
        with pytest.raises(UsageError, match="bad rule"):
            Rule.parse(bad)


@pytest.mark.parametrize("seed", range(3))
def test_aa_over_many_series_raises_no_alarm(seed):
    """Holm: 300 identical-distribution series, noise 20 %, n=10: no regression flagged."""
    rng = np.random.default_rng(seed)
    pairs = [pair(i, rng.lognormal(0, 0.15, 10), rng.lognormal(0, 0.15, 10)) for i in range(300)]
    fs = judge(pairs, Settings(resamples=200))
    assert [f.series.benchmark for f in fs if verdict_of(f) in ("regression", "improvement")] == []
    # The correction matters: uncorrected, some series do cross alpha by chance.
    assert sum(1 for f in fs if f.p_value is not None and f.p_value < 0.01) >= 1 or seed > 0


def test_injected_shift_detected_among_many():
    rng = np.random.default_rng(1)
    pairs = [pair(i, rng.lognormal(0, 0.05, 20), rng.lognormal(0, 0.05, 20)) for i in range(100)]
    pairs[42] = pair(42, rng.lognormal(0, 0.05, 20), rng.lognormal(np.log(1.15), 0.05, 20))
    fs = judge(pairs, Settings(resamples=500))
    reg = [f for f in fs if verdict_of(f) == "regression"]
    assert [f.series.benchmark for f in reg] == ["b.devtime_042"]
    f = reg[0]
    assert f.ci_low is not None and f.ci_low > 1.0 and f.p_adjusted is not None
    assert f.p_adjusted >= f.p_value and "gatekeeping-adjusted" in f.reason
    assert "median +5 %" in f.reason


def test_small_significant_shift_is_unchanged_and_factor_only_fallback():
    a = [1.0 + 0.001 * i for i in range(20)]
    b = [x * 1.03 for x in a]
    (f,) = judge([pair(0, a, b)])
    assert verdict_of(f) == "unchanged" and "within the median +5 % minimum effect" in f.reason
    (g,) = judge([PairInput(SeriesId("t.track_x"), "unit", Point("a", 0, 1.0), Point("b", 1, 1.3))])
    assert verdict_of(g) == "regression" and g.p_value is None
    assert any("factor-only" in w for w in g.warnings)


def test_new_removed_failed_verdicts():
    s = SeriesId("b")
    p = Point("a", 0, 1.0, (1.0, 1.0, 1.0))
    got = judge(
        [
            PairInput(s, "seconds", None, p),
            PairInput(s, "seconds", p, None),
            PairInput(s, "seconds", p, Point("b", 1, None)),
            PairInput(s, "seconds", Point("a", 0, None), p),
        ]
    )
    assert [verdict_of(f) for f in got] == ["new", "removed", "failed", "new"]


def test_compare_fixture_attribution_from_profiles():
    h = load_history(os.path.join(DATA, "pr"))
    doc = compare(h, BASE, HEAD, settings=Settings(resamples=500))
    total = next(f for f in doc.findings if f.series.label == "rmsnorm.naive 4x512 bfloat16")
    assert verdict_of(total) == "regression"
    top = total.attribution[0]
    assert top.op == "aten::mul" and top.calls_base == 3.0 and 0.8 < top.share < 1.2
    # Shares add up to about 1 (median of sums is not the sum of medians).
    assert sum(c.share for c in total.attribution) == pytest.approx(1.0, abs=0.1)
    assert headline(total).startswith("rmsnorm.naive 4x512 bf16: +11 % (CI ")
    # the top op and the rest add up to the row's change (head - base of its estimate)
    assert "aten::mul +27.2 µs (3 calls), the rest -640 ns" in headline(total)
    fused = [f for f in doc.findings if f.series.workload == "rmsnorm.fused"]
    assert {verdict_of(f) for f in fused} == {"unchanged"}
    assert doc.env_changes == ()
    assert FindingsDocument.loads(doc.dumps()) == doc


def test_attribution_from_op_findings_and_headline_golden():
    sid = SeriesId("b", (), "rmsnorm.naive", "4x512", "bfloat16")
    total = finding(sid, "regression", base=2.0e-3, head=2.36e-3, ci=(1.12, 1.25))
    ops = [
        finding(SeriesId("b", (), "rmsnorm.naive", "4x512", "bfloat16", "aten::mul"),
                "regression", base=1.0e-3, head=1.331e-3, calls_base=3, calls_head=3),
        finding(SeriesId("b", (), "rmsnorm.naive", "4x512", "bfloat16", "aten::add"),
                "unchanged", base=0.5e-3, head=0.529e-3),
    ]  # fmt: skip
    out = attribute([total, *ops])
    assert out[0].attribution[0] == OpContribution(
        "aten::mul",
        1.0e-3,
        1.331e-3,
        pytest.approx(0.331e-3),
        pytest.approx(0.331 / 0.36),
        3,
        3,
    )
    assert headline(out[0]) == (
        "rmsnorm.naive 4x512 bf16: +18 % (CI 12–25 %); aten::mul +331 µs (3 calls),"
        " the rest +29.0 µs"
    )


def test_incomparable_refused_unless_forced_and_env_changes_listed(tmp_path):
    rd = str(tmp_path)
    wl = {("w", "8", "float32"): {"op": (1.0, [1.0, 1.1, 1.2, 1.0, 1.1])}}
    neuronasv_run(
        rd,
        "m",
        "a" * 40,
        1,
        wl,
        fingerprint={"backend": "cuda", "device_model": "A100", "torch": "2.12"},
    )
    neuronasv_run(
        rd,
        "m",
        "b" * 40,
        2,
        wl,
        fingerprint={"backend": "cuda", "device_model": "H100", "torch": "2.13"},
    )
    h = load_history(rd)
    with pytest.raises(IncomparableError, match="device_model 'A100' vs 'H100'"):
        compare(h, "a" * 40, "b" * 40)
    doc = compare(h, "a" * 40, "b" * 40, force=True)
    assert [(e.key, e.before, e.after) for e in doc.env_changes] == [
        ("device_model", "A100", "H100"),
        ("torch", "2.12", "2.13"),
    ]
    assert doc.settings["forced"] is True
    neuronasv_run(rd, "other", "b" * 40, 2, wl)
    with pytest.raises(IncomparableError, match="machine 'm' vs 'other'"):
        compare(load_history(rd), "a" * 40, "b" * 40, machine="m", head_machine="other")


def test_acknowledged_finding_marked():
    h = load_history(os.path.join(DATA, "pr"))
    why = "expected: new epsilon handling"
    acks = [Acknowledgement(SeriesPattern.parse("rmsnorm.naive*"), "5e6f", why)]
    doc = compare(h, BASE, HEAD, acks=acks, settings=Settings(resamples=200))
    regs = [f for f in doc.findings if verdict_of(f) == "regression"]
    assert regs and all(f.acknowledged == "expected: new epsilon handling" for f in regs)
    assert doc.count("regression") == 0
