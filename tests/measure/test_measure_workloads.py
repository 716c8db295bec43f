"""Workload registry, shape/dtype parsing, and the RMSNorm variants' numerics."""

from __future__ import annotations

import pytest
import torch

from neuronasv.errors import UsageError
from neuronasv.measure import workloads
from neuronasv.measure.backends.cpu import CpuBackend
from neuronasv.measure.workloads import Workload, parse_dtype, parse_shape


def test_registry_has_the_three_rmsnorm_variants() -> None:
    names = workloads.names()
    for variant in ("naive", "fused", "compiled"):
        assert f"rmsnorm.{variant}" in names
        w = workloads.get(f"rmsnorm.{variant}")
        assert w.default_shape == "4x512" and "rmsnorm" in w.tags
    assert workloads.get("rmsnorm.compiled").compiled is True
    assert workloads.get("rmsnorm.naive").compiled is False


def test_unknown_workload_lists_known_ones() -> None:
    with pytest.raises(UsageError, match=r"unknown workload 'rmsnorm\.nope'.*rmsnorm\.naive"):
        workloads.get("rmsnorm.nope")


def test_register_refuses_a_second_workload_of_the_same_name() -> None:
    twin = Workload(
        name="rmsnorm.naive", description="x", default_shape="4", build_fn=lambda *a: lambda: None
    )
    with pytest.raises(ValueError, match="already registered"):
        workloads.register(twin)
    workloads.register(workloads.get("rmsnorm.naive"))  # re-import of the same object is fine


@pytest.mark.parametrize(
    ("text", "dims"), [("4x512", (4, 512)), ("8x1024x4096", (8, 1024, 4096)), (" 7 ", (7,))]
)
def test_parse_shape(text: str, dims: tuple[int, ...]) -> None:
    assert parse_shape(text) == dims


@pytest.mark.parametrize("text", ["", "4x", "x4", "4x0", "-4x2", "4*512", "a", "1x99999999999"])
def test_parse_shape_rejects(text: str) -> None:
    with pytest.raises(UsageError, match="shape"):
        parse_shape(text)


@pytest.mark.parametrize(
    ("text", "dtype"),
    [
        ("bfloat16", torch.bfloat16),
        ("bf16", torch.bfloat16),
        ("FP32", torch.float32),
        ("torch.float16", torch.float16),
    ],
)
def test_parse_dtype(text: str, dtype: torch.dtype) -> None:
    assert parse_dtype(text) is dtype
    assert workloads.dtype_name(text) == str(dtype).removeprefix("torch.")


def test_parse_dtype_rejects() -> None:
    with pytest.raises(UsageError, match="unknown dtype 'int4'"):
        parse_dtype("int4")


def _reference(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    x64, w64 = x.double(), w.double()
    return x64 * torch.rsqrt((x64 * x64).mean(-1, keepdim=True) + 1e-6) * w64


# bf16 has 8 bits of mantissa: a few ulps (2**-7 each) of disagreement between an
# op-by-op bf16 computation and a float32-accumulating fused kernel is expected.
TOLERANCE = {torch.bfloat16: (3e-2, 3e-2), torch.float32: (1e-5, 1e-5)}


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("shape", [(4, 512), (2, 3, 64)])
def test_eager_variants_agree(dtype: torch.dtype, shape: tuple[int, ...]) -> None:
    from neuronasv.measure.workloads.rmsnorm import make_inputs

    x, w = make_inputs(shape, dtype, "cpu", 0)
    ref = _reference(x, w)
    rtol, atol = TOLERANCE[dtype]
    for name in ("rmsnorm.naive", "rmsnorm.fused"):
        out = workloads.get(name).build(shape, dtype, "cpu", 0)()
        assert isinstance(out, torch.Tensor) and out.dtype == dtype and out.shape == shape
        torch.testing.assert_close(out.double(), ref, rtol=rtol, atol=atol)


@pytest.mark.slow
def test_compiled_agrees_with_naive_and_fused(cpu_profiles: object) -> None:
    # Shares the session's compiled graph (the fixture compiled the same shape and dtype).
    shape, dtype = (4, 512), torch.bfloat16
    outs = {}
    with torch.no_grad():
        for name in ("rmsnorm.naive", "rmsnorm.fused", "rmsnorm.compiled"):
            outs[name] = workloads.get(name).build(shape, dtype, "cpu", 0)()
    rtol, atol = TOLERANCE[dtype]
    for name in ("rmsnorm.fused", "rmsnorm.compiled"):
        torch.testing.assert_close(outs[name], outs["rmsnorm.naive"], rtol=rtol, atol=atol)


def test_inputs_are_seeded_and_identical_across_variants() -> None:
    from neuronasv.measure.workloads.rmsnorm import make_inputs

    a = make_inputs((4, 8), torch.float32, "cpu", 3)
    b = make_inputs((4, 8), torch.float32, "cpu", 3)
    c = make_inputs((4, 8), torch.float32, "cpu", 4)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[0], c[0])


def test_compiled_skips_without_a_cxx_compiler(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setenv("CXX", "g++")
    reason = workloads.get("rmsnorm.compiled").skip_reason(CpuBackend())
    assert reason is not None and "C++ compiler" in reason
    assert workloads.get("rmsnorm.naive").skip_reason(CpuBackend()) is None
