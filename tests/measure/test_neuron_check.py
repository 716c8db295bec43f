"""``neuronasv doctor --neuron-check`` against stand-ins (a real host is what it is for).

Run as a user runs it (subprocess), with stand-in ``torch_neuronx`` packages on
``PYTHONPATH``: absent, the PyTorch/XLA flavour, and a native TorchNeuron without a device.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.standin

ROOT = Path(__file__).resolve().parents[2]

NATIVE_PROFILING = """
import enum
class ProfileMode(enum.Enum):
    DEVICE = "device"
    RUNTIME = "runtime"
class NeuronConfig:
    def __init__(self, modes, profile_output_dir, capture_enabled_for_nc="0",
                 max_events_per_nc=None, neff_cache_dir=None, **kwargs):
        self.neff_cache_dir = neff_cache_dir
        self.correlate_device_time = False  # takes the keyword, ignores it
class NeuronProfiler:
    def __init__(self, cfg):
        self.cfg = cfg
    def export_trace(self, prof):
        pass
"""


def _check(
    tmp_path: Path, pkg: dict[str, str] | None, *, explorer: bool = False, device: bool = False
) -> tuple[int, dict, str, str]:
    """Run the check with stand-in packages ``pkg`` (or, with ``device``, the stand-in
    TorchNeuron of tests/neuron/site), the stand-in neuron-explorer on PATH if asked."""
    from tests.neuron.standin import SITE, tool_path

    site = tmp_path / "site"
    if pkg is not None:
        for rel, text in pkg.items():
            f = site / rel
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(textwrap.dedent(text))
    sites = [str(SITE)] if device else [str(site)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*sites, str(ROOT)])}
    if explorer:
        env["PATH"] = tool_path(env.get("PATH", ""))
    env.pop("NEURON_RT_INSPECT_ENABLE", None)
    out = tmp_path / "report"
    r = subprocess.run(
        [sys.executable, "-m", "neuronasv", "doctor", "--neuron-check", "--out", str(out)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    data = json.loads((out / "neuron-check.json").read_text())
    md = (out / "neuron-check.md").read_text()
    return r.returncode, data, md, r.stderr


def _status(data: dict) -> dict[str, str]:
    return {c["name"]: c["status"] for c in data["checks"]}


@pytest.mark.slow  # end to end through subprocesses: the full lane
def test_absent_says_what_is_needed(tmp_path: Path) -> None:
    rc, data, md, err = _check(tmp_path, None)
    assert rc == 3 and "neuron backend not ready here: 1 check(s) failed (build)" in err
    st = _status(data)
    assert st["build"] == "fail" and st["device"] == "skip" and st["capture"] == "skip"
    assert data["failed"] == ["build"]
    assert "needs TorchNeuron" in data["checks"][0]["action"]
    # no neuron-explorer either: said, but no failure where nothing could be captured
    assert st["explorer"] == "warn" and "aws-neuronx-tools" in json.dumps(data)
    assert md.startswith("# neuronasv doctor --neuron-check") and "## What to do" in md


@pytest.mark.slow  # end to end through subprocesses: the full lane
def test_xla_flavour_is_named(tmp_path: Path) -> None:
    rc, data, _md, _ = _check(
        tmp_path,
        {
            "torch_neuronx/__init__.py": "__version__ = '2.9.0'\n",
            "torch_neuronx/experimental/__init__.py": "",
        },
    )
    assert rc == 3
    build = data["checks"][0]
    assert build["data"]["flavour"] == "xla"
    assert build["action"].startswith("this is the PyTorch/XLA torch-neuronx")


@pytest.mark.slow  # end to end through subprocesses: the full lane
def test_native_without_a_device_reaches_the_device_checks(tmp_path: Path) -> None:
    rc, data, _md, _err = _check(
        tmp_path,
        {
            "torch_neuronx/__init__.py": "__version__ = '0.1.0'\n",
            "torch_neuronx/profiling.py": NATIVE_PROFILING,
        },
        explorer=True,
    )
    st = _status(data)
    assert st["build"] == "pass" and st["profiling_api"] == "pass"
    opts = next(c for c in data["checks"] if c["name"] == "config_options")
    # The stand-in takes correlate_device_time and drops it: read back, not trusted.
    assert opts["status"] == "warn" and "read back: no" in opts["found"]
    assert opts["data"]["neff"] == "yes"
    assert st["device"] == "fail" and "torch.neuron is missing" in json.dumps(data)
    assert st["compile_backend"] == "fail"
    assert st["nki"] == "fail"  # TorchNeuron without torch_neuronx.nki / nki_op
    assert st["capture"] == "skip"
    explorer = next(c for c in data["checks"] if c["name"] == "explorer")
    assert explorer["status"] == "pass"
    assert explorer["found"] == "neuron-explorer 2.33.0.0-standin; no NTFF to read (no capture ran)"
    assert rc == 3 and set(data["failed"]) == {"device", "compile_backend", "nki"}


@pytest.mark.slow  # a real profile on the stand-in device, through a subprocess
def test_on_the_simulated_device_the_capture_reads_neuron_explorer(tmp_path: Path) -> None:
    """The stand-in TorchNeuron (a simulated NeuronCore, no device time in key_averages(),
    as the public source) and the stand-in neuron-explorer: device time comes from the
    NTFFs, and the tool's version and one summary-json are in the report."""
    rc, data, md, err = _check(tmp_path, None, explorer=True, device=True)
    st = _status(data)
    assert st["build"] == "pass" and st["device"] == "pass", err
    capture = next(c for c in data["checks"] if c["name"] == "capture")
    assert capture["status"] == "pass", capture
    assert capture["found"].startswith(
        "rmsnorm.naive 4x512 bf16: device time from device-profile instruction rows ("
    )
    assert capture["found"].endswith("correlate_device_time: unknown")
    assert capture["data"]["state"]["neuron.ntff_version"] == "5"
    assert capture["data"]["tried"][0].startswith(
        "neuron-explorer summary-json total_active_time on profile_nc_0_session_0: "
    )
    explorer = next(c for c in data["checks"] if c["name"] == "explorer")
    assert explorer["status"] == "pass"
    assert explorer["found"].startswith(
        "neuron-explorer 2.33.0.0-standin; summary-json on profile_nc_0_session_0:"
        " total_active_time "
    )
    assert "(total_time " in explorer["found"]
    assert st["trace_folder"] == "pass"
    # no torch.compile backend "neuron" nor NKI in the stand-in
    assert rc == 3 and set(data["failed"]) == {"compile_backend", "nki"}
    assert "| `explorer` | ✅ pass |" in md
