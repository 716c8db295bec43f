"""The one registry of metrics: each cost neuronasv measures per op is one :class:`Metric`.

A metric is data, not code spread over the stages (issue 40: "instruction" was spelled in
64 modules). Every stage reads its entry here — the unit registry (:mod:`neuronasv.units`:
which units are exact and their bounds), a series' metric from its asv method prefix
(:attr:`neuronasv.model.SeriesId.metric`), ``--metrics`` parsing, the gate's rule names and
the site's states (:mod:`neuronasv.analyse.states`), the chart titles and axes
(:mod:`neuronasv.publish.workload`), bisect's axes (:mod:`neuronasv.run.bisect`) — so a new
metric is a new entry plus its collector, not a rewrite.

The model follows two prior designs: pyperf, where a benchmark's ``unit`` (``second``,
``byte``, ``integer``) is metadata that picks the formatter and everything else is the same
code, so memory is "just another unit"; and asv, whose benchmark types are found by their
name prefix (``time_``, ``mem_``, ``track_``; neuronasv's plugin types ``devtime_`` and
``instr_`` are found the same way), so the prefix is a field of the entry.

Each entry says:

- ``name`` — what ``--metrics`` and a series pattern's ``metric=`` term say; ``title`` —
  the metric in a sentence;
- ``same`` — its words for "no change" (exact metrics); ``delta_unit`` — the unit a
  change's size is written in beside them (none where the words name it);
- ``unit`` — the asv unit of its series; ``exact`` — counted (compared exactly, no
  statistics) or measured (judged by the time tests); ``bound``/``whole`` — what a value of
  an exact metric may be (a value outside is not what the collector writes: refused);
- ``collector`` — which pass produces it, from which field; ``run_pass`` — the pass of
  its own that ``neuronasv run`` starts for it per commit (:data:`CALLGRIND_PASS`: one
  valgrind process before asv, adding the ops it counted to the op catalogue under
  :meth:`Metric.catalogue_key`); empty: the timed profile collects it;
- ``host_only`` — its collector counts the host process's own work (callgrind counts the
  CPU's): only a backend that runs on the host takes it (``Backend.counts``,
  :func:`neuronasv.measure.backends.takes`); on an accelerator device time is the metric;
- ``tools`` — the system packages its collector needs on a runner, installed by the CI's
  ``python -m neuronasv.ci metric-tools`` step when ``--metrics`` holds it;
  ``tools_alias`` — that step's older name from when it served this metric alone, still
  accepted (:func:`tools_aliases`);
- ``prefix`` — its asv benchmark method prefix;
- ``more``/``less`` — its own words for a rise and a fall (a time word never describes a
  count); ``state_more``/``state_less`` — the site's state names for a series whose own
  value rose/fell (exact metrics only); ``gate`` — the gate rule's name for "more of it";
- ``adds_up`` — ``sum`` (an op's values add up to the workload's, like time) or ``peak``
  (they do not);
- ``beside_time`` — a device-time row carries this metric's axis too (its series' own
  count, said beside the time and firing the gate there); otherwise the metric's own
  workload-total row fires its gate rule;
- ``signed`` — a value may be negative (``[-bound, bound]``: an op may free more than it
  allocates);
- ``axis_label`` — the title of a chart's value axis; ``total_title`` — the workload
  total's chart; ``stack_title`` — the chart of its ops stacked (only a metric that adds up);
- ``sidecar_key`` — where a counting pass keeps the metric's per-configuration counts
  (:class:`~neuronasv.model.counts.PassCounts`) in a run sidecar's workload entry (empty:
  its values live in the asv results only); ``noun`` — what one unit of it is called in a
  sentence (``2,443 instructions``), empty where the unit says it; ``value_noun`` — one
  value of it in a sentence (``instruction count``); ``evidence`` — how a counted row says
  where its figures come from (``counted under callgrind, no statistics``); ``legend`` —
  its clause of the one legend views print beside state words.

Two module constants follow the entries: :data:`BESIDE_TIME`, the exact metric a
device-time row carries beside its time, and :data:`KEYS`, the document keys every exact
metric's row state and work changes are written under.

Pure and a leaf (stage 0, standard library only), like :mod:`neuronasv.units`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "BESIDE_TIME",
    "CALLGRIND_PASS",
    "DEVTIME",
    "EXACT",
    "INSTRUCTIONS",
    "IN_SIDECAR",
    "KEYS",
    "MEMORY",
    "METRICS",
    "TIME_UNITS",
    "Metric",
    "by_name",
    "by_prefix",
    "by_unit",
    "counted_by",
    "names",
    "of_unit",
    "parse_names",
    "tools_aliases",
]


#: The :attr:`Metric.run_pass` of a metric counted under valgrind's callgrind.
CALLGRIND_PASS = "callgrind"

#: Unit names that mean "seconds" in results and findings documents (asv's spellings).
TIME_UNITS = frozenset({"seconds", "second", "s", "sec"})


@dataclass(frozen=True)
class Metric:
    """One metric (see the module doc for each field)."""

    name: str
    title: str
    unit: str
    exact: bool
    collector: str
    prefix: str
    more: str
    less: str
    adds_up: Literal["sum", "peak"]
    axis_label: str
    total_title: str
    stack_title: str
    state_more: str = ""
    state_less: str = ""
    gate: str = ""
    bound: float | None = None
    whole: bool = False
    run_pass: str = ""
    host_only: bool = False
    tools: tuple[str, ...] = ()
    tools_alias: str = ""
    same: str = ""
    delta_unit: str = ""
    beside_time: bool = False
    signed: bool = False
    sidecar_key: str = ""
    noun: str = ""
    value_noun: str = ""
    evidence: str = ""
    legend: str = ""

    @property
    def judged(self) -> Literal["exact", "time tests"]:
        """How its rows are judged: compared exactly, or by the time tests."""
        return "exact" if self.exact else "time tests"

    def catalogue_key(self, backend: str) -> str:
        """The op catalogue's key of this metric's own ops on ``backend`` (``cpu:<name>``):
        the ops its :attr:`run_pass` counted, beside the backend's own key."""
        return f"{backend}:{self.name}"


