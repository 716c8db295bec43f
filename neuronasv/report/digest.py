"""Organise a findings document for people: counts, headline, sections in a stable order.

Every renderer (PR comment, job summary, annotations, terminal, commit status) starts from
one :class:`Digest`, so they all tell the same story in the same order. Pure: no I/O.

Order is deterministic: regressions worst first, improvements best first, the rest by
series label; ties broken by the label, then the params, so equal documents give equal
text byte for byte.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from neuronasv.analyse.states import coverage_of, fired_rules
from neuronasv.format import plural
from neuronasv.model.findings import (
    ChangePoint,
    EnvChange,
    Finding,
    FindingsDocument,
    SeriesId,
)
from neuronasv.report.causes import CauseView, cause_views, config_label
from neuronasv.report.rowwords import (
    SAME_EXACT,
    gate_phrase,
    held_back,
    shift_line,
    state_words,
)
from neuronasv.units import is_exact

__all__ = [
    "Digest",
    "WarningKind",
    "digest",
    "group_label",
    "lost_phrase",
    "plural",
    "warning_kinds",
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
            rows by their stored state (:func:`_finding_groups`), each in reading order.
        shifted: rows whose time was judged against the runner's shift and stayed within
            it (no direction on any axis): the runner's doing, not the code's.
        shift: the first line's sentence about the runner's shift
            (:func:`rowwords.shift_line`), empty when most series did not move together.
        acknowledged: rows with a matching acknowledgement, any state.
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
    shifted: tuple[Finding, ...] = ()
    shift: str = ""

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


def _size(f: Finding, on: str) -> float:
    """The size of a row's change on one axis: |log| of its own Δ (time and exact rows),
    or for a work row of its exact count when counted, else of its Δ."""
    ratio = f.ratio
    if on == "work" and f.state.exact_base and f.state.exact_head is not None:
        ratio = f.state.exact_head / f.state.exact_base
    return abs(math.log(ratio)) if ratio and ratio > 0 else 0.0


def _axis(f: Finding) -> str | None:
    """The axis a row's direction rests on: a decided time, else its exact axis."""
    st = f.state
    if st.decided:
        return "time"
    if is_exact(f.unit):
        return "exact" if st.exact in ("more", "fewer") else None
    if st.work in ("more", "less"):
        return "work"
    return "exact" if st.exact in ("more", "fewer") else None


def _pick(rows: Sequence[Finding]) -> Finding | None:
    """The row to quote: on the first axis that has one (a decided time, then work, then
    an exact metric), a workload total before an op (the op is then named beside it), and
    the row whose change on that axis is largest."""
    for axis in ("time", "work", "exact"):
        on = [f for f in rows if _axis(f) == axis]
        if on:
            return max(on, key=lambda f: (f.series.op is None, _size(f, axis), f.series.label))
    return None


def _op_of(f: Finding, views: Sequence[CauseView]) -> str:
    """The op a total's change is about: its work cause's first op (by weight), else the
    op that moved most in its breakdown ("" when neither is known)."""
    for v in views:
        if f in v.totals and v.cause.kind == "work" and v.cause.ops:
            return v.cause.ops[0]
    if f.attribution:
        return max(f.attribution, key=lambda a: (abs(a.delta), a.op)).op
    return ""


def _quote(rows: Sequence[Finding], views: Sequence[CauseView]) -> str:
    """`` — rmsnorm.naive 4x512 bf16 · aten::mul slower (+18 %, CI +12 … +25 %), confirmed``:
    the row :func:`_pick` chooses, in its stored state's words (never re-derived), naming
    the op — its own, or for a total the op its change is about; a cause seen in several
    workloads lists them all (``; one change in 2 workloads: ...``)."""
    f = _pick(rows)
    if f is None:
        return ""
    s = f.series
    config = config_label(s.shape or "", s.dtype or "")
    where = " ".join(x for x in (s.workload or s.label, config) if x)
    if s.op:
        where += f" · {s.op}"
    elif s.workload is not None:
        op = _op_of(f, views)
        where += f" (via {op})" if op else ""
    text = f" — {where} {state_words(f)}"
    for v in views:
        spans = v.cause.workloads
        if len(spans) > 1 and (f in v.totals or f in v.ops):
            text += f"; one change in {len(spans)} workloads: {', '.join(spans)}"
            break
    return text


