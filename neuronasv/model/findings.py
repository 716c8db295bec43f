"""Findings: the output of the Analyse stage and the input of Report and Publish.

A ``FindingsDocument`` is what ``neuronasv compare`` (mode ``compare``: base vs head) and
``neuronasv regressions`` (mode ``history``: change points over a branch) write as JSON.
Renderers and the site read only this document, never results files.

A row (:class:`Finding`) is one series of a comparison: its :class:`Estimate` (base,
head, the CI of head/base, sample counts, unit, source) and its :class:`RowState` (work,
exact (counted) and time axes, presence, confirmation, gate). ``Finding.base``, ``.head``,
``.ratio``, ``.ci_low``, ``.ci_high``, ``.unit``, ``.n_base`` and ``.n_head`` are the
estimate's, read-only: *the* printed values of the row in every view, and Δ is
``head / base - 1`` of them.

Schema history (``FINDINGS_SCHEMA_VERSION``):
  1 — first version.
  2 — ``work`` (exact per-op work changes between base and head: new/removed ops, calls,
      input shapes, bytes/FLOPs) and ``causes`` (findings grouped by what changed).
      ``forced``: what made base and head incomparable when ``--force`` compared them
      anyway. ``health``: the device-health decision (canary vs the machine's history).
  3 — ``Finding.basis`` (``work`` when the exact work decided the verdict), and
      additively: op findings' ``roofline_base``/``roofline_head``/``roofline_bound``,
      ``RunRef.traces``, ``Finding.module_chain``, ``Finding.from_rounds``,
      ``WorkChange.modules``, ``Cause.where``, ``Finding.state`` (a row's two axes and
      its gate rule), ``Finding.timing`` and ``settings["gate"]``.
  4 — one number per fact (issue 28). A finding is ``series``, ``estimate``
      (:class:`Estimate`: ``unit``, ``base``, ``head``, ``ci_low``, ``ci_high``,
      ``n_base``, ``n_head``, ``rounds`` and ``source`` — ``rounds``, ``first run`` or
      ``exact count``; the ratio is ``head / base`` and not stored) and ``state``
      (:class:`RowState`, now required: ``presence``, ``work``, ``time``, the new
      exact axis, ``confirmed``, ``gate``, and the beside-time counts; keys in
      :data:`neuronasv.metrics.KEYS`),
      then the test's figures (p-values, noise, reason, warnings) and the breakdown.
      Removed: ``verdict`` (the state's ``presence`` and axes), ``timing``, ``basis``
      (where the time did not decide, the exact axes give the row's direction:
      :attr:`RowState.direction`), ``confirmed`` (``state.confirmed``, and
      ``estimate.source == "rounds"`` for re-measured), ``from_rounds``
      (``estimate.source``), ``state.source`` (``estimate.source``) and the top-level
      ``unit``/``base``/``head``/``ratio``/``ci_low``/``ci_high``/``n_base``/``n_head``
      (the estimate's). In rounds, ``base``/``head`` are the geometric means of the
      rounds' medians (they were the pooled medians, beside a Δ from the paired ratios).
      Versions 1-3 are no longer read: their verdicts, intervals and totals were separate
      figures that cannot be made one again; loading one fails with
      :class:`~neuronasv.errors.SchemaVersionError` (exit 5) saying to run the command
      that wrote it again.
      Additive, same version 4 (written only when set): ``ChangePoint.culprit`` (what a
      bisection proved about the change point's range: the first commit at which the
      series changed, or the narrowest range it could prove; :mod:`neuronasv.model.culprit`).
  5 — the runner is part of the measurement (issue 39): ``runner`` (:class:`RunnerShift`:
      whether most series with equal work and equal counts moved together, by
      which factor, and what each side's sidecar recorded of the machine — load, clock,
      throttling, canary) and ``Estimate.shift`` (the factor a single-run row's time was
      judged against). Both are left out when unset, so a version 4 document reads as
      one without a shift; version 4 is still read.
      Additive, same version 5 (written only when set): ``RowState.exact_why`` (on an
      ``unsteady`` exact row, one line on where its two counts differed and why).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, get_args

from neuronasv.errors import CorruptResultsError
from neuronasv.keys import Config, SeriesConfig
from neuronasv.metrics import BESIDE_TIME, DEVTIME, KEYS, by_prefix
from neuronasv.model import _codec
from neuronasv.model._codec import Document, Model, spec
from neuronasv.model.culprit import Culprit
from neuronasv.model.estimate import (
    TIME_AXIS,
    WORK_AXIS,
    Estimate,
    ExactAxis,
    Presence,
    RowState,
    TimeAxis,
    WorkAxis,
)

__all__ = [
    "COUNT_KIND",
    "FINDINGS_SCHEMA_VERSION",
    "TIME_AXIS",
    "WORK_AXIS",
    "CanaryCheck",
    "Cause",
    "ChangePoint",
    "DeviceHealth",
    "EnvChange",
    "Estimate",
    "ExactAxis",
    "Finding",
    "FindingsDocument",
    "OpContribution",
    "Presence",
    "RowState",
    "RunRef",
    "RunnerShift",
    "SeriesId",
    "SideState",
    "TimeAxis",
    "WorkAxis",
    "WorkChange",
    "WorkKind",
]

FINDINGS_SCHEMA_VERSION = 5
#: Versions :meth:`FindingsDocument.from_json` reads.
_READABLE = (4, 5)
FINDINGS_SCHEMA_READS = _READABLE
_KIND = "neuronasv.findings"
#: The time metric's name: its series' labels carry no metric.
_TIME = DEVTIME.name
_RETIRED = (
    "written before one estimate per row (schema 4): its figures cannot be made one again;"
    " run the command that wrote it (neuronasv compare, confirm or regressions) again"
)

#: What kind of work change (:class:`WorkChange`): the untimed pass's kinds, then the
#: beside-time exact metric's count (its registry name).
WorkKind = str
COUNT_KIND: str = BESIDE_TIME.name
WORK_KINDS: tuple[str, ...] = ("new", "removed", "calls", "shapes", "bytes", COUNT_KIND)
CauseKind = Literal["work", "timing"]
CAUSE_KINDS: tuple[str, ...] = get_args(CauseKind)


HealthStatus = Literal["ok", "withheld", "unknown"]
HEALTH_STATUSES: tuple[str, ...] = get_args(HealthStatus)
#: What the series with equal work and equal counts did together
#: (:mod:`neuronasv.analyse.runnershift`).
ShiftStatus = Literal["runner", "series", "none", "unknown"]
SHIFT_STATUSES: tuple[str, ...] = get_args(ShiftStatus)


@dataclass(frozen=True)
class SeriesId(Model):
    """Which series a finding is about.

    ``benchmark`` and ``params`` are asv's (the key in the results file); ``workload``,
    ``shape``, ``dtype`` and ``op`` are filled for neuronasv's own series (``op`` None = the
    workload total) and None for plain asv benchmarks.
    """

    _what = "series"

    benchmark: str
    params: tuple[str, ...] = ()
    workload: str | None = None
    shape: str | None = None
    dtype: str | None = None
    op: str | None = None

    @property
    def config(self) -> SeriesConfig:
        """(workload, shape, dtype): all None for a plain asv benchmark."""
        return (self.workload, self.shape, self.dtype)

    @property
    def metric(self) -> str | None:
        """The metric the series measures (a name of :mod:`neuronasv.metrics`), by its
        asv benchmark's method prefix (``devtime_op``); None for a benchmark of none
        (plain asv). The one place a series' metric is read from its name."""
        found = by_prefix(self.benchmark.rpartition(".")[2])
        return None if found is None else found.name

    @property
    def label(self) -> str:
        """Human label: ``rmsnorm.naive 4x512 bfloat16 · aten::mul`` or ``bench(p1, p2)``.

        For people only: two series may share a label (an op named ``a · b``), and its
        wording may change; what matches a series (rules, acknowledgements, bisect's
        ``--series``) reads the fields (:mod:`neuronasv.analyse.patterns`)."""
        if self.workload is not None:
            parts = [self.workload, self.shape or "", self.dtype or ""]
            text = " ".join(p for p in parts if p)
            text = f"{text} · {self.op}" if self.op else text
            # Another metric's series than device time says which (``(memory)``).
            metric = self.metric
            return text if metric in (None, _TIME) else f"{text} ({metric})"
        return f"{self.benchmark}({', '.join(self.params)})" if self.params else self.benchmark


