"""Of-peak for the kernels ``profile`` used to show "-" for (issue 14 item 5): cuDNN and
friends' attention entry points, inductor's Triton kernels, and the labels that say which
roof a fraction is of."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from neuronasv.measure import fractions as FR
from neuronasv.measure import roofline as R
from neuronasv.measure.backends import PEAKS
from neuronasv.measure.peaks import Peak
from neuronasv.model.profile import OpProfile, WorkloadProfile

BF = "c10::BFloat16"
B, H, L, D = 1, 32, 2048, 128
QKV = [[B, H, L, D]] * 3
QKV_BYTES = 3 * B * H * L * D * 2
OUT_BYTES = B * H * L * D * 2
FULL = 4 * B * H * L * L * D  # 4·B·H·Lq·Lk·D
CAUSAL = FULL * (L * (L + 1) // 2) / (L * L)


def _cudnn_args(is_causal: Any) -> tuple[list[Any], list[str], list[Any]]:
    """(shapes, dtypes, concrete) of ``aten::_cudnn_attention_forward`` as recorded: q, k,
    v, attn_bias, cum_seq_q, cum_seq_k, max_q, max_k, compute_log_sumexp, dropout_p,
    is_causal, return_debug_mask."""
    shapes = [*QKV, [], [], [], [], [], [], [], [], []]
    dtypes = [BF, BF, BF, "", "", "", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar"]
    concrete = [None, None, None, None, None, None, L, L, True, 0.0, is_causal, False]
    return shapes, dtypes, concrete


@pytest.mark.parametrize(("flag", "assume", "flops", "notes"), [
    (True, False, CAUSAL, ()),
    (False, True, FULL, ()),  # a recorded False wins over the workload's claim
    (None, True, CAUSAL, (R.ASSUMED_CAUSAL,)),  # not recorded: assumed, and said so
    (None, False, FULL, ()),
])  # fmt: skip
def test_cudnn_attention_forward(flag: Any, assume: bool, flops: float,
                                 notes: tuple[str, ...]) -> None:
    shapes, dtypes, concrete = _cudnn_args(flag)
    cost = R.op_cost("aten::_cudnn_attention_forward", shapes, "bfloat16", input_dtypes=dtypes,
                     concrete_inputs=concrete, assume_causal=assume)  # fmt: skip
    assert cost.flops == pytest.approx(flops)
    assert cost.bytes == QKV_BYTES + OUT_BYTES  # q + k + v + out
    assert cost.notes == notes
    assert cost.flops_by_dtype == {"bfloat16": pytest.approx(flops)}


@pytest.mark.parametrize(("op", "layout", "idx", "value"), [
    ("aten::_flash_attention_forward", "blhe", 8, True),
    ("aten::_efficient_attention_forward", "blhe", 9, 1),
    ("aten::_scaled_dot_product_flash_attention_for_cpu", "bhle", 4, True),
    ("aten::_scaled_dot_product_flash_attention", "bhle", 4, True),
    ("aten::_scaled_dot_product_cudnn_attention", "bhle", 6, True),
    ("aten::_scaled_dot_product_fused_attention_overrideable", "bhle", 5, True),
])  # fmt: skip
def test_attention_family_reads_is_causal_where_its_schema_has_it(
    op: str, layout: str, idx: int, value: Any
) -> None:
    shape = [B, H, L, D] if layout == "bhle" else [B, L, H, D]
    shapes: list[Any] = [shape] * 3 + [[]] * (idx - 2)
    concrete: list[Any] = [None] * (idx + 1)
    concrete[idx] = value
    causal = R.op_cost(op, shapes, "bfloat16", input_dtypes=[BF] * 3 + ["Scalar"] * (idx - 2),
                       concrete_inputs=concrete)  # fmt: skip
    concrete[idx] = 0 if value == 1 and value is not True else False
    full = R.op_cost(op, shapes, "bfloat16", input_dtypes=[BF] * 3 + ["Scalar"] * (idx - 2),
                     concrete_inputs=concrete)  # fmt: skip
    assert full.flops == pytest.approx(FULL)
    assert causal.flops == pytest.approx(CAUSAL)
    assert causal.bytes == full.bytes == QKV_BYTES + OUT_BYTES


def test_triton_kernel_bytes_follow_inductors_argument_layout(tmp_path: Path) -> None:
    """``(in_out_ptr0, in_ptr0, in_ptr1, xnumel, r0_numel)``: the in-place buffer is read
    and written, the inputs read once; the integer sizes are not tensors."""
    src = tmp_path / "cabc.py"
    src.write_text(
        "import triton\n@triton.jit\n"
        "def triton_per_fused_add_mean_mul_rsqrt_0(in_out_ptr0, in_ptr0, in_ptr1, xnumel,"
        " r0_numel, XBLOCK : tl.constexpr):\n    pass\n"
        "def triton_poi_fused_mul_1(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):\n"
        "    pass\n"
    )
    name = "triton_per_fused_add_mean_mul_rsqrt_0"
    assert R.triton_in_out_count(str(src), name) == 1
    assert R.triton_in_out_count(str(src), "triton_poi_fused_mul_1") == 0
    assert R.triton_in_out_count(str(tmp_path / "gone.py"), name) == 0
    assert R.triton_in_out_count(None, name) == 0
    rows = 8 * 1024
    x = [8, 1024, 4096]
    shapes: list[Any] = [[8, 1024, 1], x, [4096], [], []]
    dtypes = ["float", BF, BF, "Scalar", "Scalar"]
    cost = R.triton_kernel_cost(shapes, dtypes, in_out=1)
    assert cost.flops is None
    assert cost.bytes == 2 * rows * 4 + rows * 4096 * 2 + 4096 * 2
    assert R.triton_kernel_cost(shapes, dtypes).bytes == rows * 4 + rows * 4096 * 2 + 4096 * 2
    # Inductor's own figures (TORCHINDUCTOR_BENCHMARK_KERNEL) win when recorded.
    own = R.triton_kernel_cost(shapes, dtypes, kwinputs={"kernel_num_gb": 0.5, "kernel_flop": 7})
    assert (own.bytes, own.flops) == (0.5e9, 7.0)
    assert not R.triton_kernel_cost([[], []], ["Scalar", "Scalar"]).known


def _ev(name: str, shapes: list[Any], dtypes: list[str], children: tuple[Any, ...] = (),
        kw: dict[str, Any] | None = None) -> Any:
    return SimpleNamespace(name=name, key=name, input_shapes=shapes, input_dtypes=dtypes,
                           concrete_inputs=None, cpu_children=list(children), flops=0,
                           device_type=None, kwinputs=kw or {})  # fmt: skip


def test_a_compiled_graphs_kernels_carry_bytes_and_unknown_flops(tmp_path: Path) -> None:
    src = tmp_path / "k.py"
    src.write_text("def triton_per_fused_0(in_out_ptr0, in_ptr0, xnumel, r0_numel):\n")
    kern = _ev("triton_per_fused_0", [[4, 1], [4, 512], [], []],
               ["float", BF, "Scalar", "Scalar"],
               kw={"kernel_file": str(src), "kernel_name": "triton_per_fused_0"})
    graph = _ev("## Call CompiledFxGraph", [], [], (kern,))
    costs = R.costs_from_events([graph, kern], 2, default_dtype="bfloat16")
    k = costs["triton_per_fused_0"]
    assert k.flops is None and k.bytes == (2 * 4 * 4 + 4 * 512 * 2) / 2
    assert not costs["## Call CompiledFxGraph"].known  # the kernels carry the work
    # Against a peak: a fraction of peak *bandwidth*, labelled as such.
    peak = Peak("t", memory_bytes_per_s=1e9, flops_per_s={"bfloat16": 1e12})
    prof = WorkloadProfile(
        name="w.compiled", backend="cuda", shape="4x512", dtype="bfloat16",
        device_time_us=(10.0,),
        ops=(OpProfile("triton_per_fused_0", 1.0, (k.bytes / 1e9 * 1e6 * 4,), (1.0,)),),
    )  # fmt: skip
    (op,) = FR.annotate(prof, costs, peak).ops
    assert op.roofline_fraction == pytest.approx(0.25)
    assert op.roofline_bound == R.BANDWIDTH_ONLY
    assert WorkloadProfile.from_json(FR.annotate(prof, costs, peak).to_json(), "t").ops == (op,)


def test_labels_name_the_roof_and_the_assumptions() -> None:
    peak = Peak("t", memory_bytes_per_s=1e9, flops_per_s={"bfloat16": 1e9})
    comp = R.OpCost(4e6, 1e3, {"bfloat16": 4e6}, (R.ASSUMED_CAUSAL,))
    mem = R.OpCost(1e3, 1e6, {"bfloat16": 1e3})
    assert FR.roofline_label(comp, FR.roofline_point(comp, 8000.0, peak)) == (
        "compute; assumed causal"
    )
    assert FR.roofline_label(mem, FR.roofline_point(mem, 2000.0, peak)) == "memory"
    assert FR.roofline_label(mem, FR.roofline_point(mem, 2000.0, None)) is None


def test_h200_attention_at_the_measured_time_is_a_plausible_fraction() -> None:
    """transformer.attention 1x2048x4096x32 bf16 on an H200 took 84.3 µs of
    ``aten::_cudnn_attention_forward`` (issue 14's table): causal FLOPs at that time are
    a compute-bound fraction well under 1 of the H200's dense bf16 peak."""
    shapes, dtypes, concrete = _cudnn_args(True)
    cost = R.op_cost("aten::_cudnn_attention_forward", shapes, "bfloat16", input_dtypes=dtypes,
                     concrete_inputs=concrete)  # fmt: skip
    point = FR.roofline_point(cost, 84.3, PEAKS["h200-sxm"])
    assert point.bound == "compute"
    assert point.fraction is not None and 0.3 < point.fraction < 1.0
