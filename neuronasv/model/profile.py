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
      Additive, same version: per-op ``roofline_bound`` (what ``roofline_fraction`` is a
      fraction of: ``compute``, ``memory`` or ``bandwidth only, FLOPs unknown``, then
      assumptions such as ``; assumed causal``), optional; absent = unknown.
  3 — module rollup (:mod:`neuronasv.measure.modules`): ``WorkloadProfile.modules``, per
      module path its inclusive and self device time per sample, from the same timed
      cycles; ``OpProfile.modules``, the share of each op's time per module path. Version
      1 and 2 documents read with no modules (a workload without module scopes writes none
      either).
      Additive, same version 3: per-op ``module_signatures`` (module path -> the op's
      signature entries issued there, from the untimed pass), optional; absent = unknown.
      Additive, same version: ``WorkloadProfile.counted``
      (:class:`~neuronasv.model.counts.PassCounts`, the counting pass of a metric the
      sidecar keeps, under its registry entry's ``sidecar_key``), optional; absent = not
      counted.
      Additive, same version: ``device_time_source`` on ``OpProfile`` and
      ``WorkloadProfile`` (where the device time came from when not ``key_averages()``:
      ``neuron-explorer summary-json total_active_time``, the device profile's rows
      (Parquet), ``trace.json device events``, ``privateuse1_driver spans
      (unverified)``; sources of different samples joined by `` + ``), optional; absent =
      ``key_averages()`` (the CPU and CUDA never write it).
      Additive, same version: ``PassCounts.why`` (``total``/``ops`` -> one line on
      where two counts of a not-deterministic target differed), optional; absent = not
      said.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from neuronasv.errors import CorruptResultsError
from neuronasv.keys import profile_key
from neuronasv.metrics import IN_SIDECAR
from neuronasv.model._codec import Document, Model, spec
from neuronasv.model.counts import PassCounts
from neuronasv.units import from_us

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
#: The metric whose counts a workload entry keeps (one today: :data:`IN_SIDECAR`).
_SIDECAR = IN_SIDECAR[0]
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
class OpProfile(Model):
    """One operator of one workload.

    Attributes:
        op: stable op identity (``aten::mul``; compiled graphs without their hash).
        calls_per_iter: calls per iteration (profiler count / iterations).
        self_device_time_us: self device time per iteration, one value per sample.
        self_cpu_time_us: self CPU time per iteration, one value per sample.
        flops: floating-point operations per iteration, when known.
        bytes: bytes moved per iteration (reads + writes), when known.
        roofline_fraction: achieved fraction of the device's peak, when known.
        roofline_bound: which roof that fraction is of, for people (see the module doc).
        signature: the exact work, sorted ``"<calls per iteration>×<input dtypes and
            shapes>"`` entries (:func:`neuronasv.measure.evidence.signatures_from_events`);
            empty when not captured.
        modules: module path -> the fraction of this op's time spent in that module
            (``""`` = outside any module scope); empty when the workload has no scopes.
        module_signatures: module path -> the signature entries of the calls issued in
            that module (the untimed pass, like ``signature``): which module's work
            changed; empty when the workload has no scopes or the pass did not run.
        device_time_source: where this op's device time came from, None =
            ``key_averages()`` (see the module doc).
    """

    _what = "op entry"
    _context = ("op", "op")

    op: str
    calls_per_iter: float = field(metadata=spec(bound="nonneg"))
    self_device_time_us: tuple[float, ...] = field(metadata=spec(bound="nonneg"))
    self_cpu_time_us: tuple[float, ...] = field(metadata=spec(bound="nonneg"))
    flops: float | None = field(default=None, metadata=spec(bound="nonneg"))
    bytes: float | None = field(default=None, metadata=spec(bound="nonneg"))
    roofline_fraction: float | None = field(default=None, metadata=spec(bound="nonneg"))
    signature: tuple[str, ...] = ()
    roofline_bound: str | None = field(default=None, metadata=spec(omit_empty=True))
    modules: Mapping[str, float] = field(
        default_factory=dict,
        metadata=spec(omit_empty=True, decode=lambda d, src: _shares(d.get("modules", {}), src)),
    )
    module_signatures: Mapping[str, tuple[str, ...]] = field(
        default_factory=dict,
        metadata=spec(
            omit_empty=True,
            encode=lambda o: {k: list(v) for k, v in o.module_signatures.items()},
            decode=lambda d, src: _module_signatures(d.get("module_signatures", {}), src),
        ),
    )
    device_time_source: str | None = field(default=None, metadata=spec(omit_empty=True))


def _module_signatures(data: Any, source: str) -> dict[str, tuple[str, ...]]:
    if not isinstance(data, Mapping):
        raise CorruptResultsError(f"{source}: module_signatures must be an object")
    out: dict[str, tuple[str, ...]] = {}
    for k, v in data.items():
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise CorruptResultsError(
                f"{source}: module_signatures {k!r} must be a list of strings"
            )
        out[str(k)] = tuple(v)
    return out


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
class ModuleProfile(Model):
    """Device time of one module path of a workload (:mod:`neuronasv.measure.modules`).

    Attributes:
        path: dotted module path (``block.mlp``); ``""`` is the workload root.
        device_time_us: inclusive time per iteration (the module and everything below it),
            one value per sample; the root's equals the workload total.
        self_device_time_us: time of the ops directly in this module, per sample.
    """

    _what = "module entry"
    _context = ("module", "path")

    path: str
    device_time_us: tuple[float, ...] = field(metadata=spec(bound="nonneg"))
    self_device_time_us: tuple[float, ...] = field(metadata=spec(bound="nonneg"))


@dataclass(frozen=True)
class CanaryReading(Model):
    """Device-health canary: a fixed reference kernel timed at run start and end (µs).

    ``device_state`` is what the device reported around the reading (``start.*`` and
    ``end.*`` keys: clocks, throttle reasons, temperature, ECC counts), when it can tell.
    """

    _what = "canary"
    _context = ("canary", "name")

    name: str
    start_us: tuple[float, ...]
    end_us: tuple[float, ...]
    # additive in version 2: left out when empty, as before it existed
    device_state: Mapping[str, str] = field(default_factory=dict, metadata=spec(omit_empty=True))


@dataclass(frozen=True)
class WorkloadProfile(Model):
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
        counted: the counts per iteration of the metric a counting pass keeps in the
            sidecar (:data:`neuronasv.metrics.IN_SIDECAR`, written under its
            ``sidecar_key``); None when not counted.
        device_time_source: where the total's device time came from (the ops' sources),
            None = ``key_averages()``.
    """

    _what = "workload entry"
    _context = ("workload", "name")

    name: str
    backend: str
    shape: str
    dtype: str
    device_time_us: tuple[float, ...] = field(metadata=spec(bound="positive"))
    ops: tuple[OpProfile, ...]
    device_time_is_cpu: bool = False
    iterations_per_sample: int = 1
    warnings: tuple[str, ...] = ()
    trace_files: tuple[str, ...] = ()
    canary: CanaryReading | None = None
    modules: tuple[ModuleProfile, ...] = field(default=(), metadata=spec(omit_empty=True))
    counted: PassCounts | None = field(
        default=None, metadata=spec(key=_SIDECAR.sidecar_key, omit_empty=True)
    )
    device_time_source: str | None = field(default=None, metadata=spec(omit_empty=True))

    @property
    def key(self) -> str:
        """``name[shape,dtype]``: unique within one document."""
        return profile_key(self.name, self.shape, self.dtype)

    def op(self, name: str) -> OpProfile | None:
        return next((o for o in self.ops if o.op == name), None)

    def module(self, path: str) -> ModuleProfile | None:
        return next((m for m in self.modules if m.path == path), None)

    def counts(self, metric: str) -> PassCounts | None:
        """The exact counts of ``metric`` (a name of :mod:`neuronasv.metrics`) this profile
        carries, None when it was not counted (or the metric is not exact)."""
        return self.counted if metric == _SIDECAR.name else None

    def series_samples(self, unit: str = "seconds") -> dict[str | None, list[float]]:
        """The one mapping of a profile to its series' samples, in ``unit``.

        ``None`` is the workload's total device time, an op name its self device time,
        ``module:<path>`` a named module's inclusive time (the root module is the total);
        microseconds become the series' unit by :func:`neuronasv.units.from_us`. What the
        asv plugin stores per series and what confirm and ``compare --round-*`` read back
        from profile documents are both this (the first of an op name that repeats).
        """
        out: dict[str | None, list[float]] = {None: from_us(self.device_time_us, unit)}
        for o in self.ops:
            out.setdefault(o.op, from_us(o.self_device_time_us, unit))
        for m in self.modules:
            if m.path:
                out.setdefault(module_series_name(m.path), from_us(m.device_time_us, unit))
        return out


@dataclass(frozen=True)
class ProfileDocument(Document):
    """A set of workload profiles from one process, with the environment fingerprint.

    ``to_json``/``from_json``/``dumps``/``loads`` come from :class:`~neuronasv.model._codec.
    Document` (derived from the fields); ``schema_version`` is not read from the file: a
    document always holds the current version once read.
    """

    _kind = _KIND
    _version = PROFILE_SCHEMA_VERSION
    _readable = _READABLE
    _source = "<profile>"

    backend: str
    workloads: tuple[WorkloadProfile, ...]
    fingerprint: Mapping[str, str] = field(default_factory=dict)
    created: str = ""
    schema_version: int = field(default=PROFILE_SCHEMA_VERSION, metadata=spec(skip=True))