def _group(s: SeriesId) -> SeriesConfig:
    return s.config


@dataclass(frozen=True)
class OpContribution(Model):
    """One op's share of a workload total's change (op-level attribution)."""

    _what = "attribution entry"

    op: str
    base: float | None
    head: float | None
    delta: float
    share: float  # fraction of the total's delta this op explains (can exceed 1 or be < 0)
    calls_base: float | None = field(default=None, metadata=spec(bound="nonneg"))
    calls_head: float | None = field(default=None, metadata=spec(bound="nonneg"))
    roofline_base: float | None = field(
        default=None, metadata=spec(omit_empty=True, bound="nonneg")
    )
    roofline_head: float | None = field(
        default=None, metadata=spec(omit_empty=True, bound="nonneg")
    )
    roofline_bound: str | None = field(default=None, metadata=spec(omit_empty=True))


@dataclass(frozen=True)
class Finding(Model):
    """One row of a comparison: one series between base and head.

    Attributes:
        series: which series.
        estimate: the row's figures (:class:`Estimate`), computed once in analyse.
        state: what the row says on each axis (:class:`RowState`), decided once in
            analyse.
        p_value: raw test p-value; p_adjusted: after the multiple-comparison correction.
        noise_base, noise_head: IQR/median of each side's samples.
        reason: one sentence for people ("+18 % (CI +12 … +25 %), p=0.0003 ...").
        warnings: noise, too few samples, fallback to factor-only (no samples), ...
        attribution: for workload totals that moved, every op's signed change read from
            the same samples as the estimate (:mod:`neuronasv.analyse.attribution`).
        acknowledged: the maintainer's reason when an acknowledgement matched.
        calls_base, calls_head: calls per iteration for op series.
        module_chain: for a workload total that moved and whose profiles carry module
            times, the path from the total to the op: the total (``op`` ``""``, the
            estimate's base and head), each module on the way down (``op``
            ``module:<path>``, inclusive time) and the op within the last module; base and
            head from the same samples and estimator as the row, ``share`` = the link's
            delta / the row's delta.
        roofline_base, roofline_head: for op series, the op's achieved fraction of the
            device's peak on each side (from the sidecar profiles), when known.
        roofline_bound: which roof that fraction is of (head's, else base's).

    The printed values — ``base``, ``head``, ``ratio``, ``ci_low``, ``ci_high``,
    ``unit``, ``n_base``, ``n_head`` — are the estimate's, as read-only properties: every
    view prints them as they are, and Δ is ``head / base - 1``.
    """

    _what = "finding"

    series: SeriesId
    estimate: Estimate
    state: RowState
    p_value: float | None = None
    p_adjusted: float | None = None
    noise_base: float | None = None
    noise_head: float | None = None
    reason: str = ""
    warnings: tuple[str, ...] = ()
    attribution: tuple[OpContribution, ...] = ()
    acknowledged: str | None = None
    calls_base: float | None = field(default=None, metadata=spec(bound="nonneg"))
    calls_head: float | None = field(default=None, metadata=spec(bound="nonneg"))
    roofline_base: float | None = field(
        default=None, metadata=spec(omit_empty=True, bound="nonneg")
    )
    roofline_head: float | None = field(
        default=None, metadata=spec(omit_empty=True, bound="nonneg")
    )
    roofline_bound: str | None = field(default=None, metadata=spec(omit_empty=True))
    module_chain: tuple[OpContribution, ...] = field(default=(), metadata=spec(omit_empty=True))

    @property
    def unit(self) -> str:
        """The unit of ``base`` and ``head``."""
        return self.estimate.unit

    @property
    def base(self) -> float | None:
        """The printed base value (the estimate's)."""
        return self.estimate.base

    @property
    def head(self) -> float | None:
        """The printed head value (the estimate's)."""
        return self.estimate.head

    @property
    def ratio(self) -> float | None:
        """``head / base``: the printed Δ is this minus one."""
        return self.estimate.ratio

    @property
    def ci_low(self) -> float | None:
        """Lower bound of the CI of ``ratio``."""
        return self.estimate.ci_low

    @property
    def ci_high(self) -> float | None:
        """Upper bound of the CI of ``ratio``."""
        return self.estimate.ci_high

    @property
    def n_base(self) -> int:
        return self.estimate.n_base

    @property
    def n_head(self) -> int:
        return self.estimate.n_head

    @property
    def change_pct(self) -> float | None:
        """Δ in percent (``(ratio - 1) * 100``), None without a ratio."""
        r = self.ratio
        return None if r is None else (r - 1.0) * 100.0

    @property
    def remeasured(self) -> bool:
        """The figures come from the interleaved rounds (``estimate.source``)."""
        return self.estimate.source == "rounds"


