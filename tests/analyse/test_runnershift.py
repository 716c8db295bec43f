"""The runner's shared shift (issue 39): the rule, its inputs, and rows judged against it.

Pure and seeded: the rule on tables of log-ratios, then ``compare`` on two runs written as
``neuronasv run`` writes them (tests/shift_runs.py: asv's own results files, sidecars with
canary readings, instruction counts and the machine's state), the head measured beside
busy processes.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from neuronasv.analyse.pairwise import compare
from neuronasv.analyse.runnershift import MIN_SERIES, runner_shift, shift_inputs
from neuronasv.model import FindingsDocument, SeriesId, WorkChange
from neuronasv.store.history import load_history
from tests.shift_runs import BASE, HEAD, MACHINE, QUIET, Change, write_pair

MIN_EFFECT = 0.05


def _loaded(n: int, shift: float, scatter: float, seed: int = 0) -> list[tuple[float, bool]]:
    rng = np.random.default_rng(seed)
    return [(math.log(shift) + scatter * float(rng.standard_normal()), True) for _ in range(n)]


def _fixed(*ratios: float) -> list[tuple[float, bool]]:
    return [(math.log(r), True) for r in ratios]


@pytest.mark.parametrize(
    ("inputs", "canary", "status"),
    [
        # too few series with equal work and counts to tell anything
        (_loaded(MIN_SERIES - 1, 1.9, 0.1), 6.0, "unknown"),
        # the head ran beside busy processes: every series and the canary slower
        (_loaded(30, 1.9, 0.15), 6.0, "runner"),
        # the same series, but the canary (which runs no code under test) held: the code
        # reached every series (a global setting), rows are judged as measured
        (_loaded(30, 1.9, 0.15), 1.01, "series"),
        # a canary that moved only a little of the way (less than half, log scale)
        (_loaded(30, 1.9, 0.15), 1.2, "series"),
        # no canary reading on a side: the series decide alone
        (_loaded(30, 1.9, 0.15), None, "runner"),
        # faster together (the base ran on the loaded runner)
        (_loaded(30, 0.6, 0.1), 0.4, "runner"),
        # within the minimum effect: no shift worth judging against
        (_loaded(30, 1.03, 0.005), 1.03, "none"),
        # a quiet A/A: the series scatter about 1
        (_loaded(30, 1.0, 0.17), 1.0, "none"),
        # half up, half down: not "most series"
        (_fixed(*[1.5] * 15, *[0.7] * 15), 1.5, "none"),
        # two thirds up is not most either (the rule asks more than three quarters)
        (_fixed(*[1.5] * 20, *[0.9] * 10), 1.5, "none"),
    ],
)  # fmt: skip
def test_the_rule(inputs: list[tuple[float, bool]], canary: float | None, status: str) -> None:
    got = runner_shift(inputs, min_effect=MIN_EFFECT, canary=canary)
    assert got.status == status
    assert got.series == len(inputs) and got.counted == len(inputs)
    if status != "unknown":
        assert got.factor == pytest.approx(math.exp(float(np.median([d for d, _ in inputs]))))


def test_a_few_series_that_really_moved_do_not_move_the_factor() -> None:
    inputs = _fixed(*[1.5] * 24, *[6.0] * 6)
    got = runner_shift(inputs, min_effect=MIN_EFFECT, canary=2.0)
    assert got.status == "runner" and got.factor == pytest.approx(1.5)
    assert got.along == 30 and got.spread is not None and got.spread < 0.01


def test_the_inputs_are_the_series_whose_code_did_the_same() -> None:
    def sid(wl: str | None, op: str | None = None) -> SeriesId:
        if wl is None:
            return SeriesId("plain.time_x", ("1",))
        return SeriesId("b", (), wl, "4x4", "float32", op)

    rows = [
        (sid("a"), 1.0, 2.0),  # counted, equal: in
        (sid("a", "aten::mm"), 1.0, 2.0),  # counted, equal: in
        (sid("a", "aten::add"), 1.0, 2.0),  # counted, unequal: out
        (sid("b"), 1.0, 2.0),  # its configuration's work changed: out
        (sid("c", "aten::mm"), 1.0, 2.0),  # not counted (a GPU): in, uncounted
        (sid("c", "aten::add"), 1.0, None),  # a side missing: out
        (sid(None), 1.0, 2.0),  # plain asv: no evidence, out
    ]
    counts = {
        (("a", "4x4", "float32"), None): (10.0, 10.0),
        (("a", "4x4", "float32"), "aten::mm"): (5.0, 5.0),
        (("a", "4x4", "float32"), "aten::add"): (5.0, 6.0),
    }
    work = [WorkChange("b", "4x4", "float32", "aten::mm", "calls", 1.0, 2.0)]
    compared = {(wl, "4x4", "float32") for wl in "abc"}
    got = shift_inputs(rows, work, counts, compared)
    assert got == [(math.log(2.0), True), (math.log(2.0), True), (math.log(2.0), False)]
    # a configuration without a profile on both sides: its work is unknown, not equal
    got = shift_inputs(rows, work, counts, compared - {("c", "4x4", "float32")})
    assert got == [(math.log(2.0), True), (math.log(2.0), True)]


def _compare(tmp_path: Path, **kw: object) -> FindingsDocument:
    results = write_pair(tmp_path / "results", **kw)  # type: ignore[arg-type]
    history = load_history(str(results))
    return compare(history, BASE, HEAD, machine=MACHINE, floors={})


@pytest.mark.parametrize("seed", range(5))
def test_an_aa_comparison_under_load_names_the_runner_and_nothing_else(
    tmp_path: Path, seed: int
) -> None:
    doc = _compare(tmp_path, seed=seed)
    r = doc.runner
    assert r is not None and r.status == "runner"
    assert r.series == r.counted == 20  # 4 configurations x (total + 4 ops), all counted
    assert 1.6 < (r.factor or 0) < 2.3 and r.canary == pytest.approx(6.0, rel=0.05)
    assert r.head is not None and (r.head.load_start, r.head.load_end) == (4.9, 5.6)
    assert r.base is not None and (r.base.load_start, r.base.load_end) == (QUIET.start, QUIET.end)
    assert r.head.cpu_mhz_start == pytest.approx(2596.1) and r.head.cpus == 2
    timed = [f for f in doc.findings if f.unit == "seconds"]
    # every device-time row was judged against the shift, and none of them moved on it
    assert all(f.estimate.shift == r.factor for f in timed)
    assert [f.series.label for f in doc.findings if f.state.direction is not None] == []
    assert [f.state.gate for f in doc.findings if f.state.gate] == []
    assert doc.causes == ()
    # the rows' own figures stay as measured: Δ is the measured head / base
    assert all((f.ratio or 0) > 1.3 for f in timed if f.series.op is None)


def test_without_the_shift_the_same_runs_name_causes(tmp_path: Path) -> None:
    """The same loaded pair with the canary held (so the rows are judged as measured): the
    single-run test calls most rows slower, which is what the shift is for."""
    doc = _compare(tmp_path, canary=1.0)
    assert doc.runner is not None and doc.runner.status == "series"
    slower = [f for f in doc.findings if f.state.time == "slower"]
    assert len(slower) >= 15 and all(f.estimate.shift is None for f in doc.findings)


def test_a_real_change_under_the_same_load_is_named_by_its_counts(tmp_path: Path) -> None:
    """CPU: one op's time and instruction count +30 %, measured beside the same busy
    processes. The shift does not hide it: its configuration's counts changed (exact), so it
    is left out of the shift, and its cause names the op."""
    cfg = ("vision.vit", "8x64", "float32")
    doc = _compare(tmp_path, change=Change(cfg, "aten::mm"))
    assert doc.runner is not None and doc.runner.status == "runner"
    assert doc.runner.series == 15  # the changed configuration is not part of it
    (cause,) = doc.causes
    assert cause.kind == "work" and cause.direction == "regression"
    assert cause.ops[0] == "aten::mm" and cause.configs == (("8x64", "float32"),)
    total = next(
        f for f in doc.findings
        if f.series.config == cfg and f.series.op is None and f.unit == "seconds"
    )  # fmt: skip
    assert total.state.exact == "more" and total.state.gate


@pytest.mark.parametrize("seed", range(5))
def test_a_real_change_on_a_quiet_device_shift_still_shows(tmp_path: Path, seed: int) -> None:
    """GPU-like: no instruction counts, 0.3 % noise, a +8 % shift (a lower clock) with 0.3 %
    spread, and one op +30 % on top: judged against the shift, that op stands out (+20 %
    over it) and is the one cause; every other row is within the shift."""
    cfg = ("vision.convnext", "8x64", "float32")
    doc = _compare(
        tmp_path, shift=1.08, scatter=0.003, canary=1.08, counts=False, seed=seed, noise=0.003,
        change=Change(cfg, "aten::gelu", time=1.3, instructions=1.0),
    )  # fmt: skip
    assert doc.runner is not None and doc.runner.status == "runner"
    assert doc.runner.counted == 0
    moved = [f for f in doc.findings if f.state.direction is not None]
    assert {(f.series.config, f.series.op) for f in moved} <= {(cfg, "aten::gelu"), (cfg, None)}
    gelu = next(f for f in moved if f.series.op == "aten::gelu")
    assert gelu.state.time == "slower"
    assert gelu.estimate.against == pytest.approx((gelu.ratio or 0) / (doc.runner.factor or 1))
    assert 1.25 < (gelu.estimate.against or 0) < 1.35
    assert [c.workload for c in doc.causes] == ["vision.convnext"]
    assert "aten::gelu" in doc.causes[0].ops


def test_the_trusted_recompute_sees_the_same_shift(tmp_path: Path) -> None:
    """The privileged comment step recomputes from the artifact's numbers (sanitized): the
    canary readings' numbers and the machine's state survive, so it names the same shift
    with the same machine state, and says the same headline as the run."""
    from neuronasv.analyse.recompute import recompute
    from neuronasv.report.digest import digest

    results = write_pair(tmp_path / "results")
    run = compare(load_history(str(results)), BASE, HEAD, machine=MACHINE)
    trusted = recompute(load_history(str(results)), base=BASE, head=HEAD)
    assert trusted.runner == run.runner and run.runner is not None
    assert run.runner.status == "runner" and run.runner.head is not None
    assert run.runner.head.load_end == 5.6 and run.runner.canary == pytest.approx(6.0, rel=0.05)
    assert digest(trusted).headline == digest(run).headline


def test_confirm_keeps_the_shift_and_re_measures_the_rows_without_it(tmp_path: Path) -> None:
    """After a loaded single run, interleaved rounds of the same code (seeded, 3 % noise,
    no load: the shift cancels between neighbouring rounds) leave nothing slower; the
    document still names the runner's shift, re-measured rows carry no factor."""
    from neuronasv.analyse.confirm import confirm

    doc = _compare(tmp_path)
    assert doc.runner is not None and doc.runner.status == "runner"
    rng = np.random.default_rng(7)
    level = {f.series: f.base for f in doc.findings if f.base is not None}

    def runner(side: str, series: object, r: int) -> dict[SeriesId, list[float]]:
        return {
            s: list((level.get(s) or 1e-5) * (1.0 + 0.03 * rng.standard_normal(10)))
            for s in series  # type: ignore[attr-defined]
        }

    done = confirm(doc, runner, rounds=3, max_rounds=4)
    assert done.runner == doc.runner
    assert not [f for f in done.findings if f.state.direction is not None]
    assert all(f.estimate.shift is None for f in done.findings if f.remeasured)
