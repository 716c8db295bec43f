"""Peaks: the datasheet table, overrides, each backend's roof, the CPU's calibrated once per
machine."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from neuronasv.errors import CorruptResultsError, UsageError
from neuronasv.measure import backends as P
from neuronasv.measure.backends import PEAKS, parse_peak_override
from neuronasv.measure.backends.cpu import CpuBackend
from neuronasv.measure.backends.cuda import CudaBackend
from neuronasv.measure.backends.neuron import NeuronBackend, neuroncore_peak
from neuronasv.measure.calibration import calibrate, read_calibration
from neuronasv.model.calibration import RoofReading


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
)  # fmt: skip
def test_peak_for_cuda_reads_the_device_model(model: str, key: str | None) -> None:
    peak = P.peak_for(CudaBackend(), {"device_model": model}, env={})
    assert peak is (PEAKS[key] if key else None)


def test_peak_for_neuron_and_env_override() -> None:
    peak = P.peak_for(NeuronBackend(), {"device_model": "trn2.48xlarge"}, env={})
    assert peak is not None and peak.memory_bytes_per_s == pytest.approx(2.9e12 / 4)
    one = P.peak_for(NeuronBackend(), {"device_model": "trn2"},
                     env={"NEURON_LOGICAL_NC_CONFIG": "1"})  # fmt: skip
    assert one is not None and one.memory_bytes_per_s == pytest.approx(2.9e12 / 8)
    assert P.peak_for(NeuronBackend(), {"device_model": "none"}, env={}) is None
    forced = P.peak_for(CpuBackend(), {}, env={"NEURONASV_PEAK": "bw=10"})
    assert forced is not None and forced.memory_bytes_per_s == 1e10


@pytest.mark.parametrize(
    ("fingerprint", "chip"),
    [
        ({"device_model": "Trainium3"}, "trn3"),  # was trn1: the wrong roof (audit)
        ({"instance_type": "trn3.48xlarge"}, "trn3"),  # was None
        ({"device_model": "trn2.48xlarge"}, "trn2"),
        ({"device_model": "Trainium2"}, "trn2"),
        ({"device_model": "trn1.32xlarge"}, "trn1"),
        ({"device_model": "Trainium"}, None),  # no generation named: unknown, not trn1
        ({"device_model": "inf2.xlarge"}, None),
    ],
)
def test_neuron_chip_knows_each_trainium_or_says_unknown(
    fingerprint: dict[str, str], chip: str | None
) -> None:
    from neuronasv.measure.backends.neuron import neuron_chip

    assert neuron_chip(fingerprint) == chip


def test_trn3_has_no_roof_here_rather_than_trn1s() -> None:
    assert P.peak_for(NeuronBackend(), {"device_model": "Trainium3"}, env={}) is None


def _reading(what: str, rate: float) -> RoofReading:
    return RoofReading(what=what, size=f"{what} probe", work=rate * 0.02, calls=5,
                       fastest_s=0.02, median_s=0.021, rate=rate, cpu_share=0.99,
                       fastest_cpu_share=1.0)  # fmt: skip


def fake_measure(threads: int = 1, **rates: float) -> Any:
    """A measurement that passed the rules, without a clock: ``(threads, readings)``."""
    rates = rates or {"bandwidth": 2e10, "float32": 1e11, "bfloat16": 3e10}

    def measure(backend: object) -> tuple[int, tuple[RoofReading, ...]]:
        return threads, tuple(_reading(w, r) for w, r in rates.items())

    return measure


def test_the_cpu_roof_is_the_calibration_never_a_measurement_per_run(tmp_path: Path) -> None:
    cpu = CpuBackend()
    # No calibration: the CPU has no roof (a run never measures one of its own).
    assert P.peak_for(cpu, {}, env={}) is None
    peak, text = calibrate(cpu, measure=fake_measure(), clock=lambda: "2026-12-01T00:00:00+00:00")
    path = tmp_path / "box" / "calibration.peaks"
    path.parent.mkdir()
    path.write_text(text)
    loaded = read_calibration(str(path))
    assert loaded == peak and loaded is not None
    assert loaded.name == "cpu (1 thread)" and loaded.measured and loaded.threads == 1
    assert loaded.source.startswith("calibrated 2026-12-01T00:00:00+00:00 (bandwidth: ")
    assert P.peak_for(cpu, {}, env={"NEURONASV_PEAK_FILE": str(path)}) == peak
    assert P.peak_for(cpu, {}, env={}, calibration=peak) is peak
    # The datasheet wins on a known accelerator; the override wins over everything.
    assert P.peak_for(CudaBackend(), {"device_model": "NVIDIA H200"}, env={}) is PEAKS["h200-sxm"]
    forced = P.peak_for(cpu, {}, env={"NEURONASV_PEAK": "bw=10", "NEURONASV_PEAK_FILE": str(path)})
    assert forced is not None and forced.memory_bytes_per_s == 1e10
    doc = json.loads(text)
    assert (doc["kind"], doc["schema_version"], doc["threads"]) == ("neuronasv.peaks", 2, 1)


def test_a_roof_of_other_threads_than_the_suites_is_no_roof(tmp_path: Path) -> None:
    # Seen: the roof measured with torch's 2 threads while the suite measures with 1.
    path = tmp_path / "calibration.peaks"
    path.write_text(calibrate(CpuBackend(), measure=fake_measure(threads=2))[1])
    env = {"NEURONASV_PEAK_FILE": str(path)}
    assert P.peak_for(CpuBackend(), {}, env=env) is None  # the suite's default: 1 thread
    two = P.peak_for(CpuBackend(), {}, env={**env, "NEURONASV_CPU_THREADS": "2"})
    assert two is not None and two.threads == 2


def test_a_run_reads_the_machines_calibration_and_never_re_measures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, log_lines: list[str]
) -> None:
    from neuronasv.run.records import prepare_peaks

    monkeypatch.delenv("NEURONASV_PEAK", raising=False)
    monkeypatch.delenv("NEURONASV_CPU_THREADS", raising=False)
    path = tmp_path / "box" / "calibration.peaks"
    path.parent.mkdir()
    path.write_text(calibrate(CpuBackend(), measure=fake_measure(), clock=lambda: "2026-12-01")[1])
    before = path.read_text()
    lines = log_lines

    def never(*a: object, **k: object) -> Any:
        raise AssertionError("a run with a calibration measured again")

    prepare_peaks(str(path), "cpu", measure=never)
    assert lines == [f"peak {path}: cpu (1 thread) (calibrated): 20.0 GB/s,"
                     " bfloat16 30.0 GFLOP/s, float32 100 GFLOP/s"]  # fmt: skip
    assert path.read_text() == before
    prepare_peaks(str(tmp_path / "gpu" / "calibration.peaks"), "cuda", measure=never)
    assert len(lines) == 1 and not (tmp_path / "gpu").exists()  # the datasheet's roof
    path.write_text("{")
    with pytest.raises(CorruptResultsError):  # before anything runs
        prepare_peaks(str(path), "cpu", measure=never)


@pytest.mark.slow
def test_doctor_calibrate_stores_an_honest_roof_or_refuses_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The real measurement on this (loaded, shared) machine: either a roof that passed the
    # rules is stored, or nothing is and the refusal is one line with its figures (exit 4).
    from neuronasv.cli import main

    results = tmp_path / "results"
    code = main(["doctor", "--calibrate", "--results-dir", str(results), "--machine", "box"])
    path = results / "box" / "calibration.peaks"
    if code == 0:
        peak = read_calibration(str(path))
        assert peak is not None and peak.threads == 1
        assert set(peak.flops_per_s) == {"float32", "bfloat16"}
        assert all(math.isfinite(v) for v in peak.flops_per_s.values())
    else:
        assert code == 4 and not path.exists()
        err = capsys.readouterr().err
        assert "calibration refused, nothing stored: " in err
        assert len([x for x in err.splitlines() if x.startswith("error:")]) == 1


def test_profile_reads_this_hosts_calibration_from_the_checkouts_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from neuronasv.commands.profile import _calibration_here
    from neuronasv.store.machine import machine_info

    monkeypatch.chdir(tmp_path)
    assert _calibration_here() is None  # nothing calibrated: no roof, no fraction
    path = tmp_path / ".asv" / "results" / machine_info(None)["machine"] / "calibration.peaks"
    path.parent.mkdir(parents=True)
    peak, text = calibrate(CpuBackend(), measure=fake_measure(), clock=lambda: "2026-12-01")
    path.write_text(text)
    assert _calibration_here() == peak
