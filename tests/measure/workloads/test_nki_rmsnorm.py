"""rmsnorm.nki: skipped with a clear reason here; kernel logic checked on a NumPy stand-in.

The stand-in implements only the current (NKI >= 0.3) ``nki.language`` calls the kernel
uses, with the semantics the NKI docs describe (slice access, no ``arange``, no ``mask=``,
free-axis reduction, explicit broadcasts, SPMD program ids for the LNC's cores). It checks
the kernel's tiling, LNC split, registration and arithmetic — not the real NKI compiler,
the NeuronCore, or TorchNeuron's op dispatch, which stay unverified here.
"""

from __future__ import annotations

import sys
from types import ModuleType, SimpleNamespace
from typing import Any

import numpy as np
import pytest

from neuronasv.errors import BackendUnavailable
from neuronasv.measure.backends import get_backend
from neuronasv.measure.backends.neuron import NeuronBackend
from neuronasv.measure.profiling import profile_workload
from neuronasv.measure.workloads import nki_rmsnorm as N


def test_skips_on_the_cpu_with_the_reason() -> None:
    reason = N.NKI.skip_reason(get_backend("cpu"))
    assert reason is not None
    assert "only on the neuron backend" in reason
    assert N.NOT_IMPORTABLE in reason


def test_skips_on_neuron_without_nki(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch_neuronx", None)
    found = N.import_nki()
    assert isinstance(found, str) and found.startswith(N.NOT_IMPORTABLE)
    reason = N.skip_reason(NeuronBackend())
    assert reason is not None and reason.startswith(N.NOT_IMPORTABLE)


def test_profiling_refuses_it_with_the_reason() -> None:
    with pytest.raises(BackendUnavailable, match="NKI not importable"):
        profile_workload(N.NKI, get_backend("cpu"), shape="4x512", dtype="float32")


# --- NumPy stand-in of the current nki.language subset (NKI >= 0.3) -----------------------
#
# Like the real nki.language since 0.3 it has no ``arange`` and no ``mask=`` parameter
# (aws-neuron-sdk nki/api/nki/language/__init__.py): a kernel still written in the removed
# dialect fails here as it would on a host. Element-wise ops insist on equal shapes so the
# kernel's broadcasts must be explicit (``broadcast_to``); tiles have at most 128
# partitions; HBM access is by slice only, and a slice of a slice is refused ("nested
# slicing is not available").


class _Tile(np.ndarray):
    pass


def _tile(a: Any) -> _Tile:
    arr = np.asarray(a)
    assert arr.ndim == 0 or arr.shape[0] <= 128, f"tile with {arr.shape[0]} partitions > 128"
    return arr.view(_Tile)


class _HBM:
    def __init__(self, arr: np.ndarray, sliced: bool = False) -> None:
        self.arr, self.sliced = arr, sliced

    shape = property(lambda self: self.arr.shape)
    dtype = property(lambda self: self.arr.dtype)

    def reshape(self, shape: tuple[int, ...]) -> _HBM:
        return _HBM(self.arr.reshape(shape))

    def __getitem__(self, idx: tuple[Any, ...]) -> _HBM:
        if self.sliced:
            raise TypeError("nested slicing is not available")
        for i in idx if isinstance(idx, tuple) else (idx,):
            if not isinstance(i, slice):
                raise TypeError(f"index arrays are gone with nl.arange; slice instead: {i!r}")
        return _HBM(self.arr[idx], sliced=True)


def _cast(x: Any, dtype: Any) -> np.ndarray:
    return np.asarray(x).astype(dtype) if dtype is not None else np.asarray(x)


def _same(x: Any, y: Any) -> None:
    if np.ndim(x) and np.ndim(y) and np.shape(x) != np.shape(y):
        raise ValueError(f"element-wise op on shapes {np.shape(x)} and {np.shape(y)}")


class _Programs:
    pid, n = 0, 1


def _load(src: _HBM, dtype: Any = None) -> _Tile:
    return _tile(_cast(src.arr.copy(), dtype))


def _store(dst: _HBM, value: Any) -> None:
    assert np.shape(value) == dst.arr.shape, (np.shape(value), dst.arr.shape)
    dst.arr[...] = np.asarray(value).astype(dst.arr.dtype)


def _square(x: Any, dtype: Any = None) -> _Tile:
    return _tile(np.square(_cast(x, dtype)))


def _sum(x: Any, axis: Any, dtype: Any = None, keepdims: bool = False) -> _Tile:
    axes = tuple(axis) if isinstance(axis, (list, tuple)) else (axis,)
    assert 0 not in axes, "nl.sum reduces free dimensions only"
    return _tile(np.sum(_cast(x, dtype), axis=axes, keepdims=keepdims))


def _rsqrt(x: Any, dtype: Any = None) -> _Tile:
    return _tile(_cast(1.0 / np.sqrt(np.asarray(x)), dtype))


def _binary(fn: Any) -> Any:
    def op(x: Any, y: Any, dtype: Any = None) -> _Tile:
        _same(x, y)
        out = fn(np.asarray(x), np.asarray(y))
        return _tile(_cast(out, dtype if dtype is not None else np.asarray(x).dtype))

    return op


def _broadcast_to(x: Any, shape: tuple[int, ...], dtype: Any = None) -> _Tile:
    arr = np.asarray(x)
    assert arr.ndim == len(shape) and all(
        a in (1, b) for a, b in zip(arr.shape, shape, strict=True)
    )
    return _tile(_cast(np.broadcast_to(arr, shape).copy(), dtype))


class _Kernel:
    def __init__(self, fn: Any) -> None:
        self.fn = fn
        self.launches: list[int] = []

    def __getitem__(self, lnc: int) -> Any:
        def launch(*args: Any) -> None:
            self.launches.append(lnc)
            conv = [_HBM(a.numpy()) if hasattr(a, "numpy") else a for a in args]  # torch CPU
            for pid in range(lnc):  # one program per physical core of the LNC
                _Programs.pid, _Programs.n = pid, lnc
                self.fn(*conv)
            _Programs.pid, _Programs.n = 0, 1

        return launch

    def __call__(self, *args: Any) -> None:
        self[1](*args)


def _standin() -> tuple[ModuleType, ModuleType]:
    """``(torch_neuronx stand-in with .nki and .nki_op, nki.language stand-in)``."""
    nl = ModuleType("nki.language")
    nl.float32 = np.float32  # type: ignore[attr-defined]
    nl.tile_size = SimpleNamespace(pmax=128)  # type: ignore[attr-defined]
    nl.load, nl.store = _load, _store  # type: ignore[attr-defined]
    nl.square, nl.sum, nl.rsqrt = _square, _sum, _rsqrt  # type: ignore[attr-defined]
    nl.multiply, nl.add = _binary(np.multiply), _binary(np.add)  # type: ignore[attr-defined]
    nl.broadcast_to = _broadcast_to  # type: ignore[attr-defined]
    nl.program_id = lambda axis=0: _Programs.pid  # type: ignore[attr-defined]
    nl.num_programs = lambda axes=0: _Programs.n  # type: ignore[attr-defined]
    nki = ModuleType("torch_neuronx.nki")
    nki.jit = _Kernel  # type: ignore[attr-defined]
    tnx = ModuleType("torch_neuronx")
    tnx.nki = nki  # type: ignore[attr-defined]
    tnx.registered = []  # type: ignore[attr-defined]

    def nki_op(name: str, mutates_args: Any) -> Any:
        def register(fn: Any) -> Any:
            tnx.registered.append((name, mutates_args))  # type: ignore[attr-defined]
            return fn

        return register

    tnx.nki_op = nki_op  # type: ignore[attr-defined]
    return tnx, nl


@pytest.fixture
def standin(monkeypatch: pytest.MonkeyPatch) -> tuple[ModuleType, ModuleType]:
    tnx, nl = _standin()
    nki_pkg = ModuleType("nki")
    nki_pkg.language = nl  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch_neuronx", tnx)
    monkeypatch.setitem(sys.modules, "torch_neuronx.nki", tnx.nki)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "nki", nki_pkg)
    monkeypatch.setitem(sys.modules, "nki.language", nl)
    monkeypatch.setattr(N, "_OPS", {})
    return tnx, nl