#: Device time: the timed profile's self device time per op (CPU time on the CPU backend).
DEVTIME = Metric(
    name="devtime",
    title="device time",
    unit="seconds",
    exact=False,
    collector="the timed profile (torch profiler): self_device_time_us per op",
    prefix="devtime_",
    more="slower",
    less="faster",
    adds_up="sum",
    axis_label="device time",
    value_noun="device time",
    total_title="Total device time",
    stack_title="Where the time goes (stacked per op)",
)

#: Instructions per iteration, counted under callgrind (CPU): exact.
INSTRUCTIONS = Metric(
    name="instructions",
    title="instructions per iteration",
    unit="instructions",
    exact=True,
    collector="the callgrind pass (valgrind, CPU): the op's dispatch-boundary count",
    run_pass=CALLGRIND_PASS,
    host_only=True,
    tools=("valgrind", "gcc"),
    tools_alias="instruction-tools",
    prefix="instr_",
    more="more instructions",
    less="fewer instructions",
    adds_up="sum",
    axis_label="instructions per iteration",
    total_title="Total instructions",
    stack_title="Where the instructions go (stacked per op)",
    state_more="more-instructions",
    state_less="fewer-instructions",
    gate="more instructions",
    # 10^15: days of native work per iteration, weeks under valgrind
    bound=1e15,
    whole=True,
    same="same instructions",
    beside_time=True,
    sidecar_key="instructions",
    noun="instructions",
    value_noun="instruction count",
    evidence="counted under callgrind, no statistics",
    legend="instructions are exact (counted under callgrind)",
)

#: Each op's self allocated bytes per iteration (torch profiler ``profile_memory=True``:
#: ``self_cpu_memory_usage`` on the CPU, ``self_device_memory_usage`` on CUDA), sampled like
#: device time. Exact: on the CPU every sample of every rmsnorm op repeats to the byte across
#: iterations and processes (``tests/test_memory.py``, docs/metrics.md); a series whose
#: samples differ is not judged exactly (said on its row). Not asv's ``mem_``/``peakmem_``
#: (their prefix and their unit ``bytes`` are asv's own, measured): its own prefix and unit.
MEMORY = Metric(
    name="memory",
    title="self allocated bytes per iteration",
    unit="bytes allocated",
    exact=True,
    collector="the memory profile (torch profiler, profile_memory=True): self memory per op",
    prefix="alloc_",
    more="allocates more",
    less="allocates less",
    adds_up="sum",
    axis_label="bytes allocated per iteration",
    total_title="Total bytes allocated",
    stack_title="Where the allocations go (stacked per op)",
    state_more="allocates-more",
    state_less="allocates-less",
    gate="allocates more",
    # 2^50 bytes: a petabyte per iteration is no allocator's
    bound=float(1 << 50),
    same="allocates the same",
    delta_unit="bytes",
    signed=True,
    value_noun="allocated bytes",
    evidence="every sample repeated exactly",
    legend="allocated bytes are exact where every sample repeats",
)

