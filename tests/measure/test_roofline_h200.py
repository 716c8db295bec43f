"""Of-peak estimates against events recorded on a real NVIDIA H200 (issue 14 item 5).

``tests/data/h200/*.events.json``: host-side profiler events of
``bench/capture_device_fixtures.py`` (torch 2.11.0+cu130, CUDA 13.0; 5 iterations each),
trimmed to name, recorded input shapes, concrete inputs and self device time (µs). torch
records no input dtypes on these events, so tensors take the workload's dtype (bf16), as in
the real capture pass. The H200 roof is the datasheet's (4.8 TB/s HBM3e, 989.5 TFLOP/s
dense bf16; :data:`neuronasv.measure.backends.PEAKS`).
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from neuronasv.measure import fractions as FR
from neuronasv.measure import roofline as R
from neuronasv.measure.backends import PEAKS
from neuronasv.measure.profiling import normalize_op_name

DATA = Path(__file__).resolve().parents[1] / "data" / "h200"
H200 = PEAKS["h200-sxm"]


def _load(stem: str) -> tuple[dict[str, Any], list[Any]]:
    doc = json.loads((DATA / f"{stem}.events.json").read_text())
    events = [
        SimpleNamespace(
            name=r["name"], key=r["name"], input_shapes=r["input_shapes"], input_dtypes=None,
            concrete_inputs=[ast.literal_eval(c) for c in r["concrete_inputs"]],
            cpu_children=[], flops=0, device_type=None, kwinputs={},
            self_device_us=r["self_device_us"],
        )
        for r in doc["rows"]
    ]  # fmt: skip
    return doc, events


def _points(stem: str, *, causal: bool = False) -> dict[str, tuple[R.OpCost, FR.RooflinePoint]]:
    """Per op: its cost per iteration and its point at its self device time per iteration
    (the profile's figure: all calls of the op, averaged over the iterations)."""
    doc, events = _load(stem)
    iters = doc["iters"]
    costs = R.costs_from_events(events, iters, default_dtype=doc["dtype"],
                                op_name=lambda e: normalize_op_name(e.key),
                                assume_causal=causal)  # fmt: skip
    per_call: dict[str, list[float]] = {}
    for e in events:
        per_call.setdefault(normalize_op_name(e.key), []).append(e.self_device_us)
    out = {}
    for op, cost in costs.items():
        t = sum(per_call[op]) / iters  # µs per iteration
        out[op] = (cost, FR.roofline_point(cost, t, H200))
    return out


def test_compiled_rmsnorm_kernel_runs_at_a_plausible_share_of_hbm_bandwidth() -> None:
    """rmsnorm.compiled 8x1024x4096 bf16: one Triton reduction kernel reads x and the
    weight and writes the output (in_ptr0, in_ptr1, out_ptr0): 134 MB in ~38 µs."""
    pts = _points("rmsnorm.compiled-8x1024x4096-bfloat16")
    cost, point = pts["triton_red_fused_add_mean_mul_rsqrt_0"]
    assert cost.flops is None
    assert cost.bytes == 2 * (8 * 1024 * 4096 * 2) + 4096 * 2
    assert point.bytes_per_s is not None and 3.0e12 < point.bytes_per_s < 4.8e12
    assert point.fraction is not None and 0.6 < point.fraction < 1.0
    assert FR.roofline_label(cost, point) == R.BANDWIDTH_ONLY


def test_cudnn_attention_reads_is_causal_and_is_compute_bound() -> None:
    """transformer.attention 1x2048x4096x32: ``aten::_cudnn_attention_forward`` recorded
    ``is_causal=True`` (argument 10); 4·B·H·L²·D halved (+ the diagonal) over ~84 µs."""
    pts = _points("transformer.attention-1x2048x4096x32-bfloat16")
    cost, point = pts["aten::_cudnn_attention_forward"]
    b, h, s, d = 1, 32, 2048, 128
    assert cost.flops == pytest.approx(4 * b * h * s * s * d * (s + 1) / (2 * s))
    assert cost.bytes == 4 * b * h * s * d * 2  # q, k, v, out
    assert cost.notes == ()  # recorded, not assumed
    assert point.bound == "compute" and FR.roofline_label(cost, point) == "compute"
    assert point.fraction is not None and 0.3 < point.fraction < 0.6


def test_compiled_block_every_kernel_gets_a_fraction() -> None:
    """transformer.block.compiled: every Triton kernel of the graph gets bytes (FLOPs
    unknown, bandwidth label), the matmuls and cuDNN attention a compute fraction; none
    is above the roof."""
    pts = _points("transformer.block.compiled-1x2048x4096x32-bfloat16", causal=True)
    triton = {op: v for op, v in pts.items() if R.is_triton_kernel(op)}
    assert len(triton) >= 4
    for op, (cost, point) in triton.items():
        assert cost.flops is None and cost.bytes and cost.bytes > 0, op
        assert point.fraction is not None and 0.05 < point.fraction <= 1.0, (op, point)
        assert FR.roofline_label(cost, point) == R.BANDWIDTH_ONLY
    _, mm = pts["aten::mm"]
    assert mm.bound == "compute" and mm.fraction is not None and 0.5 < mm.fraction <= 1.0
    att_cost, att = pts["aten::_cudnn_attention_forward"]
    assert att_cost.notes == () and att.bound == "compute"
