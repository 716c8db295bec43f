"""The calibration file is read as data: regular, bounded, typed, versioned, named escaped.

Seen (issue 28): a calibration file that is a FIFO hung ``neuronasv run``; one linked to
``/dev/zero`` ended in MemoryError; its name reached the terminal unescaped.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from neuronasv.errors import CalibrationRefused, CorruptResultsError, SchemaVersionError
from neuronasv.measure.backends.cpu import CpuBackend
from neuronasv.measure.calibration import MAX_BYTES, calibrate, read_calibration, shown
from tests.measure.test_peaks import fake_measure

HOSTILE = "calib\x1b[2J\x1b[31mFAKE\nerror: all good\u202e.peaks"


def good_text() -> str:
    return calibrate(CpuBackend(), measure=fake_measure(), clock=lambda: "2026-12-01")[1]


def within(seconds: float, fn: Any, *args: Any) -> Any:
    """``fn(*args)`` in a thread that must finish within ``seconds`` (a hang fails, not hangs)."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = fn(*args)
        except BaseException as exc:  # handed to the test
            out["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"{fn.__name__} hung"
    if "error" in out:
        raise out["error"]
    return out.get("value")


def test_a_fifo_is_refused_at_once_never_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "calibration.peaks"
    os.mkfifo(fifo)
    with pytest.raises(CorruptResultsError, match="a FIFO, not a calibration") as err:
        within(10, read_calibration, str(fifo))
    assert err.value.hint and "doctor --calibrate" in err.value.hint


def test_a_link_to_dev_zero_is_refused_without_reading_it(tmp_path: Path) -> None:
    link = tmp_path / "calibration.peaks"
    link.symlink_to("/dev/zero")
    with pytest.raises(CorruptResultsError, match="a character device, not a calibration"):
        within(10, read_calibration, str(link))
    (tmp_path / "dir.peaks").mkdir()
    with pytest.raises(CorruptResultsError, match="a folder"):
        read_calibration(str(tmp_path / "dir.peaks"))


def test_a_link_to_a_regular_calibration_is_read(tmp_path: Path) -> None:
    (tmp_path / "real").write_text(good_text())
    (tmp_path / "calibration.peaks").symlink_to(tmp_path / "real")
    assert read_calibration(str(tmp_path / "calibration.peaks")) is not None
    (tmp_path / "dangling.peaks").symlink_to(tmp_path / "nowhere")
    assert read_calibration(str(tmp_path / "dangling.peaks")) is None  # no file: no roof


def test_an_oversized_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    big = tmp_path / "calibration.peaks"
    doc = json.loads(good_text())
    doc["padding"] = "x" * MAX_BYTES  # valid JSON, one field too many bytes
    big.write_text(json.dumps(doc))
    with pytest.raises(CorruptResultsError, match="larger than any calibration"):
        read_calibration(str(big))


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("{", "not valid JSON"),
        ("", "not valid JSON"),
        ("[]", "expected a JSON object"),
        ("\xff\xfe", None),
        ('{"kind": "neuronasv.peaks", "schema_version": 2}', "missing"),
        ('{"kind": "other", "schema_version": 2}', "expected a 'neuronasv.peaks' document"),
    ],
)
def test_garbage_is_a_clear_error(tmp_path: Path, text: str, match: str | None) -> None:
    path = tmp_path / "calibration.peaks"
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(CorruptResultsError, match=match) as err:
        read_calibration(str(path))
    assert str(path) in err.value.message and err.value.hint


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("memory_bytes_per_s", "NaN", "NaN is not allowed"),
        ("memory_bytes_per_s", "Infinity", "Infinity is not allowed"),
        ("memory_bytes_per_s", "1e999", "out of range"),
        ("memory_bytes_per_s", "-1", "must be finite"),
        ("memory_bytes_per_s", '"20"', "must be"),
        ("memory_bytes_per_s", "5e8", "outside what a CPU does"),  # 0.5 GB/s
        ("threads", "0", "threads must be 1..4096"),
        ("threads", "true", "got a boolean"),
        ("flops_per_s", '{"float32": NaN}', "NaN is not allowed"),
        ("flops_per_s", '{"float32": 70000000.0}', "float32 70.0 MFLOP/s is outside"),
        ("flops_per_s", '{"float32": "fast"}', "is not a number"),
        ("flops_per_s", "{}", "1..16 dtypes"),
        ("calibrated", '"\\u001b[31m"', "short printable label"),
    ],
)
def test_values_are_typed_finite_and_a_cpus(
    tmp_path: Path, field: str, value: str, match: str
) -> None:
    doc = json.loads(good_text())
    doc[field] = "@@"
    text = json.dumps(doc).replace('"@@"', value)
    path = tmp_path / "calibration.peaks"
    path.write_text(text)
    with pytest.raises(CorruptResultsError, match=match):
        read_calibration(str(path))


