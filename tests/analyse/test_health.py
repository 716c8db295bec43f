"""Device health: an injected canary deviation withholds the verdicts, with the reason.

The pure decision (``neuronasv.analyse.health``) on measured noise levels, then end to end:
results on disk whose head canary is slow -> ``neuronasv compare`` (subprocess) -> the
findings document, the PR comment, the terminal table, the commit status and
``--fail-on``'s exit code all carry "verdicts withheld" and why.
"""

from __future__ import annotations

import json
import math
import os

import pytest

from neuronasv.analyse.health import (
    ALPHA,
    MIN_NOISE,
    check_side,
    device_health,
    prediction_k,
    reading_level,
)
from neuronasv.github.statuses import check_run_payload, status_payload
from neuronasv.model import CanaryReading, FindingsDocument, History, WorkloadProfile
from neuronasv.model.findings import CanaryCheck, DeviceHealth
from neuronasv.report.digest import digest
from neuronasv.report.markdown import render_comment
from tests.analyse.analyse_asvdata import neuronasv_run
from tests.builders import verdict_of
from tests.commands.test_analysis_commands import cli

NAME = "canary.cuda.mm4096-bfloat16+copy512MiB"
#: Canary levels (µs) of 12 separate processes on the shared 2-core CPU runner
#: (bench/canary_noise.py, this repository's dev VM): scaled MAD 10.9 %, SD 19.8 %.
CPU_LEVELS = [4886.5, 6986.2, 6817.0, 9200.6, 7560.4, 5896.4, 5020.6, 7306.6, 6914.8,
              6934.7, 9404.1, 6755.6]  # fmt: skip


def reading(level: float, name: str = NAME, **state: str) -> CanaryReading:
    return CanaryReading(
        name=name,
        start_us=(level * 0.999, level, level * 1.001),
        end_us=(level, level * 1.001, level * 0.999),
        device_state=state,
    )


def steady(n: int, level: float = 1000.0, spread: float = 0.002) -> list[float]:
    """``n`` levels spread like the H200's between-run noise (0.1-0.2 %), deterministic."""
    return [level * (1 + spread * math.sin(1.7 * i)) for i in range(n)]


def side(levels: list[float], current: CanaryReading, **kw: object) -> CanaryCheck:
    return check_side(
        levels, [current], side="head", commit="c0ffee" * 6 + "0000", machine="m", **kw
    )  # type: ignore[arg-type]


def test_slow_canary_on_a_steady_gpu_history_is_withheld_with_the_reason() -> None:
    c = side(
        steady(12),
        reading(
            1230.0, **{"end.throttle_reasons": "hw_thermal_slowdown", "end.sm_clock_mhz": "1275"}
        ),
    )
    assert c.status == "withheld"
    assert c.change == pytest.approx(0.23, abs=0.002)
    assert c.reason.startswith(
        "head c0ffeec0 canary 23 % slower than this machine's history"
        " (median of 12 runs: 1.23 ms vs 1.00 ms; withheld beyond +"
    )
    assert "throttle_reasons hw_thermal_slowdown, sm_clock_mhz 1275" in c.reason
    # The 0.5 % noise floor governs on such a steady machine: k(12) x 0.5 %.
    assert c.threshold == pytest.approx(math.expm1(prediction_k(12) * math.log1p(MIN_NOISE)))
    assert 0.015 < (c.threshold or 0) < 0.03


def test_threshold_follows_the_history_size_and_noise() -> None:
    assert prediction_k(5) == pytest.approx(7.86, abs=0.02)
    assert prediction_k(12) == pytest.approx(4.18, abs=0.02)
    assert prediction_k(30) == pytest.approx(3.46, abs=0.02)
    assert math.isinf(prediction_k(1))
    # Within the threshold on a steady GPU: 1.5 % slower with 12 runs is still ok.
    assert side(steady(12), reading(1015.0)).status == "ok"
    assert side(steady(12), reading(1030.0)).status == "withheld"


