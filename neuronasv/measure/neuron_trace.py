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

Neuron documents the framework events of a TorchNeuron profile as exactly two categories,
"PrivateUse1 runtime" (dispatch) and "PrivateUse1 driver" (device interaction, per
stream) — Kineto's ``privateuse1_runtime`` / ``privateuse1_driver`` — and keeps the device's
own events in the NTFF, not here. So after the device categories, the last source is the
``privateuse1_driver`` complete events themselves (:func:`driver_ops`): a driver span is
the host's view of the device work, labelled :data:`SOURCE_DRIVER_SPANS` ("unverified")
wherever it is used, and used only when nothing better exists.

A file that is not a chrome trace (summary-json, Explorer JSON, Parquet) is a one-line
warning naming what it looks like (:func:`trace_format_problem`), never an empty result
read as "no device events".

**Unverified on Trainium**: which categories and args Neuron's ``trace.json`` uses is not
public; ``neuronasv doctor --neuron-check`` reports the categories it finds so the set can be fixed.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from neuronasv.measure.neuron_formats import (
    CHROME_TRACE,
    SOURCE_DRIVER_SPANS,
    SOURCE_TRACE_DEVICE,
    FormatMismatch,
    sniff,
)
from neuronasv.measure.opnames import (
    UNATTRIBUTED_OP,
    CycleStats,
    OpSample,
    is_bookkeeping,
    normalize_op_name,
)

__all__ = [
    "DEVICE_CATEGORIES",
    "DRIVER_CATEGORY",
    "TRACE_NAME",
    "TraceReading",
    "categories",
    "cycle_from_new_traces",
    "device_ops",
    "driver_ops",
    "find_traces",
    "host_cycle",
    "merge_with_host",
    "profiler_steps",
    "read_new_traces",
    "summarise_categories",
    "trace_format_problem",
]

log = logging.getLogger(__name__)

TRACE_NAME = "trace.json"
#: Kineto's category of the "PrivateUse1 driver" events (device interaction, per stream).
DRIVER_CATEGORY = "privateuse1_driver"
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


def trace_format_problem(data: Any) -> FormatMismatch | None:
    """Why ``data`` is not a chrome trace (what it looks like instead), or None."""
    found = sniff(data)
    return None if found == CHROME_TRACE else FormatMismatch(CHROME_TRACE, found)


def categories(data: Any) -> dict[str, int]:
    """Complete-event counts per category (what neuron-check reports)."""
    return dict(Counter(str(e.get("cat", "")) for e in _events(data) if e.get("ph") == "X"))


def device_ops(data: Any, *, where: str = "trace") -> tuple[dict[str, float], dict[str, int]]:
    """``({op: device µs}, {op: device events})`` of one chrome trace.

    Ops are normalised like ``key_averages()`` rows (:func:`normalize_op_name`); device
    events that no host op claims are summed under ``UNATTRIBUTED_OP``. Data that is not a
    chrome trace logs one warning naming what it looks like (``where`` names it) and gives
    nothing.
    """
    problem = trace_format_problem(data)
    if problem is not None:
        log.warning(f"{where}: {problem}; not read as device time")
        return {}, {}
    return _ops(data, _is_device)


def driver_ops(data: Any) -> tuple[dict[str, float], dict[str, int]]:
    """Like :func:`device_ops` for the ``privateuse1_driver`` complete events (pure; data
    that is not a chrome trace gives nothing: :func:`device_ops` warned about it)."""
    if trace_format_problem(data) is not None:
        return {}, {}
    return _ops(data, lambda cat: cat.lower() == DRIVER_CATEGORY)


def _args(e: Mapping[str, Any]) -> Mapping[str, Any]:
    args = e.get("args")
    return args if isinstance(args, Mapping) else {}


