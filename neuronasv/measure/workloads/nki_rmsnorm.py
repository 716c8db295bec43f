"""``rmsnorm.nki``: RMSNorm as a hand-written NKI kernel (Trn2/Trn3, TorchNeuron only).

The kernel follows the tiling of the AWS Neuron NKI RMSNorm tutorial (aws-neuron
``nki-samples`` ``tutorials/rmsnorm``): rows of the (rows, hidden) input go to the 128 SBUF
partitions, one 128-row tile at a time; the reduction runs along the free axis; the weight
row is loaded once and broadcast across partitions. It is written for the current ``nki``
language (NKI >= 0.3, Neuron SDK >= 2.28; aws-neuron-sdk ``nki/migration/index.rst``):

* no ``nl.arange`` and no ``mask=`` (both removed): tiles are plain slices
  ``x[start:start + n, 0:hidden]`` with ``n = min(128, rows - start)`` for the ragged
  last tile, as the migration guide's "Deprecation of masking" section shows;
* ``nl.load`` / ``nl.store`` (reintroduced in 0.3), ``nl.square`` / ``nl.sum(axis=[1],
  keepdims=True)`` / ``nl.rsqrt`` / ``nl.multiply`` / ``nl.add``, and explicit
  ``nl.broadcast_to`` for the per-row scale and the weight row;
* the kernel writes into an output tensor it is given (``kernel(x, w, out, eps)``), the
  calling convention of TorchNeuron's ``nki.jit`` / ``nki_op`` examples;
* LNC-aware: launched as ``kernel[lnc](...)`` with ``lnc`` from
  ``NEURON_LOGICAL_NC_CONFIG`` (the ``nki.jit`` docs: the launch LNC must match it, "or a
  runtime error"; Trn2 defaults to 2), and the row tiles are split across the LNC's
  physical cores with ``nl.program_id(0)`` / ``nl.num_programs(0)``.

It is imported the TorchNeuron way — ``from torch_neuronx import nki`` (jit) plus
``nki.language`` — and registered as the torch custom op ``neuronasv::rmsnorm_nki`` with
``torch_neuronx.nki_op``, which allocates the output. The legacy ``neuronxcc.nki`` dialect
is not tried: its kernels are a compile error from NKI 0.4 (SDK 2.30).

**Unverified on hardware**: nothing in this repository's CI has a Trainium device. The
tiling, LNC split and arithmetic run on a NumPy stand-in of the current ``nki.language``
that, like the real one, has no ``arange`` and takes no ``mask=`` (tests/measure/workloads,
``@pytest.mark.standin``); the real compile, the TorchNeuron call path and the numbers do
not. ``neuronasv doctor --neuron-check`` runs the kernel against ``torch.rms_norm`` on a real host.
Elsewhere the workload is skipped with a reason (:func:`skip_reason`).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

from neuronasv.measure.workloads import Workload, register

if TYPE_CHECKING:
    from neuronasv.measure.backends.base import Backend

__all__ = [
    "EPS",
    "LNC_ENV",
    "NKI",
    "OP_NAME",
    "NkiApi",
    "import_nki",
    "launch_lnc",
    "make_kernel",
    "skip_reason",
]

EPS = 1e-6  # same as rmsnorm.naive / rmsnorm.fused
LNC_ENV = "NEURON_LOGICAL_NC_CONFIG"
OP_NAME = "neuronasv::rmsnorm_nki"

NOT_IMPORTABLE = (
    "NKI not importable: needs TorchNeuron (torch_neuronx.nki, nki_op) and the nki >= 0.3"
    " package on a Trn2/Trn3 host"
)


@dataclass(frozen=True)
class NkiApi:
    """What the kernel needs: ``jit`` (``torch_neuronx.nki``), ``nl``, ``nki_op``."""

    nki: Any
    nl: Any
    nki_op: Any


def import_nki(importer: Callable[[str], ModuleType] = importlib.import_module) -> NkiApi | str:
    """The TorchNeuron NKI entry points, or the reason they cannot be imported."""
    try:
        tnx = importer("torch_neuronx")
        nki = getattr(tnx, "nki", None) or importer("torch_neuronx.nki")
        nl = importer("nki.language")
    except ImportError as exc:
        text = str(exc).strip()
        return f"{NOT_IMPORTABLE} ({text.splitlines()[0] if text else 'ImportError'})"
    except Exception as exc:  # a broken install reads as "not importable", not a crash
        return f"{NOT_IMPORTABLE} ({type(exc).__name__}: {exc})"
    missing = [n for n in ("jit",) if not hasattr(nki, n)]
    missing += [f"nki.language.{n}" for n in ("load", "store", "broadcast_to", "program_id")
                if not hasattr(nl, n)]  # fmt: skip
    if hasattr(nl, "arange"):
        missing.append("nki >= 0.3 (this nki.language still has arange: the legacy dialect)")
    nki_op = getattr(tnx, "nki_op", None)
    if nki_op is None:
        missing.append("torch_neuronx.nki_op")
    if missing:
        return f"{NOT_IMPORTABLE} (missing {', '.join(missing)})"
    return NkiApi(nki=nki, nl=nl, nki_op=nki_op)


def skip_reason(backend: Backend) -> str | None:
    """None when the NKI kernel can run on ``backend``; otherwise why not."""
    if not backend.runs_nki:
        return (
            f"NKI kernels run only on the neuron backend (Trainium), not {backend.name};"
            f" {NOT_IMPORTABLE}"
        )
    found = import_nki()
    return found if isinstance(found, str) else None


def launch_lnc(env: dict[str, str] | None = None, instance_type: str | None = None) -> int:
    """The LNC degree to launch with.

    ``NEURON_LOGICAL_NC_CONFIG`` when set (the runtime uses it, and the launch must
    match); otherwise the runtime's default for the instance: 2 on Trn2/Trn3
    (logical-neuroncore-config.rst), 1 elsewhere. ``instance_type`` defaults to the DMI
    product name (the EC2 instance type).
    """
    raw = (os.environ if env is None else env).get(LNC_ENV, "").strip()
    if raw:
        try:
            value = int(raw)
        except ValueError:
            raise ValueError(f"{LNC_ENV}={raw!r} is not an integer") from None
        if value not in (1, 2):
            raise ValueError(f"{LNC_ENV}={value} is not a supported LNC degree (1 or 2)")
        return value
    if instance_type is None:
        from neuronasv.measure.backends.neuron import instance_type as _dmi

        instance_type = _dmi() or ""
    return 2 if instance_type.lower().startswith(("trn2", "trn3")) else 1


def make_kernel(nki: Any, nl: Any) -> Any:
    """Build the ``@nki.jit`` RMSNorm kernel from the given NKI modules.

    The kernel takes ``x`` (rows, hidden) and ``w`` (hidden,) in HBM and an output ``out``
    like ``x``, and writes ``x / sqrt(mean(x^2) + eps) * w`` into it in ``x``'s dtype.
    Launch it as ``kernel[lnc](x, w, out, eps)``.
    """

    def rmsnorm_kernel(x: Any, w: Any, out: Any, eps: float) -> None:
        rows, hidden = x.shape
        pmax = nl.tile_size.pmax  # SBUF partitions per tile (128)
        # The weight row is read from HBM once and broadcast over the partitions.
        w_row = nl.load(w.reshape((1, hidden)), dtype=nl.float32)
        w_tile = nl.broadcast_to(w_row, shape=(pmax, hidden))
        # Row tiles split across the LNC's physical cores (program 0..n-1 of the launch).
        core, cores = nl.program_id(0), nl.num_programs(0)
        n_tiles = (rows + pmax - 1) // pmax
        for t in range(core, n_tiles, cores):
            start = t * pmax
            n = min(pmax, rows - start)  # the last tile may be partial: slice, no mask
            x_tile = nl.load(x[start : start + n, 0:hidden])
            sq = nl.square(x_tile, dtype=nl.float32)
            ssum = nl.sum(sq, axis=[1], keepdims=True)  # (n, 1)
            inv_rms = nl.rsqrt(nl.add(nl.multiply(ssum, 1.0 / hidden), eps))
            y = nl.multiply(
                x_tile, nl.broadcast_to(inv_rms, shape=(n, hidden)), dtype=nl.float32
            )
            y = nl.multiply(y, w_tile[0:n, 0:hidden], dtype=x.dtype)
            nl.store(out[start : start + n, 0:hidden], value=y)

    return nki.jit(rmsnorm_kernel)


_OPS: dict[int, Callable[..., Any]] = {}


def _registered_op(api: NkiApi, lnc: int) -> Callable[..., Any]:
    """``neuronasv::rmsnorm_nki`` (one registration per process and LNC degree)."""
    if lnc not in _OPS:
        import torch

        kernel = make_kernel(api.nki, api.nl)
        name = OP_NAME if lnc == 1 else f"{OP_NAME}_lnc{lnc}"

        @api.nki_op(name, mutates_args={})
        def rmsnorm_nki(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
            out = torch.empty_like(x)
            kernel[lnc](x, w, out, eps)
            return out

        _OPS[lnc] = rmsnorm_nki
    return _OPS[lnc]


def _build(shape: tuple[int, ...], dtype: Any, device: str, seed: int) -> Callable[[], object]:
    from neuronasv.measure.workloads.rmsnorm import make_inputs

    found = import_nki()
    if isinstance(found, str):
        raise RuntimeError(found)  # skip_reason keeps the profiler from getting here
    op = _registered_op(found, launch_lnc())
    x, weight = make_inputs(shape, dtype, device, seed)
    x2 = x.reshape(-1, shape[-1])

    def step() -> object:
        return op(x2, weight, EPS).reshape(x.shape)

    return step


NKI = register(
    Workload(
        name="rmsnorm.nki",
        description="RMSNorm as a hand-written NKI kernel (Trainium only; 128-row SBUF tiles)",
        default_shape="4x512",
        build_fn=_build,
        tags=("rmsnorm", "nki"),
        skip_fn=skip_reason,
    )
)
