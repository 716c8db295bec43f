"""Verdicts: the output of the Analyse stage and the input of Report and Publish.

A ``FindingsDocument`` is what ``neuronasv compare`` (mode ``compare``: base vs head) and
``neuronasv regressions`` (mode ``history``: change points over a branch) write as JSON.
Renderers and the site read only this document, never results files.

Values are in the series' own ``unit`` (asv stores seconds for ``devtime_``/``time_``
benchmarks). ``ratio`` is head/base of medians; ``ci_low``/``ci_high`` bound that ratio.

Schema history (``FINDINGS_SCHEMA_VERSION``):
  1 — first version.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from neuronasv.errors import CorruptResultsError
from neuronasv.model import _codec

__all__ = [
    "FINDINGS_SCHEMA_VERSION",
    "ChangePoint",
    "EnvChange",
    "Finding",
    "FindingsDocument",
    "OpContribution",
    "RunRef",
    "SeriesId",
    "Verdict",
]

FINDINGS_SCHEMA_VERSION = 1
_KIND = "neuronasv.findings"

Verdict = Literal["regression", "improvement", "unchanged", "noisy", "new", "removed", "failed"]
VERDICTS: tuple[str, ...] = get_args(Verdict)


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
        calls_base, calls_head: calls per iteration for op series.
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

    @property
    def change_pct(self) -> float | None:
        return None if self.ratio is None else (self.ratio - 1.0) * 100.0

    def to_json(self) -> dict[str, Any]:
        return {
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
        }

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
        )


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

    def count(self, verdict: str) -> int:
        return sum(1 for f in self.findings if f.verdict == verdict and f.acknowledged is None)

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
        }

    def dumps(self) -> str:
        return _codec.dumps(self.to_json())

    @classmethod
    def from_json(cls, data: Any, source: str = "<findings>") -> FindingsDocument:
        doc = _codec.check_schema(
            data, kind=_KIND, supported=(FINDINGS_SCHEMA_VERSION,), source=source
        )
        mode = _codec.field(doc, "mode", str, source)
        if mode not in ("compare", "history"):
            raise CorruptResultsError(f"{source}: unknown mode {mode!r}")
        settings = doc.get("settings", {})
        links = doc.get("links", {})
        if not isinstance(settings, Mapping) or not isinstance(links, Mapping):
            raise CorruptResultsError(f"{source}: settings and links must be objects")
        base, head = doc.get("base"), doc.get("head")
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
        )

    @classmethod
    def loads(cls, text: str, source: str = "<findings>") -> FindingsDocument:
        return cls.from_json(_codec.loads(text, source=source), source)
