"""The torch profiler at the cost of what is read from it: two savings, same numbers.

1. :func:`profile` — ``torch.profiler.profile`` without the torch.compile stack it
   imports for nothing (below).
2. :func:`host_cycle` — a host-only cycle's op rows and event tree read straight from the
   Kineto events, without torch's ``FunctionEvent`` parse (see the section at the end).

Every profiler cycle runs ``_KinetoProfile.prepare_trace``, which asks
``hasattr(torch, "_inductor")`` to read ``inductor_config.triton.cudagraphs`` when inductor
is in use. Since torch made ``_dynamo``/``_inductor`` lazy modules, that ``hasattr`` *imports*
them (``torch.__getattr__``) whether or not anything was compiled: the RMSNorm pre-pass
went from 4.3 to 2.9 CPU s without it, and every ``neuronasv profile`` process confirm
starts per round and side saves the same. The check meant
"is inductor loaded?": :func:`profile` makes exactly that the answer — while the profiler
prepares a cycle, ``torch._inductor`` is missing unless it was already imported (a compiled
workload imports it when it compiles, and then the real check runs). Measurements are the
real profiler's; nothing else of torch changes.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["HostEvent", "HostGroup", "host_cycle", "profile"]

_CLASS: Any = None


def _lean_class() -> Any:
    import torch
    from torch.profiler import profile as torch_profile

    class LeanProfile(torch_profile):
        def prepare_trace(self) -> None:
            if "torch._inductor" in sys.modules:
                super().prepare_trace()
                return
            lazy = torch.__dict__.get("__getattr__")

            def no_inductor(name: str) -> Any:
                if name == "_inductor":
                    raise AttributeError(name)
                if lazy is None:
                    raise AttributeError(name)
                return lazy(name)

            names = torch.__dict__  # a module's __getattr__ is looked up there, per miss
            names["__getattr__"] = no_inductor
            try:
                super().prepare_trace()
            finally:
                if lazy is None:
                    del names["__getattr__"]
                else:
                    names["__getattr__"] = lazy

    return LeanProfile


def profile(*args: Any, **kwargs: Any) -> Any:
    """A ``torch.profiler.profile`` (same arguments, same object) that leaves inductor alone."""
    global _CLASS
    if _CLASS is None:
        _CLASS = _lean_class()
    return _CLASS(*args, **kwargs)


# --- One cycle's host events without torch's FunctionEvent parse -------------------------
#
# Reading a cycle through ``prof.key_averages()``/``prof.events()`` makes torch build a
# ``FunctionEvent`` per Kineto event (some forty getters each: shapes, stacks, metadata,
# memory intervals) and then its tree: ~4 ms a cycle for a ~80-event CPU cycle, 120 cycles
# in the RMSNorm pre-pass. :func:`host_cycle` reads the same Kineto events for what the
# op table and the module rollup use (name, interval, thread, annotation flag) and repeats
# torch's own steps on them — the same filter, name rewrite, µs conversion, sort, per-thread
# nesting, duplicate-node lifting, self-time subtraction and ``key_averages`` grouping, in
# the same order, so every sum is the same float (tests/measure/test_torchprof.py compares
# both on real profiles). It covers host-only cycles (the CPU backend: no device activity,
# so no kernels, correlation links or legacy device time); anything else — device events,
# memory records, a linked runtime event, a post-processing timeout — returns None and
# the caller reads torch's events as before.

_SKIPPED_NAMES = frozenset(
    {
        "profiler::_record_function_enter",
        "profiler::_record_function_enter_new",
        "profiler::_record_function_exit",
        "aten::is_leaf",
        "aten::output_nr",
        "aten::_version",
    }
)  # torch.autograd.profiler_util._filter_name, less the memory rows (those fall back)
_MEMORY_NAMES = frozenset({"[memory]", "[OutOfMemory]"})


class HostEvent:
    """What a ``FunctionEvent`` of a host-only cycle carries for the op table and rollup."""

    __slots__ = (
        "cpu_children",
        "cpu_parent",
        "device_type",
        "end",
        "is_async",
        "is_user_annotation",
        "name",
        "self_cpu_time_total",
        "start",
        "thread",
    )
    is_legacy = False
    count = 1
    self_device_time_total = 0  # no device activity: torch's value is int 0 too

    def __init__(
        self, name: str, start: float, end: float, thread: int, is_async: bool,
        device_type: Any, annotation: bool,
    ) -> None:  # fmt: skip
        self.name = name
        self.start = start
        self.end = end
        self.thread = thread
        self.is_async = is_async
        self.device_type = device_type
        self.is_user_annotation = annotation
        self.cpu_parent: HostEvent | None = None
        self.cpu_children: list[HostEvent] = []
        self.self_cpu_time_total: float | int = 0

    @property
    def key(self) -> str:
        return self.name


class HostGroup:
    """One ``key_averages()`` row of a host-only cycle (``FunctionEventAvg``'s sums)."""

    __slots__ = ("count", "device_type", "is_user_annotation", "key", "self_cpu_time_total")
    is_legacy = False
    self_device_time_total = 0

    def __init__(self, first: HostEvent) -> None:
        self.key = first.name
        self.device_type = first.device_type
        self.is_user_annotation = first.is_user_annotation
        self.count = 0
        self.self_cpu_time_total: float | int = 0


def _read_events(prof: Any) -> list[HostEvent] | None:
    """The cycle's events as torch's ``_parse_kineto_results`` keeps them, or None."""
    from torch.autograd import DeviceType
    from torch.autograd.profiler_util import _rewrite_name

    inner: Any = getattr(prof, "profiler", None)
    results = getattr(inner, "kineto_results", None)
    if (
        results is None
        or inner.use_device
        or inner.acc_events
        or getattr(inner, "post_processing_timeout_s", None) is not None
    ):
        return None
    cpu = DeviceType.CPU
    trace_start = results.trace_start_ns()
    names: dict[str, str] = {}
    out: list[HostEvent] = []
    for ev in results.events():
        raw = ev.name()
        if raw in _SKIPPED_NAMES or (hasattr(ev, "is_hidden_event") and ev.is_hidden_event()):
            continue
        if raw in _MEMORY_NAMES or ev.device_type() != cpu or ev.linked_correlation_id():
            return None
        name = names.get(raw)
        if name is None:
            name = names[raw] = _rewrite_name(name=raw, with_wildcard=True)
        thread = ev.start_thread_id()
        out.append(
            HostEvent(
                name,
                (ev.start_ns() - trace_start) / 1000,
                (ev.end_ns() - trace_start) / 1000,
                thread,
                ev.is_async() or thread != ev.end_thread_id(),
                cpu,
                ev.is_user_annotation(),
            )
        )
    out.sort(key=lambda e: (e.start, -e.end))
    return out


def _nest(events: list[HostEvent]) -> None:
    """``EventList._populate_cpu_children``: parents by interval nesting, per thread."""
    sync = sorted((e for e in events if not e.is_async), key=lambda e: e.thread)
    stack: list[HostEvent] = []
    thread = None
    for ev in sync:  # already in (start, -end) order within each thread (stable sorts)
        if ev.thread != thread:
            thread, stack = ev.thread, []
        while stack:
            parent = stack[-1]
            if ev.start >= parent.end or ev.end > parent.end:
                stack.pop()
            else:
                parent.cpu_children.append(ev)
                ev.cpu_parent = parent
                break
        stack.append(ev)


def _lift_duplicates(events: list[HostEvent]) -> list[HostEvent]:
    """``EventList._remove_dup_nodes``: a lone child named as its parent is merged into it."""
    while True:
        gone = set()
        for i, ev in enumerate(events):
            parent = ev.cpu_parent
            if parent is not None and parent.name == ev.name and len(parent.cpu_children) == 1:
                parent.cpu_children = ev.cpu_children
                for child in ev.cpu_children:
                    child.cpu_parent = parent
                gone.add(i)
        if not gone:
            return events
        events = [ev for i, ev in enumerate(events) if i not in gone]


def host_cycle(prof: Any) -> tuple[list[HostEvent], list[HostGroup]] | None:
    """``(prof.events(), prof.key_averages())`` of a host-only cycle, the same numbers
    without torch's FunctionEvent parse (see above); None: read torch's events instead."""
    events = _read_events(prof)
    if events is None:
        return None
    _nest(events)
    events = _lift_duplicates(events)
    groups: dict[tuple[str, bool], HostGroup] = {}
    for ev in events:
        if not ev.is_async:
            total = ev.end - ev.start
            ev.self_cpu_time_total = total - sum(c.end - c.start for c in ev.cpu_children)
        key = (ev.name, ev.is_user_annotation)
        group = groups.get(key)
        if group is None:
            group = groups[key] = HostGroup(ev)
        group.count += 1
        group.self_cpu_time_total += ev.self_cpu_time_total
    return events, list(groups.values())