def test_measured_cpu_noise_does_not_withhold_a_normal_run() -> None:
    hist = CPU_LEVELS
    # Every measured run judged against the other 11 stays ok (no false withholding).
    for i, level in enumerate(hist):
        others = hist[:i] + hist[i + 1 :]
        c = side(others, reading(level, name=NAME))
        assert c.status == "ok", c.reason
    # 23 % slower than the median is normal on this runner; 2.2x is not.
    med = sorted(hist)[6]
    assert side(hist, reading(med * 1.23)).status == "ok"
    slow = side(hist, reading(med * 2.2))
    assert slow.status == "withheld" and 0.4 < (slow.threshold or 0) < 0.9


def test_too_little_history_or_no_reading_is_unknown_and_faster_is_ok() -> None:
    c = side(steady(4), reading(2000.0))
    assert c.status == "unknown" and "4 earlier run(s)" in c.reason and "5 needed" in c.reason
    none = check_side(steady(12), [], side="base", commit="a" * 40, machine="m")
    assert none.status == "unknown" and "base has no canary reading" in none.reason
    fast = side(steady(12), reading(800.0))
    assert fast.status == "ok" and "faster than this machine's history" in fast.reason


def test_robust_to_throttled_runs_in_the_history() -> None:
    hist = [*steady(12), 1400.0, 1500.0]  # two throttled runs stored earlier
    assert side(hist, reading(1003.0)).status == "ok"
    assert side(hist, reading(1250.0)).status == "withheld"


def test_level_is_the_median_over_the_runs_readings() -> None:
    r = reading(1000.0)
    assert reading_level(r) == pytest.approx(1000.0)
    # One slow workload among five does not move the run's level.
    readings = [reading(1000.0)] * 4 + [reading(5000.0)]
    c = check_side(steady(12), readings, side="head", commit="b" * 40, machine="m")
    assert c.status == "ok" and c.readings == 5


def _history(levels: dict[str, float]) -> History:
    def prof(level: float) -> WorkloadProfile:
        return WorkloadProfile(
            name="w",
            backend="cuda",
            shape="1",
            dtype="f",
            device_time_us=(1.0,),
            ops=(),
            canary=reading(level),
        )

    return History(
        series=(),
        profiles={("m", c): (prof(v), prof(v)) for c, v in levels.items()},
    )


def test_device_health_judges_each_side_against_the_others() -> None:
    levels = {f"{i:040x}": v for i, v in enumerate(steady(8))}
    base, head = "b" * 40, "c" * 40
    h = device_health(
        _history({**levels, base: 1001.0, head: 1230.0}), base=base, head=head, base_machine="m"
    )
    assert h.status == "withheld"
    assert h.reason == (
        "verdicts withheld: head canary 23 % slower than this machine's history (median of 8 runs)"
    )
    assert [c.status for c in h.checks] == ["ok", "withheld"]
    assert [c.history_n for c in h.checks] == [8, 8]  # neither base nor head in the history
    ok = device_health(
        _history({**levels, base: 1001.0, head: 999.0}), base=base, head=head, base_machine="m"
    )
    assert ok.status == "ok" and ok.reason.startswith("device healthy: base bbbbbbbb canary")
    few = device_health(
        _history({base: 1001.0, head: 1230.0}), base=base, head=head, base_machine="m"
    )
    assert few.status == "unknown" and few.reason.startswith("device health not checked:")


def test_health_round_trips_and_reads_as_absent_when_not_written() -> None:
    h = DeviceHealth(
        status="withheld",
        reason="verdicts withheld: x",
        checks=(
            CanaryCheck(
                side="head",
                commit="c" * 40,
                machine="m",
                status="withheld",
                reason="r",
                change=0.2,
                device_state={"end.pstate": "P2"},
            ),
        ),
    )
    doc = FindingsDocument(mode="compare", base=None, head=None, health=h)
    again = FindingsDocument.loads(doc.dumps())
    assert again.health == h and again.withheld == "verdicts withheld: x"
    without = json.loads(doc.dumps())
    del without["health"]
    old = FindingsDocument.from_json(without)
    assert old.health is None and old.withheld is None
    bad = json.loads(doc.dumps())
    bad["health"]["status"] = "maybe"
    with pytest.raises(Exception, match="unknown health status 'maybe'"):
        FindingsDocument.from_json(bad)
    assert ALPHA == 0.001


