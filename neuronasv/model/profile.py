"""Measured device time: the output of the Measure stage.

``ProfileDocument`` is what ``neuronasv profile --json`` writes and what the asv plugin and
the run sidecars embed. All times are microseconds, one entry per *sample*; a sample is one
profiler cycle of the schedule (wait, warmup, active) and its value is the mean over that
cycle's active iterations, so every series is "per iteration".

Schema history (``PROFILE_SCHEMA_VERSION``):
  1 — first version: workloads with device_time_us samples and per-op self device/CPU time,
      calls per iteration, optional roofline fields, optional canary reading.
  2 — per-op ``signature``: the exact work (calls per iteration x input shapes and dtypes)
      from the untimed shapes pass (:mod:`neuronasv.measure.evidence`). Version 1
      documents read with no signature (unknown: never compared).
      Additive, same version: ``canary.device_state`` (flat str -> str: GPU clocks,
      throttle reasons, ECC, ...), optional; readers that predate it ignore it, which loses
      only that explanation, so documents without it and readers without it both still work.
  3 — module rollup (:mod:`neuronasv.measure.modules`): ``WorkloadProfile.modules``, per
      module path its inclusive and self device time per sample, from the same timed
      cycles; ``OpProfile.modules``, the share of each op's time per module path. Version
      1 and 2 documents read with no modules (a workload without module scopes writes none
      either).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from neuronasv.errors import CorruptResultsError
from neuronasv.model import _codec

__all__ = [
    "MODULE_SERIES_PREFIX",
    "PROFILE_SCHEMA_VERSION",
    "CanaryReading",
    "ModuleProfile",
    "OpProfile",
    "ProfileDocument",
    "WorkloadProfile",
    "module_series_name",
    "module_series_path",
]

PROFILE_SCHEMA_VERSION = 3
_READABLE = (1, 2, 3)
_KIND = "neuronasv.profile"

#: A module's series is an ``op`` series named ``module:<path>`` (``module:block.mlp``;
#: ``module:`` alone is the workload root): see docs/asv.md, "Module series".
MODULE_SERIES_PREFIX = "module:"


def module_series_name(path: str) -> str:
    """``block.mlp`` -> ``module:block.mlp`` (the op param of its asv series)."""
    return MODULE_SERIES_PREFIX + path


def module_series_path(op: str | None) -> str | None:
    """The module path of a ``module:`` op name, None for a real op (or the total)."""
    if op is None or not op.startswith(MODULE_SERIES_PREFIX):
        return None
    return op[len(MODULE_SERIES_PREFIX) :]


@dataclass(frozen=True)
class OpProfile:
    """One operator of one workload.

    Attributes:
        op: stable op identity (``aten::mul``; compiled graphs without their hash).
        calls_per_iter: calls per iteration (profiler count / iterations).
        self_device_time_us: self device time per iteration, one value per sample.
        self_cpu_time_us: self CPU time per iteration, one value per sample.
        flops: floating-point operations per iteration, when known.
        bytes: bytes moved per iteration (reads + writes), when known.
        roofline_fraction: achieved fraction of the device's peak, when known.
        signature: the exact work, sorted ``"<calls per iteration>×<input dtypes and
            shapes>"`` entries (:func:`neuronasv.measure.evidence.signatures_from_events`);
            empty when not captured.
        modules: module path -> the fraction of this op's time spent in that module
            (``""`` = outside any module scope); empty when the workload has no scopes.
    """

    op: str
    calls_per_iter: float
    self_device_time_us: tuple[float, ...]
    self_cpu_time_us: tuple[float, ...]
    flops: float | None = None
    bytes: float | None = None
    roofline_fraction: float | None = None
    signature: tuple[str, ...] = ()
    modules: Mapping[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "op": self.op,
            "calls_per_iter": self.calls_per_iter,
            "self_device_time_us": list(self.self_device_time_us),
            "self_cpu_time_us": list(self.self_cpu_time_us),
            "flops": self.flops,
            "bytes": self.bytes,
            "roofline_fraction": self.roofline_fraction,
            "signature": list(self.signature),
        }
        if self.modules:
            out["modules"] = dict(self.modules)
        return out

    @classmethod
    def from_json(cls, data: Any, source: str) -> OpProfile:
        if not isinstance(data, Mapping):
            raise CorruptResultsError(f"{source}: op entry must be an object")
        op = _codec.field(data, "op", str, source)
        src = f"{source} op {op!r}"
        return cls(
            op=op,
            calls_per_iter=float(_codec.field(data, "calls_per_iter", (int, float), src)),
            self_device_time_us=_codec.finite_floats(
                data.get("self_device_time_us"), "self_device_time_us", src
            ),
            self_cpu_time_us=_codec.finite_floats(
                data.get("self_cpu_time_us"), "self_cpu_time_us", src
            ),
            flops=_codec.optional_float(data, "flops", src),
            bytes=_codec.optional_float(data, "bytes", src),
            roofline_fraction=_codec.optional_float(data, "roofline_fraction", src),
            signature=_codec.strings(data.get("signature", []), "signature", src),
            modules=_shares(data.get("modules", {}), src),
        )


def _shares(data: Any, source: str) -> dict[str, float]:
    if not isinstance(data, Mapping):
        raise CorruptResultsError(f"{source}: modules must be an object of path -> share")
    out: dict[str, float] = {}
    for k, v in data.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= v <= 1.0 + 1e-9:
            raise CorruptResultsError(f"{source}: module share {k!r} must be a number in [0, 1]")
        out[str(k)] = float(v)
    return out


@dataclass(frozen=True)
class ModuleProfile:
    """Device time of one module path of a workload (:mod:`neuronasv.measure.modules`).

    Attributes:
        path: dotted module path (``block.mlp``); ``""`` is the workload root.
        device_time_us: inclusive time per iteration (the module and everything below it),
            one value per sample; the root's equals the workload total.
        self_device_time_us: time of the ops directly in this module, per sample.
    """

    path: str
    device_time_us: tuple[float, ...]
    self_device_time_us: tuple[float, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "device_time_us": list(self.device_time_us),
            "self_device_time_us": list(self.self_device_time_us),
        }

    @classmethod
    def from_json(cls, data: Any, source: str) -> ModuleProfile:
        if not isinstance(data, Mapping):
            raise CorruptResultsError(f"{source}: module entry must be an object")
        path = _codec.field(data, "path", str, source)
        src = f"{source} module {path!r}"
        return cls(
            path=path,
            device_time_us=_codec.finite_floats(data.get("device_time_us"), "device_time_us", src),
            self_device_time_us=_codec.finite_floats(
                data.get("self_device_time_us"), "self_device_time_us", src
            ),
        )


@dataclass(frozen=True)
class CanaryReading:
    """Device-health canary: a fixed reference kernel timed at run start and end (µs).

    ``device_state`` is what the device reported around the reading (``start.*`` and
    ``end.*`` keys: clocks, throttle reasons, temperature, ECC counts), when it can tell.
    """

    name: str
    start_us: tuple[float, ...]
    end_us: tuple[float, ...]
    device_state: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "start_us": list(self.start_us),
            "end_us": list(self.end_us),
        }
        if self.device_state:
            out["device_state"] = dict(self.device_state)
        return out

    @classmethod
    def from_json(cls, data: Any, source: str) -> CanaryReading:
        if not isinstance(data, Mapping):
            raise CorruptResultsError(f"{source}: canary must be an object")
        state = data.get("device_state", {})
        if not isinstance(state, Mapping):
            raise CorruptResultsError(f"{source}: canary.device_state must be an object")
        return cls(
            name=_codec.field(data, "name", str, source),
            start_us=_codec.finite_floats(data.get("start_us"), "canary.start_us", source),
            end_us=_codec.finite_floats(data.get("end_us"), "canary.end_us", source),
            device_state={str(k): str(v) for k, v in state.items()},
        )


@dataclass(frozen=True)
class WorkloadProfile:
    """Device time of one workload at one (shape, dtype) on one backend.

    Attributes:
        name: workload name, e.g. ``rmsnorm.naive``.
        backend: ``cpu``, ``cuda`` or ``neuron``.
        shape: shape label, e.g. ``4x512``.
        dtype: dtype label, e.g. ``bfloat16``.
        device_time_us: total self device time per iteration, one value per sample.
        ops: per-op breakdown, sorted by total self device time, largest first.
        device_time_is_cpu: True on the CPU backend, where "device time" is self CPU time.
        iterations_per_sample: active iterations averaged into one sample.
        warnings: noise or capture warnings for people (e.g. IQR/median > 10 %).
        trace_files: exported traces, relative to the trace directory.
        canary: device-health canary reading, when it ran.
        modules: module rollup (root first, then paths in order), empty when the
            workload opened no module scope.
    """

    name: str
    backend: str
    shape: str
    dtype: str
    device_time_us: tuple[float, ...]
    ops: tuple[OpProfile, ...]
    device_time_is_cpu: bool = False
    iterations_per_sample: int = 1
    warnings: tuple[str, ...] = ()
    trace_files: tuple[str, ...] = ()
    canary: CanaryReading | None = None
    modules: tuple[ModuleProfile, ...] = ()

    @property
    def key(self) -> str:
        """``name[shape,dtype]``: unique within one document."""
        return f"{self.name}[{self.shape},{self.dtype}]"

    def op(self, name: str) -> OpProfile | None:
        return next((o for o in self.ops if o.op == name), None)

    def module(self, path: str) -> ModuleProfile | None:
        return next((m for m in self.modules if m.path == path), None)

    def series_samples(self, op: str | None) -> tuple[float, ...] | None:
        """Samples of the total (None), an op, or a module (``module:<path>``); None if absent."""
        if op is None:
            return self.device_time_us
        path = module_series_path(op)
        if path is not None:
            m = self.module(path)
            return m.device_time_us if m else None
        o = self.op(op)
        return o.self_device_time_us if o else None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "backend": self.backend,
            "shape": self.shape,
            "dtype": self.dtype,
            "device_time_us": list(self.device_time_us),
            "device_time_is_cpu": self.device_time_is_cpu,
            "iterations_per_sample": self.iterations_per_sample,
            "ops": [o.to_json() for o in self.ops],
            "warnings": list(self.warnings),
            "trace_files": list(self.trace_files),
            "canary": self.canary.to_json() if self.canary else None,
        }
        if self.modules:
            out["modules"] = [m.to_json() for m in self.modules]
        return out

    @classmethod
    def from_json(cls, data: Any, source: str) -> WorkloadProfile:
        if not isinstance(data, Mapping):
            raise CorruptResultsError(f"{source}: workload entry must be an object")
        name = _codec.field(data, "name", str, source)
        src = f"{source} workload {name!r}"
        ops_raw = _codec.field(data, "ops", list, src)
        canary_raw = data.get("canary")
        return cls(
            name=name,
            backend=_codec.field(data, "backend", str, src),
            shape=_codec.field(data, "shape", str, src),
            dtype=_codec.field(data, "dtype", str, src),
            device_time_us=_codec.finite_floats(data.get("device_time_us"), "device_time_us", src),
            ops=tuple(OpProfile.from_json(o, src) for o in ops_raw),
            device_time_is_cpu=_codec.bool_field(data, "device_time_is_cpu", src),
            iterations_per_sample=_codec.int_field(data, "iterations_per_sample", src, 1),
            warnings=_codec.str_list(data, "warnings", src),
            trace_files=_codec.str_list(data, "trace_files", src),
            canary=CanaryReading.from_json(canary_raw, src) if canary_raw is not None else None,
            modules=tuple(
                ModuleProfile.from_json(m, src) for m in _codec.list_field(data, "modules", src)
            ),
        )


@dataclass(frozen=True)
class ProfileDocument:
    """A set of workload profiles from one process, with the environment fingerprint."""

    backend: str
    workloads: tuple[WorkloadProfile, ...]
    fingerprint: Mapping[str, str] = field(default_factory=dict)
    created: str = ""
    schema_version: int = PROFILE_SCHEMA_VERSION

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": _KIND,
            "schema_version": PROFILE_SCHEMA_VERSION,
            "backend": self.backend,
            "created": self.created,
            "fingerprint": dict(self.fingerprint),
            "workloads": [w.to_json() for w in self.workloads],
        }

    def dumps(self) -> str:
        return _codec.dumps(self.to_json())

    @classmethod
    def from_json(cls, data: Any, source: str = "<profile>") -> ProfileDocument:
        doc = _codec.check_schema(
            data, kind=_KIND, supported=_READABLE, source=source
        )
        return cls(
            backend=_codec.field(doc, "backend", str, source),
            created=_codec.text_field(doc, "created", source),
            fingerprint=_codec.str_map(doc, "fingerprint", source),
            workloads=tuple(
                WorkloadProfile.from_json(w, source)
                for w in _codec.field(doc, "workloads", list, source)
            ),
        )

    @classmethod
    def loads(cls, text: str, source: str = "<profile>") -> ProfileDocument:
        return cls.from_json(_codec.loads(text, source=source), source)
