"""Running neuron-explorer (the stand-in executable, tests/neuron/bin) through proc.py:
its version, each output format, and every failure as one line, never an exception."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from neuronasv.measure.neuron_explorer import (
    Explorer,
    Target,
    find_tool,
    profile_format,
    read_parquet_dir,
)
from neuronasv.measure.neuron_formats import EXPLORER_JSON, PARQUET, FormatMismatch
from neuronasv.proc import TIMED_OUT, ProcResult
from tests.neuron import ntff
from tests.neuron.conftest import needs_pyarrow, write_capture
from tests.neuron.fixtures import EXPLORER_JSON as EXPLORER_FIXTURE

pytestmark = pytest.mark.standin


def _session(capture: Path) -> Path:
    return next((capture / "i-0abc_pid_42").iterdir())


def test_found_on_path_then_in_the_install_folder(tmp_path: Path) -> None:
    assert find_tool(path=str(tmp_path), install_dirs=()) is None
    install = tmp_path / "opt"
    install.mkdir()
    tool = install / "neuron-explorer"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    assert find_tool(path=str(tmp_path), install_dirs=(str(install),)) == str(tool)


def test_version(explorer: Explorer) -> None:
    assert explorer.version() == ("neuron-explorer 2.33.0.0-standin", None)


def test_summary_json_of_a_session_folder(explorer: Explorer, capture: Path) -> None:
    """The session NTFF ran several NEFFs: the folder is viewed (-d). The stand-in writes
    a state file under HOME: the tests' HOME is read-only, so this passing shows the tool
    runs with a HOME of its own."""
    got = explorer.summaries(Target(folder=str(_session(capture))))
    assert got.problem is None
    (one,) = got.summaries
    assert one.profile == "profile_nc_0_session_0"
    assert one.device_time_field == "total_active_time"
    rec = ntff.read_ntff(str(_session(capture) / "profile_nc_0_session_0.ntff"))
    assert one.device_time_us == pytest.approx(ntff.summary(rec)["total_active_time"] * 1e6)
    assert one.versions["profiler_version"] == "2.33.0.0-standin"


def test_an_ntff_with_its_one_neff_is_viewed_as_a_pair(explorer: Explorer, tmp_path: Path) -> None:
    write_capture(tmp_path, sessions=1, ops=[("mul", 1024)])
    folder = _session(tmp_path)
    (neff,) = [p for p in folder.iterdir() if p.suffix == ".neff"]
    ntff_path = folder / "profile_nc_0_session_0.ntff"
    target = Target(ntff=str(ntff_path), neff=str(neff))
    assert target.args() == ["-n", str(neff), "-s", str(ntff_path)]
    (one,) = explorer.summaries(target).summaries
    assert one.device_time_us == pytest.approx(0.3 + 0.256 + 0.05)  # setup+work, DMA


@needs_pyarrow
def test_parquet_device_profile(explorer: Explorer, capture: Path) -> None:
    assert profile_format() == PARQUET
    got = explorer.device_profile(Target(folder=str(_session(capture))), PARQUET)
    assert got.problem is None and got.profile is not None
    prof = got.profile
    assert prof.fmt == PARQUET
    # Instruction was split in two numbered files by the stand-in: both are read.
    assert len(prof.events) == 3 * 6
    assert [e.neff for e in prof.executions][:2] == [
        ntff.neff_name("mul", "32768|"),
        ntff.neff_name("mean", "32768|"),
    ]
    assert prof.versions["ntff_version"] == "5"
    assert prof.throttle["throttle_active_time_ns"] == "0"


def test_json_device_profile(explorer: Explorer, capture: Path) -> None:
    got = explorer.device_profile(Target(folder=str(_session(capture))), EXPLORER_JSON)
    assert got.problem is None and got.profile is not None
    assert got.profile.fmt == EXPLORER_JSON
    assert {i.layer for i in got.profile.events} >= {"aten.mul", "aten.mean"}


def test_an_ntff_newer_than_the_tool_is_a_finding(explorer: Explorer, tmp_path: Path) -> None:
    """Tool/trace skew (aws-neuron-sdk#1007; trnblas's "NTFF version 130"): one line with
    the tool's own words, not a crash."""
    write_capture(tmp_path, sessions=1, ntff_version=130)
    got = explorer.summaries(Target(folder=str(_session(tmp_path))))
    assert got.summaries == ()
    assert got.problem == (
        "neuron-explorer view 20261201T000000 (summary-json) exited 1: error: NTFF version 130"
        " is not supported in this version of the tool (supported: 1 - 6). Please upgrade"
        " aws-neuronx-tools."
    )


def test_a_file_that_is_no_ntff_is_a_finding(explorer: Explorer, tmp_path: Path) -> None:
    (tmp_path / "profile_nc_0_session_0.ntff").write_bytes(b"\x00\x01NTFF")
    (tmp_path / "neff_1_vnc_0.neff").write_text("{}")
    got = explorer.summaries(
        Target(
            ntff=str(tmp_path / "profile_nc_0_session_0.ntff"),
            neff=str(tmp_path / "neff_1_vnc_0.neff"),
        )
    )
    assert got.problem is not None and "exited 1: error: failed to parse" in got.problem


def _fake(rc: int, out: str = "", err: str = "", timed_out: bool = False) -> Any:
    def runner(cmd: list[str], **kw: Any) -> ProcResult:
        assert kw["env"]["HOME"] == kw["cwd"] != os.environ["HOME"]
        if "--output-file" in cmd:
            path = cmd[cmd.index("--output-file") + 1]
            if path.endswith(".json"):
                Path(path).write_text(out)
            else:
                (Path(path) / "Summary.parquet").write_text(out)
        return ProcResult(rc, out if "--output-file" not in cmd else "", err, timed_out)

    return runner


_VIEW = "neuron-explorer view x (summary-json)"


@pytest.mark.parametrize(
    ("runner", "problem"),
    [
        (_fake(TIMED_OUT, timed_out=True), f"{_VIEW} timed out after 5 s"),
        (_fake(3, err="boom\nsegfault in libnrt"), f"{_VIEW} exited 3: segfault in libnrt"),
        (_fake(0, out="not json"), f"{_VIEW}: stdout is not JSON (not json)"),
        (
            _fake(0, out=json.dumps(EXPLORER_FIXTURE)),
            f"{_VIEW}: expected summary-json, but it looks like Explorer JSON",
        ),
    ],
)
def test_summary_failures_are_one_line(runner: Any, problem: str) -> None:
    got = Explorer("/x/neuron-explorer", runner=runner, timeout=5).summaries(Target(folder="/c/x"))
    assert got.summaries == () and got.problem == problem


def test_device_profile_failures_are_one_line() -> None:
    from tests.neuron.fixtures import SUMMARY_JSON

    ex = Explorer("/x/neuron-explorer", runner=_fake(0, out=json.dumps(SUMMARY_JSON)))
    got = ex.device_profile(Target(folder="/c/x"), EXPLORER_JSON)
    assert got.problem == (
        "neuron-explorer view x (json): expected Explorer JSON, but it looks like summary-json"
    )
    got = ex.device_profile(Target(folder="/c/x"), PARQUET)
    assert got.problem is not None
    assert got.problem.startswith("neuron-explorer view x (parquet): ")
    assert "expected Parquet, but it looks like JSON" in got.problem or "ImportError" in got.problem


@needs_pyarrow
def test_a_parquet_file_that_is_not_parquet(tmp_path: Path) -> None:
    (tmp_path / "Summary.parquet").write_text('{"total_time": 1}')
    with pytest.raises(FormatMismatch, match="expected Parquet, but it looks like JSON"):
        read_parquet_dir(str(tmp_path))