def _map_ids(
    e: Mapping[str, Any], cat: str, ops_by_ext: dict[Any, str], ext_by_corr: dict[Any, Any]
) -> None:
    """Learn an op's External id (host event) or a correlation's (runtime/driver event)."""
    args = _args(e)
    if cat.lower() in _HOST_CATEGORIES:
        ext = _ext_id(args)
        name = str(e.get("name", ""))
        if ext is not None and not is_bookkeeping(name):
            ops_by_ext[ext] = normalize_op_name(name)
    elif "runtime" in cat.lower() or "driver" in cat.lower():
        ext, corr = _ext_id(args), args.get("correlation")
        if ext is not None and corr is not None:
            ext_by_corr[corr] = ext


def _ops(data: Any, counted: Callable[[str], bool]) -> tuple[dict[str, float], dict[str, int]]:
    ops_by_ext: dict[Any, str] = {}
    ext_by_corr: dict[Any, Any] = {}
    device: list[Mapping[str, Any]] = []
    for e in _events(data):
        if e.get("ph") != "X":
            continue
        cat = str(e.get("cat", ""))
        if counted(cat):
            device.append(e)
        if not _is_device(cat):  # a device event maps no ids
            _map_ids(e, cat, ops_by_ext, ext_by_corr)
    times: dict[str, float] = {}
    counts: dict[str, int] = {}
    for e in device:
        args = _args(e)
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


def host_cycle(data: Any) -> CycleStats:
    """The host side of one exported cycle (pure): per op (normalised, bookkeeping left out)
    its calls and self CPU time (µs: an op's duration less its direct children's, per
    thread), no device time — what ``key_averages()`` gives a live run, read back offline.
    Not a chrome trace: no ops (:func:`trace_format_problem` says why)."""
    if trace_format_problem(data) is not None:
        return CycleStats(ops={}, device_time_us=0.0)
    by_thread: dict[Any, list[tuple[float, float, str]]] = {}
    for e in _events(data):
        if e.get("ph") != "X" or str(e.get("cat", "")).lower() not in _HOST_CATEGORIES:
            continue
        try:
            ts, dur = float(e.get("ts", 0.0)), float(e.get("dur", 0.0))
        except (TypeError, ValueError):
            continue
        key = (e.get("pid"), e.get("tid"))
        by_thread.setdefault(key, []).append((ts, dur, str(e.get("name", ""))))
    acc: dict[str, list[float]] = {}
    for events in by_thread.values():
        events.sort(key=lambda t: (t[0], -t[1]))
        stack: list[list[Any]] = []  # [end, name, self]

        def close(item: list[Any]) -> None:
            name = item[1]
            if not is_bookkeeping(name):
                a = acc.setdefault(normalize_op_name(name), [0.0, 0.0])
                a[0] += 1
                a[1] += max(item[2], 0.0)

        for ts, dur, name in events:
            while stack and ts >= stack[-1][0]:
                close(stack.pop())
            if stack:
                stack[-1][2] -= dur
            stack.append([ts + dur, name, dur])
        while stack:
            close(stack.pop())
    ops = {k: OpSample(0.0, v[1], int(v[0])) for k, v in acc.items()}
    return CycleStats(ops=ops, device_time_us=0.0)


def profiler_steps(data: Any) -> int:
    """How many iterations one exported cycle holds: its distinct ``ProfilerStep#<n>``
    ranges (a cycle's trace keeps only its active steps); 0 when it names none."""
    if trace_format_problem(data) is not None:
        return 0
    names = {
        str(e.get("name", ""))
        for e in _events(data)
        if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")
    }
    return len(names)


def merge_with_host(
    host: CycleStats, times: Mapping[str, float], sources: Mapping[str, str] | None = None
) -> CycleStats:
    """``host``'s ops (self CPU time, counts) with device times from elsewhere (pure);
    ``sources`` names where each op's device time came from."""
    ops: dict[str, OpSample] = {}
    for name, s in host.ops.items():
        ops[name] = OpSample(times.get(name, 0.0), s.self_cpu_us, s.count)
    for name, us in times.items():
        if name not in ops:
            ops[name] = OpSample(us, 0.0, 0)
    kept = {k: v for k, v in (sources or {}).items() if k in times}
    return CycleStats(ops=ops, device_time_us=sum(times.values()), sources=kept)


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


