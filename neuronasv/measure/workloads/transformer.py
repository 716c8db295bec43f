"""LLaMA-style decoder-block workloads: the pieces and the whole block, eager and compiled.

The seed study stopped at a 4x512 RMSNorm and asked what happens at model scale (transfer
latency, NeuronCore contention, caches). These workloads are that next step, in pure torch
so every backend runs them:

========================================  ================================================
``transformer.rmsnorm``                   LLaMA RMSNorm (float32 upcast) on (B, S, H)
``transformer.rope``                      rotary embedding applied to q and k
``transformer.attention``                 causal ``F.scaled_dot_product_attention``
``transformer.mlp``                       SwiGLU MLP: ``down(silu(gate(x)) * up(x))``
``transformer.residual``                  the residual add ``x + f(x)``
``transformer.block``                     whole pre-norm decoder block, forward
``transformer.block.compiled``            the same under ``torch.compile``
``transformer.block.backward``            forward + backward (grads of input and weights)
========================================  ================================================

Shapes are ``BxSxH`` or ``BxSxHxNH`` (batch, sequence, hidden, attention heads; the head
count defaults to H/64 below H=1024 and H/128 from there, LLaMA's head size). The MLP's
intermediate size follows LLaMA: 8/3·H rounded up to a multiple of 256 (H=4096 -> 11008).

Two presets (:data:`PRESETS`, :func:`preset_for`): ``cpu`` (:data:`CPU_PRESET`) keeps the
default suite quick on a 2-core runner (1x128x256x4, float32 — bfloat16 matmul on CPUs
without AVX512-BF16/AMX runs ~60x slower than float32 and would measure the fallback path,
not the model), and ``accelerator`` (:data:`ACCELERATOR_PRESET`) at real model sizes in
bfloat16 (hidden 4096/8192, sequence up to 8192).

Everything is seeded: inputs and weights are drawn in float32 on the CPU from an explicit
generator, then cast and moved, so every backend and dtype sees the same values.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from neuronasv.errors import UsageError
from neuronasv.measure.modules import scope
from neuronasv.measure.workloads import Workload, register
from neuronasv.measure.workloads._compile import compile_backend, compiled_skip_reason

if TYPE_CHECKING:
    import torch


__all__ = [
    "ACCELERATOR_PRESET",
    "CPU_PRESET",
    "EPS",
    "PRESETS",
    "ROPE_THETA",
    "WORKLOADS",
    "BlockParams",
    "BlockShape",
    "Preset",
    "apply_rope",
    "attention",
    "block_forward",
    "make_block",
    "preset_for",
    "rmsnorm",
    "rope_tables",
    "swiglu_mlp",
]

EPS = 1e-5  # LLaMA's rms_norm_eps
ROPE_THETA = 10000.0


@dataclass(frozen=True)
class BlockShape:
    """Dimensions of one decoder block.

    Attributes:
        batch, seq, hidden, heads: as in the shape label ``BxSxHxNH``.
    """

    batch: int
    seq: int
    hidden: int
    heads: int

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def intermediate(self) -> int:
        """LLaMA's SwiGLU width: int(8/3·H) rounded up to a multiple of 256."""
        return 256 * math.ceil(int(8 * self.hidden / 3) / 256)

    @property
    def label(self) -> str:
        return f"{self.batch}x{self.seq}x{self.hidden}x{self.heads}"

    @classmethod
    def from_dims(cls, dims: tuple[int, ...]) -> BlockShape:
        """``(B, S, H)`` or ``(B, S, H, NH)``; :class:`UsageError` says what is wrong."""
        if len(dims) == 3:
            b, s, h = dims
            heads = max(1, h // (64 if h < 1024 else 128))
        elif len(dims) == 4:
            b, s, h, heads = dims
        else:
            raise UsageError(
                f"transformer shape {'x'.join(map(str, dims))!r}: expected BxSxH or BxSxHxNH"
                " (batch, sequence, hidden, heads), e.g. 1x128x256x4"
            )
        if h % heads:
            raise UsageError(f"transformer shape: hidden {h} is not divisible by {heads} heads")
        if (h // heads) % 2:
            raise UsageError(
                f"transformer shape: head size {h // heads} must be even for rotary embedding"
            )
        return cls(b, s, h, heads)


@dataclass(frozen=True)
class Preset:
    """A named set of shapes and the dtype they are meant for."""

    name: str
    shapes: tuple[str, ...]
    dtype: str
    description: str


#: The default suite here (the CPU).
CPU_PRESET = Preset(
    "cpu",
    ("1x128x256x4",),
    "float32",
    "tiny block for 2-core CI runners (bf16 matmul on such CPUs is a slow fallback)",
)
#: Real model sizes (H100/H200, Trn1/2).
ACCELERATOR_PRESET = Preset(
    "accelerator",
    ("1x2048x4096x32", "1x8192x4096x32", "1x4096x8192x64"),
    "bfloat16",
    "LLaMA-7B/70B-like widths (hidden 4096/8192), sequence up to 8192",
)
PRESETS: tuple[Preset, ...] = (CPU_PRESET, ACCELERATOR_PRESET)


def preset_for(accelerator: bool) -> Preset:
    """The preset of a backend: :data:`ACCELERATOR_PRESET` on an accelerator
    (``Backend.accelerator``, :func:`neuronasv.measure.backends.is_accelerator`), else
    :data:`CPU_PRESET`."""
    return ACCELERATOR_PRESET if accelerator else CPU_PRESET


# --- the model pieces (pure torch) ------------------------------------------------------


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = EPS) -> torch.Tensor:
    """LLaMA's RMSNorm: normalise in float32, cast back, scale by ``weight``."""
    import torch

    dtype = x.dtype
    xf = x.to(torch.float32)
    var = xf.pow(2).mean(-1, keepdim=True)
    return weight * (xf * torch.rsqrt(var + eps)).to(dtype)


def rope_tables(
    seq: int, head_dim: int, dtype: torch.dtype, device: str
) -> tuple[torch.Tensor, torch.Tensor]:
    """``cos``/``sin`` tables (seq, head_dim) for positions 0..seq-1, built in float32."""
    import torch

    inv_freq = 1.0 / (
        ROPE_THETA ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
    )
    freqs = torch.outer(torch.arange(seq, dtype=torch.float32), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dtype).to(device), emb.sin().to(dtype).to(device)


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    import torch

    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def apply_rope(
    q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Rotary position embedding on (B, NH, S, D) ``q`` and ``k`` (rotate-half form)."""
    return q * cos + _rotate_half(q) * sin, k * cos + _rotate_half(k) * sin


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Causal scaled-dot-product attention on (B, NH, S, D) tensors."""
    import torch.nn.functional as F

    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def swiglu_mlp(
    x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, w_down: torch.Tensor
) -> torch.Tensor:
    """LLaMA's MLP: ``down(silu(gate(x)) * up(x))`` (weights in ``F.linear`` layout)."""
    import torch.nn.functional as F

    return F.linear(F.silu(F.linear(x, w_gate)) * F.linear(x, w_up), w_down)


@dataclass(frozen=True)
class BlockParams:
    """Weights of one decoder block, ``F.linear`` layout (out_features, in_features)."""

    attn_norm: torch.Tensor
    wq: torch.Tensor
    wk: torch.Tensor
    wv: torch.Tensor
    wo: torch.Tensor
    mlp_norm: torch.Tensor
    w_gate: torch.Tensor
    w_up: torch.Tensor
    w_down: torch.Tensor

    def tensors(self) -> tuple[torch.Tensor, ...]:
        return (self.attn_norm, self.wq, self.wk, self.wv, self.wo,
                self.mlp_norm, self.w_gate, self.w_up, self.w_down)


def block_forward(
    x: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    heads: int,
    *weights: torch.Tensor,
) -> torch.Tensor:
    """One pre-norm LLaMA decoder block: ``h = x + attn(norm(x)); h + mlp(norm(h))``.

    Weights are passed flat (the order of :meth:`BlockParams.tensors`) so that
    ``torch.compile`` sees plain tensor inputs and one compiled graph serves every build
    with the same shapes.

    Module scopes (:mod:`neuronasv.measure.modules`): ``block`` with ``block.attn_norm``,
    ``block.attn`` (q/k/v/o projections, rotary, attention, residual add),
    ``block.mlp_norm`` and ``block.mlp`` (SwiGLU and its residual add). Under
    ``torch.compile`` the scopes are left out (dynamo drops them; the kernels fuse across
    them); in ``transformer.block.backward`` they cover the forward, and the backward's
    ops stay at the workload root.
    """
    import torch.nn.functional as F

    attn_norm, wq, wk, wv, wo, mlp_norm, w_gate, w_up, w_down = weights
    b, s, hidden = x.shape
    d = hidden // heads
    with scope("block"):
        with scope("attn_norm"):
            hn = rmsnorm(x, attn_norm)
        with scope("attn"):
            q = F.linear(hn, wq).view(b, s, heads, d).transpose(1, 2)
            k = F.linear(hn, wk).view(b, s, heads, d).transpose(1, 2)
            v = F.linear(hn, wv).view(b, s, heads, d).transpose(1, 2)
            q, k = apply_rope(q, k, cos, sin)
            a = attention(q, k, v).transpose(1, 2).reshape(b, s, hidden)
            h = x + F.linear(a, wo)  # the residual add belongs to its sub-layer
        with scope("mlp_norm"):
            hn = rmsnorm(h, mlp_norm)
        with scope("mlp"):
            return h + swiglu_mlp(hn, w_gate, w_up, w_down)


# --- seeded construction ----------------------------------------------------------------


def _randn(gen: Any, shape: tuple[int, ...], scale: float, dtype: Any, device: str) -> Any:
    import torch

    t = torch.randn(shape, generator=gen, dtype=torch.float32) * scale
    return t.to(dtype=dtype).to(device)


def make_block(
    shape: BlockShape, dtype: torch.dtype, device: str, seed: int
) -> tuple[torch.Tensor, BlockParams]:
    """Seeded input (B, S, H) and block weights (N(0, 1/fan_in) so activations stay O(1))."""
    import torch

    gen = torch.Generator(device="cpu").manual_seed(seed)
    h, i = shape.hidden, shape.intermediate
    x = _randn(gen, (shape.batch, shape.seq, h), 1.0, dtype, device)

    def norm_w() -> Any:
        return (1.0 + 0.1 * torch.randn(h, generator=gen, dtype=torch.float32)).to(
            dtype=dtype).to(device)

    def lin(out_f: int, in_f: int) -> Any:
        return _randn(gen, (out_f, in_f), 1.0 / math.sqrt(in_f), dtype, device)

    params = BlockParams(
        attn_norm=norm_w(), wq=lin(h, h), wk=lin(h, h), wv=lin(h, h), wo=lin(h, h),
        mlp_norm=norm_w(), w_gate=lin(i, h), w_up=lin(i, h), w_down=lin(h, i),
    )
    return x, params


def _qkv(shape: BlockShape, dtype: Any, device: str, seed: int) -> tuple[Any, Any, Any]:
    import torch

    gen = torch.Generator(device="cpu").manual_seed(seed)
    dims = (shape.batch, shape.heads, shape.seq, shape.head_dim)
    q, k, v = (_randn(gen, dims, 1.0, dtype, device) for _ in range(3))
    return q, k, v


Build = Callable[[tuple[int, ...], Any, str, int], Callable[[], object]]


def _build_rmsnorm(
    dims: tuple[int, ...], dtype: Any, device: str, seed: int
) -> Callable[[], object]:
    shape = BlockShape.from_dims(dims)
    x, p = make_block(shape, dtype, device, seed)
    return lambda: rmsnorm(x, p.attn_norm)


def _build_rope(dims: tuple[int, ...], dtype: Any, device: str, seed: int) -> Callable[[], object]:
    shape = BlockShape.from_dims(dims)
    q, k, _ = _qkv(shape, dtype, device, seed)
    cos, sin = rope_tables(shape.seq, shape.head_dim, dtype, device)
    return lambda: apply_rope(q, k, cos, sin)


def _build_attention(
    dims: tuple[int, ...], dtype: Any, device: str, seed: int
) -> Callable[[], object]:
    shape = BlockShape.from_dims(dims)
    q, k, v = _qkv(shape, dtype, device, seed)
    return lambda: attention(q, k, v)


def _build_mlp(dims: tuple[int, ...], dtype: Any, device: str, seed: int) -> Callable[[], object]:
    shape = BlockShape.from_dims(dims)
    x, p = make_block(shape, dtype, device, seed)
    return lambda: swiglu_mlp(x, p.w_gate, p.w_up, p.w_down)


def _build_residual(
    dims: tuple[int, ...], dtype: Any, device: str, seed: int
) -> Callable[[], object]:
    shape = BlockShape.from_dims(dims)
    import torch

    gen = torch.Generator(device="cpu").manual_seed(seed)
    x = _randn(gen, (shape.batch, shape.seq, shape.hidden), 1.0, dtype, device)
    y = _randn(gen, (shape.batch, shape.seq, shape.hidden), 1.0, dtype, device)
    return lambda: x + y


def _build_block(dims: tuple[int, ...], dtype: Any, device: str, seed: int) -> Callable[[], object]:
    import torch

    shape = BlockShape.from_dims(dims)
    x, p = make_block(shape, dtype, device, seed)
    cos, sin = rope_tables(shape.seq, shape.head_dim, dtype, device)
    weights = p.tensors()

    def step() -> object:
        with torch.no_grad():
            return block_forward(x, cos, sin, shape.heads, *weights)

    return step



def _build_block_compiled(
    dims: tuple[int, ...], dtype: Any, device: str, seed: int
) -> Callable[[], object]:
    import torch

    shape = BlockShape.from_dims(dims)
    x, p = make_block(shape, dtype, device, seed)
    cos, sin = rope_tables(shape.seq, shape.head_dim, dtype, device)
    weights = p.tensors()
    compiled = torch.compile(
        block_forward, backend=compile_backend(device), fullgraph=True, dynamic=False
    )

    def step() -> object:
        with torch.no_grad():
            return compiled(x, cos, sin, shape.heads, *weights)

    return step


def _build_block_backward(
    dims: tuple[int, ...], dtype: Any, device: str, seed: int
) -> Callable[[], object]:
    import torch

    shape = BlockShape.from_dims(dims)
    x, p = make_block(shape, dtype, device, seed)
    cos, sin = rope_tables(shape.seq, shape.head_dim, dtype, device)
    x.requires_grad_(True)
    weights = tuple(w.requires_grad_(True) for w in p.tensors())
    gen = torch.Generator(device="cpu").manual_seed(seed + 1)
    grad_out = _randn(gen, tuple(x.shape), 1.0, dtype, device)
    inputs = (x, *weights)

    def step() -> object:
        # The profiler loop runs steps under no_grad; this workload needs a graph.
        with torch.enable_grad():
            out = block_forward(x, cos, sin, shape.heads, *weights)
            # autograd.grad returns fresh gradients instead of accumulating into .grad, so
            # every iteration does the same work (no growing add_ chain, no zeroing op).
            grads = torch.autograd.grad(out, inputs, grad_out)
        return out.detach(), grads

    return step



def _workload(name: str, description: str, build: Build, *, compiled: bool = False) -> Workload:
    return register(
        Workload(
            name=name,
            description=description,
            default_shape=CPU_PRESET.shapes[0],
            build_fn=build,
            compiled=compiled,
            tags=("transformer", "causal-attention"),  # roofline.CAUSAL_TAG
            skip_fn=compiled_skip_reason if compiled else None,
            default_dtype=CPU_PRESET.dtype,
        )
    )


#: The registered transformer workloads, in suite order.
WORKLOADS: tuple[Workload, ...] = (
    _workload("transformer.rmsnorm", "LLaMA RMSNorm (float32 upcast) on BxSxH",
              _build_rmsnorm),
    _workload("transformer.rope", "rotary position embedding on q and k (rotate-half)",
              _build_rope),
    _workload("transformer.attention", "causal scaled_dot_product_attention on q, k, v",
              _build_attention),
    _workload("transformer.mlp", "SwiGLU MLP: down(silu(gate(x)) * up(x))", _build_mlp),
    _workload("transformer.residual", "residual add x + f(x) on BxSxH", _build_residual),
    _workload("transformer.block", "pre-norm LLaMA decoder block, forward", _build_block),
    _workload("transformer.block.compiled",
              "decoder block forward under torch.compile (fullgraph, static shapes)",
              _build_block_compiled, compiled=True),
    _workload("transformer.block.backward",
              "decoder block forward + backward (grads of input and all weights)",
              _build_block_backward),
)
