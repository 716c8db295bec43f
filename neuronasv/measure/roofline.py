"""Roofline: FLOPs and bytes per op from input shapes, and the fraction of the device's peak.

For every profiled op we estimate the work it must do — floating-point operations and the
bytes it must move between main memory and the chip (reads + writes, each tensor once) —
from the shapes and dtypes the profiler records (``record_shapes=True``), and compare the
op's measured self device time with the time the device would need at its peak:

    ideal_time = max(sum_dtype(flops_dtype / peak_flops_dtype), bytes / peak_bandwidth)
    roofline_fraction = ideal_time / measured_time

so an op that is memory-bound reports its fraction of peak bandwidth, a compute-bound one
its fraction of peak FLOP/s ("aten::mul at 31 % of HBM peak"). ``None`` means unknown: an
op this module has no formula for, an op whose work is done by child ops (``aten::linear``
delegates to ``aten::mm``), or an op with zero time or zero work.

Formulas (per call):
  * elementwise (``add``, ``mul``, ``silu``, ...): 1 FLOP per output element; bytes = every
    tensor input + the output (broadcast shape). Copies/fills move bytes with 0 FLOPs.
  * reductions (``sum``, ``amax``, ...): 1 FLOP per input element; bytes = input + output.
  * softmax: 5 FLOPs per element; bytes = input + output.
  * matmul family (``mm``, ``addmm``, ``bmm``, ``baddbmm``, ``matmul``, ``linear``):
    2·M·K·N per batch; bytes = both operands (+ bias) + output. When the profiler's
    ``with_flops`` count is non-zero for an event it is used for FLOPs (they agree; tested).
  * scaled-dot-product attention (forward kernels of every backend): 4·B·H·L·S·E, scaled
    by the share of (query, key) pairs a causal mask keeps; bytes = q + k + v + output
    (the FlashAttention ideal, no L×S matrix in memory). Backward: 2.5× the forward FLOPs.
    The flag is read from the recorded concrete inputs; when the profiler recorded none,
    a workload tagged :data:`CAUSAL_TAG` is assumed causal and the label says so
    ("assumed causal"). Covered: ``scaled_dot_product_attention``, the flash /
    efficient / cuDNN / CPU-flash / MPS / "overrideable" kernels and their backwards.
  * compiled Triton kernels (``triton_per_fused_...``: inductor's ``_RecordFunctionFast``
    launch events, whose recorded inputs are the kernel's arguments): bytes = every tensor
    argument once, ``in_out_ptr`` arguments twice (read + write); FLOPs unknown, so the
    fraction is of peak *bandwidth* and labelled "bandwidth only, FLOPs unknown" (a lower
    bound). See :func:`triton_kernel_cost`.
  * RMSNorm / LayerNorm fused kernels: 4 (8) FLOPs per element; bytes = input + weight
    (+ bias) + output.
  * views and allocations (``view``, ``transpose``, ``empty``, ...): 0 FLOPs, 0 bytes.

Bytes assume each tensor crosses the memory boundary once: caches make small working sets
faster than that (fractions above 1.0 on the CPU preset mean "served from cache"), and
unfused chains re-read what a fused kernel would keep on chip — which is exactly what the
fraction is meant to show.

"Self" semantics: like self time, an op's FLOPs/bytes are counted on the innermost op that
does the work. An event is treated as a composite (its children carry the cost) when its
descendants already account for more than 10 % of its own FLOPs — or, for ops that only
move data, of its own bytes. See :func:`costs_from_events`.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from neuronasv import dtypes
from neuronasv.errors import UsageError
from neuronasv.measure.opnames import carries_no_work, is_host_event

__all__ = [
    "ASSUMED_CAUSAL",
    "BANDWIDTH_ONLY",
    "CAUSAL_TAG",
    "OpCost",
    "costs_from_events",
    "dtype_label",
    "is_triton_kernel",
    "op_cost",
    "triton_in_out_count",
    "triton_kernel_cost",
]

# --- dtypes (names and element sizes: neuronasv.dtypes) ---------------------------------


def dtype_label(dtype: Any) -> str:
    """Normalise a dtype (``torch.bfloat16``, ``"c10::BFloat16"``, ``"bfloat16"``) to a label."""
    return dtypes.label(dtype)


# --- per-op cost ------------------------------------------------------------------------


@dataclass(frozen=True)
class OpCost:
    """Work of one op per iteration (or per call, from :func:`op_cost`).

    Attributes:
        flops: floating-point operations, or None when unknown.
        bytes: bytes moved to/from main memory (reads + writes), or None when unknown.
        flops_by_dtype: FLOPs split by the dtype they run in (for the dtype's peak).
        notes: assumptions the estimate rests on, for people (``"assumed causal"``).
    """

    flops: float | None
    bytes: float | None
    flops_by_dtype: Mapping[str, float] = field(default_factory=dict, hash=False)
    notes: tuple[str, ...] = ()

    @property
    def known(self) -> bool:
        return self.flops is not None or self.bytes is not None


_UNKNOWN = OpCost(None, None)
_ZERO = OpCost(0.0, 0.0)


def _ops(text: str) -> frozenset[str]:
    return frozenset(text.split())


_ELEMENTWISE_1 = _ops(
    """
    add sub mul div true_divide pow rsqrt sqrt exp exp2 log log2 log1p expm1 neg reciprocal
    silu sigmoid tanh relu gelu sin cos abs sign maximum minimum where clamp clamp_min
    clamp_max addcmul addcdiv lerp square rsub erf softplus hardtanh leaky_relu elu mish
    floor ceil round trunc frac fmod remainder floor_divide eq ne gt lt ge le logical_not
    logical_and logical_or bitwise_and bitwise_or bitwise_not masked_fill mul_ add_
    silu_backward sigmoid_backward tanh_backward gelu_backward threshold_backward
    hardtanh_backward pow_backward
    """
)
_REDUCTIONS = _ops(
    """
    sum mean amax amin max min prod norm linalg_vector_norm var std var_mean std_mean
    logsumexp any all argmax argmin
    """
)
_SOFTMAX = _ops(
    """
    softmax _softmax log_softmax _log_softmax
    """
)
_SOFTMAX_BWD = _ops(
    """
    _softmax_backward_data _log_softmax_backward_data
    """
)

# Attention entry points: name -> (layout, index of is_causal in the arguments, causal
# value meaning "causal", backward?). Layout "bhle" = (batch, heads, seq, head_dim) as in
# F.scaled_dot_product_attention; "blhe" = (batch, seq, heads, head_dim) as the flash /
# memory-efficient CUDA kernels take it. Indices follow the ATen schemas
# (aten/src/ATen/native/native_functions.yaml).
_ATTENTION: dict[str, tuple[str, int, Any, bool]] = {
    "scaled_dot_product_attention": ("bhle", 5, True, False),
    "_scaled_dot_product_attention_math": ("bhle", 5, True, False),
    "_scaled_dot_product_flash_attention": ("bhle", 4, True, False),
    "_scaled_dot_product_flash_attention_for_cpu": ("bhle", 4, True, False),
    "_scaled_dot_product_efficient_attention": ("bhle", 6, True, False),
    "_scaled_dot_product_cudnn_attention": ("bhle", 6, True, False),
    "_flash_attention_forward": ("blhe", 8, True, False),
    "_efficient_attention_forward": ("blhe", 9, 1, False),
    "_scaled_dot_product_flash_attention_backward": ("bhle", 11, True, True),
    "_scaled_dot_product_flash_attention_for_cpu_backward": ("bhle", 7, True, True),
    "_scaled_dot_product_efficient_attention_backward": ("bhle", 11, True, True),
    "_scaled_dot_product_cudnn_attention_backward": ("bhle", 14, True, True),
    "_flash_attention_backward": ("blhe", 11, True, True),
    "_efficient_attention_backward": ("blhe", 14, 1, True),
    # cuDNN (what SDPA picks on Hopper for bf16), the out-of-tree "overrideable" backend
    # and MPS; schemas read from torch 2.13's ``torch.ops.aten.<name>.default._schema``.
    "_cudnn_attention_forward": ("bhle", 10, True, False),
    "_cudnn_attention_backward": ("bhle", 14, True, True),
    "_scaled_dot_product_fused_attention_overrideable": ("bhle", 5, True, False),
    "_scaled_dot_product_fused_attention_overrideable_backward": ("bhle", 13, True, True),
    "_scaled_dot_product_attention_math_for_mps": ("bhle", 5, True, False),
}

#: Workload tag: any attention the workload runs is causal (``is_causal=True``; vacuous for
#: a workload without attention), used when the profiler did not record the flag.
CAUSAL_TAG = "causal-attention"
#: Note on an attention cost whose causal mask was not recorded but whose workload is
#: causal (:func:`op_cost` ``assume_causal``).
ASSUMED_CAUSAL = "assumed causal"
#: Label of a fraction computed from bytes alone (the kernel's FLOPs are unknown): the
#: share of peak *bandwidth*, a lower bound of the fraction of the true roof.
BANDWIDTH_ONLY = "bandwidth only, FLOPs unknown"


@dataclass(frozen=True)
class _Tensor:
    shape: tuple[int, ...]
    dtype: str
    itemsize: int

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.numel * self.itemsize


def _tensors(
    input_shapes: Sequence[Any], input_dtypes: Sequence[str] | None, default: str
) -> list[_Tensor | None]:
    """One entry per argument: a tensor, or None for a non-tensor argument."""
    out: list[_Tensor | None] = []
    dsize = dtypes.element_size(default) or 4
    for i, shape in enumerate(input_shapes):
        raw = input_dtypes[i] if input_dtypes is not None and i < len(input_dtypes) else None
        if isinstance(shape, (list, tuple)) and shape and isinstance(shape[0], (list, tuple)):
            # A TensorList argument (cat/stack): keep the first; callers needing all read
            # them through _tensor_list.
            shape = shape[0]
        if not isinstance(shape, (list, tuple)) or not all(isinstance(d, int) for d in shape):
            out.append(None)
            continue
        if raw is not None:
            size = dtypes.element_size(raw)
            if size is None:  # "Scalar", "ScalarList", "" ...: not a tensor
                out.append(None)
                continue
            out.append(_Tensor(tuple(shape), dtypes.label(raw), size))
        elif shape:
            out.append(_Tensor(tuple(shape), dtype_label(default), dsize))
        else:
            out.append(None)  # without dtypes a [] is a scalar argument
    return out


def _broadcast(shapes: Iterable[tuple[int, ...]]) -> tuple[int, ...] | None:
    result: list[int] = []
    for shape in shapes:
        for i in range(1, len(shape) + 1):
            d = shape[-i]
            if i > len(result):
                result.insert(0, d)
            elif result[-i] == 1:
                result[-i] = d
            elif d not in (1, result[-i]):
                return None
    return tuple(result)


def _concrete(concrete_inputs: Sequence[Any] | None, index: int) -> Any:
    if concrete_inputs is None or index >= len(concrete_inputs):
        return None
    return concrete_inputs[index]


def _cost(flops: float, nbytes: float, dtype: str) -> OpCost:
    return OpCost(float(flops), float(nbytes), {dtype: float(flops)} if flops else {})


def _mm(t: list[_Tensor]) -> OpCost | None:
    a, b = t[0], t[1]
    if len(a.shape) != 2 or len(b.shape) != 2:
        return None
    m, k, n = a.shape[0], a.shape[1], b.shape[1]
    return _cost(2 * m * k * n, a.nbytes + b.nbytes + m * n * a.itemsize, a.dtype)


def _addmm(t: list[_Tensor]) -> OpCost | None:
    bias, a, b = t[0], t[1], t[2]
    if len(a.shape) != 2 or len(b.shape) != 2:
        return None
    m, k, n = a.shape[0], a.shape[1], b.shape[1]
    return _cost(2 * m * k * n, bias.nbytes + a.nbytes + b.nbytes + m * n * a.itemsize,
                 a.dtype)


def _bmm(t: list[_Tensor]) -> OpCost | None:
    a, b = t[0], t[1]
    if len(a.shape) != 3 or len(b.shape) != 3:
        return None
    bt, m, k, n = a.shape[0], a.shape[1], a.shape[2], b.shape[2]
    return _cost(2 * bt * m * k * n, a.nbytes + b.nbytes + bt * m * n * a.itemsize, a.dtype)


def _baddbmm(t: list[_Tensor]) -> OpCost | None:
    c, a, b = t[0], t[1], t[2]
    if len(a.shape) != 3 or len(b.shape) != 3:
        return None
    bt, m, k, n = a.shape[0], a.shape[1], a.shape[2], b.shape[2]
    return _cost(2 * bt * m * k * n, c.nbytes + a.nbytes + b.nbytes + bt * m * n * a.itemsize,
                 a.dtype)


def _matmul(t: list[_Tensor]) -> OpCost | None:
    a, b = t[0], t[1]
    sa = a.shape if len(a.shape) > 1 else (1, *a.shape)
    sb = b.shape if len(b.shape) > 1 else (*b.shape, 1)
    batch = _broadcast([sa[:-2], sb[:-2]])
    if batch is None or sa[-1] != sb[-2]:
        return None
    m, k, n = sa[-2], sa[-1], sb[-1]
    nb = math.prod(batch)
    return _cost(2 * nb * m * k * n, a.nbytes + b.nbytes + nb * m * n * a.itemsize, a.dtype)


def _linear(t: list[_Tensor]) -> OpCost | None:
    x, w = t[0], t[1]
    if len(w.shape) != 2 or not x.shape or x.shape[-1] != w.shape[1]:
        return None
    rows = math.prod(x.shape[:-1])
    n, k = w.shape
    bias_bytes = t[2].nbytes if len(t) > 2 else 0
    return _cost(2 * rows * k * n, x.nbytes + w.nbytes + bias_bytes + rows * n * x.itemsize,
                 x.dtype)


# op -> (tensor arguments it needs at least, its cost formula)
_MATMULS: dict[str, tuple[int, Callable[[list[_Tensor]], OpCost | None]]] = {
    "mm": (2, _mm),
    "addmm": (3, _addmm),
    "_addmm_activation": (3, _addmm),
    "bmm": (2, _bmm),
    "baddbmm": (3, _baddbmm),
    "matmul": (2, _matmul),
    "linear": (2, _linear),
}


def _matmul_cost(name: str, ts: list[_Tensor | None]) -> OpCost | None:
    entry = _MATMULS.get(name)
    tensors = [t for t in ts if t is not None]
    if entry is None or len(tensors) < entry[0]:
        return None
    return entry[1](tensors)


def _causal_share(lq: int, lk: int) -> float:
    """Share of (query, key) pairs kept by torch's top-left-aligned causal mask."""
    if lq <= 0 or lk <= 0:
        return 1.0
    kept = lq * (lq + 1) // 2 if lk >= lq else lk * (lk + 1) // 2 + (lq - lk) * lk
    return kept / (lq * lk)


def _attention_cost(
    name: str,
    ts: list[_Tensor | None],
    concrete_inputs: Sequence[Any] | None,
    assume_causal: bool = False,
) -> OpCost | None:
    layout, causal_idx, causal_value, backward = _ATTENTION[name]
    tensors = [t for t in ts if t is not None]
    # Forward: (q, k, v, ...). Backward: (grad_out, q, k, v, ..., out, ...).
    base = 1 if backward else 0
    if len(tensors) < base + 3:
        return None
    q, k, v = tensors[base], tensors[base + 1], tensors[base + 2]
    if len(q.shape) != 4 or len(k.shape) != 4 or len(v.shape) != 4:
        return None
    if layout == "bhle":
        b, h, lq, e = q.shape
        lk, ev = k.shape[2], v.shape[3]
    else:
        b, lq, h, e = q.shape
        lk, ev = k.shape[1], v.shape[3]
    flag = _concrete(concrete_inputs, causal_idx)
    notes: tuple[str, ...] = ()
    if flag is None and assume_causal:
        # The profiler recorded no value for the flag (older torch, some backends): the
        # workload says its attention is causal; the label says this was assumed.
        causal, notes = True, (ASSUMED_CAUSAL,)
    else:
        causal = flag is not None and flag == causal_value and not isinstance(flag, str)
    share = _causal_share(lq, lk) if causal else 1.0
    fwd = 2.0 * b * h * lq * lk * (e + ev) * share
    out_bytes = b * h * lq * ev * q.itemsize
    if backward:
        # grad_out + q + k + v + out read; dq + dk + dv written.
        nbytes = 2 * out_bytes + 2 * (q.nbytes + k.nbytes + v.nbytes)
        return replace(_cost(2.5 * fwd, nbytes, q.dtype), notes=notes)
    return replace(_cost(fwd, q.nbytes + k.nbytes + v.nbytes + out_bytes, q.dtype), notes=notes)


#: Kernel-name prefixes of the Triton kernels inductor generates (pointwise, persistent
#: reduction, reduction, template, foreach, split scan, combo).
TRITON_PREFIXES = (
    "triton_poi_", "triton_per_", "triton_red_", "triton_tem_", "triton_for_",
    "triton_spl_", "triton_", )  # fmt: skip


def is_triton_kernel(name: str) -> bool:
    """True for an inductor-generated Triton kernel's launch event (``triton_per_fused_...``)."""
    return name.startswith(TRITON_PREFIXES)


def triton_kernel_cost(
    input_shapes: Sequence[Any],
    input_dtypes: Sequence[str] | None,
    *,
    in_out: int = 0,
    kwinputs: Mapping[str, Any] | None = None,
    default_dtype: str = "float32",
) -> OpCost:
    """Bytes of one launch of an inductor Triton kernel; FLOPs unknown (None).

    Inductor launches each kernel inside a ``_RecordFunctionFast`` event named after the
    kernel whose recorded inputs are the launch arguments, in the order of
    ``python_argdefs`` (torch/_inductor/codegen/common.py): the in-place buffers
    (``in_out_ptr*``: read and written) first, then the inputs (``in_ptr*``), the outputs
    (``out_ptr*``), then the integer sizes (``xnumel``, ``r0_numel``: scalars, skipped).
    Bytes = every tensor argument once, plus the first ``in_out`` tensors once more (the
    count comes from the kernel's source, :func:`triton_in_out_count`; 0 when unknown,
    which undercounts an in-place kernel's writes). When inductor measured it itself
    (``kernel_num_gb``/``kernel_flop`` in the event's keyword inputs: only with
    ``TORCHINDUCTOR_BENCHMARK_KERNEL``/``PROFILE_BANDWIDTH``), its figures win. Tensors
    whose dtype was not recorded (torch records none on these events) take
    ``default_dtype``, the workload's.
    """
    kw = kwinputs or {}
    ts = [t for t in _tensors(input_shapes, input_dtypes, default_dtype) if t is not None]
    if input_dtypes is None:  # without dtypes a 1-d [n] may be a size: keep n-d tensors only
        ts = [t for t in ts if len(t.shape) > 0]
    num_gb, kflop = kw.get("kernel_num_gb"), kw.get("kernel_flop")
    if isinstance(num_gb, (int, float)) and not isinstance(num_gb, bool) and num_gb > 0:
        nbytes: float | None = float(num_gb) * 1e9
    elif ts:
        nbytes = float(sum(t.nbytes for t in ts) + sum(t.nbytes for t in ts[: max(in_out, 0)]))
    else:
        return _UNKNOWN
    dt = max(ts, key=lambda t: t.nbytes).dtype if ts else "float32"
    if isinstance(kflop, (int, float)) and not isinstance(kflop, bool) and kflop > 0:
        return OpCost(float(kflop), nbytes, {dt: float(kflop)})
    return OpCost(None, nbytes)


_TRITON_DEF_RE = re.compile(r"^def\s+(?P<name>\w+)\s*\((?P<args>[^)]*)\)", re.MULTILINE)


def triton_in_out_count(kernel_file: str | None, kernel_name: str) -> int:
    """How many ``in_out_ptr`` arguments ``kernel_name`` takes, from its generated source.

    ``kernel_file`` is the ``kernel_file`` keyword input inductor records with the launch
    (the kernel's Python module in the inductor cache, on the machine that ran it). 0 when
    the file or the ``def`` is not found.
    """
    if not kernel_file or not os.path.isfile(kernel_file):
        return 0
    try:
        with open(kernel_file, encoding="utf-8", errors="replace") as fh:
            text = fh.read(1_000_000)
    except OSError:
        return 0
    for m in _TRITON_DEF_RE.finditer(text):
        if m.group("name") == kernel_name:
            return sum(1 for a in m.group("args").split(",") if a.strip().startswith("in_out_ptr"))
    return 0


def _reduced_numel(
    t: _Tensor, concrete_inputs: Sequence[Any] | None, others: list[_Tensor]
) -> int:
    dims = _concrete(concrete_inputs, 1)
    if isinstance(dims, int) and not isinstance(dims, bool):
        dims = [dims]
    if isinstance(dims, (list, tuple)) and dims and all(isinstance(d, int) for d in dims):
        nd = len(t.shape)
        keep = [s for i, s in enumerate(t.shape) if i not in {d % nd for d in dims}]
        return math.prod(keep) if keep else 1
    if others:  # an out= tensor was recorded
        return others[0].numel
    return 1


def _movement_cost(
    name: str, tensors: list[_Tensor], input_shapes: Sequence[Any], _: Sequence[Any] | None
) -> OpCost | None:
    """Ops that only move or set data: copy, fill, cat/stack (None: not one of them)."""
    first = tensors[0]
    if name in ("copy_",):
        src = tensors[1] if len(tensors) > 1 else first
        return _cost(0, first.nbytes + src.nbytes, first.dtype)
    if name in ("fill_", "zero_"):
        return _cost(0, first.nbytes, first.dtype)
    if name in ("cat", "stack"):
        shapes = input_shapes[0] if input_shapes else []
        if not (isinstance(shapes, (list, tuple)) and shapes
                and all(isinstance(s, (list, tuple)) for s in shapes)):
            return _UNKNOWN
        total = sum(math.prod(s) for s in shapes) * first.itemsize
        return _cost(0, 2 * total, first.dtype)
    return None


def _elementwise_cost(
    name: str, tensors: list[_Tensor], _: Sequence[Any], __: Sequence[Any] | None
) -> OpCost | None:
    """One FLOP per output element; every input read, the output written once."""
    if not (name in _ELEMENTWISE_1 or name.rstrip("_") in _ELEMENTWISE_1):
        return None
    first = tensors[0]
    if name.endswith("_"):  # in place: the output is the first argument
        out_numel, out_size = first.numel, first.itemsize
    else:
        shape = _broadcast(t.shape for t in tensors)
        if shape is None:
            return _UNKNOWN
        out_numel = math.prod(shape)
        out_size = max(t.itemsize for t in tensors if t.numel > 1) if any(
            t.numel > 1 for t in tensors) else first.itemsize
    reads = sum(t.nbytes for t in tensors)
    dt = max(tensors, key=lambda t: t.numel).dtype
    return _cost(out_numel, reads + out_numel * out_size, dt)


def _reduction_cost(
    name: str, tensors: list[_Tensor], _: Sequence[Any], concrete_inputs: Sequence[Any] | None
) -> OpCost | None:
    """Reductions, softmax and the norms (forward and backward)."""
    first = tensors[0]
    if name in _REDUCTIONS:
        out = _reduced_numel(first, concrete_inputs, tensors[1:])
        return _cost(first.numel, first.nbytes + out * first.itemsize, first.dtype)
    if name in _SOFTMAX:
        return _cost(5 * first.numel, 2 * first.nbytes, first.dtype)
    if name in _SOFTMAX_BWD:
        return _cost(3 * first.numel, 3 * first.nbytes, first.dtype)
    if name in ("_fused_rms_norm", "rms_norm", "native_layer_norm", "layer_norm"):
        extra = sum(t.nbytes for t in tensors[1:])
        per = 4 if "rms" in name else 8
        return _cost(per * first.numel, 2 * first.nbytes + extra, first.dtype)
    if name in ("_fused_rms_norm_backward", "native_layer_norm_backward"):
        # grad_out, input read; grad_input written; small per-row stats and weights.
        small = sum(t.nbytes for t in tensors[2:])
        return _cost(8 * first.numel, 3 * first.nbytes + 2 * small, first.dtype)
    return None


def op_cost(
    op: str,
    input_shapes: Sequence[Any],
    dtype: Any = "float32",
    *,
    input_dtypes: Sequence[str] | None = None,
    concrete_inputs: Sequence[Any] | None = None,
    assume_causal: bool = False,
) -> OpCost:
    """FLOPs and bytes of one call of ``op`` (the *total* work, children included).

    Args:
        op: profiler op name, ``"aten::mm"`` (other namespaces are unknown).
        input_shapes: the profiler's ``input_shapes`` (``[]`` for scalars).
        dtype: dtype for tensors when ``input_dtypes`` is absent (the workload's dtype).
        input_dtypes: the profiler's ``input_dtypes`` (``"c10::BFloat16"``, ``"Scalar"``);
            tells tensors from scalars and gives each tensor its itemsize.
        concrete_inputs: the profiler's ``concrete_inputs`` (scalar argument values:
            reduction dims, ``is_causal``).
        assume_causal: the workload's attention is causal: used when an attention op's
            ``is_causal`` was not recorded (the cost then carries the note
            :data:`ASSUMED_CAUSAL`); a recorded value always wins.

    Returns:
        An :class:`OpCost`; ``OpCost(None, None)`` when the op has no formula.
    """
    if not op.startswith("aten::"):
        return _UNKNOWN
    if carries_no_work(op):
        return _ZERO
    name = op.removeprefix("aten::").split(".", 1)[0]
    ts = _tensors(input_shapes, input_dtypes, str(dtype))
    tensors = [t for t in ts if t is not None]
    if name in _ATTENTION:
        return _attention_cost(name, ts, concrete_inputs, assume_causal) or _UNKNOWN
    matmul = _matmul_cost(name, ts)
    if matmul is not None:
        return matmul
    if not tensors:
        return _UNKNOWN
    for rule in (_movement_cost, _elementwise_cost, _reduction_cost):
        got = rule(name, tensors, input_shapes, concrete_inputs)
        if got is not None:
            return got
    return _UNKNOWN


# --- events -> per-op costs -------------------------------------------------------------

_DELEGATE_SHARE = 0.1


def _event_own_cost(event: Any, default_dtype: str, assume_causal: bool = False) -> OpCost:
    name = str(event.name)
    if is_triton_kernel(name):
        kw = getattr(event, "kwinputs", None) or {}
        kw = kw if isinstance(kw, Mapping) else {}
        kernel_file = kw.get("kernel_file")
        return triton_kernel_cost(
            getattr(event, "input_shapes", None) or [],
            getattr(event, "input_dtypes", None) or None,
            in_out=triton_in_out_count(
                kernel_file if isinstance(kernel_file, str) else None,
                str(kw.get("kernel_name") or name),
            ),
            kwinputs=kw,
            default_dtype=default_dtype,
        )
    cost = op_cost(
        name,
        getattr(event, "input_shapes", None) or [],
        default_dtype,
        input_dtypes=getattr(event, "input_dtypes", None) or None,
        concrete_inputs=getattr(event, "concrete_inputs", None) or None,
        assume_causal=assume_causal,
    )
    profiler_flops = getattr(event, "flops", 0) or 0
    if profiler_flops > 0 and cost.bytes is not None:
        # The profiler's with_flops count (mm/addmm/bmm/mul/add/conv) wins for FLOPs.
        dt = next(iter(cost.flops_by_dtype), dtype_label(default_dtype))
        cost = OpCost(float(profiler_flops), cost.bytes, {dt: float(profiler_flops)}, cost.notes)
    return cost


def costs_from_events(
    events: Iterable[Any],
    iterations: int,
    *,
    default_dtype: Any = "float32",
    op_name: Callable[[Any], str] | None = None,
    assume_causal: bool = False,
) -> dict[str, OpCost]:
    """Per-op FLOPs/bytes per iteration from profiler events, with "self" semantics.

    Args:
        events: ``FunctionEvent`` objects (``prof.events()``, or one step's events) captured
            with ``record_shapes=True`` (``with_flops=True`` helps); device-side events are
            ignored. Children are read from ``cpu_children``.
        iterations: iterations the events span (costs are divided by it).
        default_dtype: dtype for tensors whose dtype the profiler did not record.
        op_name: the op identity used in the profile (default: ``event.key``), so costs
            land on the same names as :class:`~neuronasv.model.OpProfile` entries.
        assume_causal: see :func:`op_cost` (the workload's attention is causal).

    Returns:
        ``{op: OpCost}``; an op is ``OpCost(None, None)`` when any of its events has no
        formula, or when all of its events delegate their work to child ops.
    """
    if iterations <= 0:
        raise UsageError(f"iterations must be positive, got {iterations}")
    name_of = op_name or (lambda e: e.key)
    cpu_events = [e for e in events if is_host_event(e)]
    walk = _EventWalk(str(default_dtype), assume_causal)
    for e in cpu_events:
        walk.visit(e)
    sums: dict[str, _OpSums] = {}
    unknown: set[str] = set()
    seen: set[str] = set()
    for e in cpu_events:
        name = name_of(e)
        seen.add(name)
        cost = walk.own[id(e)]
        if walk.counted[id(e)]:
            sums.setdefault(name, _OpSums()).add(cost)
        elif not cost.known and walk.below[id(e)] == (0.0, 0.0):
            unknown.add(name)
    result: dict[str, OpCost] = {}
    for name in seen:
        if name in unknown or name not in sums:
            result[name] = _UNKNOWN
        else:
            result[name] = sums[name].per_iteration(iterations)
    return result


class _EventWalk:
    """The host events' call tree, walked once: each event's own cost (:func:`_event_own_cost`),
    the counted (flops, bytes) below it, and whether its own cost counts (it is known and does
    not delegate its work to its children), all keyed by the event's identity."""

    def __init__(self, default_dtype: str, assume_causal: bool) -> None:
        self._default_dtype = default_dtype
        self._assume_causal = assume_causal
        self.own: dict[int, OpCost] = {}
        self.below: dict[int, tuple[float, float]] = {}  # counted (flops, bytes) under an event
        self.counted: dict[int, bool] = {}

    def visit(self, e: Any) -> tuple[float, float]:
        key = id(e)
        if key in self.below:
            return self.below[key]
        f_sum, b_sum = self._children(e)
        cost = _event_own_cost(e, self._default_dtype, self._assume_causal)
        self.own[key] = cost
        self.counted[key] = cost.known and not _delegated(cost, f_sum, b_sum)
        # Unknown ops with costed children still count as "carried by children".
        self.below[key] = (f_sum, b_sum)
        return self.below[key]

    def _children(self, e: Any) -> tuple[float, float]:
        """The counted (flops, bytes) of ``e``'s children and everything under them."""
        f_sum = b_sum = 0.0
        for child in getattr(e, "cpu_children", None) or ():
            cf, cb = self.visit(child)
            f_sum += cf
            b_sum += cb
            c_own = self.own[id(child)]
            if self.counted[id(child)]:
                f_sum += c_own.flops or 0.0
                b_sum += c_own.bytes or 0.0
        return f_sum, b_sum


def _delegated(cost: OpCost, f_sum: float, b_sum: float) -> bool:
    """Whether an op's children do its work (counted ``f_sum`` FLOPs, ``b_sum`` bytes)."""
    if cost.flops:
        # An op that computes is composite when its children do the computing: a
        # fill or scalar copy underneath (zeros for gradients) does not take over.
        return f_sum > _DELEGATE_SHARE * cost.flops
    return b_sum > _DELEGATE_SHARE * (cost.bytes or 0.0)


@dataclass
class _OpSums:
    """The counted cost of one op's events, summed (notes once each, first seen first)."""

    flops: float = 0.0
    nbytes: float = 0.0
    by_dtype: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    flops_unknown: bool = False  # some counted call's FLOPs are unknown (Triton kernels)

    def add(self, cost: OpCost) -> None:
        if cost.flops is None:
            self.flops_unknown = True
        for note in cost.notes:
            if note not in self.notes:
                self.notes.append(note)
        self.flops += cost.flops or 0.0
        self.nbytes += cost.bytes or 0.0
        for dt, f in cost.flops_by_dtype.items():
            self.by_dtype[dt] = self.by_dtype.get(dt, 0.0) + f

    def per_iteration(self, iterations: int) -> OpCost:
        return OpCost(
            None if self.flops_unknown else self.flops / iterations,
            self.nbytes / iterations,
            {dt: f / iterations for dt, f in self.by_dtype.items()},
            tuple(self.notes),
        )