@dataclass(frozen=True)
class EnvChange(Model):
    """One environment-fingerprint key that differs (``torch``: 2.12.0 → 2.13.0)."""

    _what = "env change"

    key: str
    before: str | None
    after: str | None


@dataclass(frozen=True)
class ChangePoint(Model):
    """A shift in one series' history (mode ``history``).

    ``commit_before`` is the last commit of the old level and ``commit_after`` the first of
    the new one (the culprit lies in ``commit_before..commit_after``). ``open`` is True when
    the shift is a regression still in effect at the latest commit. ``culprit``: what a
    bisection of that range proved (``neuronasv bisect``), None when none ran.
    """

    _what = "change point"

    series: SeriesId
    machine: str
    commit_before: str
    commit_after: str
    index: int  # position of commit_after in the series' commit order
    before: float
    after: float
    ratio: float
    p_value: float
    unit: str
    kind: Literal["regression", "improvement"] = field(metadata=spec(label="change kind"))
    open: bool = False
    env_changes: tuple[EnvChange, ...] = ()
    acknowledged: str | None = None
    reason: str = ""
    culprit: Culprit | None = field(default=None, metadata=spec(omit_empty=True))


@dataclass(frozen=True)
class RunRef(Model):
    """One side of a comparison: commit, machine, fingerprint, links."""

    _what = "run reference"

    commit: str
    machine: str
    fingerprint: Mapping[str, str] = field(default_factory=dict)
    label: str | None = None  # branch or ref name as the user gave it (untrusted text)
    trace_url: str | None = None  # where this side's traces can be downloaded
    # workload key ``name[shape,dtype]`` -> trace file (relative to ``trace_url``'s folder
    # or artifact): the comment names the file of each flagged workload.
    traces: Mapping[str, str] = field(default_factory=dict, metadata=spec(omit_empty=True))


