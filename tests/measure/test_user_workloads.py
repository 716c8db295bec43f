"""A user's own workload module, named in NEURONASV_WORKLOADS, joins the registry."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

MODULE = """
from neuronasv.measure.workloads import Workload, register


def _build(shape, dtype, device, seed):
    import torch

    x = torch.randn(shape, generator=torch.Generator().manual_seed(seed)).to(dtype=dtype)

    def step():
        return torch.nn.functional.gelu(x) * x

    return step


register(Workload("mine.gelu_gate", "GELU gate", "4x64", _build, tags=("mine",),
                  default_dtype="float32"))
"""


def _run(tmp_path: Path, modules: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "NEURONASV_WORKLOADS": modules}
    return subprocess.run(
        [sys.executable, "-m", "neuronasv", "profile", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=False,
    )


@pytest.mark.slow  # end to end through subprocesses: the full lane
def test_user_workload_is_listed_and_profiled(tmp_path: Path) -> None:
    (tmp_path / "myworkloads.py").write_text(MODULE)
    listed = _run(tmp_path, "myworkloads", "--list")
    assert listed.returncode == 0, listed.stderr
    assert "mine.gelu_gate" in listed.stdout and "rmsnorm.naive" in listed.stdout
    out = tmp_path / "p.json"
    prof = _run(
        tmp_path,
        "myworkloads",
        "--workload",
        "mine.gelu_gate",
        "--samples",
        "3",
        "--json",
        str(out),
        "--quiet",
        "--no-roofline",
    )
    assert prof.returncode == 0, prof.stderr
    from neuronasv.model import ProfileDocument

    doc = ProfileDocument.loads(out.read_text())
    (w,) = doc.workloads
    assert w.name == "mine.gelu_gate" and w.device_time_us and min(w.device_time_us) > 0
    assert {o.op for o in w.ops} >= {"aten::gelu", "aten::mul"}


def test_unimportable_user_module_is_a_clear_error(tmp_path: Path) -> None:
    res = _run(tmp_path, "no_such_module_xyz", "--list")
    assert res.returncode == 2
    assert "NEURONASV_WORKLOADS names 'no_such_module_xyz'" in res.stderr
    assert "Traceback" not in res.stderr


def test_a_workload_name_with_a_trailing_newline_is_refused() -> None:
    from neuronasv.measure.workloads import Workload, register

    with pytest.raises(ValueError, match="must be"):
        register(Workload("mine.bad\n", "bad", "4x64", lambda *a: lambda: None))
