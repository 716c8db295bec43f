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
      Additive, same version: ``Finding.module_chain`` (total -> modules -> op, from the
      module rollup of the sidecar profiles); optional and written only when present, so
      documents without it read as before and older readers ignore it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from neuronasv.errors import CorruptResultsError
from neuronasv.model import _codec

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
WorkKind = Literal["new", "removed", "calls", "shapes", "bytes"]
WORK_KINDS: tuple[str, ...] = get_args(WorkKind)
CauseKind = Literal["work", "timing"]
CAUSE_KINDS: tuple[str, ...] = get_args(CauseKind)


def _list(data: Mapping[str, Any], name: str, source: str) -> list[Any]:
    v = data.get(name, [])
    if not isinstance(v, list):
        raise CorruptResultsError(f"{source}: {name} must be a list")
    return v
HealthStatus = Literal["ok", "withheld", "unknown"]
HEALTH_STATUSES: tuple[str, ...] = get_args(HealthStatus)


def _opt_str(data: Mapping[str, Any], name: str, source: str = "<findings>") -> str | None:
    return _codec.opt_str(data, name, source)


@dataclass(frozen=True)
class SeriesId:
    """Which series a finding is about.

    ``benchmark`` and ``params`` are asv's (the key in the results file); ``workload``,
    ``shape``, ``dtype`` and ``op`` are filled for neuronasv's own series (``op`` None = the
    workload total) and None for plain asv benchmarks.
    """

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
            return f"{text} · {self.op}" if self.op else text
        return f"{self.benchmark}({', '.join(self.params)})" if self.params else self.benchmark

    def to_json(self) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark,
            "params": list(self.params),
            "workload": self.workload,
            "shape": self.shape,
            "dtype": self.dtype,
            "op": self.op,
        }

    @classmethod
    def from_json(cls, data: Any, source: str) -> SeriesId:
        if not isinstance(data, Mapping):
            raise CorruptResultsError(f"{source}: series must be an object")
        return cls(
            benchmark=_codec.field(data, "benchmark", str, source),
            params=_codec.str_list(data, "params", source),
            workload=_opt_str(data, "workload", source),
            shape=_opt_str(data, "shape", source),
            dtype=_opt_str(data, "dtype", source),
            op=_opt_str(data, "op", source),
        )


def _group(s: SeriesId) -> tuple[str | None, str | None, str | None]:
    return (s.workload, s.shape, s.dtype)


@dataclass(frozen=True)
class OpContribution:
    """One op's share of a workload total's change (op-level attribution)."""

    op: str
    base: float | None
    head: float | None
    delta: float
    share: float  # fraction of the total's delta this op explains (can exceed 1 or be < 0)
    calls_base: float | None = None
    calls_head: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "base": self.base,
            "head": self.head,
            "delta": self.delta,
            "share": self.share,
            "calls_base": self.calls_base,
            "calls_head": self.calls_head,
        }

    @classmethod
    def from_json(cls, data: Any, source: str) -> OpContribution:
        if not isinstance(data, Mapping):
            raise CorruptResultsError(f"{source}: attribution entry must be an object")
        return cls(
            op=_codec.field(data, "op", str, source),
            base=_codec.optional_float(data, "base", source),
            head=_codec.optional_float(data, "head", source),
            delta=float(_codec.field(data, "delta", (int, float), source)),
            share=float(_codec.field(data, "share", (int, float), source)),
            calls_base=_codec.optional_float(data, "calls_base", source),
            calls_head=_codec.optional_float(data, "calls_head", source),
        )