@dataclass(frozen=True)
class WorkChange(Model):
    """One op of one (workload, shape, dtype) whose *work* differs between base and head.

    Exact, not statistical: from the calls per iteration and the recorded input shapes
    and dtypes of the untimed shapes pass (:mod:`neuronasv.measure.evidence`), identical
    on every run of the same code.

    Attributes:
        workload, shape, dtype, op: where.
        kind: ``new`` (only at head), ``removed`` (only at base), ``calls`` (calls per
            iteration differ), ``shapes`` (same calls, other input shapes or dtypes),
            ``bytes`` (same signature, other estimated bytes/FLOPs), :data:`COUNT_KIND`
            (the same calls, another count of :data:`~neuronasv.metrics.BESIDE_TIME`).
        calls_base, calls_head: calls per iteration (None on the side without the op).
        bytes_base, bytes_head, flops_base, flops_head: estimated work per iteration.
        signature_base, signature_head: ``"<calls>×<inputs>"`` entries.
        time_base, time_head: the op's median self device time per iteration (seconds).
        modules: the module paths (:mod:`neuronasv.measure.modules`) whose calls of this
            op differ (for a new or removed op: where it is called), from the untimed
            pass; empty when a side recorded no modules.
        count_base, count_head: the op's count of
            :data:`~neuronasv.metrics.BESIDE_TIME` per iteration
            (:mod:`neuronasv.analyse.exact`), when both sides were counted.
    """

    _what = "work change"

    workload: str
    shape: str
    dtype: str
    op: str
    kind: WorkKind = field(metadata=spec(label="work change kind", choices=WORK_KINDS))
    calls_base: float | None = field(default=None, metadata=spec(bound="nonneg"))
    calls_head: float | None = field(default=None, metadata=spec(bound="nonneg"))
    bytes_base: float | None = field(default=None, metadata=spec(bound="nonneg"))
    bytes_head: float | None = field(default=None, metadata=spec(bound="nonneg"))
    flops_base: float | None = field(default=None, metadata=spec(bound="nonneg"))
    flops_head: float | None = field(default=None, metadata=spec(bound="nonneg"))
    signature_base: tuple[str, ...] = ()
    signature_head: tuple[str, ...] = ()
    time_base: float | None = field(default=None, metadata=spec(bound="nonneg"))
    time_head: float | None = field(default=None, metadata=spec(bound="nonneg"))
    modules: tuple[str, ...] = field(default=(), metadata=spec(omit_empty=True))
    count_base: float | None = field(
        default=None, metadata=spec(key=KEYS["count_base"], omit_empty=True)
    )
    count_head: float | None = field(
        default=None, metadata=spec(key=KEYS["count_head"], omit_empty=True)
    )

    @property
    def config(self) -> Config:
        return Config(self.workload, self.shape, self.dtype)


