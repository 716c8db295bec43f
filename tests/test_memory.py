"""The memory metric (issue 40 item 2): its registry entry, its collector, its exact
judging, words and gate rule, and the measurement that makes it exact on the CPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from types import SimpleNamespace

import pytest

from neuronasv import metrics
from neuronasv.analyse.exact import judge_exact
from neuronasv.analyse.states import GATE_RULES, Gate, newest_state, with_states
from neuronasv.metrics import MEMORY
from neuronasv.model import FindingsDocument, Point, RunRef, SeriesId
from neuronasv.report.rowwords import count_line, state_words
from neuronasv.units import value_problem

UNIT = MEMORY.unit


def sid(op: str | None) -> SeriesId:
    bench = "rmsnorm.Naive.alloc_op" if op else "rmsnorm.Naive.alloc_total"
    params = ("'4x512'", "'float32'") + ((repr(op),) if op else ())
    return SeriesId(bench, params, "rmsnorm.naive", "4x512", "float32", op)


def pt(*samples: float) -> Point:
    return Point("c" * 40, 0, sorted(samples)[len(samples) // 2], tuple(samples))


def test_the_registry_entry_is_found_by_its_prefix_name_and_unit() -> None:
    assert metrics.by_name("memory") is MEMORY
    assert metrics.by_prefix("alloc_op") is MEMORY
    assert metrics.by_unit(UNIT) is MEMORY
    assert metrics.by_unit("bytes") is None  # asv's own mem_/peakmem_ unit is not ours
    assert metrics.parse_names("devtime,memory") == ("devtime", "memory")
    assert sid("aten::mul").metric == "memory"
    assert MEMORY.exact and not MEMORY.beside_time
    assert (MEMORY.name, "more") in GATE_RULES


def test_a_sample_may_be_negative_but_not_beyond_the_bound() -> None:
    assert value_problem(UNIT, -16400.0) == ""
    assert value_problem(UNIT, 2.0**51)
    assert value_problem(metrics.INSTRUCTIONS.unit, -1.0)  # instructions stay >= 0


def test_the_asv_type_stores_samples_in_the_metric_unit() -> None:
    from asv_bench_neuronasv.benchmarks.alloc import AllocBenchmark

    assert AllocBenchmark.samples_unit == UNIT
    assert AllocBenchmark.name_regex.match("alloc_op")
    assert not AllocBenchmark.name_regex.match("mem_op")


def test_the_collector_reads_self_memory_and_leaves_bookkeeping_out() -> None:
    from neuronasv.measure.memory import read_self_bytes

    def ev(key: str, cpu: int, dev: int = 0) -> SimpleNamespace:
        return SimpleNamespace(key=key, self_cpu_memory_usage=cpu, self_device_memory_usage=dev,
                               device_type=SimpleNamespace(name="CPU"), is_user_annotation=False,
                               is_legacy=False)  # fmt: skip

    rows = [ev("aten::mul", 8192), ev("aten::mul", 8192), ev("aten::div_", -4),
            ev("[memory]", -16384), ev("ProfilerStep#1", 99)]  # fmt: skip
    got = read_self_bytes(rows, on_cpu=True)
    assert got == {"aten::mul": 16384.0, "aten::div_": -4.0}
    # an accelerator whose profile reports no device memory: no series
    assert read_self_bytes(rows, on_cpu=False) is None
    assert read_self_bytes([ev("aten::mul", 0, 512)], on_cpu=False) == {"aten::mul": 512.0}


def test_repeating_samples_are_judged_exactly_in_their_own_words() -> None:
    (up,) = judge_exact([(sid("aten::mul"), pt(24576, 24576), pt(32768, 32768), UNIT)])
    assert up.state.exact == "more" and up.estimate.unit == UNIT
    assert state_words(up) == "allocates more (+8,192 bytes per iteration, +33 %), exact"
    (down,) = judge_exact([(sid("aten::mul"), pt(32768, 32768), pt(24576, 24576), UNIT)])
    assert state_words(down).startswith("allocates less (-8,192 bytes per iteration")
    (same,) = judge_exact([(sid("aten::div_"), pt(-4, -4), pt(-4, -4), UNIT)])
    assert same.state.exact == "same"
    assert state_words(same) == "allocates the same, exact"
    assert count_line([up, down]) == "1 allocates more, 1 allocates less"


def test_samples_that_differ_are_not_judged_exactly_and_say_so() -> None:
    (f,) = judge_exact([(sid("aten::mul"), pt(100, 100), pt(100, 228), UNIT)])
    assert f.state.exact == "unsteady"
    assert "did not repeat exactly across samples at head" in f.reason
    assert "not judged exactly" in state_words(f)
    assert f.state.direction is None


def _doc(*findings):  # type: ignore[no-untyped-def]
    ref = RunRef(commit="a" * 40, machine="m")
    return FindingsDocument(mode="compare", base=ref, head=replace(ref, commit="b" * 40),
                            findings=tuple(findings))  # fmt: skip


def test_its_total_fires_its_own_gate_rule_an_op_row_does_not() -> None:
    total, op = judge_exact([
        (sid(None), pt(24624, 24624), pt(32816, 32816), UNIT),
        (sid("aten::mul"), pt(24576, 24576), pt(32768, 32768), UNIT),
    ])  # fmt: skip
    doc = with_states(_doc(total, op))
    t, o = doc.findings
    assert t.state.gate == "allocates more" and o.state.gate == ""
    assert newest_state(t) == MEMORY.state_more
    assert with_states(_doc(total), Gate(work="never")).findings[0].state.gate == ""


def test_a_memory_row_never_becomes_a_time_rows_instruction_axis() -> None:
    from tests.builders import finding

    (mem,) = judge_exact([(sid("aten::mul"), pt(1, 1), pt(2, 2), UNIT)])
    timed = finding(series=replace(sid("aten::mul"), benchmark="rmsnorm.Naive.devtime_op"))
    doc = with_states(_doc(mem, timed))
    assert doc.findings[1].state.exact == "none"
    assert "allocates" not in state_words(doc.findings[1])


_PROBE = """
import json, sys
from neuronasv.measure import backends, workloads
from neuronasv.measure.memory import self_bytes
b = backends.get_backend("cpu")
out = {}
for name in ("rmsnorm.naive", "rmsnorm.fused"):
    for dtype in ("float32", "bfloat16"):
        for shape in ("4x512", "4x64x256"):
            out[f"{name}|{shape}|{dtype}"] = self_bytes(
                workloads.get(name), b, shape=shape, dtype=dtype, samples=5)