def test_versions(tmp_path: Path) -> None:
    path = tmp_path / "calibration.peaks"
    doc = json.loads(good_text())
    path.write_text(json.dumps({**doc, "schema_version": 3}))
    with pytest.raises(SchemaVersionError, match="schema version 3 is not supported"):
        read_calibration(str(path))
    # The first format: measured with torch's threads, stored whatever came out. No roof.
    old = {
        "kind": "neuronasv.peaks",
        "version": 1,
        "backend": "cpu",
        "calibrated": "2026-05-01T00:00:00+00:00",
        "name": "cpu (2 threads)",
        "memory_bytes_per_s": 2e10,
        "flops_per_s": {"float32": 7e7},
        "source": "calibrated",
    }
    path.write_text(json.dumps(old))
    assert read_calibration(str(path)) is None
    path.write_text(json.dumps({**old, "version": 7}))
    with pytest.raises(CorruptResultsError, match="schema_version missing"):
        read_calibration(str(path))


def test_a_hostile_file_name_is_shown_escaped(tmp_path: Path) -> None:
    assert shown("a\x1bb\nc\u202ed") == "a\\x1bb\\nc\\u202ed"
    path = tmp_path / HOSTILE
    path.write_text("{")
    with pytest.raises(CorruptResultsError) as err:
        read_calibration(str(path))
    message = err.value.message
    assert "\x1b" not in message and "\n" not in message and "\u202e" not in message
    assert "calib\\x1b[2J\\x1b[31mFAKE\\nerror: all good\\u202e.peaks" in message
    fifo = tmp_path / ("fifo" + HOSTILE)
    os.mkfifo(fifo)
    with pytest.raises(CorruptResultsError) as err:
        within(10, read_calibration, str(fifo))
    assert "\x1b" not in err.value.message and "\n" not in err.value.message


def test_a_run_with_a_hostile_calibration_says_so_escaped_and_never_hangs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, log_lines: list[str]
) -> None:
    from neuronasv.run.records import prepare_peaks

    monkeypatch.delenv("NEURONASV_PEAK", raising=False)
    fifo = tmp_path / HOSTILE
    os.mkfifo(fifo)
    with pytest.raises(CorruptResultsError, match="a FIFO"):
        within(10, prepare_peaks, str(fifo), "cpu")
    path = tmp_path / ("ok" + HOSTILE)
    lines = log_lines
    prepare_peaks(str(path), "cpu", measure=fake_measure())
    assert len(lines) == 1 and "\x1b" not in lines[0] and "\n" not in lines[0]
    assert lines[0].startswith(f"peak {shown(str(path))}: none yet for this machine; calibrated")


def refusing(*_: object, **__: object) -> Any:
    raise CalibrationRefused(
        "calibration refused, nothing stored: under load: the 128 MiB copy had 12 % of 1 CPU"
        " over 5 calls (needs ≥ 50 %; it measured 2.90 GB/s)"
    )


def test_a_run_that_cannot_calibrate_honestly_stores_nothing_and_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, log_lines: list[str]
) -> None:
    from neuronasv.run.records import prepare_peaks

    monkeypatch.delenv("NEURONASV_PEAK", raising=False)
    path = tmp_path / "box" / "calibration.peaks"
    lines = log_lines
    prepare_peaks(str(path), "cpu", measure=refusing)
    assert not path.exists()
    (line,) = lines
    assert line.startswith(f"peak {path}: none yet for this machine; calibration refused,")
    assert "12 % of 1 CPU" in line and "this run shows no fraction of peak" in line
    # An outdated file (schema 1) is re-measured; refused, it is left as it was (unused).
    path.parent.mkdir()
    path.write_text(json.dumps({"kind": "neuronasv.peaks", "version": 1}))
    prepare_peaks(str(path), "cpu", measure=refusing)
    assert "older format (schema 1), not trusted; calibration refused" in lines[-1]
    prepare_peaks(str(path), "cpu", measure=fake_measure())
    assert "calibrated: cpu (1 thread)" in lines[-1]
    assert json.loads(path.read_text())["schema_version"] == 2
    # A roof of other threads is re-measured with the suite's.
    path.write_text(calibrate(CpuBackend(), measure=fake_measure(threads=2))[1])
    prepare_peaks(str(path), "cpu", measure=fake_measure())
    assert "other threads (cpu (2 threads))" in lines[-1]
    assert json.loads(path.read_text())["threads"] == 1


def test_doctor_calibrate_refuses_in_one_line_and_keeps_the_stored_roof(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from neuronasv.cli import main
    from neuronasv.measure import calibration

    results = tmp_path / "results"
    path = results / "box" / "calibration.peaks"
    path.parent.mkdir(parents=True)
    path.write_text(good_text())
    before = path.read_text()
    real = calibration.calibrate
    monkeypatch.setattr(
        calibration, "calibrate", lambda backend, **kw: real(backend, **{**kw, "measure": refusing})
    )
    code = main(["doctor", "--calibrate", "--results-dir", str(results), "--machine", "box"])
    assert code == 4 and path.read_text() == before
    err = capsys.readouterr().err.splitlines()
    assert err[0] == (
        "error: calibration refused, nothing stored: under load: the 128 MiB copy had 12 % of"
        " 1 CPU over 5 calls (needs ≥ 50 %; it measured 2.90 GB/s)"
    )
    monkeypatch.setattr(
        calibration,
        "calibrate",
        lambda backend, **kw: real(backend, **{**kw, "measure": fake_measure()}),
    )
    assert main(["doctor", "--calibrate", "--results-dir", str(results),
                 "--machine", "box"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "calibrated cpu (1 thread) (calibrated): 20.0 GB/s" in out
    assert read_calibration(str(path)) is not None