#: Every metric, in the order views list them.
METRICS: tuple[Metric, ...] = (DEVTIME, INSTRUCTIONS, MEMORY)
#: The exact metrics (compared without statistics), in registry order.
EXACT: tuple[Metric, ...] = tuple(m for m in METRICS if m.exact)
#: The exact metric whose series' count a device-time row states beside its time (its
#: row's exact axis, :attr:`~neuronasv.model.RowState.exact`): the one entry with
#: ``beside_time``.
BESIDE_TIME: Metric = next(m for m in EXACT if m.beside_time)
#: The exact metrics a counting pass keeps in the run sidecar (``sidecar_key``).
IN_SIDECAR: tuple[Metric, ...] = tuple(m for m in EXACT if m.sidecar_key)

#: The keys documents write every exact metric's row state and work changes under
#: (findings schema 4 on; :class:`~neuronasv.model.RowState`,
#: :class:`~neuronasv.model.WorkChange`). They were named when the first exact metric was
#: the only one, and are kept so every document written since reads unchanged: the row's
#: exact axis (``axis``), the beside-time counts at base and head (``base``/``head``) and
#: why a count was not judged (``why``); a work change's counts (``count_base``/
#: ``count_head``). A work change of the beside-time metric's kind is its ``name``.
KEYS: dict[str, str] = {
    "axis": "instructions",
    "base": "instr_base",
    "head": "instr_head",
    "why": "instr_why",
    "count_base": "instructions_base",
    "count_head": "instructions_head",
}


def names() -> tuple[str, ...]:
    """Every metric's name (what ``--metrics`` accepts), in registry order."""
    return tuple(m.name for m in METRICS)


def by_name(name: str) -> Metric:
    """The metric called ``name``; :class:`KeyError` for an unknown one."""
    for m in METRICS:
        if m.name == name:
            return m
    raise KeyError(name)


def by_prefix(method: str) -> Metric | None:
    """The metric of an asv benchmark method (``devtime_op``), None for another one."""
    return next((m for m in METRICS if method.startswith(m.prefix)), None)


def by_unit(unit: str) -> Metric | None:
    """The exact metric whose series carry ``unit`` (None for a measured or foreign unit:
    a time unit has several spellings, and asv's own ``bytes`` is not ours)."""
    return next((m for m in EXACT if m.unit == unit), None)


def of_unit(unit: str) -> Metric | None:
    """The metric whose series carry ``unit``: device time for a time unit (any spelling
    asv writes), an exact metric by its unit, None for another (asv's own units)."""
    if unit.lower() in TIME_UNITS:
        return DEVTIME
    return by_unit(unit)


def parse_names(text: str) -> tuple[str, ...]:
    """``devtime,instructions`` -> the metrics' names, in order; :class:`ValueError` names
    an unknown one."""
    listed = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in listed if n not in names()]
    if unknown or not listed:
        raise ValueError(
            f"unknown metric {', '.join(unknown) or '(none)'}: choose from {', '.join(names())}"
        )
    return tuple(dict.fromkeys(listed))


def counted_by(run_pass: str) -> tuple[Metric, ...]:
    """The metrics whose own pass is ``run_pass`` (:data:`CALLGRIND_PASS`), in registry
    order; none for an unknown pass."""
    return tuple(m for m in METRICS if run_pass and m.run_pass == run_pass)


def tools_aliases() -> tuple[str, ...]:
    """The older names of the CI's ``metric-tools`` step (a metric's ``tools_alias``),
    still accepted by ``python -m neuronasv.ci``."""
    return tuple(m.tools_alias for m in METRICS if m.tools_alias)
