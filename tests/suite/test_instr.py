"""The store side of the instructions metric: metrics option, payloads, suite, asv type."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from asv_runner.benchmarks.mark import SkipNotImplemented

from asv_bench_neuronasv.benchmarks.instructions import InstrBenchmark
from neuronasv.model import WorkloadProfile
from neuronasv.run import instrrun
from neuronasv.suite import catalogue
from neuronasv.suite.catalogue import OpCatalogue

ENTRY = {
    "total": 68722.0,
    "ops": {"aten::mul": 25655.0, "aten::add": 15079.0},
    "modules": {"module:norm": 40734.0},
    "calls": {"aten::mul": 3.0, "aten::add": 1.0},
    "deterministic": True,
    "unstable": [],
}


def _payloads(folder: Path) -> Path:
    folder.mkdir()
    (folder / "_meta.json").write_text(json.dumps({"valgrind": "3.19.0", "torch": "2.13.0+cpu"}))
    doc = {
        "workload": "rmsnorm.naive",
        "results": {
            "4x512|float32": ENTRY,
            "8x64|float32": {"error": "RuntimeError: boom"},
            "8x64|bfloat16": {"skip": "not here"},
        },
    }
    (folder / "rmsnorm.naive.json").write_text(json.dumps(doc))
    return folder


def test_parse_metrics() -> None:
    assert instrrun.parse_metrics("devtime, instructions,devtime") == ("devtime", "instructions")
    with pytest.raises(ValueError, match="unknown metric cycles"):
        instrrun.parse_metrics("devtime,cycles")


def test_valgrind_command_counts_nothing_until_asked() -> None:
    cmd = instrrun.valgrind_command(
        "/py", "suite", out_dir="/o", helper="/h.so", dumps="/d/cg.out", regexes=["rmsnorm"]
    )
    assert cmd[:4] == ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--collect-atstart=no"]
    assert cmd[-2:] == ["--bench", "rmsnorm"] and "neuronasv.run.instrpass" in cmd


def test_counts_attach_to_their_profiles_with_versions_and_failures(tmp_path: Path) -> None:
    folder = _payloads(tmp_path / "instr")
    prof = WorkloadProfile("rmsnorm.naive", "cpu", "4x512", "float32", (1.0,), ())
    other = WorkloadProfile("rmsnorm.fused", "cpu", "4x512", "float32", (1.0,), ())
    (p, q), failures = instrrun.attach_counts([prof, other], str(folder))
    assert q.counted is None
    c = p.counted
    assert c is not None and c.total == 68722.0 and c.ops["aten::mul"] == 25655.0
    assert (c.valgrind, c.torch, c.deterministic) == ("3.19.0", "2.13.0+cpu", True)
    assert c.get("module:norm") == 40734.0 and c.get(None) == 68722.0
    assert failures == {"instructions rmsnorm.naive[8x64,float32]": "RuntimeError: boom"}
    assert WorkloadProfile.from_json(p.to_json(), "x") == p
    assert instrrun.catalogue_ops(str(folder)) == {
        "rmsnorm.naive": ["aten::add", "aten::mul", "module:norm"]
    }


def test_suite_declares_instr_series_only_with_the_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NEURONASV_BACKEND", "cpu")
    monkeypatch.setenv("NEURONASV_SHAPES", "4x512")
    monkeypatch.setenv("NEURONASV_DTYPES", "float32")
    from neuronasv.suite import build as suite

    no = str(tmp_path / "no")
    plain = suite.build_suite("rmsnorm", module="benchmarks.rmsnorm", cpu_shapes=[], ops_file=no)
    assert not hasattr(plain["Naive"], "instr_total")  # plain asv run: no instr_ series
    folder = _payloads(tmp_path / "instr")
    cat_path = tmp_path / catalogue.CATALOGUE_NAME
    cat = OpCatalogue().merge("cpu:instructions", instrrun.catalogue_ops(str(folder)))
    cat = cat.merge("cpu", {"rmsnorm.naive": ["aten::mul"]})
    catalogue.save_catalogue(str(cat_path), cat)
    monkeypatch.setenv("NEURONASV_OPS_CATALOGUE", str(cat_path))
    monkeypatch.setenv("NEURONASV_INSTR_DIR", str(folder))
    naive_cls = suite.build_suite(
        "rmsnorm", module="benchmarks.rmsnorm", cpu_shapes=[], ops_file=no
    )["Naive"]
    assert naive_cls.instr_op.params[2] == ["aten::add", "aten::mul", "module:norm"]
    assert naive_cls.instr_total.version == "instr-1"
    naive = naive_cls()
    cache: dict[str, Any] = {"results": {"4x512|float32": {"total": [1e-5], "ops": {}}},
                             "instr": {"4x512|float32": ENTRY}}  # fmt: skip
    naive.setup(cache, "4x512", "float32", "aten::add")  # counted: not skipped
    assert naive.instr_op(cache, "4x512", "float32", "aten::add") == 15079.0
    assert naive.instr_total(cache, "4x512", "float32") == 68722.0
    assert naive.devtime_op(cache, "4x512", "float32", "aten::add") is None  # skipped
    assert naive.instr_total({"results": {}, "instr": {}}, "4x512", "float32") is None


def _instr(value: Any) -> InstrBenchmark:
    def instr_x() -> Any:
        return value

    return InstrBenchmark("m.C.instr_x", instr_x, [instr_x, sys.modules[__name__]])


def test_asv_type_is_one_exact_number() -> None:
    b = _instr(12102.0)
    assert (b.type, b.unit) == ("track", "instructions")
    assert b.run() == 12102.0
    with pytest.raises(SkipNotImplemented):
        _instr(None).run()
    with pytest.raises(ValueError, match="invalid instruction count"):
        _instr(-1.0).run()


def test_the_plugin_registers_every_type_it_exports() -> None:
    # From the neuronasv wheel asv does not scan the plugin (its distribution is not named
    # asv_bench*): build_suite registers it, and instr_ must be among the types, once.
    from asv_runner.benchmarks import benchmark_types

    from asv_bench_neuronasv import ensure_registered
    from asv_bench_neuronasv.benchmarks.devtime import DevtimeBenchmark

    theirs = [t for t in benchmark_types if t not in (DevtimeBenchmark, InstrBenchmark)]
    saved = list(benchmark_types)
    try:
        benchmark_types[:] = theirs
        ensure_registered()
        ensure_registered()
        assert benchmark_types.count(DevtimeBenchmark) == 1
        assert benchmark_types.count(InstrBenchmark) == 1
    finally:
        benchmark_types[:] = saved