@dataclass(frozen=True)
class Finding:
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
    """

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
    calls_base: float | None = None
    calls_head: float | None = None
    basis: Literal["timing", "work"] = "timing"
    module_chain: tuple[OpContribution, ...] = ()

    @property
    def change_pct(self) -> float | None:
        return None if self.ratio is None else (self.ratio - 1.0) * 100.0

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "series": self.series.to_json(),
            "verdict": self.verdict,
            "unit": self.unit,
            "base": self.base,
            "head": self.head,
            "ratio": self.ratio,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "p_value": self.p_value,
            "p_adjusted": self.p_adjusted,
            "noise_base": self.noise_base,
            "noise_head": self.noise_head,
            "n_base": self.n_base,
            "n_head": self.n_head,
            "reason": self.reason,
            "warnings": list(self.warnings),
            "attribution": [a.to_json() for a in self.attribution],
            "acknowledged": self.acknowledged,
            "confirmed": self.confirmed,
            "calls_base": self.calls_base,
            "calls_head": self.calls_head,
            "basis": self.basis,
        }
        if self.module_chain:
            out["module_chain"] = [a.to_json() for a in self.module_chain]
        return out

    @classmethod
    def from_json(cls, data: Any, source: str) -> Finding:
        if not isinstance(data, Mapping):
            raise CorruptResultsError(f"{source}: finding must be an object")
        verdict = _codec.field(data, "verdict", str, source)
        if verdict not in VERDICTS:
            raise CorruptResultsError(f"{source}: unknown verdict {verdict!r}")
        return cls(
            series=SeriesId.from_json(data.get("series"), source),
            verdict=verdict,
            unit=_codec.field(data, "unit", str, source),
            base=_codec.optional_float(data, "base", source),
            head=_codec.optional_float(data, "head", source),
            ratio=_codec.optional_float(data, "ratio", source),
            ci_low=_codec.optional_float(data, "ci_low", source),
            ci_high=_codec.optional_float(data, "ci_high", source),
            p_value=_codec.optional_float(data, "p_value", source),
            p_adjusted=_codec.optional_float(data, "p_adjusted", source),
            noise_base=_codec.optional_float(data, "noise_base", source),
            noise_head=_codec.optional_float(data, "noise_head", source),
            n_base=_codec.int_field(data, "n_base", source),
            n_head=_codec.int_field(data, "n_head", source),
            reason=_codec.text_field(data, "reason", source),
            warnings=_codec.str_list(data, "warnings", source),
            attribution=tuple(
                OpContribution.from_json(a, source)
                for a in _codec.list_field(data, "attribution", source)
            ),
            acknowledged=_opt_str(data, "acknowledged", source),
            confirmed=_codec.opt_bool(data, "confirmed", source),
            calls_base=_codec.optional_float(data, "calls_base", source),
            calls_head=_codec.optional_float(data, "calls_head", source),
            basis=_basis(data, source),
            module_chain=tuple(
                OpContribution.from_json(a, source)
                for a in _codec.list_field(data, "module_chain", source)
            ),
        )


def _basis(data: Mapping[str, Any], source: str) -> Literal["timing", "work"]:
    value = data.get("basis", "timing")  # absent before findings schema 3
    if value not in ("timing", "work"):
        raise CorruptResultsError(
            f"{source}: finding basis must be 'timing' or 'work', got {value!r}"
        )
    return "work" if value == "work" else "timing"


@dataclass(frozen=True)
class EnvChange:
    """One environment-fingerprint key that differs (``torch``: 2.12.0 → 2.13.0)."""

    key: str
    before: str | None
    after: str | None

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "before": self.before, "after": self.after}

    @classmethod
    def from_json(cls, data: Any, source: str) -> EnvChange:
        if not isinstance(data, Mapping):
            raise CorruptResultsError(f"{source}: env change must be an object")
        return cls(
            key=_codec.field(data, "key", str, source),
            before=_opt_str(data, "before", source),
            after=_opt_str(data, "after", source),
        )


@dataclass(frozen=True)
class ChangePoint:
    """A shift in one series' history (mode ``history``).

    ``commit_before`` is the last commit of the old level and ``commit_after`` the first of
    the new one (the culprit lies in ``commit_before..commit_after``). ``open`` is True when
    the shift is a regression still in effect at the latest commit.
    """

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
    kind: Literal["regression", "improvement"]
    open: bool = False
    env_changes: tuple[EnvChange, ...] = ()
    acknowledged: str | None = None
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "series": self.series.to_json(),
            "machine": self.machine,
            "commit_before": self.commit_before,
            "commit_after": self.commit_after,
            "index": self.index,
            "before": self.before,
            "after": self.after,
            "ratio": self.ratio,
            "p_value": self.p_value,
            "unit": self.unit,
            "kind": self.kind,
            "open": self.open,
            "env_changes": [e.to_json() for e in self.env_changes],
            "acknowledged": self.acknowledged,
            "reason": self.reason,
        }

    @classmethod
    def from_json(cls, data: Any, source: str) -> ChangePoint:
        if not isinstance(data, Mapping):
            raise CorruptResultsError(f"{source}: change point must be an object")
        kind = _codec.field(data, "kind", str, source)
        if kind not in ("regression", "improvement"):
            raise CorruptResultsError(f"{source}: unknown change kind {kind!r}")
        return cls(
            series=SeriesId.from_json(data.get("series"), source),
            machine=_codec.field(data, "machine", str, source),
            commit_before=_codec.field(data, "commit_before", str, source),
            commit_after=_codec.field(data, "commit_after", str, source),
            index=int(_codec.field(data, "index", int, source)),
            before=float(_codec.field(data, "before", (int, float), source)),
            after=float(_codec.field(data, "after", (int, float), source)),
            ratio=float(_codec.field(data, "ratio", (int, float), source)),
            p_value=float(_codec.field(data, "p_value", (int, float), source)),
            unit=_codec.field(data, "unit", str, source),
            kind=kind,
            open=_codec.bool_field(data, "open", source),
            env_changes=tuple(
                EnvChange.from_json(e, source)
                for e in _codec.list_field(data, "env_changes", source)
            ),
            acknowledged=_opt_str(data, "acknowledged", source),
            reason=_codec.text_field(data, "reason", source),
        )


@dataclass(frozen=True)
class RunRef:
    """One side of a comparison: commit, machine, fingerprint, links."""

    commit: str
    machine: str
    fingerprint: Mapping[str, str] = field(default_factory=dict)
    label: str | None = None  # branch or ref name as the user gave it (untrusted text)
    trace_url: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "commit": self.commit,
            "machine": self.machine,
            "fingerprint": dict(self.fingerprint),
            "label": self.label,
            "trace_url": self.trace_url,
        }

    @classmethod
    def from_json(cls, data: Any, source: str) -> RunRef:
        if not isinstance(data, Mapping):
            raise CorruptResultsError(f"{source}: run reference must be an object")
        return cls(
            commit=_codec.field(data, "commit", str, source),
            machine=_codec.field(data, "machine", str, source),
            fingerprint=_codec.str_map(data, "fingerprint", source),
            label=_opt_str(data, "label", source),
            trace_url=_opt_str(data, "trace_url", source),
        )


def _opt_bool(data: Mapping[str, Any], name: str, source: str) -> bool | None:
    v = data.get(name)
    if v is None or isinstance(v, bool):
        return v
    raise CorruptResultsError(f"{source}: {name} must be true, false or null, got {v!r}")


@dataclass(frozen=True)
class WorkChange:
    """One op of one (workload, shape, dtype) whose *work* differs between base and head.

    Exact, not statistical: from the calls per iteration and the recorded input shapes
    and dtypes of the untimed shapes pass (:mod:`neuronasv.measure.evidence`), identical
    on every run of the same code.

    Attributes:
        workload, shape, dtype, op: where.
        kind: ``new`` (only at head), ``removed`` (only at base), ``calls`` (calls per
            iteration differ), ``shapes`` (same calls, other input shapes or dtypes),
            ``bytes`` (same signature, other estimated bytes/FLOPs).
        calls_base, calls_head: calls per iteration (None on the side without the op).
        bytes_base, bytes_head, flops_base, flops_head: estimated work per iteration.
        signature_base, signature_head: ``"<calls>×<inputs>"`` entries.
        time_base, time_head: the op's median self device time per iteration (seconds).
    """

    workload: str
    shape: str
    dtype: str
    op: str
    kind: WorkKind
    calls_base: float | None = None
    calls_head: float | None = None
    bytes_base: float | None = None
    bytes_head: float | None = None
    flops_base: float | None = None
    flops_head: float | None = None
    signature_base: tuple[str, ...] = ()
    signature_head: tuple[str, ...] = ()
    time_base: float | None = None
    time_head: float | None = None

    @property
    def config(self) -> tuple[str, str, str]:
        return (self.workload, self.shape, self.dtype)

    def to_json(self) -> dict[str, Any]:
        return {
            "workload": self.workload,
            "shape": self.shape,
            "dtype": self.dtype,
            "op": self.op,
            "kind": self.kind,
            "calls_base": self.calls_base,
            "calls_head": self.calls_head,
            "bytes_base": self.bytes_base,
            "bytes_head": self.bytes_head,
            "flops_base": self.flops_base,
            "flops_head": self.flops_head,
            "signature_base": list(self.signature_base),
            "signature_head": list(self.signature_head),
            "time_base": self.time_base,
            "time_head": self.time_head,
        }

    @classmethod
    def from_json(cls, data: Any, source: str) -> WorkChange:
        if not isinstance(data, Mapping):
            raise CorruptResultsError(f"{source}: work change must be an object")
        kind = _codec.field(data, "kind", str, source)
        if kind not in WORK_KINDS:
            raise CorruptResultsError(f"{source}: unknown work change kind {kind!r}")
        num = {
            k: _codec.optional_float(data, k, source)
            for k in (
                "calls_base", "calls_head", "bytes_base", "bytes_head", "flops_base",
                "flops_head", "time_base", "time_head",
            )
        }  # fmt: skip
        return cls(
            workload=_codec.field(data, "workload", str, source),
            shape=_codec.field(data, "shape", str, source),
            dtype=_codec.field(data, "dtype", str, source),
            op=_codec.field(data, "op", str, source),
            kind=kind,
            signature_base=_codec.strings(data.get("signature_base", []), "signature_base", source),
            signature_head=_codec.strings(data.get("signature_head", []), "signature_head", source),
            **num,
        )


@dataclass(frozen=True)
class Cause:
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
        configs: ``(shape, dtype)`` pairs the cause covers, in reading order.
        totals: the workload-total series of those configurations.
    """

    kind: CauseKind
    workload: str
    direction: Literal["regression", "improvement", "unconfirmed"]
    ops: tuple[str, ...] = ()
    configs: tuple[tuple[str, str], ...] = ()
    totals: tuple[SeriesId, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "workload": self.workload,
            "direction": self.direction,
            "ops": list(self.ops),
            "configs": [list(c) for c in self.configs],
            "totals": [t.to_json() for t in self.totals],
        }

    @classmethod
    def from_json(cls, data: Any, source: str) -> Cause:
        if not isinstance(data, Mapping):
            raise CorruptResultsError(f"{source}: cause must be an object")
        kind = _codec.field(data, "kind", str, source)
        if kind not in CAUSE_KINDS:
            raise CorruptResultsError(f"{source}: unknown cause kind {kind!r}")
        direction = _codec.field(data, "direction", str, source)
        if direction not in ("regression", "improvement", "unconfirmed"):
            raise CorruptResultsError(f"{source}: unknown cause direction {direction!r}")
        configs = []
        for c in _codec.field(data, "configs", list, source):
            if not isinstance(c, list) or len(c) != 2 or not all(isinstance(x, str) for x in c):
                raise CorruptResultsError(f"{source}: cause configs must be [shape, dtype] pairs")
            configs.append((c[0], c[1]))
        return cls(
            kind=kind,
            workload=_codec.field(data, "workload", str, source),
            direction=direction,
            ops=_codec.strings(data.get("ops", []), "ops", source),
            configs=tuple(configs),
            totals=tuple(SeriesId.from_json(t, source) for t in data.get("totals", [])),
        )


