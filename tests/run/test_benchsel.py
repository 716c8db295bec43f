"""--bench is checked before anything runs or is written: it compiles and selects something."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from neuronasv.errors import UsageError
from neuronasv.run.benchsel import benchmark_names, check_bench, list_suite, nearest

ROOT = Path(__file__).resolve().parents[2]
NEURONASV = str(Path(sys.executable).parent / "neuronasv")
NAMES = [
    "rmsnorm.Naive.devtime_total",
    "rmsnorm.Naive.devtime_total('4x512', 'float32')",
    "rmsnorm.Fused.devtime_total",
    "transformer.Block.devtime_op",
]


def test_a_pattern_that_does_not_compile_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match=r"not a regular expression") as err:
        check_bench("rmsnorm(", "unused", names=NAMES)
    assert err.value.exit_code == 2


def test_a_pattern_that_selects_nothing_names_the_nearest() -> None:
    with pytest.raises(UsageError) as err:
        check_bench("rmsnorm.Naiv\\.devtime", "suite", names=NAMES)
    assert "matches none of the 3 benchmarks" in err.value.message
    assert "nearest: rmsnorm.Naive.devtime_total" in err.value.message


def test_a_pattern_may_select_by_parameters_as_asv_does() -> None:
    check_bench(r"'4x512'", "suite", names=NAMES)  # only a name(params) matches
    check_bench(None, "suite", names=[])
    check_bench("anything", "suite", names=[])  # a suite that cannot be listed: asv decides


def test_names_are_asvs_and_nearest_prefers_shared_words() -> None:
    class B:
        name = "m.C.time_x"
        params = (("'a'", "'b'"), ("1",))

    assert benchmark_names([B()]) == ["m.C.time_x", "m.C.time_x('a', 1)", "m.C.time_x('b', 1)"]
    assert nearest("transformer|zzz", NAMES) == ["transformer.Block.devtime_op"]


def test_the_repositorys_suite_is_listed_as_asv_lists_it() -> None:
    names = list_suite(str(ROOT / "benchmarks"))
    assert "rmsnorm.Naive.devtime_total" in names
    assert any(n.startswith("rmsnorm.Naive.devtime_op(") for n in names)


@pytest.mark.parametrize(
    ("bench", "words"),
    [("rmsnorm(", "is not a regular expression"), ("rmsnorm.Nieve", "nearest: rmsnorm.")],
)
def test_run_refuses_a_bad_bench_before_writing_anything(
    tmp_path: Path, bench: str, words: str
) -> None:
    results = tmp_path / "results"
    proc = subprocess.run(
        [NEURONASV, "run", "--bench", bench, "--results-dir", str(results), "--backend", "cpu"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert words in proc.stderr and "Traceback" not in proc.stderr + proc.stdout
    assert proc.stdout == "" and len(proc.stderr.strip().splitlines()) <= 2
    assert not results.exists()
