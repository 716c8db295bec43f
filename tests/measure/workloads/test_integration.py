"""Workloads through the real profiler, the CLI and the asv suite (CPU, tiny shapes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from neuronasv.measure import evidence, get_backend, profile_workload
from neuronasv.measure.peaks import Peak
from neuronasv.measure.workloads import get, names
from neuronasv.model import ProfileDocument, WorkloadProfile

pytestmark = pytest.mark.slow

TINY = "1x16x64x2"  # hidden 64 -> SwiGLU width 256
PEAK = Peak("test", memory_bytes_per_s=1e10, flops_per_s={"float32": 1e11})


def test_profile_fills_roofline_and_canary() -> None:
    prof = profile_workload(get("transformer.mlp"), get_backend("cpu"), shape=TINY,
                            dtype="float32", samples=2, canary=True, peak=PEAK)
    mm = prof.op("aten::mm")
    assert mm is not None
    assert mm.flops == 3 * 2 * 16 * 64 * 256  # gate, up, down
    assert mm.bytes is not None and mm.bytes > 0
    assert mm.roofline_fraction is not None and mm.roofline_fraction > 0
    linear = prof.op("aten::linear")
    assert linear is not None and linear.flops is None and linear.roofline_fraction is None
    assert prof.canary is not None and prof.canary.name.startswith("canary.cpu.")
    assert len(prof.canary.start_us) == len(prof.canary.end_us) == 5
    assert WorkloadProfile.from_json(json.loads(json.dumps(prof.to_json())), "t") == prof


def test_a_failing_estimate_is_a_warning_not_a_lost_profile(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def boom(*_a: object, **_k: object) -> None:
        raise RuntimeError("no shapes today")

    monkeypatch.setattr(evidence, "capture_work", boom)  # the one untimed pass
    prof = profile_workload(get("transformer.residual"), get_backend("cpu"), shape=TINY,
                            dtype="float32", samples=2, peak=PEAK)
    assert "work evidence skipped: RuntimeError: no shapes today" in prof.warnings
    assert all(o.roofline_fraction is None for o in prof.ops)
    plain = profile_workload(get("transformer.residual"), get_backend("cpu"), shape=TINY,
                             dtype="float32", samples=2, roofline=False)
    assert plain.canary is None and all(o.flops is None for o in plain.ops)


def _cli(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "neuronasv", "profile", *args],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
        env={**os.environ, "COLUMNS": "200", "NEURONASV_PEAK": "bw=10,float32=0.1"},
    )


def test_cli_list_names_every_workload(capsys: pytest.CaptureFixture[str]) -> None:
    from neuronasv.cli import main

    assert main(["profile", "--list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in listed] == names()
    assert {"transformer.block.backward", "rmsnorm.nki"} <= set(names())


def test_cli_profiles_a_transformer_workload(tmp_path: Path) -> None:
    out = tmp_path / "p.json"
    proc = _cli("--workload", "transformer.residual", "--workload", "rmsnorm.nki",
                "--shape", TINY, "--samples", "2", "--canary", "--json", str(out),
                tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("backend: cpu")
    assert lines[1].startswith("of peak = ideal time at the device's peak")
    assert lines[2] == "peak: override (set by NEURONASV_PEAK): 10.0 GB/s, float32 100 GFLOP/s"
    assert "skipped rmsnorm.nki: NKI kernels run only on the neuron backend" in proc.stdout
    assert f"transformer.residual [{TINY}, float32] on cpu:" in proc.stdout  # workload's dtype
    assert "of peak" in proc.stdout and "canary canary.cpu." in proc.stdout
    doc = ProfileDocument.loads(out.read_text())
    (prof,) = doc.workloads
    add = prof.op("aten::add")
    assert add is not None and add.bytes == 3 * 16 * 64 * 4
    assert add.roofline_fraction is not None
    raw = json.loads(out.read_text())["workloads"][0]
    assert raw["canary"]["name"].startswith("canary.cpu.")
    for op in raw["ops"]:
        assert {"flops", "bytes", "roofline_fraction"} <= set(op)  # null where unknown


def test_asv_suite_has_the_transformer_family() -> None:
    env = {**os.environ, "NEURONASV_BACKEND": "cpu"}
    code = (
        "import json, benchmarks.transformer as t;"
        "c = t.BlockBackward;"
        "print(json.dumps([c.workload, c.devtime_total.params, sorted("
        "k for k in vars(t) if k[:1].isupper() and hasattr(vars(t)[k], 'devtime_total'))]))"
    )
    root = Path(__file__).resolve().parents[3]
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=root, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    workload, params, classes = json.loads(proc.stdout)
    assert workload == "transformer.block.backward"
    assert params == [["1x128x256x4"], ["float32"]]
    assert classes == sorted(["Rmsnorm", "Rope", "Attention", "Mlp", "Residual", "Block",
                              "BlockCompiled", "BlockBackward"])
