"""The real profiler on the CPU, end to end (one shared session profile, see conftest)."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from neuronasv.errors import BackendUnavailable, UsageError
from neuronasv.measure import ProfileOptions, get_backend, op_input_shapes, profile_workload
from neuronasv.measure.fingerprint import FINGERPRINT_KEYS, collect_fingerprint
from neuronasv.measure.profiling import quiet_kineto_stderr
from neuronasv.measure.workloads import Workload, get
from neuronasv.model import ProfileDocument, WorkloadProfile

pytestmark = pytest.mark.slow

Profiles = dict[str, WorkloadProfile]
HASH = re.compile(r"[a-z0-9]{32,}")


def test_every_variant_has_ten_positive_samples(cpu_profiles: Profiles) -> None:
    assert cpu_profiles
    for name, prof in cpu_profiles.items():
        assert prof.name == name and prof.backend == "cpu"
        assert prof.shape == "4x512" and prof.dtype == "bfloat16"
        assert prof.device_time_is_cpu is True
        assert len(prof.device_time_us) == 10
        assert all(t > 0 for t in prof.device_time_us)
        for op in prof.ops:
            assert len(op.self_device_time_us) == len(op.self_cpu_time_us) == 10
            assert op.self_device_time_us == op.self_cpu_time_us  # the CPU is the device
        # The workload total is exactly its op rows (self times: nothing counted twice).
        for i, total in enumerate(prof.device_time_us):
            assert total == pytest.approx(sum(o.self_device_time_us[i] for o in prof.ops))
        assert [sum(o.self_device_time_us) for o in prof.ops] == sorted(
            (sum(o.self_device_time_us) for o in prof.ops), reverse=True
        )


def test_naive_shows_the_seed_ops(cpu_profiles: Profiles) -> None:
    prof = cpu_profiles["rmsnorm.naive"]
    mul = prof.op("aten::mul")
    assert mul is not None and mul.calls_per_iter == 3
    for name in ("aten::mean", "aten::add", "aten::rsqrt"):
        op = prof.op(name)
        assert op is not None and op.calls_per_iter == 1, name
    assert not any(o.op.startswith("ProfilerStep") for o in prof.ops)


def test_fused_shows_the_rms_norm_op(cpu_profiles: Profiles) -> None:
    ops = [o.op for o in cpu_profiles["rmsnorm.fused"].ops]
    assert "aten::rms_norm" in ops
    assert (
        "aten::mul" not in ops or cpu_profiles["rmsnorm.fused"].op("aten::mul").calls_per_iter < 3
    )  # type: ignore[union-attr]


def test_compiled_shows_a_compiled_region_without_hash(cpu_profiles: Profiles) -> None:
    ops = [o.op for o in cpu_profiles["rmsnorm.compiled"].ops]
    assert "## Call CompiledFxGraph" in ops
    assert "Torch-Compiled Region: 0/0" in ops  # no recompile inside the measured window
    assert not any(HASH.search(o) for o in ops)
    assert "aten::mul" not in ops  # the graph runs as one compiled kernel


def test_trace_files_one_per_workload(cpu_profiles: Profiles, cpu_trace_dir: str) -> None:
    assert cpu_profiles
    for name, prof in cpu_profiles.items():
        # gzipped (Perfetto opens .json.gz as is), deterministic gzip header, no .json left
        assert prof.trace_files == (f"{name}-4x512-bfloat16.json.gz",)
        raw = (Path(cpu_trace_dir) / prof.trace_files[0]).read_bytes()
        assert raw[:2] == b"\x1f\x8b" and raw[4:8] == b"\0\0\0\0"  # gzip, mtime 0
        assert not (Path(cpu_trace_dir) / f"{name}-4x512-bfloat16.json").exists()
        data = json.loads(gzip.decompress(raw))
        assert any(
            e.get("name") == "aten::rms_norm"
            or "Compiled" in str(e.get("name"))
            or e.get("name") == "aten::mul"
            for e in data["traceEvents"]
        )


def test_progress_reports_warmup_and_every_sample(cpu_progress: list[str]) -> None:
    assert "rmsnorm.compiled [4x512,bfloat16]: warming up (3 iterations, compiling)" in cpu_progress
    assert "rmsnorm.naive [4x512,bfloat16]: sample 10/10" in cpu_progress


def test_document_round_trips(cpu_profiles: Profiles) -> None:
    backend = get_backend("cpu")
    doc = ProfileDocument(
        backend="cpu",
        workloads=tuple(cpu_profiles.values()),
        fingerprint=collect_fingerprint(backend),
    )
    again = ProfileDocument.loads(doc.dumps())
    assert again == doc
    assert set(again.fingerprint) == set(FINGERPRINT_KEYS)
    assert again.fingerprint["backend"] == "cpu" and again.fingerprint["torch_neuronx"] == "none"


def test_bad_arguments_and_skips() -> None:
    backend = get_backend("cpu")
    with pytest.raises(UsageError, match="samples"):
        profile_workload(
            get("rmsnorm.naive"),
            backend,
            shape="4x8",
            dtype="float32",
            options=ProfileOptions(samples=0),
        )
    with pytest.raises(UsageError, match="shape"):
        profile_workload(get("rmsnorm.naive"), backend, shape="4by8", dtype="float32")
    never = Workload(
        name="test.never",
        description="",
        default_shape="4",
        build_fn=lambda *a: lambda: None,
        skip_fn=lambda b: "needs a unicorn",
    )
    with pytest.raises(BackendUnavailable, match="needs a unicorn"):
        profile_workload(never, backend, shape="4", dtype="float32")


def test_empty_capture_is_an_error() -> None:
    from neuronasv.errors import CaptureError

    idle = Workload(
        name="test.idle", description="", default_shape="4", build_fn=lambda *a: lambda: None
    )
    with pytest.raises(CaptureError, match=r"test\.idle \[4,float32\] on cpu: sample 1 of 2"):
        profile_workload(
            idle,
            get_backend("cpu"),
            shape="4",
            dtype="float32",
            options=ProfileOptions(samples=2),
        )


def test_op_input_shapes_for_a_roofline() -> None:
    shapes = op_input_shapes(
        get("rmsnorm.naive"), get_backend("cpu"), shape="4x512", dtype="float32"
    )
    assert [[4, 512], [4, 512]] in shapes["aten::mul"]
    assert [[4, 512], [512]] in shapes["aten::mul"]
    assert shapes["aten::mean"][0][0] == [4, 512]


def test_kineto_noise_is_hidden_but_real_errors_pass(capfd: pytest.CaptureFixture[str]) -> None:
    with quiet_kineto_stderr():
        os.write(
            2, b"USDT:2026-01-01 00:00:00 1:1 SyncActivityProfilerHandler.cpp:52] profiler_start\n"
        )
        os.write(2, b"real trouble: device lost\n")
    err = capfd.readouterr().err
    assert "USDT" not in err
    assert "real trouble: device lost" in err


def test_profile_run_prints_no_kineto_noise(capfd: pytest.CaptureFixture[str]) -> None:
    prof = profile_workload(
        get("rmsnorm.naive"),
        get_backend("cpu"),
        shape="4x64",
        dtype="float32",
        options=ProfileOptions(samples=3),
    )
    assert len(prof.device_time_us) == 3
    captured = capfd.readouterr()
    assert "USDT" not in captured.err and "profiler_start" not in captured.err
    assert "Profiler clears events" not in captured.err


def test_cli_profile_json_whole_output(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "neuronasv",
            "profile",
            "--backend",
            "cpu",
            "--json",
            str(out),
            "--samples",
            "10",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert proc.returncode == 0, proc.stderr
    stdout = proc.stdout
    assert stdout.startswith("backend: cpu — device time = self CPU time (the CPU is the device)\n")
    for name in ("rmsnorm.naive", "rmsnorm.fused", "rmsnorm.compiled"):
        assert f"{name} [4x512, bfloat16] on cpu:" in stdout
    assert re.search(r"│ aten::mul\s+│\s+3 │", stdout)
    assert "## Call CompiledFxGraph " in stdout
    assert re.search(
        r"\nrmsnorm\.fused is \d+\.\d\dx (faster|slower) than rmsnorm\.naive;"
        r" rmsnorm\.compiled \d+\.\d\dx (faster|slower) \(CPU self time\)\n",
        stdout,
    )
    assert "USDT" not in proc.stderr and "Traceback" not in proc.stderr
    assert "rmsnorm.naive [4x512,bfloat16]: sample 10/10" in proc.stderr
    assert f"wrote {out}" in proc.stderr
    raw = json.loads(out.read_text())
    assert raw["kind"] == "neuronasv.profile" and isinstance(raw["schema_version"], int)
    doc = ProfileDocument.from_json(raw)
    assert [w.name for w in doc.workloads] == ["rmsnorm.naive", "rmsnorm.fused", "rmsnorm.compiled"]
    for w in raw["workloads"]:
        assert {"name", "backend", "shape", "dtype", "device_time_us", "ops"} <= set(w)
        assert len(w["device_time_us"]) >= 10 and all(t > 0 for t in w["device_time_us"])
        for op in w["ops"]:
            assert {"op", "calls_per_iter", "self_device_time_us", "self_cpu_time_us"} <= set(op)
            assert "device_time_source" not in op  # key_averages(): the CPU JSON is unchanged
        assert "device_time_source" not in w
    assert doc.fingerprint["backend"] == "cpu"


def test_cli_usage_errors_and_list() -> None:
    from neuronasv.cli import main

    assert main(["profile", "--list"]) == 0
    assert main(["profile", "--backend", "tpu"]) == 2
    assert main(["profile", "--backend", "neuron", "--samples", "1"]) == 3
    assert main(["profile", "--workload", "nope"]) == 2
    assert main(["profile", "--samples", "0"]) == 2


def test_doctor(capsys: pytest.CaptureFixture[str]) -> None:
    from neuronasv.cli import main

    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert "[ok]   cpu" in out and "device time = self CPU time" in out
    assert "profiler smoke test: ok" in out
    assert "[--]   neuron  unavailable: torch_neuronx" in out
    assert "needs TorchNeuron" in out
    assert "auto selects: cpu" in out
    for key in FINGERPRINT_KEYS:
        assert re.search(rf"^  {key}\s+\S", out, re.M), key
