"""rmsnorm.nki: skipped with a clear reason here; kernel logic checked on a NumPy stand-in.

The stand-in implements only the ``nki.language`` calls the kernel uses, with the
semantics the NKI docs describe (masked loads/stores, index-array access, free-axis
reduction). It checks the kernel's tiling, masking and arithmetic — not the real NKI
compiler, the NeuronCore, or the torch-to-NKI call path, which stay unverified here.
"""

from __future__ import annotations

import sys
from types import ModuleType, SimpleNamespace
from typing import Any

import numpy as np
import pytest

from neuronasv.errors import BackendUnavailable
from neuronasv.measure.backends import get_backend
from neuronasv.measure.profiling import profile_workload
from neuronasv.measure.workloads import nki_rmsnorm as N


def test_skips_on_the_cpu_with_the_reason() -> None:
    reason = N.NKI.skip_reason(get_backend("cpu"))
    assert reason is not None
    assert "only on the neuron backend" in reason
    assert N.NOT_IMPORTABLE in reason


def test_skips_on_neuron_without_nki() -> None:
    found = N.import_nki()
    assert isinstance(found, str) and found.startswith(N.NOT_IMPORTABLE)
    reason = N.skip_reason(SimpleNamespace(name="neuron"))  # type: ignore[arg-type]
    assert reason is not None and reason.startswith(N.NOT_IMPORTABLE)


def test_profiling_refuses_it_with_the_reason() -> None:
    with pytest.raises(BackendUnavailable, match="NKI not importable"):
        profile_workload(N.NKI, get_backend("cpu"), shape="4x512", dtype="float32")


# --- NumPy stand-in of the nki.language subset --------------------------------------------


class _Tile(np.ndarray):
    def broadcast_to(self, shape: tuple[int, ...]) -> _Tile:
        return np.broadcast_to(np.asarray(self), shape).view(_Tile)


class _Access:
    def __init__(self, arr: np.ndarray, idx: tuple[Any, ...]) -> None:
        self.arr, self.idx = arr, idx

    def where(self, mask: Any) -> tuple[tuple[np.ndarray, ...], np.ndarray]:
        index = np.broadcast_arrays(*[np.asarray(i) for i in self.idx])
        keep = np.broadcast_to(True if mask is None else np.asarray(mask), index[0].shape)
        return tuple(index), keep


class _HBM:
    def __init__(self, arr: np.ndarray) -> None:
        self.arr = arr

    shape = property(lambda self: self.arr.shape)
    dtype = property(lambda self: self.arr.dtype)

    def reshape(self, shape: tuple[int, ...]) -> _HBM:
        return _HBM(self.arr.reshape(shape))

    def __getitem__(self, idx: tuple[Any, ...]) -> _Access:
        return _Access(self.arr, idx)


def _load(access: _Access, mask: Any = None) -> _Tile:
    index, keep = access.where(mask)
    out = np.zeros(index[0].shape, dtype=access.arr.dtype)
    out[keep] = access.arr[tuple(i[keep] for i in index)]  # masked lanes are never read
    return out.view(_Tile)


def _store(access: _Access, value: Any, mask: Any = None) -> None:
    index, keep = access.where(mask)
    value = np.broadcast_to(np.asarray(value), index[0].shape)
    access.arr[tuple(i[keep] for i in index)] = value[keep]


def _cast(x: Any, dtype: Any) -> np.ndarray:
    return np.asarray(x).astype(dtype) if dtype is not None else np.asarray(x)


def _standin() -> tuple[ModuleType, ModuleType]:
    nl = ModuleType("nki.language")
    nl.float32 = np.float32  # type: ignore[attr-defined]
    nl.shared_hbm = "shared_hbm"  # type: ignore[attr-defined]
    nl.tile_size = SimpleNamespace(pmax=128)  # type: ignore[attr-defined]
    nl.arange = np.arange  # type: ignore[attr-defined]
    nl.affine_range = range  # type: ignore[attr-defined]
    nl.ndarray = lambda shape, dtype, buffer: _HBM(np.zeros(shape, dtype))  # type: ignore[attr-defined]
    nl.load, nl.store = _load, _store  # type: ignore[attr-defined]
    nl.square = lambda x, dtype=None, mask=None: np.square(_cast(x, dtype)).view(_Tile)  # type: ignore[attr-defined]
    nl.sum = lambda x, axis, keepdims=False, dtype=None, mask=None: np.sum(  # type: ignore[attr-defined]
        _cast(x, dtype), axis=tuple(axis), keepdims=keepdims).view(_Tile)
    nl.rsqrt = lambda x, dtype=None, mask=None: (1.0 / np.sqrt(_cast(x, dtype))).view(_Tile)  # type: ignore[attr-defined]
    nl.multiply = lambda a, b, dtype=None, mask=None: _cast(  # type: ignore[attr-defined]
        np.multiply(np.asarray(a), np.asarray(b)), dtype).view(_Tile)
    nki = ModuleType("nki")
    nki.jit = lambda fn: fn  # type: ignore[attr-defined]
    nki.language = nl  # type: ignore[attr-defined]
    return nki, nl


@pytest.mark.standin
@pytest.mark.parametrize("rows", [4, 128, 200])  # one partial tile, one full, full + partial
def test_kernel_logic_on_a_numpy_standin(rows: int, monkeypatch: pytest.MonkeyPatch) -> None:
    nki, nl = _standin()
    monkeypatch.setitem(sys.modules, "nki", nki)
    monkeypatch.setitem(sys.modules, "nki.language", nl)
    assert N.import_nki() == (nki, nl)
    assert N.skip_reason(SimpleNamespace(name="neuron")) is None  # type: ignore[arg-type]

    rng = np.random.default_rng(0)
    x = rng.standard_normal((rows, 64)).astype(np.float32) * 3
    w = (1 + 0.1 * rng.standard_normal(64)).astype(np.float32)
    kernel = N.make_kernel(nki, nl)
    out = kernel(_HBM(x.copy()), _HBM(w.copy()), N.EPS)
    ref = x / np.sqrt((x.astype(np.float64) ** 2).mean(-1, keepdims=True) + N.EPS) * w
    assert out.arr.dtype == np.float32
    np.testing.assert_allclose(out.arr, ref, rtol=1e-5, atol=1e-5)