def _configs(data: Mapping[str, Any], source: str) -> tuple[tuple[str, str], ...]:
    configs = []
    for c in _codec.field(data, "configs", list, source):
        if not isinstance(c, list) or len(c) != 2 or not all(isinstance(x, str) for x in c):
            raise CorruptResultsError(f"{source}: cause configs must be [shape, dtype] pairs")
        configs.append((c[0], c[1]))
    return tuple(configs)


def _where(data: Mapping[str, Any], source: str) -> tuple[tuple[str, str, str], ...]:
    out = []
    for c in data.get("where", []) or []:
        if not isinstance(c, list) or len(c) != 3 or not all(isinstance(x, str) for x in c):
            raise CorruptResultsError(
                f"{source}: cause where must be [workload, shape, dtype] triples"
            )
        out.append((c[0], c[1], c[2]))
    return tuple(out)


@dataclass(frozen=True)
class Cause(Model):
    """Findings of one workload family that share one explanation.

    A ``work`` cause: configurations (shape, dtype) of one workload whose work changed the
    same way (the same ops, the same kind of change, the same direction). A ``timing``
    cause: configurations of one workload whose totals moved the same way with no work
    change (a slower kernel, a library update, the machine).

    Attributes:
        kind: ``work`` or ``timing``.
        workload: the workload family (``rmsnorm.naive``), or the benchmark for plain asv.
        direction: ``regression``/``improvement`` from the totals' verdicts, ``unconfirmed``
            when no total of the cause has a verdict (a work change whose time did not
            move beyond the noise).
        ops: the ops whose work changed (``work``) or that moved most (``timing``).
        configs: ``(shape, dtype)`` pairs the cause covers in ``workload``, in reading order.
        totals: the workload-total series of every configuration the cause covers.
        where: ``(workload, shape, dtype)`` of every configuration, when the same op-level
            change shows in several workloads (an attention and the block that contains
            it): one cause, its workloads worst first; empty for a one-workload cause.
    """

    _what = "cause"

    kind: CauseKind = field(metadata=spec(label="cause kind"))
    workload: str
    direction: Literal["regression", "improvement", "unconfirmed"] = field(
        metadata=spec(label="cause direction")
    )
    ops: tuple[str, ...] = ()
    configs: tuple[tuple[str, str], ...] = field(
        default=(), metadata=spec(encode=lambda c: [list(x) for x in c.configs], decode=_configs)
    )
    totals: tuple[SeriesId, ...] = ()
    where: tuple[tuple[str, str, str], ...] = field(
        default=(),
        metadata=spec(omit_empty=True, encode=lambda c: [list(x) for x in c.where], decode=_where),
    )

    @property
    def places(self) -> tuple[tuple[str, str, str], ...]:
        """``(workload, shape, dtype)`` of every configuration the cause covers."""
        return self.where or tuple((self.workload, s, d) for s, d in self.configs)

    @property
    def workloads(self) -> tuple[str, ...]:
        """The workloads the cause covers, ``workload`` first."""
        out = [self.workload]
        for w, _, _ in self.places:
            if w not in out:
                out.append(w)
        return tuple(out)


