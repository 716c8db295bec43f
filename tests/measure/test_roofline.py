"""Roofline: per-op FLOPs/bytes formulas, self-cost attribution, peaks, annotation."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

from neuronasv.errors import UsageError
from neuronasv.measure import fractions as FR
from neuronasv.measure import roofline as R
from neuronasv.measure.peaks import Peak
from neuronasv.model.profile import OpProfile, WorkloadProfile

BF = "c10::BFloat16"


def test_matmul_family_formulas() -> None:
    mm = R.op_cost("aten::mm", [[8, 16], [16, 32]], input_dtypes=[BF, BF])
    assert mm.flops == 2 * 8 * 16 * 32
    assert mm.bytes == (8 * 16 + 16 * 32 + 8 * 32) * 2
    assert mm.flops_by_dtype == {"bfloat16": mm.flops}
    addmm = R.op_cost("aten::addmm", [[32], [8, 16], [16, 32], [], []], "float32")
    assert addmm.flops == 2 * 8 * 16 * 32
    assert addmm.bytes == (32 + 8 * 16 + 16 * 32 + 8 * 32) * 4
    bmm = R.op_cost("aten::bmm", [[4, 8, 16], [4, 16, 32]], "float32")
    assert bmm.flops == 2 * 4 * 8 * 16 * 32
    lin = R.op_cost("aten::linear", [[2, 8, 16], [32, 16], []], "float32")
    assert lin.flops == 2 * 2 * 8 * 16 * 32
    mat = R.op_cost("aten::matmul", [[3, 1, 8, 16], [5, 16, 4]], "float32")
    assert mat.flops == 2 * 15 * 8 * 16 * 4
    assert not R.op_cost("aten::mm", [[8, 16], [17, 32, 1]]).known


def test_elementwise_reduction_and_data_movement_formulas() -> None:
    # Broadcast: out (4, 8); reads both inputs once.
    mul = R.op_cost("aten::mul", [[4, 8], [8]], input_dtypes=["float", BF])
    assert mul.flops == 32
    assert mul.bytes == 32 * 4 + 8 * 2 + 32 * 4
    # A Python scalar is a 0-d wrapped number: 8 bytes, not a tensor read of the output size.
    scal = R.op_cost("aten::mul", [[4, 8], []], input_dtypes=[BF, "long int"])
    assert scal.bytes == 32 * 2 + 8 + 32 * 2
    assert scal.flops_by_dtype == {"bfloat16": 32.0}
    # In place: output is the first argument.
    add_ = R.op_cost("aten::add_", [[4, 1], [], []], input_dtypes=["float", "Scalar", "Scalar"])
    assert (add_.flops, add_.bytes) == (4, 4 * 4 * 2)
    copy = R.op_cost("aten::copy_", [[4, 8], [4, 8], []], input_dtypes=[BF, "float", "Scalar"])
    assert (copy.flops, copy.bytes) == (0, 32 * 2 + 32 * 4)
    # Reduction over the last dim, dims read from concrete_inputs.
    s = R.op_cost("aten::sum", [[4, 8], [], [], []], "float32", concrete_inputs=[None, [-1], True])
    assert (s.flops, s.bytes) == (32, 32 * 4 + 4 * 4)
    assert R.op_cost("aten::view", [[4, 8], []]) == R.OpCost(0.0, 0.0)
    assert not R.op_cost("aten::some_new_op", [[4, 8]]).known
    assert not R.op_cost("neuron::custom", [[4, 8]]).known


@pytest.mark.parametrize("causal", [False, True])
def test_attention_flops_count_the_causal_share(causal: bool) -> None:
    b, h, seq, d = 2, 4, 16, 8
    shapes: list[Any] = [[b, h, seq, d]] * 3 + [[], [], [], [], []]
    cost = R.op_cost("aten::_scaled_dot_product_flash_attention_for_cpu", shapes, "float32",
                     concrete_inputs=[None, None, None, 0.0, causal])
    full = 4 * b * h * seq * seq * d
    assert cost.flops == pytest.approx(full * ((seq + 1) / (2 * seq) if causal else 1.0))
    assert cost.bytes == 4 * b * h * seq * d * 4
    # The CUDA flash kernel takes (batch, seq, heads, dim): same work.
    cuda = R.op_cost("aten::_flash_attention_forward", [[b, seq, h, d]] * 3, "float32",
                     concrete_inputs=[None] * 8 + [causal])
    assert cuda.flops == pytest.approx(cost.flops)


def _profile(fn: Any) -> Any:
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_flops=True) as p:
        fn()
    return p.events()


def test_formulas_agree_with_the_profilers_own_flop_counts() -> None:
    a, b = torch.randn(12, 20), torch.randn(20, 28)
    bias = torch.randn(28)
    x3, y3 = torch.randn(3, 12, 20), torch.randn(3, 20, 28)
    events = _profile(lambda: (a @ b, torch.addmm(bias, a, b), torch.bmm(x3, y3), a * a, a + a))
    checked = 0
    for e in events:
        if e.flops:
            mine = R.op_cost(e.name, e.input_shapes, input_dtypes=e.input_dtypes,
                             concrete_inputs=e.concrete_inputs)
            assert mine.flops == e.flops, e.name
            checked += 1
    assert checked >= 5


def test_costs_land_on_the_op_that_does_the_work() -> None:
    x, w = torch.randn(2, 16, 32), torch.randn(64, 32)
    q = torch.randn(1, 2, 16, 8)
    events = _profile(lambda: (
        F.linear(x, w) * 2,
        F.scaled_dot_product_attention(q, q, q, is_causal=True),
        x.mean(-1),
    ))
    costs = R.costs_from_events(events, 1, default_dtype="float32")
    assert costs["aten::mm"].flops == 2 * 32 * 32 * 64
    for composite in ("aten::linear", "aten::matmul", "aten::scaled_dot_product_attention",
                      "aten::mean"):
        assert not costs[composite].known, composite
    assert costs["aten::mul"].flops == 2 * 16 * 64  # the scalar's own copy does not take over
    assert costs["aten::_scaled_dot_product_flash_attention_for_cpu"].flops == pytest.approx(
        4 * 2 * 16 * 16 * 8 * (17 / 32))
    assert costs["aten::sum"].flops == 2 * 16 * 32
    assert costs["aten::view"] == R.OpCost(0.0, 0.0)


def test_attention_backward_keeps_its_cost_despite_gradient_fills() -> None:
    q = torch.randn(1, 2, 16, 8, requires_grad=True)

    def run() -> None:
        out = F.scaled_dot_product_attention(q, q, q, is_causal=True)
        torch.autograd.grad(out.sum(), q)

    costs = R.costs_from_events(_profile(run), 1, default_dtype="float32")
    bwd = costs["aten::_scaled_dot_product_flash_attention_for_cpu_backward"]
    fwd = costs["aten::_scaled_dot_product_flash_attention_for_cpu"]
    assert bwd.flops == pytest.approx(2.5 * (fwd.flops or 0))


def _ev(name: str, shapes: list[Any], children: tuple[Any, ...] = ()) -> Any:
    return SimpleNamespace(name=name, key=name, input_shapes=shapes, input_dtypes=None,
                           concrete_inputs=None, cpu_children=list(children), flops=0,
                           device_type=None)


def test_costs_per_iteration_and_unknown_leaves() -> None:
    mm1 = _ev("aten::mm", [[2, 4], [4, 8]])
    mm2 = _ev("aten::mm", [[2, 4], [4, 8]])
    odd = _ev("aten::brand_new", [[2, 4]])
    wrap = _ev("aten::linear", [[2, 4], [8, 4]], (mm1,))
    costs = R.costs_from_events([wrap, mm1, mm2, odd], 2, default_dtype="float32",
                                op_name=lambda e: e.key.upper())
    assert costs["ATEN::MM"].flops == 2 * (2 * 2 * 4 * 8) / 2  # two calls over two iterations
    assert not costs["ATEN::LINEAR"].known
    assert not costs["ATEN::BRAND_NEW"].known
    with pytest.raises(UsageError):
        R.costs_from_events([], 0)


def test_fraction_is_ideal_time_over_measured_time() -> None:
    peak = Peak("test", memory_bytes_per_s=1e9, flops_per_s={"float32": 1e9})
    mem = R.OpCost(flops=1e3, bytes=1e6, flops_by_dtype={"float32": 1e3})
    point = FR.roofline_point(mem, 2000.0, peak)  # 1 MB in 2 ms at a 1 GB/s roof = 50 %
    assert point.fraction == pytest.approx(0.5)
    assert point.bound == "memory"
    assert point.bytes_per_s == pytest.approx(5e8)
    comp = R.OpCost(flops=4e6, bytes=1e3, flops_by_dtype={"float32": 4e6})
    assert FR.roofline_point(comp, 8000.0, peak).bound == "compute"
    assert FR.roofline_fraction(comp, 8000.0, peak) == pytest.approx(0.5)
    assert FR.roofline_fraction(comp, 0.0, peak) is None
    assert FR.roofline_fraction(comp, 10.0, None) is None
    # A dtype the table lacks contributes no compute roof; bytes still do.
    odd = R.OpCost(flops=1e9, bytes=1e6, flops_by_dtype={"int64": 1e9})
    assert FR.roofline_fraction(odd, 2000.0, peak) == pytest.approx(0.5)


def test_annotate_fills_the_profile_and_round_trips() -> None:
    def op(name: str, times: tuple[float, ...]) -> OpProfile:
        return OpProfile(op=name, calls_per_iter=1.0, self_device_time_us=times,
                         self_cpu_time_us=times)

    prof = WorkloadProfile(
        name="w", backend="cpu", shape="1", dtype="float32", device_time_us=(10.0,),
        ops=(op("aten::mul", (1000.0, 3000.0, 2000.0)), op("aten::linear", (5.0,)),
             op("aten::view", (1.0,))),
    )
    peak = Peak("test", memory_bytes_per_s=1e9, flops_per_s={"float32": 1e12})
    costs = {"aten::mul": R.OpCost(1e3, 1e6, {"float32": 1e3}),
             "aten::view": R.OpCost(0.0, 0.0)}
    out = FR.annotate(prof, costs, peak)
    mul, lin, view = out.ops
    assert (mul.flops, mul.bytes) == (1e3, 1e6)
    assert mul.roofline_fraction == pytest.approx(0.5)  # median 2 ms
    assert (lin.flops, lin.bytes, lin.roofline_fraction) == (None, None, None)
    assert (view.flops, view.bytes, view.roofline_fraction) == (0.0, 0.0, None)
    assert prof.ops[0].flops is None  # input untouched
    again = WorkloadProfile.from_json(out.to_json(), "test")
    assert again == out
