"""The per-machine op catalogue, the pre-pass selection and setup_cache's reuse of it.

The end-to-end proof (two real commits, an op that appears in the second, real asv) is in
``test_run_e2e.py``; these are the fast pieces.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from neuronasv.errors import CorruptResultsError
from neuronasv.model import OpProfile, RunSidecar, WorkloadProfile
from neuronasv.run import asvrun, prepass, records
from neuronasv.store.layout import sidecar_path
from neuronasv.suite import catalogue
from neuronasv.suite.catalogue import OpCatalogue
from tests.builders import profile

ROOT = Path(__file__).resolve().parents[2]


def _op(name: str, *us: float) -> OpProfile:
    return OpProfile(name, 1.0, tuple(us), tuple(us))


def _prof(workload: str, *ops: OpProfile) -> WorkloadProfile:
    return profile(workload, *ops, backend="cuda", dtype="float32")


def _profiles(folder: Path) -> list[WorkloadProfile]:
    """The profiles a pre-pass wrote into ``folder``, as a run reads them."""
    return asvrun.read_profiles(str(folder))[0]


# --- the catalogue ----------------------------------------------------------------------


def test_merge_is_a_union_that_records_first_commit() -> None:
    cat = OpCatalogue().merge("cuda", {"w": {"aten::mul", "aten::add"}}, "a" * 40)
    cat = cat.merge("cuda", {"w": {"aten::mul", "aten::fill_"}, "v": {"aten::mm"}}, "b" * 40)
    assert cat.ops("cuda", "w") == ("aten::add", "aten::fill_", "aten::mul")  # add kept
    assert cat.first_seen["cuda"]["w"] == {
        "aten::add": "a" * 40,
        "aten::mul": "a" * 40,
        "aten::fill_": "b" * 40,
    }
    assert cat.ops("cuda", "v") == ("aten::mm",) and cat.ops("cpu", "w") == ()
    before = OpCatalogue().merge("cuda", {"w": {"aten::mul"}}, "a" * 40)
    assert cat.added(before, "cuda") == {"w": ["aten::add", "aten::fill_"], "v": ["aten::mm"]}
    assert before.merge("cuda", {"w": {"aten::mul"}}, "c" * 40) == before  # nothing new


def test_file_round_trip_and_suite_reads_it(tmp_path: Path) -> None:
    from neuronasv.suite.build import load_ops

    path = catalogue.catalogue_path(str(tmp_path), "box")
    assert catalogue.load_catalogue(path) == OpCatalogue()  # missing = empty
    cat = OpCatalogue().merge("cuda", {"rmsnorm.naive": {"aten::mul"}}, "a" * 40)
    catalogue.save_catalogue(path, cat)
    assert not path.endswith(".json")  # asv loads every *.json under the results folder
    assert catalogue.load_catalogue(path) == cat
    assert load_ops(path) == {"cuda": {"rmsnorm.naive": ["aten::mul"]}}  # the suite's loader


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("{trunc", "unreadable op catalogue"),
        ('{"version": 99, "backends": {}}', "version 99 is not supported"),
        ('{"version": 1, "backends": []}', "malformed"),
        ("[]", "must be a JSON object"),
    ],
)
def test_bad_catalogue_is_a_clear_error(tmp_path: Path, text: str, match: str) -> None:
    path = tmp_path / "c"
    path.write_text(text)
    with pytest.raises(CorruptResultsError, match=match) as err:
        catalogue.load_catalogue(str(path))
    assert err.value.hint and "rebuild" in err.value.hint


def test_ops_from_profiles_keeps_ops_with_device_time() -> None:
    profs = [
        _prof("w", _op("aten::mm", 5.0, 6.0), _op("aten::empty", 0.0, 0.0)),
        _prof("w", _op("aten::add", 0.0, 1.0)),
        _prof("v", _op("aten::view", 0.0)),
    ]
    assert catalogue.ops_from_profiles(profs) == {"w": {"aten::mm", "aten::add"}, "v": set()}


def _sidecar(folder: Path, sha: str, backend: str, *profiles: WorkloadProfile) -> Path:
    result = folder / f"{sha[:8]}-existing-py.json"
    path = Path(sidecar_path(str(result)))
    sc = RunSidecar("box", sha, "existing-py", {"backend": backend}, tuple(profiles))
    path.write_text(sc.dumps())
    return path


def test_rebuilt_from_sidecars_and_refreshed_by_newer_ones(tmp_path: Path) -> None:
    mdir = tmp_path / "box"
    mdir.mkdir()
    old = _sidecar(mdir, "a" * 40, "cuda", _prof("w", _op("aten::mul", 1.0)))
    (mdir / ("b" * 8 + "-existing-py.neuronasv")).write_text("{broken")  # skipped
    cat, read = records.refresh_from_sidecars(OpCatalogue(), str(mdir), since=None)
    assert read == 1 and cat.ops("cuda", "w") == ("aten::mul",)
    assert cat.first_seen["cuda"]["w"]["aten::mul"] == "a" * 40
    stamp = os.path.getmtime(old)
    new = _sidecar(mdir, "c" * 40, "cuda", _prof("w", _op("aten::fill_", 2.0)))
    os.utime(new, (stamp + 5, stamp + 5))
    cat2, read2 = records.refresh_from_sidecars(cat, str(mdir), since=stamp)
    assert read2 == 1 and cat2.ops("cuda", "w") == ("aten::fill_", "aten::mul")
    assert records.refresh_from_sidecars(cat, str(tmp_path / "nope"), since=None)[1] == 0


def test_runner_prepares_catalogue_from_sidecars_then_grows_it(
    tmp_path: Path, log_lines: list[str]
) -> None:
    mdir = tmp_path / "box"
    mdir.mkdir()
    _sidecar(mdir, "a" * 40, "cpu", _prof("w", _op("aten::mul", 1.0)))
    path = catalogue.catalogue_path(str(tmp_path), "box")
    lines = log_lines
    records.prepare_catalogue(path, "cpu")
    assert "1 op series declared for cpu, 1 sidecar(s) merged" in lines[-1]
    # Profiles of the next commit (as the pre-pass or setup_cache writes them).
    out = tmp_path / "profiles"
    out.mkdir()
    prof = _prof("w", _op("aten::mul", 1.0), _op("aten::abs", 3.0))
    (out / "w.json").write_text(json.dumps({"key": prof.key, "profile": prof.to_json()}))
    grow = records.grow_catalogue
    grow(path, "cpu", _profiles(out), "d" * 40, "[1/1 dddddddd]")
    assert lines[-1] == "[1/1 dddddddd] op catalogue: 1 new op series (w: aten::abs)"
    cat = catalogue.load_catalogue(path)
    assert cat.first_seen["cpu"]["w"]["aten::abs"] == "d" * 40
    n = len(lines)
    grow(path, "cpu", _profiles(out), "e" * 40, "[x]")
    assert len(lines) == n  # nothing new, nothing said
    many = _prof("v", *(_op(f"aten::op{i}", 1.0) for i in range(12)))
    (out / "v.json").write_text(json.dumps({"key": many.key, "profile": many.to_json()}))
    grow(path, "cpu", _profiles(out), "f" * 40, "[y]")
    assert lines[-1] == "[y] op catalogue: 12 new op series (v: 12)"  # counted, not listed
    # A catalogue this version cannot read stops the run and is left as it was.
    Path(path).write_text('{"version": 7}')
    with pytest.raises(CorruptResultsError):
        records.prepare_catalogue(path, "cpu")
    assert Path(path).read_text() == '{"version": 7}'


# --- the suite with a catalogue and a pre-pass payload -----------------------------------


def test_suite_params_are_seed_plus_catalogue(
    suite: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed = tmp_path / "ops.json"
    seed.write_text(json.dumps({"backends": {"cpu": {"rmsnorm.naive": ["aten::mul"]}}}))
    cat_path = tmp_path / catalogue.CATALOGUE_NAME
    cat = OpCatalogue().merge("cpu", {"rmsnorm.naive": {"aten::abs"}, "rmsnorm.fused": {"x"}})
    catalogue.save_catalogue(str(cat_path), cat.merge("cuda", {"rmsnorm.mlp": {"aten::mm"}}))
    monkeypatch.setenv("NEURONASV_OPS_CATALOGUE", str(cat_path))
    classes = suite.build_suite(
        "rmsnorm", module="benchmarks.rmsnorm", cpu_shapes=[], ops_file=str(seed)
    )
    assert classes["Naive"].devtime_op.params[2] == ["aten::abs", "aten::mul"]
    assert classes["Fused"].devtime_op.params[2] == ["x"]
    assert not hasattr(classes["Compiled"], "devtime_op")  # nothing known: totals only
    # No seed file at all: the catalogue alone.
    classes = suite.build_suite(
        "rmsnorm", module="benchmarks.rmsnorm", cpu_shapes=[], ops_file=str(tmp_path / "no")
    )
    assert classes["Naive"].devtime_op.params[2] == ["aten::abs"]


def test_setup_cache_reuses_the_prepass_and_profiles_only_the_rest(
    suite: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    naive = suite.build_suite(
        "rmsnorm", module="benchmarks.rmsnorm", cpu_shapes=[], ops_file=str(tmp_path / "no")
    )["Naive"]()
    folder = tmp_path / "prepass"
    folder.mkdir()
    payload = {
        "workload": "rmsnorm.naive",
        "backend": "cpu",
        "shapes": ["4x512", "8x64"],
        "dtypes": ["float32"],
        "samples": 2,
        "active": 3,
        "results": {
            "4x512|float32": {"total": [1e-5, 2e-5], "ops": {"aten::mul": [1e-6, 1e-6]}},
            "8x64|float32": {"error": "RuntimeError: out of memory in the shared process"},
        },
    }
    (folder / "rmsnorm.naive.json").write_text(json.dumps(payload))
    monkeypatch.setenv("NEURONASV_PREPASS_DIR", str(folder))
    monkeypatch.setenv("NEURONASV_SAMPLES", "2")
    cache = naive.setup_cache()
    # The delivered entry is the pre-pass's, untouched; the failed one was profiled again.
    assert cache["results"]["4x512|float32"]["total"] == [1e-5, 2e-5]
    again = cache["results"]["8x64|float32"]
    assert "error" not in again and len(again["total"]) == 2 and "aten::mul" in again["ops"]
    # A payload of another suite configuration (shapes, samples) is not used.
    payload["samples"] = 10
    (folder / "rmsnorm.naive.json").write_text(json.dumps(payload))
    assert naive.setup_cache()["results"]["4x512|float32"]["total"] != [1e-5, 2e-5]
    payload["samples"] = 2
    payload["shapes"] = ["16x16"]
    (folder / "rmsnorm.naive.json").write_text(json.dumps(payload))
    monkeypatch.setenv("NEURONASV_SHAPES", "4x512")
    one = suite.build_suite(
        "rmsnorm", module="benchmarks.rmsnorm", cpu_shapes=[], ops_file=str(tmp_path / "no")
    )["Naive"]()
    assert one.setup_cache()["results"]["4x512|float32"]["total"] != [1e-5, 2e-5]


# --- the pre-pass -----------------------------------------------------------------------


def _suite_dir(tmp_path: Path) -> Path:
    bench = tmp_path / "benchmarks"
    bench.mkdir()
    (bench / "__init__.py").write_text("")
    (bench / "rmsnorm.py").write_text((ROOT / "benchmarks" / "rmsnorm.py").read_text())
    return bench


def test_prepass_selects_classes_as_asv_bench_would(
    suite: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bench = _suite_dir(tmp_path)
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))  # asv_runner's importer
    for name in [m for m in sys.modules if m == "benchmarks" or m.startswith("benchmarks.")]:
        monkeypatch.delitem(sys.modules, name)
    classes = prepass.discover_classes(str(bench))
    names = [n for n, _ in classes]
    assert {"rmsnorm.Naive", "rmsnorm.Fused", "rmsnorm.Compiled"} <= set(names)
    pick = lambda *r: sorted(c.workload for c in prepass.selected(classes, r))  # noqa: E731
    assert pick(r"rmsnorm\.(Naive|Fused)\.") == ["rmsnorm.fused", "rmsnorm.naive"]
    assert pick(r"Naive.devtime_total\('8x64'") == ["rmsnorm.naive"]  # asv matches params
    assert pick("nothing-matches") == []
    assert len(pick()) == len(classes)


@pytest.mark.slow
def test_prepass_writes_payloads_and_profiles_in_one_process(tmp_path: Path) -> None:
    bench = _suite_dir(tmp_path)
    env = dict(
        os.environ,
        PYTHONPATH=str(ROOT),
        NEURONASV_BACKEND="cpu",
        NEURONASV_SHAPES="4x512",
        NEURONASV_DTYPES="float32",
        NEURONASV_SAMPLES="2",
        NEURONASV_PROFILE_OUT=str(tmp_path / "profiles"),
    )
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "neuronasv.run.prepass", str(bench), "--out",
         str(tmp_path / "out"), "--bench", r"rmsnorm\.(Naive|Fused)\."],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    said = proc.stderr  # log lines (the run stage streams stdout and stderr together)
    assert "prepass: 2 workload(s) in one process" in said
    assert re.search(r"prepass: torch imported in [\d.]+ s", said), said
    # each workload's line says where its time went (read from the real progress records,
    # which are the clock's only: not one line per sample)
    assert re.search(
        r"prepass rmsnorm\.naive: 1 \(shape, dtype\) in [\d.]+ s"
        r" \(warm-up [\d.]+ s, samples [\d.]+ s, after [\d.]+ s\)",
        said,
    ), said
    assert ": sample " not in said and ": warming up" not in said, said
    assert time.monotonic() - started < 300
    payload = json.loads((tmp_path / "out" / "rmsnorm.naive.json").read_text())
    assert payload["shapes"] == ["4x512"] and payload["dtypes"] == ["float32"]
    assert payload["samples"] == 2 and payload["active"] == 3
    # neither the workload nor its profile imports torch._dynamo: the callgrind pass need not
    assert payload["dynamo"] == "absent"
    entry = payload["results"]["4x512|float32"]
    assert len(entry["total"]) == 2 and entry["ops"]["aten::mul"]
    profiles, failures = asvrun.read_profiles(str(tmp_path / "profiles"))
    assert not failures and {p.name for p in profiles} == {"rmsnorm.naive", "rmsnorm.fused"}


def test_module_series_are_op_params_from_the_catalogue_to_the_benchmark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from neuronasv.model import ModuleProfile
    from neuronasv.suite.build import build_suite

    prof = WorkloadProfile(
        "w", "cpu", "4x512", "float32", (10.0,), (_op("aten::mm", 10.0),),
        modules=(
            ModuleProfile("", (10.0,), (0.0,)),
            ModuleProfile("block", (10.0,), (2.0,)),
            ModuleProfile("block.mlp", (8.0,), (8.0,)),
            ModuleProfile("block.idle", (0.0,), (0.0,)),
        ),
    )  # fmt: skip
    found = catalogue.ops_from_profiles([prof])
    # named modules with time, as module:<path>; the root is the total, not a series
    assert found == {"w": {"aten::mm", "module:block", "module:block.mlp"}}

    # The real suite: declared from the catalogue, filled by the real profile of the block.
    cat = catalogue.OpCatalogue().merge(
        "cpu", {"transformer.block": ["aten::mm", "module:block.mlp", "module:nope"]}
    )
    path = tmp_path / "cat.neuronasv-ops"
    catalogue.save_catalogue(str(path), cat)
    for k, v in {
        "NEURONASV_BACKEND": "cpu", "NEURONASV_OPS_CATALOGUE": str(path),
        "NEURONASV_SAMPLES": "2", "NEURONASV_SHAPES": "1x32x64x2",
    }.items():  # fmt: skip
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("NEURONASV_PREPASS_DIR", raising=False)
    monkeypatch.delenv("NEURONASV_PROFILE_OUT", raising=False)
    classes = build_suite(
        "transformer", module=__name__, cpu_shapes=(), dtypes=("float32",),
        ops_file=str(tmp_path / "none.json"),
    )  # fmt: skip
    block = classes["Block"]()
    assert "module:block.mlp" in block.devtime_op.params[2]
    cache = block.setup_cache()
    block.setup(cache, "1x32x64x2", "float32", "module:block.mlp")
    mlp = block.devtime_op(cache, "1x32x64x2", "float32", "module:block.mlp")
    total = block.devtime_total(cache, "1x32x64x2", "float32")
    assert len(mlp) == 2 and all(0 < m < t for m, t in zip(mlp, total, strict=True))
    with pytest.raises(NotImplementedError):
        block.setup(cache, "1x32x64x2", "float32", "module:nope")


def test_phase_clock_splits_a_workload_into_warm_up_samples_and_after() -> None:
    """Two (shape, dtype) of one workload, on a scripted clock: the lines profile_workload
    prints, with the seconds between them, and the split they give."""
    now = [100.0]
    clock = prepass.PhaseClock(clock=lambda: now[0])

    def at(t: float, line: str | None = None) -> None:
        now[0] = 100.0 + t
        if line is not None:
            clock.mark(line)

    at(1.0, "w [4x512,float32]: warming up (3 iterations, compiling)")  # build: 1 s
    at(9.0, "w [4x512,float32]: sample 1/3")  # compile + warm-up + first cycle
    at(10.0, "w [4x512,float32]: sample 2/3")
    at(11.0, "w [4x512,float32]: sample 3/3")
    at(11.5, "something else the profile says")  # ignored
    at(14.0, "w [8x64,float32]: warming up (3 iterations)")  # 3 s after the last sample
    at(15.0, "w [8x64,float32]: sample 1/2")
    at(17.0, "w [8x64,float32]: sample 2/2")
    at(18.0)
    clock.close()
    assert clock.totals == pytest.approx(
        {"warm-up": 9.0 + 1.0, "samples": 2.0 + 2.0, "after": 3.0 + 1.0}
    )
    assert clock.describe() == " (warm-up 10.0 s, samples 4.0 s, after 4.0 s)"


def test_phase_clock_with_no_progress_lines_says_nothing() -> None:
    clock = prepass.PhaseClock(clock=lambda: 5.0)
    clock.mark("w: skipped")
    clock.close()
    assert clock.describe() == ""