def _ref(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    return x / np.sqrt((x.astype(np.float64) ** 2).mean(-1, keepdims=True) + N.EPS) * w


@pytest.mark.standin
@pytest.mark.parametrize("lnc", [1, 2])
@pytest.mark.parametrize("rows", [4, 128, 200, 300])  # partial, full, full + partial, 3 tiles
def test_kernel_logic_on_a_numpy_standin(
    rows: int, lnc: int, standin: tuple[ModuleType, ModuleType]
) -> None:
    tnx, nl = standin
    api = N.import_nki()
    assert isinstance(api, N.NkiApi) and api.nl is nl and api.nki_op is tnx.nki_op  # type: ignore[attr-defined]
    assert N.skip_reason(NeuronBackend()) is None

    rng = np.random.default_rng(rows)
    x = rng.standard_normal((rows, 64)).astype(np.float32) * 3
    w = (1 + 0.1 * rng.standard_normal(64)).astype(np.float32)
    out = _HBM(np.full_like(x, np.nan))
    kernel = N.make_kernel(api.nki, api.nl)
    kernel[lnc](_HBM(x.copy()), _HBM(w.copy()), out, N.EPS)
    assert not np.isnan(out.arr).any()  # every row written once the LNC's cores are done
    np.testing.assert_allclose(out.arr, _ref(x, w), rtol=1e-5, atol=1e-5)


@pytest.mark.standin
def test_torch_op_registration_output_tensor_and_lnc_launch(
    standin: tuple[ModuleType, ModuleType], monkeypatch: pytest.MonkeyPatch
) -> None:
    tnx, _ = standin
    monkeypatch.setenv(N.LNC_ENV, "2")
    step = N.NKI.build((3, 100, 64), __import__("torch").float32, "cpu", 0)
    y = step()
    assert tnx.registered == [(N.OP_NAME + "_lnc2", {})]  # type: ignore[attr-defined]
    launched = N._OPS[2]
    assert callable(launched)
    from neuronasv.measure.workloads.rmsnorm import make_inputs

    x, w = make_inputs((3, 100, 64), __import__("torch").float32, "cpu", 0)
    np.testing.assert_allclose(y.numpy(), _ref(x.numpy(), w.numpy()), rtol=1e-5, atol=1e-5)


def test_lnc_follows_the_runtime_setting() -> None:
    assert N.launch_lnc({N.LNC_ENV: "1"}, "trn2.48xlarge") == 1
    assert N.launch_lnc({N.LNC_ENV: "2"}, "m5.large") == 2
    assert N.launch_lnc({}, "trn2.48xlarge") == 2  # the runtime's default on Trn2
    assert N.launch_lnc({}, "trn3.48xlarge") == 2
    assert N.launch_lnc({}, "") == 1
    with pytest.raises(ValueError, match="not a supported LNC degree"):
        N.launch_lnc({N.LNC_ENV: "4"}, "")
    with pytest.raises(ValueError, match="not an integer"):
        N.launch_lnc({N.LNC_ENV: "two"}, "")


@pytest.mark.standin
def test_the_standin_rejects_the_removed_dialect(standin: tuple[ModuleType, ModuleType]) -> None:
    _, nl = standin
    with pytest.raises(AttributeError):
        nl.arange(128)  # type: ignore[attr-defined]
    x = _HBM(np.ones((4, 8), np.float32))
    with pytest.raises(TypeError, match="mask"):
        nl.load(x[0:4, 0:8], mask=None)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="mask"):
        nl.square(np.ones((4, 8)), mask=None)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="slice instead"):
        x[np.arange(4)[:, None], 0:8]
    with pytest.raises(TypeError, match="nested slicing"):
        x[0:4, 0:8][0:2, 0:8]


@pytest.mark.standin
def test_a_legacy_nki_is_refused_with_the_reason(
    standin: tuple[ModuleType, ModuleType],
) -> None:
    _, nl = standin
    nl.arange = np.arange  # type: ignore[attr-defined]  # neuronxcc.nki-era language
    reason = N.import_nki()
    assert isinstance(reason, str) and "nki >= 0.3" in reason
    del nl.arange  # type: ignore[attr-defined]
    tnx = sys.modules["torch_neuronx"]
    del tnx.nki_op  # type: ignore[attr-defined]  # the XLA torch-neuronx has no nki_op
    reason = N.import_nki()
    assert isinstance(reason, str) and "torch_neuronx.nki_op" in reason