@dataclass(frozen=True)
class CanaryCheck(Model):
    """One side's device-health canary against its machine's history.

    Attributes:
        side: ``base`` or ``head``.
        commit, machine: the run judged.
        status: ``ok``, ``withheld`` (slower than the history allows) or ``unknown`` (no
            reading, or too little history for a noise estimate).
        reason: one sentence for people.
        level_us: median canary time of the run (over its readings), None without one.
        baseline_us: median level of the machine's other runs, None without history.
        change: level / baseline - 1 (0.23 = 23 % slower), None without both.
        threshold: the relative slowdown beyond which the run is withheld.
        history_n: earlier runs the baseline and noise rest on.
        readings: canary readings of this run (one per profiled workload).
        device_state: clocks, throttle reasons, ECC, ... recorded with the readings.
    """

    _what = "canary check"

    side: str
    commit: str
    machine: str
    status: HealthStatus = field(metadata=spec(label="health status"))
    reason: str
    level_us: float | None = None
    baseline_us: float | None = None
    change: float | None = None
    threshold: float | None = None
    history_n: int = 0
    readings: int = 0
    device_state: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class DeviceHealth(Model):
    """Whether the device ran as fast as it usually does, for the runs compared.

    Attributes:
        status: ``withheld`` when any side's canary is slower than its machine's history
            allows: the verdicts are kept as data but are not evidence about the code;
            ``ok`` when every side was judged and is within it; ``unknown`` otherwise.
        reason: the sentence renderers and the commit status show verbatim, e.g.
            ``verdicts withheld: head canary 23 % slower than this machine's history
            (median of 12 runs)``.
        checks: one per side.
    """

    _what = "health"

    status: HealthStatus = field(metadata=spec(label="health status"))
    reason: str
    checks: tuple[CanaryCheck, ...] = ()

    @property
    def withheld(self) -> bool:
        return self.status == "withheld"


@dataclass(frozen=True)
class SideState(Model):
    """What one side's run recorded of its machine (its sidecar and its canary readings).

    Attributes:
        side: ``base`` or ``head``.
        load_start, load_end: the 1-minute load average at the start and end of the run
            (``RunSidecar.state``); None when not recorded.
        cpu_mhz_start, cpu_mhz_end: the CPUs' mean clock then; None when not readable.
        cpus: the machine's CPUs (0 when unknown).
        canary_us: the run's canary level (the median of its readings' medians), None
            without a reading.
        throttle: the device's throttle reasons at the end of the run, as its canary's
            device state recorded them (NVML on CUDA); "" when none was recorded.
    """

    _what = "side state"

    side: str
    load_start: float | None = None
    load_end: float | None = None
    cpu_mhz_start: float | None = None
    cpu_mhz_end: float | None = None
    cpus: int = 0
    canary_us: float | None = None
    throttle: str = ""


@dataclass(frozen=True)
class RunnerShift(Model):
    """Whether the runner moved every series together (:mod:`neuronasv.analyse.runnershift`).

    Attributes:
        status: ``runner`` — most series with equal work and equal counts moved the
            same way by a similar factor (beyond the minimum effect) and the canary, where
            read, moved with them: the runner changed, and single-run rows were judged
            against the shift; ``series`` — they moved together but the canary held: not
            the runner's doing, rows judged as measured; ``none`` — no shared shift;
            ``unknown`` — too few such series to tell.
        factor: the shared factor, head / base: exp of the median of those series'
            log-ratios (None under ``unknown``).
        spread: the robust sd (1.4826 × MAD) of their log-ratios about it.
        series: the series it rests on (single run a side, both sides measured, the
            configuration's work and every count equal).
        along: of those, the series that moved the shift's way.
        counted: of those, the series whose equal counts were compared (the rest had
            none: a GPU, or no counting pass).
        canary: head / base of the two runs' canary levels (None without both).
        base, head: what each side recorded of its machine.
    """

    _what = "runner shift"

    status: ShiftStatus = field(metadata=spec(label="runner shift status"))
    factor: float | None = field(default=None, metadata=spec(bound="positive"))
    spread: float | None = field(default=None, metadata=spec(bound="nonneg"))
    series: int = 0
    along: int = 0
    counted: int = 0
    canary: float | None = field(default=None, metadata=spec(bound="positive"))
    base: SideState | None = None
    head: SideState | None = None

    @property
    def shifted(self) -> bool:
        """The runner shifted: rows were judged against :attr:`factor`."""
        return self.status == "runner"