def _health_status(data: Mapping[str, Any], source: str) -> HealthStatus:
    status = _codec.field(data, "status", str, source)
    if status not in HEALTH_STATUSES:
        raise CorruptResultsError(f"{source}: unknown health status {status!r}")
    return status


@dataclass(frozen=True)
class CanaryCheck:
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

    side: str
    commit: str
    machine: str
    status: HealthStatus
    reason: str
    level_us: float | None = None
    baseline_us: float | None = None
    change: float | None = None
    threshold: float | None = None
    history_n: int = 0
    readings: int = 0
    device_state: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "side": self.side,
            "commit": self.commit,
            "machine": self.machine,
            "status": self.status,
            "reason": self.reason,
            "level_us": self.level_us,
            "baseline_us": self.baseline_us,
            "change": self.change,
            "threshold": self.threshold,
            "history_n": self.history_n,
            "readings": self.readings,
            "device_state": dict(self.device_state),
        }

    @classmethod
    def from_json(cls, data: Any, source: str) -> CanaryCheck:
        if not isinstance(data, Mapping):
            raise CorruptResultsError(f"{source}: canary check must be an object")
        state = data.get("device_state", {})
        if not isinstance(state, Mapping):
            raise CorruptResultsError(f"{source}: device_state must be an object")
        return cls(
            side=_codec.field(data, "side", str, source),
            commit=_codec.field(data, "commit", str, source),
            machine=_codec.field(data, "machine", str, source),
            status=_health_status(data, source),
            reason=str(data.get("reason", "")),
            level_us=_codec.optional_float(data, "level_us", source),
            baseline_us=_codec.optional_float(data, "baseline_us", source),
            change=_codec.optional_float(data, "change", source),
            threshold=_codec.optional_float(data, "threshold", source),
            history_n=int(data.get("history_n", 0)),
            readings=int(data.get("readings", 0)),
            device_state={str(k): str(v) for k, v in state.items()},
        )


