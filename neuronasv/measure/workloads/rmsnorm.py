"""The seed study's three RMSNorm variants, on identical seeded inputs.

- ``rmsnorm.naive``: separate ATen ops — ``x*x``, mean over the last dim, ``+ eps``,
  ``rsqrt``, ``x*rms``, ``*weight`` (three ``aten::mul`` per call, as in the seed).
- ``rmsnorm.fused``: ``torch.rms_norm`` (one fused op where the backend has a kernel).
- ``rmsnorm.compiled``: ``torch.compile`` of the naive function (``backend="neuron"`` on
  Trainium, Inductor elsewhere; full graph, static shapes).

All three normalise over the last dimension of the given shape, so ``4x512`` and
``8x1024x4096`` both work.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from neuronasv.measure.workloads import Workload, register
from neuronasv.measure.workloads._compile import compile_backend, compiled_skip_reason

if TYPE_CHECKING:
    import torch


__all__ = ["COMPILED", "EPS", "FUSED", "NAIVE", "make_inputs", "rmsnorm_fused", "rmsnorm_naive"]

EPS = 1e-6


def rmsnorm_naive(x: torch.Tensor, weight: torch.Tensor, eps: float = EPS) -> torch.Tensor:
    """RMSNorm from separate ATen ops (the seed's naive variant)."""
    import torch

    sq = x * x  # aten::mul (1)
    mean_sq = sq.mean(dim=-1, keepdim=True)  # aten::mean
    # ``+ eps`` with a Python scalar: on Neuron this is the host-to-device copy the seed saw.
    rms = torch.rsqrt(mean_sq + eps)  # aten::add, aten::rsqrt
    return x * rms * weight  # aten::mul (2), aten::mul (3)


def rmsnorm_fused(x: torch.Tensor, weight: torch.Tensor, eps: float = EPS) -> torch.Tensor:
    """RMSNorm as one ``torch.rms_norm`` call."""
    import torch

    return torch.rms_norm(x, (x.shape[-1],), weight, eps)


def make_inputs(
    shape: tuple[int, ...], dtype: torch.dtype, device: str, seed: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Seeded ``x`` (``shape``) and ``weight`` (last dim), identical for every variant.

    Drawn in float32 on the CPU with an explicit generator, then cast and moved, so the
    values do not depend on the device's RNG or on the dtype's sampling path.
    """
    import torch

    gen = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(shape, generator=gen, dtype=torch.float32)
    weight = 1.0 + 0.1 * torch.randn(shape[-1], generator=gen, dtype=torch.float32)
    return x.to(dtype=dtype).to(device), weight.to(dtype=dtype).to(device)


def _bind(
    fn: Callable[..., Any],
) -> Callable[[tuple[int, ...], Any, str, int], Callable[[], object]]:
    def build(shape: tuple[int, ...], dtype: Any, device: str, seed: int) -> Callable[[], object]:
        x, weight = make_inputs(shape, dtype, device, seed)

        def step() -> object:
            return fn(x, weight, EPS)

        return step

    return build



def _build_compiled(
    shape: tuple[int, ...], dtype: Any, device: str, seed: int
) -> Callable[[], object]:
    import torch

    compiled = torch.compile(
        rmsnorm_naive, backend=compile_backend(device), fullgraph=True, dynamic=False
    )
    x, weight = make_inputs(shape, dtype, device, seed)

    def step() -> object:
        return compiled(x, weight, EPS)

    return step



NAIVE = register(
    Workload(
        name="rmsnorm.naive",
        description="RMSNorm from separate ATen ops (x*x, mean, +eps, rsqrt, *rms, *weight)",
        default_shape="4x512",
        build_fn=_bind(rmsnorm_naive),
        tags=("rmsnorm",),
    )
)
FUSED = register(
    Workload(
        name="rmsnorm.fused",
        description="RMSNorm as one torch.rms_norm call",
        default_shape="4x512",
        build_fn=_bind(rmsnorm_fused),
        tags=("rmsnorm",),
    )
)
COMPILED = register(
    Workload(
        name="rmsnorm.compiled",
        description="torch.compile of the naive RMSNorm (fullgraph, static shapes)",
        default_shape="4x512",
        build_fn=_build_compiled,
        compiled=True,
        tags=("rmsnorm",),
        skip_fn=compiled_skip_reason,
    )
)
