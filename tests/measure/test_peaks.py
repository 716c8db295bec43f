"""Peaks: the datasheet table, overrides, and the CPU's roof calibrated once per machine."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import pytest

from neuronasv.errors import CorruptResultsError, UsageError
from neuronasv.measure import peaks as P
from neuronasv.measure.peaks import PEAKS, Peak, neuroncore_peak, parse_peak_override


def test_peak_table_and_overrides() -> None:
    assert PEAKS["h200-sxm"].memory_bytes_per_s == 4.8e12
    assert PEAKS["h100-sxm"].flops_for("bfloat16") == pytest.approx(989.5e12)
    assert PEAKS["trn2"].flops_for("float16") == PEAKS["trn2"].flops_for("bfloat16")
    nc = neuroncore_peak("trn2")  # LNC=2: a quarter of the chip
    assert nc.memory_bytes_per_s == pytest.approx(2.9e12 / 4)
    assert neuroncore_peak("trn1").flops_for("bfloat16") == pytest.approx(95e12)
    with pytest.raises(UsageError):
        neuroncore_peak("trn1", 4)
    assert parse_peak_override("h100-pcie") is PEAKS["h100-pcie"]
    assert parse_peak_override("trn2/nc").name.startswith("trn2/nc")
    custom = parse_peak_override("bw=2000, bf16=756, float32=51")
    assert custom.memory_bytes_per_s == 2e12
    assert custom.flops_for("bfloat16") == 756e12
    for bad in ("", "h900", "bfloat16=5", "bw=-1", "bw=abc", "bw"):
        with pytest.raises(UsageError, match="NEURONASV_PEAK"):
            parse_peak_override(bad)


@pytest.mark.parametrize(
    ("model", "key"),
    [("NVIDIA H100 80GB HBM3", "h100-sxm"), ("NVIDIA H100 PCIe", "h100-pcie"),
     ("NVIDIA H100 NVL", "h100-nvl"), ("NVIDIA H200", "h200-sxm"),
     ("NVIDIA H200 NVL", "h200-nvl"), ("Tesla T4", None)],
)
def test_peak_for_cuda_reads_the_device_model(model: str, key: str | None) -> None:
    peak = P.peak_for("cuda", {"device_model": model}, env={})
    assert peak is (PEAKS[key] if key else None)


def test_peak_for_neuron_and_env_override() -> None:
    peak = P.peak_for("neuron", {"device_model": "trn2.48xlarge"}, env={})
    assert peak is not None and peak.memory_bytes_per_s == pytest.approx(2.9e12 / 4)
    one = P.peak_for("neuron", {"device_model": "trn2"}, env={"NEURON_LOGICAL_NC_CONFIG": "1"})
    assert one is not None and one.memory_bytes_per_s == pytest.approx(2.9e12 / 8)
    assert P.peak_for("neuron", {"device_model": "none"}, env={}) is None
    forced = P.peak_for("cpu", {}, env={"NEURONASV_PEAK": "bw=10"})
    assert forced is not None and forced.memory_bytes_per_s == 1e10


def test_cpu_peak_is_measured_and_cached() -> None:
    ticks = itertools.count()
    fake = P.measure_cpu_peak(("float32",), copy_mib=1, clock=lambda: next(ticks) * 0.05,
                              refresh=True)
    # Every timed call takes 50 ms on the fake clock: 2 MiB / 0.05 s, 2*128^3 / 0.05 s.
    assert fake.memory_bytes_per_s == pytest.approx(2 * 2**20 / 0.05)
    assert fake.flops_for("float32") == pytest.approx(2 * 128**3 / 0.05)
    assert fake.measured
    real = P.measure_cpu_peak(("float32",), copy_mib=8, refresh=True)
    # Positive and finite only: on this loaded 2-core machine fp32 measured 87 MFLOP/s
    # (why a run reads a calibration instead of measuring).
    assert real.memory_bytes_per_s > 0 and (real.flops_for("float32") or 0) > 0
    assert P.measure_cpu_peak(("float32",), copy_mib=8) is real
    assert math.isfinite(real.memory_bytes_per_s)


def _fake_peak() -> Peak:
    return Peak("cpu (1 thread, measured)", 2e10, {"float32": 1e11, "bfloat16": 3e10},
                source="measured: 32 MiB copy, square matmul per dtype", measured=True)


def test_the_cpu_roof_is_the_calibration_never_a_measurement_per_run(tmp_path: Path) -> None:
    # No calibration: the CPU has no roof (a run never measures one of its own).
    assert P.peak_for("cpu", {}, env={}) is None
    peak, text = P.calibrate(measure=_fake_peak, clock=lambda: "2026-12-01T00:00:00+00:00")
    path = tmp_path / "box" / "calibration.peaks"
    path.parent.mkdir()
    path.write_text(text)
    loaded = P.load_calibration(str(path))
    assert loaded == peak and loaded is not None
    assert loaded.name == "cpu (1 thread)" and loaded.measured
    assert loaded.source.startswith("calibrated 2026-12-01T00:00:00+00:00: 32 MiB copy")
    assert P.peak_for("cpu", {}, env={"NEURONASV_PEAK_FILE": str(path)}) == peak
    assert P.peak_for("cpu", {}, env={}, calibration=peak) is peak
    # The datasheet wins on a known accelerator; the override wins over everything.
    assert P.peak_for("cuda", {"device_model": "NVIDIA H200"}, env={}) is PEAKS["h200-sxm"]
    forced = P.peak_for("cpu", {}, env={"NEURONASV_PEAK": "bw=10",
                                        "NEURONASV_PEAK_FILE": str(path)})
    assert forced is not None and forced.memory_bytes_per_s == 1e10
    assert json.loads(text)["kind"] == "neuronasv.peaks"


def test_a_missing_or_bad_calibration(tmp_path: Path) -> None:
    assert P.load_calibration(str(tmp_path / "none")) is None
    for bad in ("{", "[]", json.dumps({"kind": "neuronasv.peaks", "version": 1,
                                        "memory_bytes_per_s": -1, "flops_per_s": {}})):
        (tmp_path / "bad").write_text(bad)
        with pytest.raises(CorruptResultsError, match="not a peak calibration") as err:
            P.load_calibration(str(tmp_path / "bad"))
        assert err.value.hint and "doctor --calibrate" in err.value.hint


def test_a_run_reads_the_machines_calibration_and_never_re_measures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from neuronasv.run.records import prepare_peaks

    monkeypatch.delenv("NEURONASV_PEAK", raising=False)
    path = tmp_path / "box" / "calibration.peaks"
    path.parent.mkdir()
    path.write_text(P.calibrate(measure=_fake_peak, clock=lambda: "2026-12-01")[1])
    before = path.read_text()
    lines: list[str] = []
    prepare_peaks(str(path), "cpu", lines.append)
    assert lines == [f"peak {path}: cpu (1 thread) (calibrated): 20 GB/s,"
                     " bfloat16 0.03 TFLOP/s, float32 0.1 TFLOP/s"]
    assert path.read_text() == before
    prepare_peaks(str(tmp_path / "gpu" / "calibration.peaks"), "cuda", lines.append)
    assert len(lines) == 1 and not (tmp_path / "gpu").exists()  # the datasheet's roof
    path.write_text("{")
    with pytest.raises(CorruptResultsError):  # before anything runs
        prepare_peaks(str(path), "cpu", lines.append)


@pytest.mark.slow
def test_doctor_calibrate_stores_the_peak_with_the_machines_record(tmp_path: Path) -> None:
    from neuronasv.cli import main

    results = tmp_path / "results"
    assert main(["doctor", "--calibrate", "--results-dir", str(results), "--machine", "box"]) == 0
    peak = P.load_calibration(str(results / "box" / "calibration.peaks"))
    assert peak is not None and peak.memory_bytes_per_s > 0
    assert set(peak.flops_per_s) == {"float32", "bfloat16"}
    assert all(math.isfinite(v) for v in peak.flops_per_s.values())


def test_profile_reads_this_hosts_calibration_from_the_checkouts_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from neuronasv.commands.profile import _calibration_here
    from neuronasv.store.machine import machine_info

    monkeypatch.chdir(tmp_path)
    assert _calibration_here() is None  # nothing calibrated: no roof, no fraction
    path = tmp_path / ".asv" / "results" / machine_info(None)["machine"] / "calibration.peaks"
    path.parent.mkdir(parents=True)
    peak, text = P.calibrate(measure=_fake_peak, clock=lambda: "2026-12-01")
    path.write_text(text)
    assert _calibration_here() == peak
