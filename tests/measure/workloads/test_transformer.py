"""Transformer workloads: registered, seeded, numerically sane, shapes parsed strictly."""

from __future__ import annotations

import math

import pytest
import torch

from neuronasv.errors import UsageError
from neuronasv.measure import workloads
from neuronasv.measure.workloads import transformer as T

SHAPE = (1, 16, 64, 2)  # tiny: batch 1, seq 16, hidden 64, 2 heads (head size 32)


def test_every_transformer_workload_is_registered_with_the_tag() -> None:
    expected = {
        "transformer.rmsnorm", "transformer.rope", "transformer.attention", "transformer.mlp",
        "transformer.residual", "transformer.block", "transformer.block.compiled",
        "transformer.block.backward",
    }
    assert {w.name for w in T.WORKLOADS} == expected
    for w in T.WORKLOADS:
        assert workloads.get(w.name) is w
        # "causal-attention": any attention it runs is causal (roofline.CAUSAL_TAG)
        assert w.tags == ("transformer", "causal-attention")
        assert w.default_shape == T.CPU_PRESET.shapes[0]
        assert w.compiled == w.name.endswith(".compiled")


@pytest.mark.parametrize("w", [w for w in T.WORKLOADS if not w.compiled], ids=lambda w: w.name)
def test_eager_workloads_are_finite_and_seeded(w: workloads.Workload) -> None:
    def run(seed: int) -> torch.Tensor:
        out = w.build(SHAPE, torch.float32, "cpu", seed)()
        first = out[0] if isinstance(out, tuple) else out
        assert isinstance(first, torch.Tensor)
        return first

    a, b, c = run(0), run(0), run(1)
    assert torch.isfinite(a).all()
    assert torch.equal(a, b), "same seed must give the same output"
    assert not torch.equal(a, c), "another seed must give other inputs"


def test_attention_matches_a_manual_causal_softmax() -> None:
    step = T.WORKLOADS[2].build(SHAPE, torch.float32, "cpu", 3)
    assert T.WORKLOADS[2].name == "transformer.attention"
    q, k, v = T._qkv(T.BlockShape.from_dims(SHAPE), torch.float32, "cpu", 3)
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    seq = q.shape[-2]
    mask = torch.ones(seq, seq, dtype=torch.bool).tril()
    ref = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1) @ v
    torch.testing.assert_close(step(), ref, rtol=1e-5, atol=1e-5)


def test_rope_is_a_rotation_and_position_zero_is_identity() -> None:
    shape = T.BlockShape.from_dims(SHAPE)
    q, k, _ = T._qkv(shape, torch.float32, "cpu", 0)
    cos, sin = T.rope_tables(shape.seq, shape.head_dim, torch.float32, "cpu")
    rq, _ = T.apply_rope(q, k, cos, sin)
    half = shape.head_dim // 2
    pair_norm = q[..., :half] ** 2 + q[..., half:] ** 2
    rpair_norm = rq[..., :half] ** 2 + rq[..., half:] ** 2
    torch.testing.assert_close(rpair_norm, pair_norm, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(rq[..., 0, :], q[..., 0, :])
    assert not torch.allclose(rq[..., 1:, :], q[..., 1:, :])
    # Relative position: <R(m)q, R(n)k> depends only on m - n.
    one = torch.zeros_like(q)
    one[..., :] = q[..., :1, :]
    ko = torch.zeros_like(k)
    ko[..., :] = k[..., :1, :]
    rq1, rk1 = T.apply_rope(one, ko, cos, sin)
    dots = (rq1[..., 3, :] * rk1[..., 1, :]).sum(-1)
    dots_shifted = (rq1[..., 5, :] * rk1[..., 3, :]).sum(-1)
    torch.testing.assert_close(dots, dots_shifted, rtol=1e-4, atol=1e-4)


def test_mlp_and_rmsnorm_match_their_formulas() -> None:
    shape = T.BlockShape.from_dims(SHAPE)
    x, p = T.make_block(shape, torch.float32, "cpu", 0)
    ref_mlp = (torch.nn.functional.silu(x @ p.w_gate.T) * (x @ p.w_up.T)) @ p.w_down.T
    torch.testing.assert_close(T.swiglu_mlp(x, p.w_gate, p.w_up, p.w_down), ref_mlp)
    ref_norm = x / torch.sqrt((x * x).mean(-1, keepdim=True) + T.EPS) * p.attn_norm
    torch.testing.assert_close(T.rmsnorm(x, p.attn_norm), ref_norm)


def test_block_backward_returns_a_gradient_for_input_and_every_weight() -> None:
    w = workloads.get("transformer.block.backward")
    step = w.build(SHAPE, torch.float32, "cpu", 0)
    with torch.no_grad():  # the profiler runs steps under no_grad; the step must cope
        out, grads = step()  # type: ignore[misc]
    shape = T.BlockShape.from_dims(SHAPE)
    x, p = T.make_block(shape, torch.float32, "cpu", 0)
    assert len(grads) == 1 + len(p.tensors())
    for g, ref in zip(grads, (x, *p.tensors()), strict=True):
        assert g.shape == ref.shape
        assert torch.isfinite(g).all()
    fwd = workloads.get("transformer.block").build(SHAPE, torch.float32, "cpu", 0)()
    torch.testing.assert_close(out, fwd)


def test_block_shape_parsing() -> None:
    assert T.BlockShape.from_dims((1, 128, 256)).heads == 4  # head size 64 below 1024
    s = T.BlockShape.from_dims((1, 2048, 4096))
    assert (s.heads, s.head_dim, s.intermediate) == (32, 128, 11008)  # LLaMA-7B
    assert T.BlockShape.from_dims((1, 8, 64, 2)).label == "1x8x64x2"
    with pytest.raises(UsageError, match="BxSxH"):
        T.BlockShape.from_dims((4, 512))
    with pytest.raises(UsageError, match="not divisible"):
        T.BlockShape.from_dims((1, 8, 64, 3))
    with pytest.raises(UsageError, match="even"):
        T.BlockShape.from_dims((1, 8, 6, 2))


def test_presets_name_real_model_sizes() -> None:
    acc = T.ACCELERATOR_PRESET
    dims = [T.BlockShape.from_dims(workloads.parse_shape(s)) for s in acc.shapes]
    assert {d.hidden for d in dims} == {4096, 8192}
    assert max(d.seq for d in dims) == 8192
    assert acc.dtype == "bfloat16"
    cpu = T.BlockShape.from_dims(workloads.parse_shape(T.CPU_PRESET.shapes[0]))
    assert (cpu.batch, cpu.seq, cpu.hidden, cpu.heads) == (1, 128, 256, 4)


@pytest.fixture(scope="session")
def compiled_block_step() -> object:
    w = workloads.get("transformer.block.compiled")
    return w.build(SHAPE, torch.float32, "cpu", 0)


@pytest.mark.slow
def test_compiled_block_matches_eager(compiled_block_step: object) -> None:
    eager = workloads.get("transformer.block").build(SHAPE, torch.float32, "cpu", 0)()
    out = compiled_block_step()  # type: ignore[operator]
    torch.testing.assert_close(out, eager, rtol=1e-4, atol=1e-4)