json.dump(out, sys.stdout)
"""


@pytest.mark.slow
def test_self_bytes_repeat_exactly_across_iterations_and_processes_on_the_cpu() -> None:
    """How the memory metric was established exact on the CPU (docs/metrics.md): every op's
    self allocated bytes of the rmsnorm workloads, 5 samples in each of 2 processes, all
    equal; the measurement itself, kept as a test."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    runs = [
        json.loads(subprocess.run([sys.executable, "-c", _PROBE], check=True, env=env,
                                  capture_output=True, text=True).stdout)
        for _ in range(2)
    ]  # fmt: skip
    assert runs[0] == runs[1]
    for key, mem in runs[0].items():
        assert mem is not None, key
        for op, samples in [("total", mem["total"]), *mem["ops"].items()]:
            assert len(set(samples)) == 1, (key, op, samples)
    naive = runs[0]["rmsnorm.naive|4x512|float32"]
    assert naive["ops"]["aten::mul"][0] == 3 * 4 * 512 * 4  # three [4, 512] fp32 outputs


@pytest.mark.slow
def test_demo_with_the_temporary_patch_names_the_op_that_allocates_more(
    tmp_path,
    monkeypatch,  # type: ignore[no-untyped-def]
) -> None:
    """The done-when proof: ``neuronasv demo --patch examples/alloc-rmsnorm-temp.patch
    --metrics devtime,memory`` (one more ``aten::mul`` temporary in the naive RMSNorm): the
    comment names ``aten::mul`` with "allocates more" (exact), its time row keeps its own
    words, and no other op's memory moves."""
    import io

    from neuronasv.demo import DemoOptions, run_demo

    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    options = DemoOptions(
        patch=os.path.join(repo, "examples", "alloc-rmsnorm-temp.patch"),
        bench=r"rmsnorm\.Naive\.", rounds=0, backend="cpu", metrics=("devtime", "memory"),
    )  # fmt: skip
    monkeypatch.setenv("NEURONASV_SHAPES", "4x512")
    run_demo(repo, str(tmp_path / "out"), options=options, stream=io.StringIO())
    with open(tmp_path / "out" / "comment.md", encoding="utf-8") as fh:
        rows = [r for r in fh.read().splitlines() if r.startswith("| `rmsnorm.naive")]
    moved = [r for r in rows if "allocates more" in r]
    mem_ops = {r.split("|")[2].strip() for r in moved}
    assert mem_ops == {"`aten::mul`", "_total_"}, moved
    assert all("exact" in r and "bytes allocated" in r for r in moved)
    assert not any("allocates less" in r for r in rows)
    timed = [r for r in rows if "`aten::mul`" in r and " µs" in r]
    assert timed and not any("allocates" in r for r in timed)


def test_bisect_searches_memory_on_its_own_axis() -> None:
    from neuronasv.model.culprit import AXES
    from neuronasv.run.bisect import AXIS_CHOICES, _metrics_for

    assert "memory" in AXIS_CHOICES and "memory" in AXES
    assert _metrics_for("memory", ()) == ("devtime", "memory")
    assert _metrics_for("auto", ("memory",)) == ("devtime", "memory")
