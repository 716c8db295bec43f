"""Organise a findings document for people: counts, headline, sections in a stable order.

Every renderer (PR comment, job summary, annotations, terminal, commit status) starts from
one :class:`Digest`, so they all tell the same story in the same order. Pure: no I/O.

Order is deterministic: regressions worst first, improvements best first, the rest by
series label; ties broken by the label, then the params, so equal documents give equal
text byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from neuronasv.analyse.rowstate import ensure_states
from neuronasv.analyse.states import coverage_of
from neuronasv.format import plural
from neuronasv.model.findings import (
    ChangePoint,
    EnvChange,
    Finding,
    FindingsDocument,
    SeriesId,
)
from neuronasv.report.causes import CauseView, cause_views, config_label
from neuronasv.report.rowwords import gate_phrase, state_words

__all__ = [
    "Digest",
    "digest",
    "group_label",
    "lost_phrase",
    "plural",
]


def group_label(series: SeriesId) -> str:
    """The series without its op: ``rmsnorm.naive 4x512 bfloat16`` or ``bench(p1, p2)``."""
    if series.workload is not None:
        return " ".join(p for p in (series.workload, series.shape or "", series.dtype or "") if p)
    return series.label


def _series_key(s: SeriesId) -> tuple[str, str, str]:
    return (group_label(s), "" if s.op is None else s.op, "\x1f".join(s.params))


def _change(f: Finding) -> float:
    return 0.0 if f.ratio is None else f.ratio - 1.0


@dataclass(frozen=True)
class Digest:
    """A findings document sorted into what a reader needs, with a one-line headline.

    Attributes:
        doc: the document.
        machine: where head ran (or base, or ``unknown machine``).
        headline: ``2 regressions, 1 improvement, 40 unchanged on trn2-runner`` (plain
            text with the machine name inside: escape before printing), with
            ``N series lost at head (...)`` when the head lost series
            (:attr:`FindingsDocument.lost`) and a ``FORCED comparison (...)`` prefix when
            ``--force`` compared incomparable runs.
            text with the machine name inside: escape before printing); when the device
            was unhealthy it starts with the withheld reason (``verdicts withheld: head
            canary 23 % slower than this machine's history (median of 12 runs) · ...``).
        withheld: the document's withheld reason (device unhealthy), or None. Then no
            regression counts as found (``has_regressions`` is False): the verdicts are
            listed as data, not as evidence about the code.
        also: the smaller counts (``3 noisy, 1 new``), empty when there are none.
        regressions, improvements, noisy, failed, unchanged, new, removed: unacknowledged
            findings by verdict, each list in reading order.
        acknowledged: findings with a matching acknowledgement, any verdict.
        warnings: ``(series, warning)`` for every finding warning, in reading order.
        env_changes: document-level changes plus those attached to change points, deduplicated.
        open_regressions, closed_regressions, change_improvements: change points (history).
        acknowledged_changes: change points with an acknowledgement.
        gate: the gate rules the rows fire (:func:`rowwords.gate_phrase`), empty when none.
        causes: the comparison's causes a reviewer can act on (compare mode), regressions
            first (:meth:`CauseView.actionable`: refuted and unconfirmed ones are left to
            the collapsed lists).
    """

    doc: FindingsDocument
    machine: str
    headline: str
    also: str
    regressions: tuple[Finding, ...]
    improvements: tuple[Finding, ...]
    noisy: tuple[Finding, ...]
    failed: tuple[Finding, ...]
    unchanged: tuple[Finding, ...]
    new: tuple[Finding, ...]
    removed: tuple[Finding, ...]
    acknowledged: tuple[Finding, ...]
    warnings: tuple[tuple[SeriesId, str], ...]
    env_changes: tuple[EnvChange, ...]
    open_regressions: tuple[ChangePoint, ...]
    closed_regressions: tuple[ChangePoint, ...]
    change_improvements: tuple[ChangePoint, ...]
    acknowledged_changes: tuple[ChangePoint, ...]
    causes: tuple[CauseView, ...] = ()
    withheld: str | None = None
    gate: str = ""

    @property
    def worst(self) -> Finding | ChangePoint | None:
        """The finding or change point a reader should look at first."""
        if self.regressions:
            return self.regressions[0]
        if self.open_regressions:
            return self.open_regressions[0]
        return None

    @property
    def has_regressions(self) -> bool:
        """The gate fired (compare: a row's stored gate rule; history: an open regression)."""
        if self.withheld is not None:
            return False
        if self.doc.mode == "compare":
            return bool(self.gate)
        return bool(self.open_regressions)


def _grouped(findings: Sequence[Finding], worst_first: Callable[[Finding], float]) -> list[Finding]:
    """Findings grouped by workload (group order: worst member first), total before ops."""
    groups: dict[str, list[Finding]] = {}
    for f in findings:
        groups.setdefault(group_label(f.series), []).append(f)
    for members in groups.values():
        members.sort(key=lambda f: (f.series.op is not None, worst_first(f), _series_key(f.series)))
    ordered = sorted(groups.items(), key=lambda kv: (min(worst_first(f) for f in kv[1]), kv[0]))
    return [f for _, members in ordered for f in members]


def _quote(vs: Sequence[CauseView]) -> str:
    """`` — rmsnorm.naive more work · slower (+18 %, CI +12 … +25 %), confirmed`` for the
    cause whose quoted row moved most (its stored state's words, never re-derived); a
    cause seen in several workloads lists them all (``; one change in 2 workloads:
    transformer.attention, transformer.block``)."""
    best = max(
        (v for v in vs if v.worst is not None),
        key=lambda v: abs(_change(v.worst)) if v.worst else 0.0,
        default=None,
    )
    if best is None or best.worst is None:
        return ""
    f = best.worst
    config = config_label(f.series.shape or "", f.series.dtype or "")
    # the quoted row's own workload (a cause across workloads may quote any of them)
    workload = f.series.workload or best.cause.workload
    where = " ".join(x for x in (workload, config) if x)
    where += f" · {f.series.op}" if f.series.op else ""
    spans = best.cause.workloads
    also = f"; one change in {len(spans)} workloads: {', '.join(spans)}" if len(spans) > 1 else ""
    return f" — {where} {state_words(f)}{also}"


def _compare_headline(
    views: Sequence[CauseView], series: int, lost: str, findings: Sequence[Finding]
) -> str:
    """What a reviewer reads first: which gate rule fired (or none), then the cause whose
    row moved most, in its row state's words."""
    gate = gate_phrase(findings)
    fired = [
        v
        for v in views
        if any(f.state is not None and f.state.gate for f in (*v.totals, *v.ops))
    ]
    if gate:
        text = f"fails ({gate})" + _quote(fired or views)
    elif views:
        text = f"no gate rule fired; {plural(len(views), 'cause')}" + _quote(views)
    else:
        text = f"no change beyond the noise in {plural(series, 'series', 'series')}"
    # A run that lost series failed, whatever else it measured: that comes first.
    return f"{lost}; {text}" if lost else text


def _cp_key(c: ChangePoint) -> tuple[float, tuple[str, str, str], str]:
    return (-abs(c.ratio - 1.0), _series_key(c.series), c.commit_after)


def _finding_groups(
    doc: FindingsDocument, live: Sequence[Finding]
) -> tuple[list[Finding], ...]:
    """The rows by verdict: regressions, improvements, noisy, failed, unchanged, new,
    removed (unacknowledged, each in its order), then the acknowledged rows."""

    def of(verdict: str) -> list[Finding]:
        return [f for f in live if f.verdict == verdict]

    regressions = _grouped(of("regression"), lambda f: -_change(f))
    improvements = _grouped(of("improvement"), _change)
    by_label = lambda fs: sorted(fs, key=lambda f: _series_key(f.series))  # noqa: E731
    noisy, failed = by_label(of("noisy")), by_label(of("failed"))
    unchanged, new, removed = (
        by_label(of("unchanged")),
        by_label(of("new")),
        by_label(of("removed")),
    )
    acknowledged = by_label([f for f in doc.findings if f.acknowledged is not None])
    return regressions, improvements, noisy, failed, unchanged, new, removed, acknowledged


def _merged_env(
    doc_env: Sequence[EnvChange], cps: Sequence[ChangePoint]
) -> list[EnvChange]:
    """The document's environment changes, then each change point's not already named."""
    env: list[EnvChange] = list(doc_env)
    seen = {(e.key, e.before, e.after) for e in env}
    for c in cps:
        for e in c.env_changes:
            if (e.key, e.before, e.after) not in seen:
                seen.add((e.key, e.before, e.after))
                env.append(e)
    return env


_CpGroup = tuple[ChangePoint, ...]


def _cp_groups(cps: Sequence[ChangePoint]) -> tuple[_CpGroup, _CpGroup, _CpGroup, _CpGroup]:
    """Open regressions, fixed regressions, improvements (unacknowledged), acknowledged."""
    live_cps = [c for c in cps if c.acknowledged is None]
    open_regs = tuple(c for c in live_cps if c.kind == "regression" and c.open)
    closed_regs = tuple(c for c in live_cps if c.kind == "regression" and not c.open)
    cp_improvements = tuple(c for c in live_cps if c.kind == "improvement")
    ack_cps = tuple(c for c in cps if c.acknowledged is not None)
    return open_regs, closed_regs, cp_improvements, ack_cps


def _machine(doc: FindingsDocument, cps: Sequence[ChangePoint]) -> str:
    """The machine the digest speaks of: head's, base's, the first change point's."""
    return (
        (doc.head.machine if doc.head else None)
        or (doc.base.machine if doc.base else None)
        or (cps[0].machine if cps else None)
        or "unknown machine"
    )


def _also_parts(noisy: int, new: int, gone: int, acknowledged: int) -> list[str]:
    """The counts beside a comparison's headline (``2 not decided, 1 new``), zeros left out."""
    return [
        f"{n} {word}"
        for n, word in (
            (noisy, "not decided"),
            (new, "new"),
            (gone, "removed"),
            (acknowledged, "acknowledged"),
        )
        if n
    ]


def digest(doc: FindingsDocument) -> Digest:
    """Sort ``doc`` into a :class:`Digest` (pure, deterministic)."""
    doc = ensure_states(doc)  # a document built before row states existed
    live = [f for f in doc.findings if f.acknowledged is None]
    regressions, improvements, noisy, failed, unchanged, new, removed, acknowledged = (
        _finding_groups(doc, live)
    )

    ordered = regressions + improvements + noisy + failed + new + removed + unchanged
    warnings = tuple((f.series, w) for f in ordered for w in f.warnings)

    cps = sorted(doc.change_points, key=_cp_key)
    env = _merged_env(doc.env_changes, cps)
    open_regs, closed_regs, cp_improvements, ack_cps = _cp_groups(cps)
    machine = _machine(doc, cps)

    extra: list[str] = []
    views: tuple[CauseView, ...] = ()
    if doc.mode == "history":
        parts = [plural(len(open_regs), "open regression")]
        if closed_regs:
            parts.append(f"{len(closed_regs)} fixed")
        parts.append(plural(len(cp_improvements), "improvement"))
        if ack_cps:
            parts.append(f"{len(ack_cps)} acknowledged")
        headline = f"{', '.join(parts)} on {machine}"
        coverage = coverage_of(doc)
        if coverage and not any(c.ran for c in coverage) and not cps:
            # The detector could not run: say so, never "0 open regressions".
            headline = "; ".join(c.sentence for c in coverage) + f" on {machine}"
            newest = [
                f for f in doc.findings if f.verdict == "regression" and f.confirmed is not False
            ]
            if newest:
                word = "confirmed" if all(f.confirmed for f in newest) else "suspect"
                headline += (
                    f"; newest commit vs its parent: {plural(len(newest), word + ' regression')}"
                )
    else:
        rerun = any(f.confirmed is not None for f in doc.findings)
        views = tuple(v for v in cause_views(doc) if v.actionable(rerun))
        lost = doc.lost
        headline = _compare_headline(views, len(live), lost_phrase(doc), live)
        if doc.forced:
            headline = f"FORCED comparison ({'; '.join(doc.forced)}): {headline}"
        gone = len(removed) - sum(1 for f in lost if f.verdict == "removed")
        if doc.withheld is not None:
            headline = f"{doc.withheld} · {headline}"
        extra += _also_parts(len(noisy), len(new), gone, len(acknowledged))

    return Digest(
        doc=doc,
        machine=machine,
        headline=headline,
        also=", ".join(extra),
        regressions=tuple(regressions),
        improvements=tuple(improvements),
        noisy=tuple(noisy),
        failed=tuple(failed),
        unchanged=tuple(unchanged),
        new=tuple(new),
        removed=tuple(removed),
        acknowledged=tuple(acknowledged),
        warnings=warnings,
        env_changes=tuple(env),
        open_regressions=open_regs,
        closed_regressions=closed_regs,
        change_improvements=cp_improvements,
        acknowledged_changes=ack_cps,
        causes=views if doc.mode == "compare" else (),
        withheld=doc.withheld,
        gate=gate_phrase(live) if doc.mode == "compare" and doc.withheld is None else "",
    )


def lost_phrase(doc: FindingsDocument) -> str:
    """``8 series lost at head (5 removed, 3 failed)`` (empty when none was lost)."""
    lost = doc.lost
    if not lost:
        return ""
    bits = [
        f"{n} {word}"
        for word in ("removed", "failed")
        if (n := sum(1 for f in lost if f.verdict == word))
    ]
    return f"{plural(len(lost), 'series', 'series')} lost at head ({', '.join(bits)})"