@dataclass(frozen=True)
class FindingsDocument(Document):
    """Everything Report and Publish need, in one versioned document.

    Attributes:
        mode: ``compare`` (base vs head) or ``history`` (change points).
        base, head: the two sides (compare mode); head alone = latest commit (history).
        findings: one per series (compare mode).
        change_points: history mode.
        env_changes: fingerprint keys that differ between base and head.
        settings: the rules used (``min_effect``, ``alpha``, ``correction``, ...), verbatim.
        load_errors: results files that could not be read, with the reason.
        links: ``history_url``, ``report_url``, ... when known.
        work: exact per-op work changes between base and head (compare mode).
        causes: the findings grouped by what changed (compare mode), worst first.
        forced: why base and head are not known to be comparable (different machine,
            backend or device model, or one of them unknown) when ``--force`` compared
            them anyway; empty for a normal comparison. Every view puts it in the headline.
        health: the device-health decision (compare mode); None when none was made.
        runner: whether the runner moved every series together, and what each side
            recorded of its machine (compare mode; schema 5); None when not computed.
    """

    _kind = _KIND
    _version = FINDINGS_SCHEMA_VERSION
    _readable = _READABLE
    _retired: ClassVar[Mapping[int, str]] = {1: _RETIRED, 2: _RETIRED, 3: _RETIRED}
    _source = "<findings>"

    mode: Literal["compare", "history"] = field(metadata=spec(label="mode"))
    base: RunRef | None
    head: RunRef | None
    findings: tuple[Finding, ...] = ()
    change_points: tuple[ChangePoint, ...] = ()
    env_changes: tuple[EnvChange, ...] = ()
    settings: Mapping[str, Any] = field(default_factory=dict)
    load_errors: tuple[str, ...] = ()
    links: Mapping[str, str] = field(default_factory=dict)
    created: str = ""
    work: tuple[WorkChange, ...] = ()
    causes: tuple[Cause, ...] = ()
    forced: tuple[str, ...] = ()
    health: DeviceHealth | None = None
    runner: RunnerShift | None = field(default=None, metadata=spec(omit_empty=True))

    @property
    def shift(self) -> RunnerShift | None:
        """The runner's shift when rows were judged against it (``runner.status`` is
        ``runner``), else None."""
        return self.runner if self.runner is not None and self.runner.shifted else None

    @property
    def withheld(self) -> str | None:
        """The reason verdicts are withheld (device unhealthy), or None."""
        return self.health.reason if self.health is not None and self.health.withheld else None

    def count(self, presence: Presence) -> int:
        """Unacknowledged rows with this presence (``new``, ``removed``, ``failed``)."""
        return sum(
            1 for f in self.findings if f.state.presence == presence and f.acknowledged is None
        )

    @property
    def lost(self) -> tuple[Finding, ...]:
        """Series the head did not measure: a failure of the run, whatever else moved.

        Unacknowledged rows that ``failed`` at head, and ``removed`` ones that are
        not an op gone from a workload the head still measured: a removed workload total
        or plain asv benchmark, or an op whose workload total is itself missing at head.
        (An op that no longer runs while its workload was measured is the code changing,
        not the run losing data.) Statuses, headlines and summaries all read this.
        """
        measured = {
            _group(f.series)
            for f in self.findings
            if f.series.op is None and f.series.workload is not None and f.head is not None
        }
        return tuple(
            f
            for f in self.findings
            if f.acknowledged is None
            and (
                f.state.presence == "failed"
                or (
                    f.state.presence == "removed"
                    and (f.series.op is None or _group(f.series) not in measured)
                )
            )
        )
