"""``neuronasv profile --backend neuron --from-capture DIR``: a capture replayed offline
(no torch_neuronx here), the stand-in explorer on PATH."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from neuronasv.cli import main
from neuronasv.model import ProfileDocument
from tests.neuron.conftest import write_capture
from tests.neuron.fixtures import SUMMARY_JSON

pytestmark = pytest.mark.standin


def test_the_replay_prints_per_op_device_time_sorted_with_its_source(
    capture: Path, tmp_path: Path
) -> None:
    out = tmp_path / "profile.json"
    r = subprocess.run(
        [sys.executable, "-m", "neuronasv", "profile", "--backend", "neuron",
         "--from-capture", str(capture), "--json", str(out)],
        capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "backend: neuron — a capture replayed by neuron-explorer 2.33.0.0-standin"
    assert lines[1] == f"capture: {capture}"
    assert lines[3].startswith(
        "rmsnorm.naive [32x1024, float32] on neuron: 45.5 µs per iteration (median of 2 samples"
    )
    rows = [ln.split("│")[1].strip() for ln in lines if ln.startswith("│")]
    assert rows == ["aten::mul", "aten::mean", "[unattributed device time]", "aten::rsqrt",
                    "aten::add"]  # fmt: skip
    mul = next(ln for ln in lines if ln.startswith("│ aten::mul"))
    assert "25.5 µs" in mul  # 3 x 8.49 µs, the stand-in core's multiply
    assert lines[-1].startswith("device time from: device-profile instruction rows (")
    assert f"wrote {out}" in r.stderr
    doc = ProfileDocument.loads(out.read_text(), str(out))
    (w,) = doc.workloads
    assert w.key == "rmsnorm.naive[32x1024,float32]" and w.device_time_source is not None
    assert all(o.device_time_source == w.device_time_source for o in w.ops)
    assert doc.fingerprint["host"] == "i-0abc" and doc.fingerprint["ntff_version"] == "5"
    assert "torch_neuronx" not in sys.modules  # nothing of TorchNeuron was needed


def test_a_wrong_format_file_warns_in_one_line(
    capture: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = next((capture / "i-0abc_pid_42").iterdir())
    (session / "trace.json").write_text(json.dumps(SUMMARY_JSON))
    argv = ["profile", "--backend", "neuron", "--from-capture", str(capture), "--active", "1"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    warned = [ln for ln in err.splitlines() if ln.startswith("warning:")]
    assert warned == [
        f"warning: {session / 'trace.json'}: expected chrome trace, but it looks like"
        " summary-json; not read"
    ]


def test_only_total_time_is_a_capture_error_naming_the_sources(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_capture(tmp_path, sessions=1, summary_fields=("total_time",), trace=False)
    assert main(["profile", "--backend", "neuron", "--from-capture", str(tmp_path)]) == 4
    err = capsys.readouterr().err
    # no trace.json (no host rows) and no device time: an empty sample, and why
    assert f"error: {tmp_path}: {tmp_path.name} [unknown,unknown] on neuron: sample 1 of 1" in err
    tried = "hint: sources tried: neuron-explorer summary-json on profile_nc_0_session_0: only"
    assert tried in err
    assert "which counts semaphore waits: not device time" in err


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["--backend", "neuron", "--from-capture", "{empty}"], 2),  # no capture there
        (["--backend", "neuron", "--from-capture", "{missing}"], 2),
        (["--backend", "cpu", "--from-capture", "{capture}"], 2),  # the CPU has none
        (["--from-capture", "{capture}", "--shape", "1x2", "--shape", "3x4"], 2),
        (["--from-capture", "{capture}"], 0),  # auto: the backend that replays captures
    ],
)
def test_exit_codes(argv: list[str], code: int, capture: Path, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    paths = {"empty": tmp_path / "empty", "missing": tmp_path / "nope", "capture": capture}
    args = [a.format(**paths) for a in argv]
    assert main(["profile", *args]) == code
