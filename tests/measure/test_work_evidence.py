"""Exact work evidence from the real profiler: A/A shows none, real changes show exactly.

The evidence (calls per iteration, input shapes and dtypes per call) comes from an untimed
``record_shapes`` pass, so it must be identical on every run of the same code — in another
process too — and differ exactly where the code's work differs.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from typing import Any

import pytest

from neuronasv.analyse.causes import find_causes
from neuronasv.analyse.evidence import has_evidence, work_changes
from neuronasv.measure import get_backend, profile_workload
from neuronasv.measure.workloads import Workload, all_workloads, get
from neuronasv.measure.workloads.rmsnorm import EPS, make_inputs
from neuronasv.model import ProfileDocument, SeriesId, WorkloadProfile
from neuronasv.report.causes import work_sentence
from tests.builders import finding

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _variant(fn: Any) -> Workload:
    """A stand-in for ``rmsnorm.naive`` at another commit: same name, other code."""

    def build(shape: tuple[int, ...], dtype: Any, device: str, seed: int):
        x, weight = make_inputs(shape, dtype, device, seed)
        return lambda: fn(x, weight, EPS)

    return dataclasses.replace(get("rmsnorm.naive"), build_fn=build)


def _eps_tensor(x: Any, weight: Any, eps: float) -> Any:
    """examples/regress-rmsnorm-eps.patch: eps materialised as a full tensor like x."""
    import torch

    mean_sq = (x * x).mean(dim=-1, keepdim=True)
    rms = torch.rsqrt(mean_sq + torch.full_like(x, eps))
    return x * rms * weight


def _one_more_mul(x: Any, weight: Any, eps: float) -> Any:
    import torch

    rms = torch.rsqrt((x * x).mean(dim=-1, keepdim=True) + eps)
    return (x * rms) * weight * 1.0


def _profile(workload: Workload, dtype: str = "bfloat16", shape: str = "4x512") -> WorkloadProfile:
    return profile_workload(
        workload, get_backend("cpu"), shape=shape, dtype=dtype, samples=2, roofline=False
    )


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_eps_example_is_a_work_change_found_with_certainty(dtype: str) -> None:
    base = _profile(get("rmsnorm.naive"), dtype)
    head = _profile(_variant(_eps_tensor), dtype)
    assert has_evidence(base) and has_evidence(head)
    got = {w.op: w for w in work_changes([base], [head])}
    # aten::add and aten::rsqrt now run over every element; the eps tensor is new work.
    assert got["aten::add"].kind == "shapes" and got["aten::rsqrt"].kind == "shapes"
    short = "bf16" if dtype == "bfloat16" else "fp32"
    assert f"1×{short}[4,1]" in got["aten::rsqrt"].signature_base
    assert f"1×{short}[4,512]" in got["aten::rsqrt"].signature_head
    assert got["aten::full_like"].kind == "new" and got["aten::empty_like"].kind == "new"
    assert got["aten::fill_"].calls_head == got["aten::fill_"].calls_base + 1  # type: ignore[operator]
    rsqrt = got["aten::rsqrt"]
    assert rsqrt.bytes_base and rsqrt.bytes_head and rsqrt.bytes_head > 100 * rsqrt.bytes_base
    # One cause for the workload, named from the evidence.
    sid = SeriesId("b", (), "rmsnorm.naive", "4x512", dtype)
    causes = find_causes([finding(sid, "noisy", base=1.0, head=1.4)], got.values())
    assert len(causes) == 1 and causes[0].kind == "work"
    text = work_sentence(list(got.values()))
    assert "aten::rsqrt" in text and "move more data" in text
    # The new ops are an allocation and a fill wrapper: counted as helpers, not named,
    # and the sentence leads with an op that carries bytes.
    assert "helper ops" in text and "aten::empty_like" not in text
    assert text.startswith(("aten::add", "aten::rsqrt", "aten::mul")), text


def test_one_more_mul_is_one_more_call() -> None:
    base = _profile(get("rmsnorm.naive"))
    head = _profile(_variant(_one_more_mul))
    got = work_changes([base], [head])
    mul = [w for w in got if w.op == "aten::mul"]
    assert len(mul) == 1 and (mul[0].kind, mul[0].calls_base, mul[0].calls_head) == (
        "calls",
        3.0,
        4.0,
    )
    # The Python scalar 1.0 is wrapped into a 0-d tensor and cast (to/_to_copy/copy_):
    # real work too, and only calls changed; no other op's inputs differ.
    others = {w.op: w.kind for w in got if w.op != "aten::mul"}
    assert set(others) <= {"aten::to", "aten::_to_copy", "aten::copy_", "aten::empty_strided"}
    assert set(others.values()) <= {"calls"}


@pytest.mark.slow
def test_aa_every_workload_has_no_work_change_across_processes(tmp_path) -> None:
    """Same code, two processes (this one and a fresh ``neuronasv profile``): no change."""
    backend = get_backend("cpu")
    names = [w.name for w in all_workloads() if not w.skip_reason(backend)]
    assert {"rmsnorm.naive", "transformer.block", "rmsnorm.compiled"} <= set(names)
    here = [_profile(get(n), shape=get(n).default_shape, dtype="float32") for n in names]
    out = tmp_path / "other.json"
    cmd = [sys.executable, "-m", "neuronasv", "profile", "--backend", "cpu", "--quiet"]
    cmd += ["--samples", "2", "--no-roofline", "--dtype", "float32", "--json", str(out)]
    for n in names:
        cmd += ["--workload", n]
    env = {**os.environ, "HOME": str(tmp_path)}
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    there = ProfileDocument.loads(out.read_text()).workloads
    assert {w.name for w in there} == set(names)
    assert all(has_evidence(p) for p in here + list(there))
    assert work_changes(here, there) == ()
