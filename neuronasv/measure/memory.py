"""The memory metric's collector: each op's self allocated bytes per iteration.

``neuronasv run --metrics devtime,memory`` (:data:`neuronasv.metrics.MEMORY`): after the
timed profile of a (workload, shape, dtype), :func:`self_bytes` runs the same built step
``samples`` more times, each one iteration under ``torch.profiler`` with
``profile_memory=True`` — apart from the timed cycles, so the allocator's bookkeeping never
reaches device time. A sample is, per op, its ``key_averages()`` entry's *self* memory
(allocated minus freed inside the op's own frames, its children's left to them):
``self_cpu_memory_usage`` on the CPU, ``self_device_memory_usage`` on an accelerator
(CUDA's caching allocator reports it). The workload's total is the sum of its op rows;
what is freed outside every op (the profiler's ``[memory]`` row: a temporary dropped by
Python after its last op) is not an op and is left out, like profiler bookkeeping.

A backend whose profile reports no device memory at all (every entry 0, e.g. a Neuron
runtime without allocator events) has no memory series: :func:`self_bytes` returns None
and says so in one line. Whether a series repeats exactly is judged from its samples
(:mod:`neuronasv.analyse.exact`).
"""

from __future__ import annotations

import logging
import warnings
from typing import Any

from neuronasv.measure.backends.base import Backend
from neuronasv.measure.opnames import is_bookkeeping, is_host_event, normalize_op_name
from neuronasv.measure.workloads import Workload, parse_dtype, parse_shape

__all__ = ["MemorySamples", "read_self_bytes", "self_bytes"]

log = logging.getLogger(__name__)

#: ``{"total": [bytes per sample], "ops": {op: [bytes per sample]}}``.
MemorySamples = dict[str, Any]


def read_self_bytes(events: Any, *, on_cpu: bool) -> dict[str, float] | None:
    """``{op: self bytes}`` of one profiled iteration (``key_averages()`` entries); None
    when an accelerator's profile reported no device memory for any entry."""
    out: dict[str, float] = {}
    seen = False
    for entry in events:
        key = str(entry.key)
        if is_bookkeeping(key) or not is_host_event(entry):
            continue
        value = entry.self_cpu_memory_usage if on_cpu else entry.self_device_memory_usage
        seen = seen or bool(value)
        name = normalize_op_name(key)
        out[name] = out.get(name, 0.0) + float(value or 0)
    return out if on_cpu or seen else None


def self_bytes(
    workload: Workload,
    backend: Backend,
    *,
    shape: str,
    dtype: str,
    samples: int,
    seed: int = 0,
) -> MemorySamples | None:
    """``samples`` one-iteration memory profiles of the built step (module doc)."""
    import torch

    from neuronasv.measure.opnames import quiet_kineto_stderr
    from neuronasv.measure.profiling import _warm_up
    from neuronasv.measure.torchprof import profile

    on_cpu = backend.device_time_is_cpu
    activities = backend.activities()  # the timed profile's (the device's own too)
    per_sample: list[dict[str, float]] = []
    with backend.measuring(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        step = workload.build(parse_shape(shape), parse_dtype(dtype), backend.device, seed)
        _warm_up(workload, backend, step, workload.name, announce=False)
        for _ in range(max(1, samples)):
            with (
                quiet_kineto_stderr(),
                profile(activities=activities, profile_memory=True) as prof,
                torch.no_grad(),
            ):
                step()
                backend.synchronize()
            with quiet_kineto_stderr():
                got = read_self_bytes(prof.key_averages(), on_cpu=on_cpu)
            if got is None:
                log.info(
                    f"{workload.name} {shape} {dtype}: the {backend.name} profile reports no"
                    " device memory; no memory series"
                )
                return None
            per_sample.append(got)
    ops = sorted({op for s in per_sample for op in s})
    return {
        "total": [sum(s.values()) for s in per_sample],
        "ops": {op: [s.get(op, 0.0) for s in per_sample] for op in ops},
    }