# --- end to end: results on disk -> neuronasv compare -------------------------------------


def _write(results: str, commit: str, i: int, mul_us: list[float], level: float) -> None:
    neuronasv_run(
        results,
        "gpu-1",
        commit,
        1_700_000_000_000 + i * 60_000,
        {
            ("rmsnorm.naive", "4x512", "bfloat16"): {
                "aten::mul": (3.0, mul_us),
                "aten::mean": (1.0, [1.9] * 10),
            }
        },
        fingerprint={"backend": "cuda", "device_model": "H200", "torch": "2.11"},
        canary=reading(level),
    )


@pytest.fixture
def slow_head(tmp_path: object) -> str:
    results = os.path.join(str(tmp_path), "results")
    for i, level in enumerate(steady(8)):
        _write(results, f"{i + 1:x}" * 40, i, [4.29 + 0.001 * k for k in range(10)], level)
    _write(results, "a" * 40, 20, [4.29 + 0.001 * k for k in range(10)], 1001.0)
    # Head: the device throttled -> canary 23 % slower, and the ops "regress" with it.
    _write(results, "b" * 40, 21, [5.28 + 0.001 * k for k in range(10)], 1230.0)
    return results


@pytest.mark.slow  # end to end through subprocesses: the full lane
def test_injected_canary_deviation_withholds_verdicts_end_to_end(
    slow_head: str, tmp_path: object
) -> None:
    cwd = str(tmp_path)
    out = os.path.join(cwd, "f.json")
    r = cli(
        "compare",
        "a" * 8,
        "b" * 8,
        "--results-dir",
        slow_head,
        "--no-floor",
        "--format",
        "json",
        "--out",
        out,
        cwd=cwd,
    )
    assert r.returncode == 0, r.stderr
    with open(out, encoding="utf-8") as fh:
        doc = FindingsDocument.loads(fh.read())
    reason = (
        "verdicts withheld: head canary 23 % slower than this machine's history (median of 8 runs)"
    )
    assert doc.health is not None and doc.health.status == "withheld"
    assert doc.withheld == reason
    assert any(verdict_of(f) == "regression" for f in doc.findings)  # kept as data
    # Renderers and the commit status read the field.
    d = digest(doc)
    assert d.has_regressions is False and d.headline.startswith(reason + " · ")
    comment = render_comment(doc)
    assert f"> :warning: **{reason}**" in comment.replace("\\", "")
    assert "head bbbbbbbb canary 23 % slower" in comment
    status = status_payload(doc)
    assert status["state"] == "error"
    assert status["description"].startswith("verdicts withheld: head canary 23 % slower")
    assert check_run_payload(doc, "b" * 40)["conclusion"] == "neutral"
    # The terminal table says it too, and --fail-on does not call it a regression (exit 10).
    r = cli("compare", "a" * 8, "b" * 8, "--results-dir", slow_head, "--no-floor", cwd=cwd)
    assert r.returncode == 0 and reason in r.stdout
    r = cli(
        "compare",
        "a" * 8,
        "b" * 8,
        "--results-dir",
        slow_head,
        "--no-floor",
        "--fail-on",
        "median:5%",
        cwd=cwd,
    )
    assert r.returncode == 10
    assert r.stderr.startswith(f"error: {reason}\nhint: the device ran slower than usual")


@pytest.mark.slow  # end to end through subprocesses: the full lane
def test_a_healthy_head_is_judged_normally(slow_head: str, tmp_path: object) -> None:
    results = slow_head
    _write(results, "c" * 40, 22, [5.28 + 0.001 * k for k in range(10)], 1002.0)
    r = cli(
        "compare",
        "a" * 8,
        "c" * 8,
        "--results-dir",
        results,
        "--no-floor",
        "--fail-on",
        "median:5%",
        "--fail-on-time",
        "slower",
        cwd=str(tmp_path),
    )
    assert r.returncode == 1 and "fire the gate: slower time" in r.stderr
