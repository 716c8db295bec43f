"""Device time per op from an exported chrome ``trace.json`` (the Neuron fallback).

``correlate_device_time`` — what would put NeuronCore time into ``key_averages()`` — is in
no public Neuron doc, and the public TorchNeuron source's Kineto session returns no
activities. What the docs do promise is that ``NeuronProfiler(cfg).export_trace`` "places
the framework trace in the same directory as Neuron system traces"
(how-to-profile-workload.rst): ``<dir>/<instance-id>_pid_<pid>/<timestamp>/trace.json``.
When a cycle's ``key_averages()`` has no device time, the profiling core asks the backend
for this fallback instead of failing every sample.

The parser reads the chrome trace format PyTorch writes: host ops are complete events
(``ph: X``) of category ``cpu_op`` carrying ``args["External id"]``; device events are
complete events of a device category (:data:`DEVICE_CATEGORIES`, or one naming a
NeuronCore) carrying the same ``External id`` (or a ``correlation`` that a runtime event
maps to one). Each device event's duration goes to the op with its External id;
uncorrelated device time goes to ``[unattributed device time]``. On CUDA this is exactly
how the per-op times were checked against the trace on an H200 (docs/backends.md).

**Unverified on Trainium**: which categories and args Neuron's ``trace.json`` uses is not
public; ``neuronasv doctor --neuron-check`` reports the categories it finds so the set can be fixed.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from neuronasv.measure.opnames import (
    UNATTRIBUTED_OP,
    CycleStats,
    OpSample,
    is_bookkeeping,
    normalize_op_name,
)

__all__ = [
    "DEVICE_CATEGORIES",
    "TRACE_NAME",
    "categories",
    "cycle_from_new_traces",
    "device_ops",
    "find_traces",
    "merge_with_host",
    "summarise_categories",
]

TRACE_NAME = "trace.json"
#: Chrome-trace categories of device work (Kineto's names for kernel/memcpy activities).
DEVICE_CATEGORIES = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "device", "neuron"})
_DEVICE_CAT_RE = re.compile(r"neuron|nc\d|device_(exec|kernel)", re.IGNORECASE)
_HOST_CATEGORIES = frozenset({"cpu_op", "operator"})


def _events(data: Any) -> list[Mapping[str, Any]]:
    raw = data.get("traceEvents", []) if isinstance(data, Mapping) else data
    return [e for e in raw if isinstance(e, Mapping)] if isinstance(raw, list) else []


def _is_device(cat: str) -> bool:
    c = cat.lower()
    return c in DEVICE_CATEGORIES or bool(_DEVICE_CAT_RE.search(c))


def _ext_id(args: Mapping[str, Any]) -> Any:
    for key in ("External id", "external id", "External ID"):
        if key in args:
            return args[key]
    return None


def categories(data: Any) -> dict[str, int]:
    """Complete-event counts per category (what neuron-check reports)."""
    return dict(Counter(str(e.get("cat", "")) for e in _events(data) if e.get("ph") == "X"))


def device_ops(data: Any) -> tuple[dict[str, float], dict[str, int]]:
    """``({op: device µs}, {op: device events})`` of one chrome trace (pure).

    Ops are normalised like ``key_averages()`` rows (:func:`normalize_op_name`); device
    events that no host op claims are summed under ``UNATTRIBUTED_OP``.
    """
    ops_by_ext: dict[Any, str] = {}
    ext_by_corr: dict[Any, Any] = {}
    device: list[Mapping[str, Any]] = []
    for e in _events(data):
        if e.get("ph") != "X":
            continue
        cat = str(e.get("cat", ""))
        args = e.get("args") if isinstance(e.get("args"), Mapping) else {}
        assert isinstance(args, Mapping)
        if _is_device(cat):
            device.append(e)
        elif cat.lower() in _HOST_CATEGORIES:
            ext = _ext_id(args)
            name = str(e.get("name", ""))
            if ext is not None and not is_bookkeeping(name):
                ops_by_ext[ext] = normalize_op_name(name)
        elif "runtime" in cat.lower() or "driver" in cat.lower():
            ext, corr = _ext_id(args), args.get("correlation")
            if ext is not None and corr is not None:
                ext_by_corr[corr] = ext
    times: dict[str, float] = {}
    counts: dict[str, int] = {}
    for e in device:
        args = e.get("args") if isinstance(e.get("args"), Mapping) else {}
        assert isinstance(args, Mapping)
        ext = _ext_id(args)
        if ext is None and args.get("correlation") is not None:
            ext = ext_by_corr.get(args["correlation"])
        op = ops_by_ext.get(ext, UNATTRIBUTED_OP)
        try:
            dur = float(e.get("dur", 0.0))
        except (TypeError, ValueError):
            continue
        if dur > 0:
            times[op] = times.get(op, 0.0) + dur
            counts[op] = counts.get(op, 0) + 1
    return times, counts


def merge_with_host(host: CycleStats, times: Mapping[str, float]) -> CycleStats:
    """``host``'s ops (self CPU time, counts) with the trace's device times (pure)."""
    ops: dict[str, OpSample] = {}
    for name, s in host.ops.items():
        ops[name] = OpSample(times.get(name, 0.0), s.self_cpu_us, s.count)
    for name, us in times.items():
        if name not in ops:
            ops[name] = OpSample(us, 0.0, 0)
    return CycleStats(ops=ops, device_time_us=sum(times.values()))


def find_traces(root: str) -> list[tuple[str, int, int]]:
    """``(path, mtime_ns, size)`` of every ``trace.json`` below ``root``, oldest first."""
    found = []
    for dirpath, _dirs, files in os.walk(root):
        if TRACE_NAME in files:
            path = os.path.join(dirpath, TRACE_NAME)
            try:
                st = os.stat(path)
            except OSError:
                continue
            found.append((path, st.st_mtime_ns, st.st_size))
    found.sort(key=lambda t: (t[1], t[0]))
    return found


def _load(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def cycle_from_new_traces(
    root: str, host: CycleStats, *, seen: set[str] | None = None
) -> CycleStats | None:
    """Device time of the cycle just exported: the ``trace.json`` files below ``root`` that
    are new since the last call (``seen`` keeps path+mtime+size), merged with ``host``.

    Returns None when there is no new trace or it holds no device events.
    """
    seen = seen if seen is not None else set()
    new = []
    for path, mtime, size in find_traces(root):
        key = f"{path}\x1f{mtime}\x1f{size}"
        if key not in seen:
            seen.add(key)
            new.append(path)
    total: dict[str, float] = {}
    for path in new:
        data = _load(path)
        if data is None:
            continue
        times, _ = device_ops(data)
        for op, us in times.items():
            total[op] = total.get(op, 0.0) + us
    if not total or sum(total.values()) <= 0:
        return None
    return merge_with_host(host, total)


def summarise_categories(paths: Iterable[str]) -> dict[str, int]:
    """Category counts over several traces (neuron-check)."""
    out: Counter[str] = Counter()
    for p in paths:
        data = _load(p)
        if data is not None:
            out.update(categories(data))
    return dict(out)
