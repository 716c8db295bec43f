"""Split one profiler cycle's events into its iterations (pure, no torch import).

With ``schedule(active=K)`` a profiler cycle records K iterations, each inside the
profiler's own host range ``ProfilerStep#N``. By default :func:`profile_workload
<neuronasv.measure.profiling.profile_workload>` averages them into one sample; with
``per_step=True`` each iteration is a sample of its own, so the cycle's start and stop
(≈ 90 ms on the CPU here, tens of ms on a GPU) is paid once for K samples.

Which step an event belongs to: the host ``ProfilerStep`` range it *starts* in.

* host ops: by construction (they nest inside their step's range). An op's device time
  is the time of the kernels the profiler linked to it by correlation id
  (``FunctionEvent.kernels``), so per-op figures do not depend on timestamps at all;
* device kernels: only the per-step device total's unattributed part (kernels no kept op
  launched) uses them. :func:`profile_workload` synchronises the device at the end of
  every iteration, before ``prof.step()`` closes the range, so an iteration's kernels start
  and end inside it; the profiler puts device timestamps on the host clock;
* device-side copies of the step annotation (``gpu_user_annotation`` rows) start with
  their step and land in it (:func:`~neuronasv.measure.profiling.extract_cycle` skips
  them either way).

Per-step samples are offered where the device time is on the host ops' events (CPU and
CUDA: the launching op carries its kernels' time). Neuron keeps one sample a cycle: there
the device time may come from the exported trace for the whole cycle
(:meth:`~neuronasv.measure.backends.base.Backend.fallback_cycle`), which cannot be split.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from typing import Any

from neuronasv.measure.opnames import is_host_event

__all__ = ["is_step_range", "split_steps"]


def _start(event: Any) -> float:
    return float(event.time_range.start)


def is_step_range(event: Any) -> bool:
    """The profiler's host range around one iteration (``ProfilerStep#N``; torch lists it
    as ``ProfilerStep*``)."""
    name = str(getattr(event, "trace_name", None) or event.name)
    return is_host_event(event) and name.startswith("ProfilerStep")


def split_steps(events: Iterable[Any]) -> list[list[Any]]:
    """The cycle's events, one list per ``ProfilerStep`` range, in time order.

    An event that starts before the first step (none does in a scheduled cycle) goes to
    the first. Without any step range, the whole cycle is one list.
    """
    evs: Sequence[Any] = list(events)
    steps = sorted((e for e in evs if is_step_range(e)), key=_start)
    if not steps:
        return [list(evs)]
    starts = [_start(s) for s in steps]
    out: list[list[Any]] = [[] for _ in steps]
    for e in evs:
        i = bisect.bisect_right(starts, _start(e)) - 1
        out[max(i, 0)].append(e)
    return out
