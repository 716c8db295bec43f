"""A simulated NeuronCore behind device ``neuron`` (stand-in TorchNeuron, tests only).

PyTorch's Python PrivateUse1 backend (``torch.utils.backend_registration.
_setup_privateuseone_for_python_backend``) named ``neuron``: a tensor on it wraps a CPU
tensor; each op runs the CPU kernel under ``torch._C._autograd._enable_record_function
(False)`` so the profiler records the ``neuron`` op once, as it would a real backend's,
with no device time in ``key_averages()`` — what the public TorchNeuron does. Ops that
compute are logged as executions (:data:`LOG`) for the stand-in profiler to write as the
session's NTFF (tests/neuron/ntff.py): eager, one NEFF per (op, shapes, dtype).
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils.backend_registration import _setup_privateuseone_for_python_backend

#: Executions since the last export: ``(op, numel, signature)``.
LOG: list[tuple[str, int, str]] = []
#: Functional ops with a kernel of their own here (a "NEFF" each); the rest go through the
#: fallback without being an execution (allocation, views, copies).
KERNELS = (
    "mul.Tensor",
    "add.Tensor",
    "mean.dim",
    "rsqrt",
    "pow.Tensor_Scalar",
    "mm",
    "_fused_rms_norm",
)


class _Module:
    """``torch.neuron``."""

    def is_available(self) -> bool:
        return True

    def device_count(self) -> int:
        return 1

    def current_device(self) -> int:
        return 0

    def is_initialized(self) -> bool:
        return True

    def _is_in_bad_fork(self) -> bool:
        return False

    def manual_seed_all(self, seed: int) -> None:
        pass

    def synchronize(self, device: Any = None) -> None:
        pass

    def get_amp_supported_dtype(self) -> list[torch.dtype]:
        return [torch.float16, torch.bfloat16]


class NeuronTensor(torch.Tensor):
    inner: torch.Tensor

    @staticmethod
    def __new__(cls, inner: torch.Tensor) -> NeuronTensor:
        res = torch._C._acc.create_empty_tensor(tuple(inner.shape), inner.dtype)
        res.__class__ = NeuronTensor
        return res  # type: ignore[no-any-return]

    def __init__(self, inner: torch.Tensor) -> None:
        self.inner = inner


def _unwrap(a: Any) -> Any:
    if isinstance(a, NeuronTensor):
        return a.inner
    if isinstance(a, (list, tuple)):
        return type(a)(_unwrap(x) for x in a)
    return a


def _cpu(op: Any, args: Any, kwargs: dict[str, Any]) -> Any:
    torch._C._autograd._enable_record_function(False)
    try:
        return op(*_unwrap(args), **{k: _unwrap(v) for k, v in kwargs.items()})
    finally:
        torch._C._autograd._enable_record_function(True)


def _wrap(out: Any, ins: list[NeuronTensor]) -> Any:
    if isinstance(out, (tuple, list)):
        return type(out)(_wrap(o, ins) for o in out)
    if isinstance(out, torch.Tensor):
        for a in ins:
            if out is a.inner:
                return a
        return NeuronTensor(out)
    return out


def _numel(args: Any, out: Any) -> int:
    sizes = [a.numel() for a in (*_unwrap(list(args)), out) if isinstance(a, torch.Tensor)]
    return max(sizes, default=1)


def _signature(args: Any) -> str:
    return ";".join(
        f"{a.dtype}{list(a.shape)}" for a in _unwrap(list(args)) if isinstance(a, torch.Tensor)
    )


def _kernel(op: Any) -> Any:
    short = op._schema.name.split("::", 1)[1]

    def kernel(*args: Any, **kwargs: Any) -> Any:
        ins = [a for a in args if isinstance(a, NeuronTensor)]
        out = _cpu(op, args, kwargs)
        first = out[0] if isinstance(out, (tuple, list)) else out
        LOG.append(
            (short.lstrip("_").removeprefix("fused_"), _numel(args, first), _signature(args))
        )
        return _wrap(out, ins)

    return kernel


def _fallback(op: Any, *args: Any, **kwargs: Any) -> Any:
    name = op._schema.name.split("::", 1)[1]
    if name in ("_copy_from", "_copy_from_and_resize"):
        src, dst = args[0], args[1]
        if isinstance(dst, NeuronTensor):
            if name.endswith("resize"):
                dst.inner.resize_(_unwrap(src).shape)
            dst.inner.copy_(_unwrap(src))
            return dst
        return dst.copy_(_unwrap(src))
    device = kwargs.get("device")
    to_neuron = device is not None and torch.device(device).type == "neuron"
    if to_neuron:
        kwargs = dict(kwargs, device="cpu")
    ins = [a for a in args if isinstance(a, NeuronTensor)]
    out = _cpu(op, args, kwargs)
    if to_neuron or (ins and device is None):
        return _wrap(out, ins)
    return out


def install() -> None:
    """Name PrivateUse1 ``neuron`` and give it the kernels above (once per process)."""
    _setup_privateuseone_for_python_backend("neuron", backend_module=_Module())
    lib = torch.library.Library("_", "IMPL")
    lib.fallback(_fallback, dispatch_key="PrivateUse1")
    aten = torch.library.Library("aten", "IMPL")
    for name in KERNELS:
        base, _, overload = name.partition(".")
        op = getattr(getattr(torch.ops.aten, base), overload or "default")
        aten.impl(name, _kernel(op), "PrivateUse1")
    _LIBS.extend([lib, aten])


_LIBS: list[Any] = []
