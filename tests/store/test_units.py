"""Fast tests of the Store pieces: plugin type, suite mechanics, series map, worktrees."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from asv_runner.benchmarks._base import get_setup_cache_key
from asv_runner.benchmarks.mark import SkipNotImplemented

from asv_bench_neuronasv.benchmarks.devtime import DevtimeBenchmark, split_rounds
from neuronasv.errors import CorruptResultsError, StoreError
from neuronasv.run import asvrun
from neuronasv.store import machine
from neuronasv.store.git import Git

ROOT = Path(__file__).resolve().parents[2]


# --- the plugin -------------------------------------------------------------------------


class _Suite:
    repeat = 0
    rounds = 1

    def setup_cache(self) -> dict[str, Any]:
        return {"s": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]}

    def devtime_x(self, cache: dict[str, Any]) -> Any:
        return cache["s"]


def _bench(cls: type, cache: Any = None, extra: dict[str, Any] | None = None) -> DevtimeBenchmark:
    inst = cls()
    func = inst.devtime_x
    b = DevtimeBenchmark("m.C.devtime_x", func, [func, inst, sys.modules[__name__]])
    if extra:
        attrs = type("Extra", (), extra)
        b._attr_sources.insert(0, attrs)
    b.set_cache(cache)
    return b


def test_plugin_returns_samples_like_time() -> None:
    b = _bench(_Suite, {"s": [0.1, 0.2, 0.3]})
    assert not b.do_setup()
    assert b.type == "time" and b.unit == "seconds"
    assert b.do_run() == {"samples": [0.1, 0.2, 0.3], "number": 1}


def test_plugin_honours_quick_repeat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    b = _bench(_Suite, {"s": [0.1, 0.2, 0.3]}, extra={"repeat": 1, "rounds": 1, "number": 1})
    b.do_setup()  # asv injects --quick here
    assert b.do_run()["samples"] == [0.1]
    b = _bench(_Suite, {"s": [0.1, 0.2, 0.3]}, extra={"repeat": (1, 2, 10.0)})
    b.do_setup()
    assert b.do_run()["samples"] == [0.1, 0.2]


def test_plugin_splits_rounds_without_repeating_samples(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # asv's setup_cache dir: lives across rounds
    seen = []
    for _ in range(3):  # asv runs each round in a new process
        b = _bench(_Suite, {"s": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]}, extra={"rounds": 3})
        b.do_setup()
        seen.append(b.do_run()["samples"])
    assert seen == [[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]]


def test_split_rounds_edges() -> None:
    assert split_rounds([1.0, 2.0, 3.0, 4.0, 5.0], 2, 1) == [3.0, 4.0, 5.0]
    assert split_rounds([1.0], 3, 2) == [1.0]
    assert split_rounds([1.0, 2.0], 1, 7) == [1.0, 2.0]


@pytest.mark.parametrize("bad", [[], [math.nan], [-1.0], "abc"])
def test_plugin_rejects_bad_samples(bad: Any) -> None:
    b = _bench(_Suite, {"s": bad})
    b.do_setup()
    with pytest.raises((ValueError, TypeError)):
        b.do_run()


def test_plugin_none_is_skip() -> None:
    b = _bench(_Suite, {"s": None})
    b.do_setup()
    with pytest.raises(SkipNotImplemented):
        b.do_run()


def test_plugin_is_discovered_by_asv_runner() -> None:
    from importlib.metadata import distribution

    assert distribution("asv_bench_neuronasv").metadata["Name"] == "asv_bench_neuronasv"
    out = subprocess.run(
        [sys.executable, "-c", "import asv_runner.benchmarks as b; print(b.benchmark_types)"],
        capture_output=True, text=True, check=True, cwd="/",
    ).stdout  # fmt: skip
    assert "DevtimeBenchmark" in out


# --- the suite ------------------------------------------------------------------------


SUITE_OPS = str(ROOT / "benchmarks" / "ops.json")


def test_suite_classes_params_and_distinct_setup_cache(suite: Any) -> None:
    classes = suite.build_suite(
        "rmsnorm", module="benchmarks.rmsnorm", cpu_shapes=["1x1"], ops_file=SUITE_OPS
    )
    assert {"Naive", "Fused", "Compiled"} <= set(classes)
    naive = classes["Naive"]
    assert naive.devtime_total.params == [["4x512", "8x64"], ["float32"]]
    ops = naive.devtime_op.params[2]
    assert "aten::mul" in ops and naive.devtime_op.param_names == ["shape", "dtype", "op"]
    keys = {get_setup_cache_key(c().setup_cache) for c in classes.values()}
    assert len(keys) == len(classes)  # one profile per workload, never shared


def test_suite_import_needs_no_torch() -> None:
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT)!r}); import benchmarks.rmsnorm as r;"
        "print('torch' in sys.modules, sorted(n for n in vars(r) if n[0].isupper()))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/"
    ).stdout
    has_torch, names = out.strip().split(" ", 1)
    assert has_torch == "False" and {"Compiled", "Fused", "Naive"} <= set(eval(names))


def test_suite_skip_and_error_semantics(suite: Any) -> None:
    naive = suite.build_suite(
        "rmsnorm", module="benchmarks.rmsnorm", cpu_shapes=[], ops_file=SUITE_OPS
    )["Naive"]()
    cache = {
        "results": {
            "4x512|float32": {"total": [1e-5], "ops": {"aten::mul": [2e-6]}},
            "8x64|float32": {"error": "CaptureError: empty"},
        }
    }
    naive.setup(cache, "4x512", "float32", "aten::mul")
    assert naive.devtime_op(cache, "4x512", "float32", "aten::mul") == [2e-6]
    with pytest.raises(NotImplementedError):  # absent op -> asv skip -> n/a, not zero
        naive.setup(cache, "4x512", "float32", "aten::rsqrt")
    with pytest.raises(RuntimeError, match="CaptureError"):
        naive.setup(cache, "8x64", "float32")
        naive.devtime_total(cache, "8x64", "float32")
    with pytest.raises(NotImplementedError):
        naive.setup({"results": {"x|y": {"skip": "no compiler"}}}, "x", "y")


def test_suite_ops_file_is_valid_and_current(suite: Any) -> None:
    ops = suite.load_ops(SUITE_OPS)
    from neuronasv.measure import workloads
    from neuronasv.measure.backends import get_backend

    cpu = get_backend("cpu")
    tagged = {
        w.name
        for w in workloads.all_workloads()
        if "rmsnorm" in w.tags and w.skip_reason(cpu) is None
    }
    missing = tagged - set(ops.get("cpu", {}))
    assert not missing, f"run `python -m benchmarks._ops --update` for {sorted(missing)}"


def test_suite_broken_ops_file_falls_back(suite: Any, tmp_path: Path) -> None:
    bad = tmp_path / "ops.json"
    bad.write_text("{trunc")
    assert suite.load_ops(str(bad)) == {}


# --- series map, profiles, noise --------------------------------------------------------


def test_build_series_maps_every_param_combination() -> None:
    results = {
        "version": 2,
        "commit_hash": "a" * 40,
        "result_columns": ["result", "params", "version"],
        "results": {
            "rmsnorm.Naive.devtime_op": [
                [1e-6, math.nan, None],
                [["'4x512'"], ["'float32'"], ["'aten::mul'", "'aten::add'", "'aten::pow'"]],
                "v",
            ],
            "rmsnorm.Naive.devtime_total": [[2e-6], [["'4x512'"], ["'float32'"]], "v"],
            "other.time_x": [[1.0], [], "v"],
        },
    }
    tag = {"neuronasv_workload": "rmsnorm.naive"}
    benchmarks = {
        "rmsnorm.Naive.devtime_op": {**tag, "neuronasv_series": "op"},
        "rmsnorm.Naive.devtime_total": {**tag, "neuronasv_series": "total"},
    }
    series, failed = asvrun.build_series(results, benchmarks)
    by = {(s.benchmark, s.params): s for s in series}
    assert len(series) == 5
    mul = by[("rmsnorm.Naive.devtime_op", ("'4x512'", "'float32'", "'aten::mul'"))]
    assert (mul.workload, mul.shape, mul.dtype, mul.op) == (
        "rmsnorm.naive",
        "4x512",
        "float32",
        "aten::mul",
    )
    tot = by[("rmsnorm.Naive.devtime_total", ("'4x512'", "'float32'"))]
    assert tot.op is None and tot.shape == "4x512"
    assert by[("other.time_x", ())].workload is None
    # NaN = skipped (absent op), None = failed
    assert failed == {"rmsnorm.Naive.devtime_op('4x512', 'float32', 'aten::pow')": "failed"}


def test_build_series_rejects_garbage() -> None:
    with pytest.raises(CorruptResultsError):
        asvrun.build_series({"results": {}}, {})


def test_build_series_checks_as_the_loader_does() -> None:
    """The run reads a results file through the one reader: a newer asv format and a row
    whose values do not match its combinations are named, not mapped half-way."""
    from neuronasv.errors import SchemaVersionError

    doc: dict[str, Any] = {
        "version": 2,
        "commit_hash": "a" * 40,
        "result_columns": ["result", "params"],
        "results": {"w.T.devtime_total": [[1e-6], [["'4x512'", "'8x8'"], ["'float32'"]]]},
    }
    with pytest.raises(CorruptResultsError, match=r"r\.json: benchmark 'w\.T\.devtime_total': 1 "):
        asvrun.build_series(doc, {}, "r.json")
    with pytest.raises(SchemaVersionError, match="newer asv"):
        asvrun.build_series({**doc, "version": 3}, {}, "r.json")


def test_build_series_keeps_a_hostile_param_as_written() -> None:
    """A param that is no literal (unhashable, or nested past the parser) stays as asv
    wrote it; it does not stop the sidecar."""
    odd = ["{[]: 1}", "(" * 400 + ")" * 400, "'aten::mul'"]
    doc = {
        "version": 2,
        "commit_hash": "a" * 40,
        "result_columns": ["result", "params"],
        "results": {"w.T.devtime_op": [[1e-6, 2e-6, 3e-6], [["'4x512'"], ["'float32'"], odd]]},
    }
    tags = {"w.T.devtime_op": {"neuronasv_workload": "w", "neuronasv_series": "op"}}
    series, failed = asvrun.build_series(doc, tags)
    assert [s.op for s in series] == ["{[]: 1}", odd[1], "aten::mul"]
    assert failed == {}


def test_read_profiles_keeps_errors_and_survives_corrupt(tmp_path: Path) -> None:
    from neuronasv.model import WorkloadProfile

    prof = WorkloadProfile("rmsnorm.naive", "cpu", "4x512", "float32", (1.0, 2.0), ())
    (tmp_path / "a.json").write_text(json.dumps({"key": prof.key, "profile": prof.to_json()}))
    (tmp_path / "b.json").write_text(json.dumps({"key": "w[1,f]", "error": "boom"}))
    (tmp_path / "c.json").write_text("{")
    profiles, failures = asvrun.read_profiles(str(tmp_path))
    assert profiles == [prof]
    assert failures["w[1,f]"] == "boom" and "c.json" in failures


def test_noise_filter() -> None:
    assert asvrun.is_noise("USDT: profiler_start 123")
    assert asvrun.is_noise("STAGE:2024-01-01 ActivityProfilerController.cpp:314] Completed")
    assert not asvrun.is_noise("[ 50.00%] ··· rmsnorm.Naive.devtime_total  ok")


def test_asv_command_flags(tmp_path: Path) -> None:
    opts = asvrun.RunOptions(repo=str(tmp_path), quick=True, bench="Naive", python="/py")
    cmd = asvrun.asv_command(opts, "/c.json", "a" * 40, "box")
    assert cmd[:4] == ["/py", "-m", "asv", "run"]
    for flag in ("--record-samples", "--quick", "--set-commit-hash", "--machine"):
        assert flag in cmd
    assert cmd[cmd.index("--bench") + 1] == "Naive" and "existing:/py" in cmd


def test_one_results_file_name_for_python_and_python3(tmp_path: Path) -> None:
    # A venv answers to python, python3 and python3.11: asv names the results file after
    # the interpreter's path, so one name is used for the same interpreter.
    real = tmp_path / "python3.11"
    real.write_text("#!/bin/sh\n")
    for name in ("python", "python3"):
        (tmp_path / name).symlink_to(real)
    plain = str(tmp_path / "python")
    assert asvrun.canonical_python(str(tmp_path / "python3")) == plain
    assert asvrun.canonical_python(str(real)) == plain
    assert asvrun.canonical_python(plain) == plain
    # A different interpreter behind `python` (a system's Python 2) keeps its own name.
    other = tmp_path / "other"
    other.mkdir()
    (other / "python3").write_text("a")
    (other / "python").write_text("b")
    assert asvrun.canonical_python(str(other / "python3")) == str(other / "python3")
    assert asvrun.canonical_python("/nowhere/python3") == "/nowhere/python3"
    assert asvrun.canonical_python("/usr/bin/pypy3") == "/usr/bin/pypy3"


# --- machine, worktree ------------------------------------------------------------------


def test_machine_info_is_complete(tmp_path: Path) -> None:
    info = machine.machine_info("ci-box", {"backend": "neuron", "device_model": "trn1"})
    assert info["machine"] == "ci-box" and info["cpu"].endswith("trn1")
    for key in machine.MACHINE_FIELDS:
        assert info[key] and info[key] != "unknown", key
    path = machine.save_machine(info, str(tmp_path / "m.json"))
    assert json.loads(Path(path).read_text())["ci-box"]["num_cpu"] == info["num_cpu"]


def _git(repo: Path, *args: str) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@e.invalid",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@e.invalid")  # fmt: skip
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True,
                          capture_output=True, text=True).stdout.strip()  # fmt: skip


def test_worktree_checks_out_commit_and_cleans_up(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "f").write_text("one")
    _git(repo, "add", "f")
    _git(repo, "commit", "-q", "-m", "1")
    first = _git(repo, "rev-parse", "HEAD")
    (repo / "f").write_text("two")
    _git(repo, "commit", "-q", "-am", "2")
    git = Git(repo)
    assert git.rev_parse("HEAD~1") == first
    with git.detached_worktree(first, parent=str(tmp_path)) as tree:
        assert Path(tree, "f").read_text() == "one"
    assert not Path(tree).exists()
    assert _git(repo, "worktree", "list").count("\n") == 0  # only the main tree
    assert (repo / "f").read_text() == "two"  # the checkout is untouched
    with pytest.raises(StoreError, match="not a commit"):
        git.rev_parse("no-such-branch")
    with pytest.raises(StoreError):
        git.rev_parse("--output=x")