@dataclass(frozen=True)
class TraceReading:
    """Device time from the ``trace.json`` files of one cycle.

    Attributes:
        times: op -> device µs over the cycle (empty: none found).
        source: :data:`SOURCE_TRACE_DEVICE` or :data:`SOURCE_DRIVER_SPANS`, None if empty.
        tried: one line per source tried, what it gave.
        warnings: files that were not chrome traces, one line each (the caller logs them).
    """

    times: dict[str, float] = field(default_factory=dict)
    source: str | None = None
    tried: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


def _new_paths(root: str, seen: set[str]) -> list[str]:
    new = []
    for path, mtime, size in find_traces(root):
        key = f"{path}\x1f{mtime}\x1f{size}"
        if key not in seen:
            seen.add(key)
            new.append(path)
    return new


def _add(total: dict[str, float], times: Mapping[str, float]) -> None:
    for op, us in times.items():
        total[op] = total.get(op, 0.0) + us


def read_new_traces(root: str, *, seen: set[str] | None = None) -> TraceReading:
    """The ``trace.json`` files below ``root`` new since the last call (``seen`` keeps
    path+mtime+size): their device events per op, else their ``privateuse1_driver`` spans.
    A file that is not JSON or not a chrome trace is a warning, not a reading."""
    seen = seen if seen is not None else set()
    paths = _new_paths(root, seen)
    if not paths:
        return TraceReading(tried=(f"{SOURCE_TRACE_DEVICE}: no new {TRACE_NAME}",))
    device: dict[str, float] = {}
    driver: dict[str, float] = {}
    warnings: list[str] = []
    for path in paths:
        data = _load(path)
        problem = (
            FormatMismatch(CHROME_TRACE, "no JSON") if data is None else trace_format_problem(data)
        )
        if problem is not None:
            warnings.append(f"{path}: {problem}; not read as device time")
            continue
        _add(device, _ops(data, _is_device)[0])
        _add(driver, _ops(data, lambda cat: cat.lower() == DRIVER_CATEGORY)[0])
    n = f"{len(paths)} new {TRACE_NAME}"
    tried: tuple[str, ...]
    if sum(device.values()) > 0:
        tried = (f"{SOURCE_TRACE_DEVICE}: {len(device)} op(s) in {n}",)
        return TraceReading(device, SOURCE_TRACE_DEVICE, tried, tuple(warnings))
    tried_device = f"{SOURCE_TRACE_DEVICE}: none in {n}"
    if sum(driver.values()) > 0:
        tried = (tried_device, f"{SOURCE_DRIVER_SPANS}: {len(driver)} op(s)")
        return TraceReading(driver, SOURCE_DRIVER_SPANS, tried, tuple(warnings))
    tried = (tried_device, f"{SOURCE_DRIVER_SPANS}: none")
    return TraceReading(tried=tried, warnings=tuple(warnings))


def cycle_from_new_traces(
    root: str, host: CycleStats, *, seen: set[str] | None = None
) -> CycleStats | None:
    """Device time of the cycle just exported (:func:`read_new_traces`) merged with
    ``host``, each op's source named; None when the new traces hold none."""
    reading = read_new_traces(root, seen=seen)
    if not reading.times or reading.source is None:
        return None
    return merge_with_host(host, reading.times, dict.fromkeys(reading.times, reading.source))


def summarise_categories(paths: Iterable[str]) -> dict[str, int]:
    """Category counts over several traces (neuron-check)."""
    out: Counter[str] = Counter()
    for p in paths:
        data = _load(p)
        if data is not None:
            out.update(categories(data))
    return dict(out)
