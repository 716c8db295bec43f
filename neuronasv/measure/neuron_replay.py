"""Replay a Neuron capture offline: the profile a live run would have made of it.

Capture on a Trainium host, analyse anywhere: ``neuronasv profile --backend neuron
--from-capture DIR`` needs only ``neuron-explorer`` on ``PATH`` (no torch_neuronx, no
device). ``DIR`` is a capture in the documented layout — ``<instance-id>_pid_<pid>/
<timestamp>/`` folders (how-to-profile-workload.rst), or a folder ``neuronasv profile
--trace-dir`` wrote for one workload (``<workload>-<shape>-<dtype>/``), or one
``<timestamp>`` folder.

Each folder holding ``.ntff`` files (else a ``trace.json``) is one **sample** (one runtime
session: one profiler cycle in a live run), in name order (the timestamps). Its device time
per op comes from :func:`neuronasv.measure.neuron_capture.read_capture` (summary-json,
split by the device profile's engine rows), else from its ``trace.json`` (device
events, then ``privateuse1_driver`` spans); its calls and self CPU time per op from the
same ``trace.json`` (:func:`neuronasv.measure.neuron_trace.host_cycle`). The samples go
through the live run's own :func:`neuronasv.measure.profiling.summarize_cycles`, so the
result is the same :class:`~neuronasv.model.WorkloadProfile` (and a capture with no device
time the same :class:`~neuronasv.errors.CaptureError`, naming the sources tried).

The fingerprint is the capture's, not this machine's: backend ``neuron``, ``host`` = the
instance id in the folder name, ``device_model`` = the profile's instance type, and the
tool, NTFF, runtime and compiler versions; the rest ``none`` (unknown offline).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from neuronasv.errors import CaptureError, UsageError
from neuronasv.measure.backends.neuron import NeuronBackend
from neuronasv.measure.neuron_capture import CaptureReading, pairings, read_capture
from neuronasv.measure.neuron_explorer import Explorer
from neuronasv.measure.neuron_trace import (
    TRACE_NAME,
    driver_ops,
    host_cycle,
    merge_with_host,
    profiler_steps,
    trace_format_problem,
)
from neuronasv.measure.opnames import CycleStats
from neuronasv.model.profile import WorkloadProfile

__all__ = ["Replay", "capture_label", "replay_capture", "sessions"]

_INSTANCE_RE = re.compile(r"^(?P<inst>.+)_pid_\d+$")


def sessions(root: str) -> list[str]:
    """The folders below ``root`` (itself included) that hold an ``.ntff`` or a
    ``trace.json``: one sample each, in path order."""
    out = []
    for dirpath, dirs, files in os.walk(root):
        dirs.sort()
        if any(f.endswith(".ntff") for f in files) or TRACE_NAME in files:
            out.append(dirpath)
    return sorted(out)


def capture_label(root: str) -> tuple[str, str, str]:
    """``(workload, shape, dtype)`` from a ``<workload>-<shape>-<dtype>`` folder name
    (``neuronasv profile --trace-dir``'s), else ``(folder name, "unknown", "unknown")``."""
    from neuronasv.measure.workloads import parse_shape

    base = os.path.basename(os.path.normpath(os.path.abspath(root)))
    parts = base.rsplit("-", 2)
    if len(parts) == 3:
        try:
            parse_shape(parts[1])
        except UsageError:
            pass
        else:
            return parts[0], parts[1], parts[2]
    return base, "unknown", "unknown"


def _load(path: str) -> object:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


@dataclass(frozen=True)
class Replay:
    """A replayed capture: the profile, each sample's reading, and the capture's fingerprint."""

    profile: WorkloadProfile
    readings: tuple[CaptureReading, ...]
    fingerprint: Mapping[str, str]
    warnings: tuple[str, ...]


def _trace_sample(data: object, host: CycleStats) -> tuple[CycleStats, str]:
    """A sample from ``trace.json`` alone (no NTFF gave device time), and what it gave."""
    from neuronasv.measure.neuron_formats import SOURCE_DRIVER_SPANS, SOURCE_TRACE_DEVICE
    from neuronasv.measure.neuron_trace import device_ops

    for source, read in ((SOURCE_TRACE_DEVICE, device_ops), (SOURCE_DRIVER_SPANS, driver_ops)):
        times, _ = read(data)
        if sum(times.values()) > 0:
            stats = merge_with_host(host, times, dict.fromkeys(times, source))
            return stats, f"{source}: {len(times)} op(s)"
    return host, f"{SOURCE_TRACE_DEVICE}: none; {SOURCE_DRIVER_SPANS}: none"


@dataclass(frozen=True)
class _Sample:
    stats: CycleStats
    reading: CaptureReading
    warnings: tuple[str, ...]
    steps: int  # ProfilerStep ranges in its trace.json (0: unknown)


def _sample(
    folder: str, *, explorer: Explorer | None, fmt: str | None, tool_problem: str | None
) -> _Sample:
    """One session folder's :class:`CycleStats`, its reading, warnings and iterations."""
    names = os.listdir(folder)
    warnings: list[str] = []
    data = _load(os.path.join(folder, TRACE_NAME)) if TRACE_NAME in names else None
    host = CycleStats(ops={}, device_time_us=0.0)
    steps = 0
    if data is not None:
        problem = trace_format_problem(data)
        if problem is not None:
            warnings.append(f"{os.path.join(folder, TRACE_NAME)}: {problem}; not read")
            data = None
        else:
            host = host_cycle(data)
            steps = profiler_steps(data)
    pairs = pairings(folder, names) if any(n.endswith(".ntff") for n in names) else []
    reading = read_capture(pairs, explorer=explorer, fmt=fmt, tool_problem=tool_problem)
    warnings.extend(reading.warnings)
    if reading.times and reading.total_us > 0:
        stats = merge_with_host(host, reading.times, reading.sources)
        return _Sample(stats, reading, tuple(warnings), steps)
    stats, line = _trace_sample(data, host) if data is not None else (host, "")
    tried = (*reading.tried, line or f"{TRACE_NAME}: none in {folder}")
    empty = CaptureReading(tried=tried, state=reading.state, versions=reading.versions)
    return _Sample(stats, empty, tuple(warnings), steps)


def _iterations(samples: list[_Sample], active: int | None, warnings: list[str]) -> int:
    """Iterations per sample: ``active`` when given, else what every trace.json says."""
    if active is not None:
        return active
    counts = sorted({s.steps for s in samples})
    if len(counts) == 1 and counts[0] > 0:
        return counts[0]
    warnings.append(
        "iterations per sample unknown (the samples' trace.json hold "
        + " or ".join(str(c) for c in counts)
        + " ProfilerStep ranges): read as 1; give --active"
    )
    return 1


def _fingerprint(root: str, versions: Mapping[str, str]) -> dict[str, str]:
    from neuronasv.measure.fingerprint import FINGERPRINT_KEYS, NONE

    fp = dict.fromkeys((*FINGERPRINT_KEYS, *NeuronBackend.fingerprint_extra_keys), NONE)
    fp["backend"] = NeuronBackend.name
    hosts = sorted(
        {
            m.group("inst")
            for d in sessions(root)
            for part in os.path.relpath(d, root).split(os.sep)
            if (m := _INSTANCE_RE.match(part))
        }
    )
    fp["host"] = ",".join(hosts) or NONE
    v = lambda k: versions.get(f"neuron.{k}") or NONE  # noqa: E731
    fp["device_model"] = v("instance_type")
    fp["neuron_runtime"] = v("runtime_version")
    fp["driver"] = v("driver_version")
    fp["ntff_version"] = v("ntff_version")
    fp["neuron_profile_runtime"] = v("runtime_version")
    fp["neuron_compiler"] = v("compiler_version")
    fp["neuron_explorer"] = versions.get("tool") or v("explorer_version")
    return fp


def replay_capture(
    root: str,
    *,
    explorer: Explorer | None,
    fmt: str | None,
    tool_problem: str | None = None,
    label: tuple[str, str, str] | None = None,
    active: int | None = None,
    tool_version: str | None = None,
) -> Replay:
    """Replay the capture in ``root`` (see the module doc).

    ``active`` is the iterations per sample; None: the ``ProfilerStep`` ranges of each
    sample's ``trace.json`` (a cycle's trace holds only its active steps).

    Raises:
        UsageError: ``root`` holds no capture (no ``.ntff``, no ``trace.json``).
        CaptureError: a sample with no device time from any source (the sources tried are
            in the message's hint).
    """
    from neuronasv.measure.profiling import ProfiledConfig, summarize_cycles

    folders = sessions(root)
    if not folders:
        raise UsageError(
            f"{root}: no Neuron capture here (no .ntff, no {TRACE_NAME}; expected"
            " <instance-id>_pid_<pid>/<timestamp>/ folders)"
        )
    samples = [
        _sample(folder, explorer=explorer, fmt=fmt, tool_problem=tool_problem)
        for folder in folders
    ]
    cycles = [s.stats for s in samples]
    readings = [s.reading for s in samples]
    warnings: list[str] = []
    versions: dict[str, str] = {}
    for sample in samples:
        warnings.extend(w for w in sample.warnings if w not in warnings)
        versions.update(sample.reading.versions)
    iterations = _iterations(samples, active, warnings)
    if tool_version:
        versions["tool"] = tool_version
    name, shape, dtype = label or capture_label(root)
    empty = next((r for c, r in zip(cycles, readings, strict=True) if c.device_time_us <= 0), None)
    hint = empty.tried_line() if empty is not None else None
    try:
        profile = summarize_cycles(
            ProfiledConfig(name, NeuronBackend.name, shape, dtype),
            cycles,
            active=iterations,
            device_time_is_cpu=False,
            capture_hint=hint,
        )
    except CaptureError as exc:
        raise CaptureError(f"{root}: {exc.message}", hint=exc.hint) from None
    return Replay(profile, tuple(readings), _fingerprint(root, versions), tuple(warnings))
