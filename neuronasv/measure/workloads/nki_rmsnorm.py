"""``rmsnorm.nki``: RMSNorm as a hand-written NKI kernel (Neuron only), the fourth variant.

The kernel follows the tiling of the AWS Neuron NKI RMSNorm tutorial
(awsdocs-neuron.readthedocs-hosted.com, "NKI tutorials / RMSNorm", and aws-neuron
``nki-samples`` ``tutorials/rmsnorm``): rows of the (rows, hidden) input go to the 128
SBUF partitions, one 128-row tile at a time; the reduction runs along the free axis; the
weight vector is loaded once and broadcast across partitions. It is written here from the
documented ``nki.language`` API (``ndarray``, ``arange``, ``load``/``store`` with masks,
``affine_range``, ``square``, ``sum``, ``rsqrt``, ``multiply``, ``broadcast_to``), not
copied, and differs from the tutorial in three ways: it adds ``eps`` (LLaMA's RMSNorm),
accumulates in float32 whatever the input dtype, and takes any leading shape (flattened to
rows) so it runs on the same ``4x512`` / ``8x1024x4096`` inputs as the other variants.

**Unverified on hardware**: nothing in this repository's CI has a Trainium device or
``neuronxcc``. The tiling/masking logic is exercised by a NumPy stand-in of the
``nki.language`` subset it uses (tests/workloads, ``@pytest.mark.standin``); the real
compile, the invocation from a torch tensor on the ``neuron`` device, and the numbers are
not. Elsewhere the workload is skipped with a reason (:func:`skip_reason`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any

from neuronasv.measure.workloads import Workload, register

if TYPE_CHECKING:
    from neuronasv.measure.backends.base import Backend

__all__ = ["EPS", "NKI", "import_nki", "make_kernel", "skip_reason"]

EPS = 1e-6  # same as rmsnorm.naive / rmsnorm.fused

NOT_IMPORTABLE = "NKI not importable: needs torch-neuronx/neuronxcc on a Trainium host"


def import_nki() -> tuple[ModuleType, ModuleType] | str:
    """``(nki, nki.language)``, or the reason they cannot be imported.

    Newer Neuron SDKs ship NKI as the top-level ``nki`` package; older ones as
    ``neuronxcc.nki``. Both are tried, newest first.
    """
    errors: list[str] = []
    for base in ("nki", "neuronxcc.nki"):
        try:
            nki = importlib.import_module(base)
            nl = importlib.import_module(f"{base}.language")
        except ImportError as exc:
            text = str(exc).strip()
            errors.append(f"{base}: {text.splitlines()[0] if text else 'ImportError'}")
            continue
        except Exception as exc:  # a broken install reads as "not importable", not a crash
            errors.append(f"{base}: {type(exc).__name__}: {exc}")
            continue
        if not hasattr(nki, "jit"):
            errors.append(f"{base}: has no nki.jit")
            continue
        return nki, nl
    return f"{NOT_IMPORTABLE} ({'; '.join(errors)})"


def skip_reason(backend: Backend) -> str | None:
    """None when the NKI kernel can run on ``backend``; otherwise why not."""
    if backend.name != "neuron":
        return (
            f"NKI kernels run only on the neuron backend (Trainium), not {backend.name};"
            f" {NOT_IMPORTABLE}"
        )
    found = import_nki()
    return found if isinstance(found, str) else None


def make_kernel(nki: Any, nl: Any) -> Callable[..., Any]:
    """Build the ``@nki.jit`` RMSNorm kernel from the given NKI modules.

    The kernel takes ``x`` (rows, hidden) and ``w`` (hidden,) in HBM and returns
    ``x / sqrt(mean(x^2) + eps) * w`` with ``x``'s dtype.
    """

    def rmsnorm_kernel(x: Any, w: Any, eps: float) -> Any:
        rows, hidden = x.shape
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        pmax = nl.tile_size.pmax  # SBUF partitions per tile (128)
        i_p = nl.arange(pmax)[:, None]
        i_one = nl.arange(1)[:, None]
        i_f = nl.arange(hidden)[None, :]
        # The weight is read from HBM once and broadcast over the partitions of every tile.
        w_row = nl.load(w.reshape((1, hidden))[i_one, i_f])
        w_tile = w_row.broadcast_to((pmax, hidden))
        for t in nl.affine_range((rows + pmax - 1) // pmax):
            row = t * pmax + i_p
            keep = row < rows  # the last tile may be partial
            x_tile = nl.load(x[row, i_f], mask=keep)
            sq = nl.square(x_tile, dtype=nl.float32, mask=keep)
            ssum = nl.sum(sq, axis=[1], keepdims=True, mask=keep)
            inv_rms = nl.rsqrt(ssum / hidden + eps, mask=keep)
            y = nl.multiply(x_tile, inv_rms, dtype=nl.float32, mask=keep)
            y = nl.multiply(y, w_tile, dtype=x.dtype, mask=keep)
            nl.store(out[row, i_f], value=y, mask=keep)
        return out

    jitted: Callable[..., Any] = nki.jit(rmsnorm_kernel)
    return jitted


def _build(shape: tuple[int, ...], dtype: Any, device: str, seed: int) -> Callable[[], object]:
    from neuronasv.measure.workloads.rmsnorm import make_inputs

    found = import_nki()
    if isinstance(found, str):
        raise RuntimeError(found)  # skip_reason keeps the profiler from getting here
    kernel = make_kernel(*found)
    x, weight = make_inputs(shape, dtype, device, seed)
    x2 = x.reshape(-1, shape[-1])

    def step() -> object:
        return kernel(x2, weight, EPS).reshape(x.shape)

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