def _compare_headline(
    views: Sequence[CauseView],
    series: int,
    lost: str,
    findings: Sequence[Finding],
    shifted: bool = False,
) -> str:
    """What a reviewer reads first: which gate rules fired (or none), then the row that
    moved most on the first fired rule's axis (or, with none fired, in the causes), in its
    row state's words, naming the op."""
    gate = gate_phrase(findings)
    if gate:
        first = next(iter(fired_rules(findings)))
        text = f"fails ({gate})" + _quote([f for f in findings if f.state.gate == first], views)
    elif views:
        rows = [f for v in views for f in (*v.totals, *v.ops)]
        text = f"no gate rule fired; {plural(len(views), 'cause')}" + _quote(rows, views)
    elif held := [f for f in findings if held_back(f)]:
        text = (
            f"no gate rule fired; no cause: {plural(len(held), 'row')} moved in a single run"
            f" with {SAME_EXACT}, suspects to re-measure"
        )
    else:
        beyond = "the runner's shift" if shifted else "the noise"
        text = f"no change beyond {beyond} in {plural(series, 'series', 'series')}"
    # A run that lost series failed, whatever else it measured: that comes first.
    return f"{lost}; {text}" if lost else text


def _cp_key(c: ChangePoint) -> tuple[float, tuple[str, str, str], str]:
    return (-abs(c.ratio - 1.0), _series_key(c.series), c.commit_after)


def _finding_groups(doc: FindingsDocument, live: Sequence[Finding]) -> tuple[list[Finding], ...]:
    """The rows by their stored state: regressions (moved the worse way on an axis:
    :attr:`RowState.direction`), improvements (the better way), noisy (time not decided,
    no direction), failed, unchanged (the rest measured on both sides), new, removed
    (unacknowledged, each in its order), then the acknowledged rows, then the rows whose
    time stayed within the runner's shift (judged against it, no direction)."""

    def of(test: Callable[[Finding], bool]) -> list[Finding]:
        return [f for f in live if test(f)]

    both = lambda f: f.state.presence == "both"  # noqa: E731
    regressions = _grouped(of(lambda f: f.state.direction == "worse"), lambda f: -_change(f))
    improvements = _grouped(of(lambda f: f.state.direction == "better"), _change)
    by_label = lambda fs: sorted(fs, key=lambda f: _series_key(f.series))  # noqa: E731
    with_runner = lambda f: (  # noqa: E731
        both(f) and f.state.direction is None and f.estimate.shift is not None
        and f.state.time in ("undecided", "noise")
    )  # fmt: skip
    undecided = lambda f: (  # noqa: E731
        both(f) and f.state.direction is None and f.state.time == "undecided"
        and not with_runner(f)
    )  # fmt: skip
    noisy = by_label(of(undecided))
    shifted = by_label(of(with_runner))
    unchanged = by_label(
        of(lambda f: both(f) and f.state.direction is None and not undecided(f)
           and not with_runner(f))
    )  # fmt: skip
    failed = by_label(of(lambda f: f.state.presence == "failed"))
    new = by_label(of(lambda f: f.state.presence == "new"))
    removed = by_label(of(lambda f: f.state.presence == "removed"))
    acknowledged = by_label([f for f in doc.findings if f.acknowledged is not None])
    return (
        regressions, improvements, noisy, failed, unchanged, new, removed, acknowledged, shifted
    )  # fmt: skip


def _merged_env(doc_env: Sequence[EnvChange], cps: Sequence[ChangePoint]) -> list[EnvChange]:
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


def _also_parts(noisy: int, new: int, gone: int, acknowledged: int, shifted: int = 0) -> list[str]:
    """The counts beside a comparison's headline (``2 not decided, 1 new``), zeros left out."""
    return [
        f"{n} {word}"
        for n, word in (
            (shifted, "within the runner's shift"),
            (noisy, "not decided"),
            (new, "new"),
            (gone, "removed"),
            (acknowledged, "acknowledged"),
        )
        if n
    ]


def _history_headline(
    doc: FindingsDocument,
    cps: Sequence[ChangePoint],
    groups: tuple[_CpGroup, _CpGroup, _CpGroup, _CpGroup],
    machine: str,
) -> str:
    """A history's headline: its change points by kind (``1 open regression, 2 fixed, ...``),
    or, when the detector could not run, why (:func:`_not_run_headline`)."""
    open_regs, closed_regs, cp_improvements, ack_cps = groups
    parts = [plural(len(open_regs), "open regression")]
    if closed_regs:
        parts.append(f"{len(closed_regs)} fixed")
    parts.append(plural(len(cp_improvements), "improvement"))
    if ack_cps:
        parts.append(f"{len(ack_cps)} acknowledged")
    return _not_run_headline(doc, cps, machine) or f"{', '.join(parts)} on {machine}"


def _not_run_headline(doc: FindingsDocument, cps: Sequence[ChangePoint], machine: str) -> str:
    """When the detector could not run (no change point, no coverage ran), say so, never
    "0 open regressions", with the newest commit's own verdict; "" when it ran."""
    coverage = coverage_of(doc)
    if not coverage or any(c.ran for c in coverage) or cps:
        return ""
    headline = "; ".join(c.sentence for c in coverage) + f" on {machine}"
    newest = [f for f in doc.findings if f.state.time == "slower"]
    if newest:
        word = "confirmed" if all(f.state.confirmed for f in newest) else "suspect"
        headline += f"; newest commit vs its parent: {plural(len(newest), word + ' regression')}"
    return headline


