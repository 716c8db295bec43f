"""A capture folder read into per-op device time, source by source (the stand-in explorer
on stand-in NTFFs; hand-made trace.json)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from neuronasv.errors import CaptureError, UsageError
from neuronasv.measure.neuron_capture import pairings, read_new_capture
from neuronasv.measure.neuron_explorer import Explorer, Target
from neuronasv.measure.neuron_formats import EXPLORER_JSON, PARQUET, SUMMARY_JSON
from neuronasv.measure.neuron_replay import capture_label, replay_capture
from neuronasv.measure.opnames import UNATTRIBUTED_OP
from tests.neuron import ntff
from tests.neuron.conftest import needs_pyarrow, write_capture
from tests.neuron.fixtures import SUMMARY_JSON as SUMMARY_FIXTURE

pytestmark = pytest.mark.standin

#: What one NAIVE cycle costs on the stand-in core (µs; tests/neuron/ntff.py's costs):
#: three multiplies of 32768 elements (0.3 + 8.192 each), the mean (0.3 + 16.384), the add
#: and rsqrt of 32 (0.3 + 0.008, 0.3 + 0.032); DMA alone (unattributed) by input bytes.
MUL, MEAN, ADD, RSQRT = 3 * 8.492, 16.684, 0.308, 0.332


def test_pairings_by_hash_by_the_one_neff_or_by_folder() -> None:
    # model mode / inspect: <hash>_instid_<i>_vnc_<n>.ntff beside neff_<hash>.neff
    got = pairings("/c", ["111_instid_0_vnc_0.ntff", "neff_111.neff", "222_instid_0_vnc_1.ntff",
                          "neff_222.neff"])  # fmt: skip
    assert [p.target.args() for p in got] == [
        ["-n", "/c/neff_111.neff", "-s", "/c/111_instid_0_vnc_0.ntff"],
        ["-n", "/c/neff_222.neff", "-s", "/c/222_instid_0_vnc_1.ntff"],
    ]
    # a session NTFF with the folder's one NEFF
    (one,) = pairings("/c", ["profile_nc_0_session_0.ntff", "neff_5_vnc_0.neff", "trace.json"])
    assert one.target == Target(ntff="/c/profile_nc_0_session_0.ntff", neff="/c/neff_5_vnc_0.neff")
    # a session NTFF that ran several NEFFs: the folder (view -d)
    (many,) = pairings(
        "/c", ["profile_nc_0_session_0.ntff", "neff_5_vnc_0.neff", "neff_6_vnc_0.neff"]
    )
    assert many.target == Target(folder="/c") and len(many.neffs) == 2
    assert pairings("/c", ["trace.json"]) == []


@pytest.mark.parametrize("fmt", [pytest.param(PARQUET, marks=needs_pyarrow), EXPLORER_JSON])
def test_a_cycle_per_op_with_sources(explorer: Explorer, tmp_path: Path, fmt: str) -> None:
    write_capture(tmp_path, sessions=1)
    seen_ntffs: set[str] = set()
    seen_traces: set[str] = set()
    got = read_new_capture(str(tmp_path), explorer=explorer, fmt=fmt, seen_ntffs=seen_ntffs,
                           seen_traces=seen_traces)  # fmt: skip
    assert got.times == pytest.approx(
        {
            "aten::mul": MUL,
            "aten::mean": MEAN,
            "aten::add": ADD,
            "aten::rsqrt": RSQRT,
            UNATTRIBUTED_OP: got.times[UNATTRIBUTED_OP],
        }
    )
    rec = ntff.read_ntff(
        str(next((tmp_path / "i-0abc_pid_42").iterdir()) / "profile_nc_0_session_0.ntff")
    )
    # the rows add up to the summary's total_active_time, never to total_time
    assert got.total_us == pytest.approx(ntff.summary(rec)["total_active_time"] * 1e6)
    assert got.total_us < ntff.summary(rec)["total_time"] * 1e6
    assert set(got.sources.values()) == {f"device-profile instruction rows ({fmt})"}
    assert got.tried == (
        f"neuron-explorer summary-json total_active_time on profile_nc_0_session_0:"
        f" {got.total_us:.3f} µs, split by device-profile instruction rows ({fmt})",
    )
    assert got.state["neuron.throttle_active_nc0_time_ns"] == "0"
    assert got.versions["neuron.ntff_version"] == "5"
    assert got.versions["neuron.runtime_version"] == "2.29.40"
    # Nothing new: the next call reads nothing (each cycle its own session)
    again = read_new_capture(str(tmp_path), explorer=explorer, fmt=fmt, seen_ntffs=seen_ntffs,
                             seen_traces=seen_traces)  # fmt: skip
    assert again.times == {}
    assert again.tried[0].startswith("neuron-explorer: no new .ntff")


def test_summary_only_names_the_session(explorer: Explorer, tmp_path: Path) -> None:
    write_capture(tmp_path, sessions=1)
    got = read_new_capture(str(tmp_path), explorer=explorer, fmt=None, seen_ntffs=set(),
                           seen_traces=set())  # fmt: skip
    assert list(got.times) == ["neff::profile_nc_0_session_0"]
    assert got.sources == {
        "neff::profile_nc_0_session_0": "neuron-explorer summary-json total_active_time"
    }


@needs_pyarrow
def test_rows_without_framework_names_go_to_their_neffs(explorer: Explorer, tmp_path: Path) -> None:
    write_capture(tmp_path, sessions=1, ops=[("mul", 1024), ("rsqrt", 1024)], layer=False)
    got = read_new_capture(str(tmp_path), explorer=explorer, fmt=PARQUET, seen_ntffs=set(),
                           seen_traces=set())  # fmt: skip
    # ExecutionInfo's windows name the NEFF of each instruction: a row each, never dropped
    mul, rsqrt = ntff.neff_name("mul", "1024|"), ntff.neff_name("rsqrt", "1024|")
    assert set(got.times) == {f"neff::{mul[:-5]}", f"neff::{rsqrt[:-5]}", UNATTRIBUTED_OP}
    assert got.times[f"neff::{mul[:-5]}"] == pytest.approx(0.3 + 0.256)


def test_without_execution_windows_the_session_is_the_row(
    explorer: Explorer, tmp_path: Path
) -> None:
    write_capture(tmp_path, sessions=1, ops=[("mul", 1024), ("rsqrt", 1024)], layer=False)
    got = read_new_capture(str(tmp_path), explorer=explorer, fmt=EXPLORER_JSON, seen_ntffs=set(),
                           seen_traces=set())  # fmt: skip
    # The full JSON has no ExecutionInfo: the session's two NEFFs cannot be told apart.
    assert set(got.times) == {"neff::profile_nc_0_session_0", UNATTRIBUTED_OP}


def test_only_total_time_is_no_device_time_and_says_so(explorer: Explorer, tmp_path: Path) -> None:
    write_capture(tmp_path, sessions=1, summary_fields=("total_time",), trace=False)
    got = read_new_capture(str(tmp_path), explorer=explorer, fmt=None, seen_ntffs=set(),
                           seen_traces=set())  # fmt: skip
    assert got.times == {}
    assert got.tried[0].startswith(
        "neuron-explorer summary-json on profile_nc_0_session_0: only total_time ("
    )
    assert "which counts semaphore waits: not device time" in got.tried[0]
    assert got.tried[1:] == ("trace.json device events: no new trace.json",)


def test_without_the_tool_the_trace_is_read_and_every_source_is_named(tmp_path: Path) -> None:
    write_capture(tmp_path, sessions=1)  # trace.json: driver spans only (no device events)
    got = read_new_capture(str(tmp_path), explorer=None, fmt=None, seen_ntffs=set(),
                           seen_traces=set(), tool_problem="not found on PATH")  # fmt: skip
    assert got.times == {"aten::mul": 7.0, "aten::add": 1.0}
    assert set(got.sources.values()) == {"privateuse1_driver spans (unverified)"}
    assert got.tried == (
        "neuron-explorer: not found on PATH",
        "trace.json device events: none in 1 new trace.json",
        "privateuse1_driver spans (unverified): 2 op(s)",
    )


def test_a_trace_in_another_format_is_a_warning_not_a_reading(tmp_path: Path) -> None:
    folder = tmp_path / "i-0abc_pid_1" / "20261201T000000"
    folder.mkdir(parents=True)
    (folder / "trace.json").write_text(json.dumps(SUMMARY_FIXTURE))
    got = read_new_capture(str(tmp_path), explorer=None, fmt=None, seen_ntffs=set(),
                           seen_traces=set())  # fmt: skip
    assert got.times == {}
    assert got.warnings == (
        f"{folder / 'trace.json'}: expected chrome trace, but it looks like {SUMMARY_JSON};"
        " not read as device time",
    )


@pytest.mark.parametrize("fmt", [pytest.param(PARQUET, marks=needs_pyarrow), EXPLORER_JSON])
def test_replay_makes_the_profile_a_live_run_makes(
    explorer: Explorer, capture: Path, fmt: str
) -> None:
    version = explorer.version()[0]
    replay = replay_capture(str(capture), explorer=explorer, fmt=fmt, tool_version=version)
    p = replay.profile
    assert (p.name, p.shape, p.dtype, p.backend) == (
        "rmsnorm.naive",
        "32x1024",
        "float32",
        "neuron",
    )
    assert len(p.device_time_us) == 2  # one sample per session folder
    assert p.device_time_source == f"device-profile instruction rows ({fmt})"
    ops = {o.op: o for o in p.ops}
    assert ops["aten::mul"].self_device_time_us == pytest.approx((MUL, MUL))
    assert ops["aten::mul"].calls_per_iter == 2  # calls from the trace.json host rows
    assert [o.op for o in p.ops][:2] == ["aten::mul", "aten::mean"]  # heaviest first
    fp = replay.fingerprint
    assert fp["backend"] == "neuron" and fp["host"] == "i-0abc"
    assert fp["neuron_explorer"] == "neuron-explorer 2.33.0.0-standin"
    assert fp["neuron_runtime"] == "2.29.40" and fp["torch"] == "none"


def test_replay_refuses_total_time_with_the_sources_tried(
    explorer: Explorer, tmp_path: Path
) -> None:
    write_capture(tmp_path, sessions=1, summary_fields=("total_time",), trace=False)
    with pytest.raises(CaptureError) as info:
        replay_capture(str(tmp_path), explorer=explorer, fmt=None)
    assert info.value.exit_code == 4
    hint = info.value.hint or ""
    assert hint.startswith(
        "sources tried: neuron-explorer summary-json on profile_nc_0_session_0: only total_time ("
    )
    assert "which counts semaphore waits: not device time" in hint
    assert hint.endswith(f"; trace.json: none in {tmp_path}/i-0abc_pid_42/20261201T000000")


def test_replay_takes_driver_spans_when_nothing_else_and_says_so(
    explorer: Explorer, tmp_path: Path
) -> None:
    write_capture(tmp_path, sessions=1, summary_fields=("total_time",))
    replay = replay_capture(str(tmp_path), explorer=explorer, fmt=None)
    assert replay.profile.device_time_source == "privateuse1_driver spans (unverified)"
    assert replay.profile.device_time_us == (8.0,)


def test_replay_of_a_folder_without_a_capture_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no Neuron capture here"):
        replay_capture(str(tmp_path), explorer=None, fmt=None)


def test_capture_labels() -> None:
    assert capture_label("/t/rmsnorm.naive-32x1024-float32") == (
        "rmsnorm.naive",
        "32x1024",
        "float32",
    )
    assert capture_label("/t/profile_output/") == ("profile_output", "unknown", "unknown")
    assert capture_label(os.path.join("x", "a-b-c")) == ("a-b-c", "unknown", "unknown")
