"""Verdicts: the output of the Analyse stage and the input of Report and Publish.

A ``FindingsDocument`` is what ``neuronasv compare`` (mode ``compare``: base vs head) and
``neuronasv regressions`` (mode ``history``: change points over a branch) write as JSON.
Renderers and the site read only this document, never results files.

Values are in the series' own ``unit`` (asv stores seconds for ``devtime_``/``time_``
benchmarks). ``ratio`` is head/base of medians; ``ci_low``/``ci_high`` bound that ratio.

Schema history (``FINDINGS_SCHEMA_VERSION``):
  1 — first version.
  2 — ``work`` (exact per-op work changes between base and head: new/removed ops, calls,
      input shapes, bytes/FLOPs) and ``causes`` (findings grouped by what changed).
      Version 1 documents read with neither.
      ``forced``: what made base and head incomparable when ``--force`` compared them
      anyway (empty when they are comparable). Version 1 documents still load: their
      ``settings["forced"]`` flag becomes a one-entry ``forced``.
      ``health``: the device-health decision (canary vs the machine's history); when its
      status is ``withheld`` the verdicts stand as data but no regression is reported, the
      commit status is not ``failure`` and ``--fail-on`` does not fire. Version 1 documents
      read with ``health`` None (no decision was made).
  3 — ``Finding.basis``: ``work`` when the exact work evidence decided the verdict (strictly
      more or strictly less work at head and a timing that did not decide), else ``timing``.
      Versions 1 and 2 read with ``timing``.
      Additive, same version 3 (written only when set; older readers ignore them): op
      findings' and op contributions' ``roofline_base``/``roofline_head`` (the op's
      fraction of the device's peak at base/head, from the sidecar profiles) and
      ``roofline_bound`` (which roof: ``compute``, ``memory``, ``bandwidth only, FLOPs
      unknown``, ...); ``RunRef.traces`` (workload key ``name[shape,dtype]`` -> trace file,
      relative to where ``trace_url`` points).
      Additive, same version: ``Finding.module_chain`` (total -> modules -> op, from the
      module rollup of the sidecar profiles); optional and written only when present, so
      documents without it read as before and older readers ignore it.
      Additive, same version (written only when set): ``Finding.from_rounds`` (the row's
      total, Δ, CI, attribution and module chain come from the confirm rounds' samples),
      ``WorkChange.modules`` (the module paths whose calls of the op changed, from the
      untimed work pass) and ``Cause.where`` (a cause seen in several workloads).
      Additive, same version: ``Finding.state`` (the row's two axes — work and time — and
      the gate rule it fires, :class:`RowState`), ``Finding.timing`` (the timing's own
      verdict where the work decided) and ``settings["gate"]`` (the gate policy per axis).
      Documents without them get the states derived once when loaded.
      Additive, same version (written only when set): ``ChangePoint.culprit`` (what a
      bisection proved about the change point's range: the first commit at which the
      series changed, or the narrowest range it could prove; :mod:`neuronasv.model.culprit`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from neuronasv.errors import CorruptResultsError
from neuronasv.model import _codec
from neuronasv.model._codec import Document, Model, spec
from neuronasv.model.culprit import Culprit

__all__ = [
    "FINDINGS_SCHEMA_VERSION",
    "CanaryCheck",
    "Cause",
    "ChangePoint",
    "DeviceHealth",
    "EnvChange",
    "Finding",
    "FindingsDocument",
    "OpContribution",
    "RowState",
    "RunRef",
    "SeriesId",
    "Verdict",
    "WorkChange",
    "WorkKind",
]

FINDINGS_SCHEMA_VERSION = 3
#: Versions :meth:`FindingsDocument.from_json` reads.
_READABLE = (1, 2, 3)
FINDINGS_SCHEMA_READS = _READABLE
_KIND = "neuronasv.findings"

Verdict = Literal["regression", "improvement", "unchanged", "noisy", "new", "removed", "failed"]
VERDICTS: tuple[str, ...] = get_args(Verdict)
WorkKind = Literal["new", "removed", "calls", "shapes", "bytes", "instructions"]
WORK_KINDS: tuple[str, ...] = get_args(WorkKind)
CauseKind = Literal["work", "timing"]
#: The work axis of a row: exact, from the untimed shapes pass (:class:`RowState`).
WorkAxis = Literal["more", "less", "different", "same", "unknown"]
WORK_AXIS: tuple[str, ...] = get_args(WorkAxis)
#: The time axis of a row: measured, always beside its Δ and CI (:class:`RowState`).
TimeAxis = Literal["slower", "faster", "noise", "undecided", "none"]
TIME_AXIS: tuple[str, ...] = get_args(TimeAxis)
CAUSE_KINDS: tuple[str, ...] = get_args(CauseKind)


HealthStatus = Literal["ok", "withheld", "unknown"]
HEALTH_STATUSES: tuple[str, ...] = get_args(HealthStatus)


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
    def label(self) -> str:
        """Human label: ``rmsnorm.naive 4x512 bfloat16 · aten::mul`` or ``bench(p1, p2)``."""
        if self.workload is not None:
            parts = [self.workload, self.shape or "", self.dtype or ""]
            text = " ".join(p for p in parts if p)
            text = f"{text} · {self.op}" if self.op else text
            # The exact axis (instr_ series, docs/instructions.md) beside the device time.
            return f"{text} (instructions)" if ".instr_" in self.benchmark else text
        return f"{self.benchmark}({', '.join(self.params)})" if self.params else self.benchmark


def _group(s: SeriesId) -> tuple[str | None, str | None, str | None]:
    return (s.workload, s.shape, s.dtype)


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
    roofline_base: float | None = field(default=None, metadata=spec(omit_empty=True))
    roofline_head: float | None = field(default=None, metadata=spec(omit_empty=True))
    roofline_bound: str | None = field(default=None, metadata=spec(omit_empty=True))


@dataclass(frozen=True)
class RowState(Model):
    """What one row says, on two axes, decided once in analyse (:mod:`neuronasv.analyse.rowstate`).

    Every view renders these fields and never re-derives them from the verdict.

    Attributes:
        work: ``more``/``less`` (more/fewer bytes or FLOPs moved by ops that carry them, or
            an op added/removed), ``different`` (the work changed without one direction, or
            only calls of view/alias/no-op conversion ops changed), ``same`` (no work
            change recorded), ``unknown`` (no work evidence: plain asv benchmarks).
        time: ``slower`` (the timing test decided head is slower and Δ > 0), ``faster``
            (decided faster and Δ < 0), ``noise`` (the CI lies within the minimum effect),
            ``undecided`` (the timing could not decide), ``none`` (no Δ: new, removed,
            failed).
        confirmed: the interleaved rounds confirmed ``time`` (only with slower/faster).
        source: where the row's Δ and CI come from: ``rounds`` or ``first run``.
        gate: the ``--fail-on``/status rule this row fires (``confirmed slower time``,
            ``more work, time undecided``, ...), empty when it fires none.
        instr_base, instr_head: where the time is not decided (undecided or within the
            noise), the same series' instructions per iteration under callgrind at base and
            head (CPU, ``--metrics instructions``): the exact fact the row can still state.
    """

    _what = "row state"

    work: WorkAxis = field(metadata=spec(label="work axis"))
    time: TimeAxis = field(metadata=spec(label="time axis"))
    confirmed: bool = False
    source: Literal["rounds", "first run"] = field(
        default="first run", metadata=spec(label="row source")
    )
    gate: str = ""
    instr_base: float | None = field(default=None, metadata=spec(omit_empty=True))
    instr_head: float | None = field(default=None, metadata=spec(omit_empty=True))


@dataclass(frozen=True)
class Finding(Model):
    """The verdict on one series between base and head.

    Attributes:
        series: which series.
        verdict: regression, improvement, unchanged, noisy, new, removed or failed.
        unit: unit of base/head values (``seconds`` for device time in asv results).
        base, head: medians (None when absent on that side).
        ratio: head/base medians; ci_low/ci_high: confidence interval of that ratio.
        p_value: raw test p-value; p_adjusted: after the multiple-comparison correction.
        noise_base, noise_head: IQR/median of each side's samples.
        n_base, n_head: sample counts.
        reason: one sentence for people ("+18 % (CI 12–25 %), p=0.0003 < 0.01 after Holm,
            above the 5 % minimum effect").
        warnings: noise, too few samples, fallback to factor-only (no samples), ...
        attribution: for workload totals that moved, the ops that explain it.
        acknowledged: the maintainer's reason when an acknowledgement matched.
        confirmed: True/False after an interleaved re-measurement, None if not re-measured.
            True also when ``basis`` is ``work``: the direction is certain from the exact
            work, whatever the timing noise (the rounds only measure its size).
        calls_base, calls_head: calls per iteration for op series.
        module_chain: for a workload total that moved and whose profiles carry module
            times, the path from the total to the op: the total (``op`` ``""``), each
            module on the way down (``op`` ``module:<path>``, inclusive time) and the op
            within the last module (``op`` its name, its time in that module); base/head
            in the series' unit, ``share`` = the link's delta / the total's delta.
        basis: what decided the verdict: ``timing`` (the statistics) or ``work`` (the
            exact work evidence — strictly more or strictly less work at head — where the
            timing alone did not decide; :func:`neuronasv.analyse.evidence.apply_work`).
        roofline_base, roofline_head: for op series, the op's achieved fraction of the
            device's peak on each side (from the sidecar profiles), when known.
        roofline_bound: which roof that fraction is of (head's, else base's).
        from_rounds: True when base, head, ratio, CI, ``attribution`` and
            ``module_chain`` all come from the interleaved re-measurement's rounds (pooled
            samples); False when they all come from the compared runs. Never a mix.
        timing: when ``basis`` is ``work``, the timing test's own verdict (``noisy`` or
            ``unchanged``); None otherwise (``verdict`` is the timing's).
        state: the row's two axes and gate (:class:`RowState`), set by analyse; None in
            documents written before it existed (views then derive it once on load).
    """

    _what = "finding"

    series: SeriesId
    verdict: Verdict
    unit: str
    base: float | None
    head: float | None
    ratio: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    p_value: float | None = None
    p_adjusted: float | None = None
    noise_base: float | None = None
    noise_head: float | None = None
    n_base: int = 0
    n_head: int = 0
    reason: str = ""
    warnings: tuple[str, ...] = ()
    attribution: tuple[OpContribution, ...] = ()
    acknowledged: str | None = None
    confirmed: bool | None = None
    calls_base: float | None = field(default=None, metadata=spec(bound="nonneg"))
    calls_head: float | None = field(default=None, metadata=spec(bound="nonneg"))
    basis: Literal["timing", "work"] = "timing"
    roofline_base: float | None = field(default=None, metadata=spec(omit_empty=True))
    roofline_head: float | None = field(default=None, metadata=spec(omit_empty=True))
    roofline_bound: str | None = field(default=None, metadata=spec(omit_empty=True))
    module_chain: tuple[OpContribution, ...] = field(
        default=(), metadata=spec(omit_empty=True)
    )
    from_rounds: bool = field(default=False, metadata=spec(omit_empty=True))
    timing: str | None = field(default=None, metadata=spec(omit_empty=True))
    state: RowState | None = field(default=None, metadata=spec(omit_empty=True))

    @property
    def change_pct(self) -> float | None:
        return None if self.ratio is None else (self.ratio - 1.0) * 100.0


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
            ``bytes`` (same signature, other estimated bytes/FLOPs), ``instructions`` (the
            same calls, another instruction count under callgrind: exact on the CPU).
        calls_base, calls_head: calls per iteration (None on the side without the op).
        bytes_base, bytes_head, flops_base, flops_head: estimated work per iteration.
        signature_base, signature_head: ``"<calls>×<inputs>"`` entries.
        time_base, time_head: the op's median self device time per iteration (seconds).
        modules: the module paths (:mod:`neuronasv.measure.modules`) whose calls of this
            op differ (for a new or removed op: where it is called), from the untimed
            pass; empty when a side recorded no modules.
        instructions_base, instructions_head: the op's instructions per iteration
            (:mod:`neuronasv.analyse.exact`), when both sides were counted.
    """

    _what = "work change"

    workload: str
    shape: str
    dtype: str
    op: str
    kind: WorkKind = field(metadata=spec(label="work change kind"))
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
    instructions_base: float | None = field(default=None, metadata=spec(omit_empty=True))
    instructions_head: float | None = field(default=None, metadata=spec(omit_empty=True))

    @property
    def config(self) -> tuple[str, str, str]:
        return (self.workload, self.shape, self.dtype)


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
        metadata=spec(
            omit_empty=True, encode=lambda c: [list(x) for x in c.where], decode=_where
        ),
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
    """

    _kind = _KIND
    _version = FINDINGS_SCHEMA_VERSION
    _readable = _READABLE
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

    @property
    def withheld(self) -> str | None:
        """The reason verdicts are withheld (device unhealthy), or None."""
        return self.health.reason if self.health is not None and self.health.withheld else None

    @classmethod
    def _check(cls, values: dict[str, Any], data: Mapping[str, Any], source: str) -> None:
        # version 1 recorded only a flag: it becomes a one-entry ``forced``
        if data["schema_version"] == 1 and values["settings"].get("forced") is True:
            values["forced"] = ("compared with --force (version 1 document: reason not recorded)",)

    def count(self, verdict: str) -> int:
        return sum(1 for f in self.findings if f.verdict == verdict and f.acknowledged is None)

    @property
    def lost(self) -> tuple[Finding, ...]:
        """Series the head did not measure: a failure of the run, whatever else moved.

        Unacknowledged findings that ``failed`` at head, and ``removed`` ones that are
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
                f.verdict == "failed"
                or (
                    f.verdict == "removed"
                    and (f.series.op is None or _group(f.series) not in measured)
                )
            )
        )