def _actionable_views(doc: FindingsDocument) -> tuple[CauseView, ...]:
    """The causes a reader can act on (a re-measured run asks more of them)."""
    rerun = any(f.remeasured for f in doc.findings)
    return tuple(v for v in cause_views(doc) if v.actionable(rerun))


def _full_compare_headline(
    doc: FindingsDocument, views: Sequence[CauseView], live: Sequence[Finding]
) -> str:
    """A comparison's headline (:func:`_compare_headline`), after a ``FORCED comparison``
    prefix when forced and the withheld reason when the device was unhealthy."""
    headline = _compare_headline(
        views, len(live), lost_phrase(doc), live, shifted=doc.shift is not None
    )
    shift = shift_line(doc.runner)
    if shift:  # the runner first: what every row below is judged against
        headline = f"{shift} · {headline}"
    if doc.forced:
        headline = f"FORCED comparison ({'; '.join(doc.forced)}): {headline}"
    if doc.withheld is not None:
        headline = f"{doc.withheld} · {headline}"
    return headline


def _gone(doc: FindingsDocument, removed: Sequence[Finding]) -> int:
    """The removed rows not already told as lost at head."""
    return len(removed) - sum(1 for f in doc.lost if f.state.presence == "removed")


def digest(doc: FindingsDocument) -> Digest:
    """Sort ``doc`` into a :class:`Digest` (pure, deterministic)."""
    live = [f for f in doc.findings if f.acknowledged is None]
    regressions, improvements, noisy, failed, unchanged, new, removed, acknowledged, shifted = (
        _finding_groups(doc, live)
    )

    ordered = regressions + improvements + noisy + failed + new + removed + shifted + unchanged
    warnings = tuple((f.series, w) for f in ordered for w in f.warnings)

    cps = sorted(doc.change_points, key=_cp_key)
    env = _merged_env(doc.env_changes, cps)
    groups = _cp_groups(cps)
    open_regs, closed_regs, cp_improvements, ack_cps = groups
    machine = _machine(doc, cps)

    extra: list[str] = []
    views: tuple[CauseView, ...] = ()
    compare = doc.mode != "history"
    if compare:
        views = _actionable_views(doc)
        headline = _full_compare_headline(doc, views, live)
        extra += _also_parts(
            len(noisy), len(new), _gone(doc, removed), len(acknowledged), len(shifted)
        )
    else:
        headline = _history_headline(doc, cps, groups, machine)

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
        shifted=tuple(shifted),
        shift=shift_line(doc.runner) if compare else "",
    )


@dataclass(frozen=True)
class WarningKind:
    """The per-series warnings of one kind (``noisy base``), in reading order.

    Attributes:
        kind: the warning's text up to its first colon (``noisy base``), numbers replaced
            by ``N`` so that ``noisy base: IQR/median 17 %`` and ``... 24 %`` are one kind.
        items: ``(series, warning)`` of every warning of the kind.
    """

    kind: str
    items: tuple[tuple[SeriesId, str], ...]

    @property
    def series(self) -> int:
        return len({s for s, _ in self.items})

    @property
    def label(self) -> str:
        """How the kind reads: the warnings' common text before their colon (``noisy
        base``; a lone warning without a colon is its own label), else the kind with its
        numbers as ``N``."""
        heads = {w.split(":", 1)[0].strip() for _, w in self.items}
        return heads.pop() if len(heads) == 1 else self.kind

    @staticmethod
    def detail(warning: str) -> str:
        """A warning's own part after its kind (``IQR/median 17 %``), "" when none."""
        return warning.split(":", 1)[1].strip() if ":" in warning else ""


def warning_kinds(warnings: Sequence[tuple[SeriesId, str]]) -> list[WarningKind]:
    """Warnings grouped per kind, the most frequent kind first (a comment says each kind
    once, with its count: not one line per series)."""
    groups: dict[str, list[tuple[SeriesId, str]]] = {}
    for s, w in warnings:
        kind = re.sub(r"[0-9][0-9.,]*", "N", w.split(":")[0]).strip()
        groups.setdefault(kind, []).append((s, w))
    kinds = [WarningKind(k, tuple(v)) for k, v in groups.items()]
    return sorted(kinds, key=lambda k: (-len(k.items), k.kind))


def lost_phrase(doc: FindingsDocument) -> str:
    """``8 series lost at head (5 removed, 3 failed)`` (empty when none was lost)."""
    lost = doc.lost
    if not lost:
        return ""
    bits = [
        f"{n} {word}"
        for word in ("removed", "failed")
        if (n := sum(1 for f in lost if f.state.presence == word))
    ]
    return f"{plural(len(lost), 'series', 'series')} lost at head ({', '.join(bits)})"