@dataclass(frozen=True)
class DeviceHealth:
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

    status: HealthStatus
    reason: str
    checks: tuple[CanaryCheck, ...] = ()

    @property
    def withheld(self) -> bool:
        return self.status == "withheld"

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "reason": self.reason,
            "checks": [c.to_json() for c in self.checks],
        }

    @classmethod
    def from_json(cls, data: Any, source: str) -> DeviceHealth:
        if not isinstance(data, Mapping):
            raise CorruptResultsError(f"{source}: health must be an object")
        return cls(
            status=_health_status(data, source),
            reason=str(data.get("reason", "")),
            checks=tuple(CanaryCheck.from_json(c, source) for c in data.get("checks", [])),
        )


@dataclass(frozen=True)
class FindingsDocument:
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

    mode: Literal["compare", "history"]
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

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": _KIND,
            "schema_version": FINDINGS_SCHEMA_VERSION,
            "mode": self.mode,
            "created": self.created,
            "base": self.base.to_json() if self.base else None,
            "head": self.head.to_json() if self.head else None,
            "findings": [f.to_json() for f in self.findings],
            "change_points": [c.to_json() for c in self.change_points],
            "env_changes": [e.to_json() for e in self.env_changes],
            "settings": dict(self.settings),
            "load_errors": list(self.load_errors),
            "links": dict(self.links),
            "work": [w.to_json() for w in self.work],
            "causes": [c.to_json() for c in self.causes],
            "forced": list(self.forced),
            "health": self.health.to_json() if self.health is not None else None,
        }

    def dumps(self) -> str:
        return _codec.dumps(self.to_json())

    @classmethod
    def from_json(cls, data: Any, source: str = "<findings>") -> FindingsDocument:
        doc = _codec.check_schema(
            data, kind=_KIND, supported=_READABLE, source=source
        )
        mode = _codec.field(doc, "mode", str, source)
        if mode not in ("compare", "history"):
            raise CorruptResultsError(f"{source}: unknown mode {mode!r}")
        settings = doc.get("settings", {})
        links = doc.get("links", {})
        if not isinstance(settings, Mapping) or not isinstance(links, Mapping):
            raise CorruptResultsError(f"{source}: settings and links must be objects")
        base, head = doc.get("base"), doc.get("head")
        forced_raw = doc.get("forced", [])
        if not isinstance(forced_raw, list) or not all(isinstance(x, str) for x in forced_raw):
            raise CorruptResultsError(f"{source}: forced must be a list of strings")
        forced = tuple(forced_raw)
        if doc["schema_version"] == 1 and settings.get("forced") is True:
            forced = ("compared with --force (version 1 document: reason not recorded)",)
        health = doc.get("health")
        return cls(
            mode=mode,
            created=_codec.text_field(doc, "created", source),
            base=RunRef.from_json(base, source) if base is not None else None,
            head=RunRef.from_json(head, source) if head is not None else None,
            findings=tuple(
                Finding.from_json(f, source) for f in _codec.list_field(doc, "findings", source)
            ),
            change_points=tuple(
                ChangePoint.from_json(c, source)
                for c in _codec.list_field(doc, "change_points", source)
            ),
            env_changes=tuple(
                EnvChange.from_json(e, source)
                for e in _codec.list_field(doc, "env_changes", source)
            ),
            settings=dict(settings),
            load_errors=_codec.str_list(doc, "load_errors", source),
            links=_codec.str_map(doc, "links", source),
            work=tuple(WorkChange.from_json(w, source) for w in _list(doc, "work", source)),
            causes=tuple(Cause.from_json(c, source) for c in _list(doc, "causes", source)),
            forced=forced,
            health=DeviceHealth.from_json(health, source) if health is not None else None,
        )

    @classmethod
    def loads(cls, text: str, source: str = "<findings>") -> FindingsDocument:
        return cls.from_json(_codec.loads(text, source=source), source)
