"""The culprit explained, and named on the change point it narrows (pure).

* :func:`explain` compares the culprit with its first parent as ``neuronasv compare`` does
  (:func:`neuronasv.analyse.pairwise.compare`) and keeps the series' configuration: the
  exact work changes (ops, calls, shapes, bytes, exact counts), the rows with their
  module chain, and the causes — what :mod:`neuronasv.report.bisect` renders with the PR
  comment's own code. :func:`explain_pair` does it for several series of one pair with
  one comparison (the same answers: the comparison is of the whole pair either way).
* :func:`culprit_of` turns a search's answer into the :class:`~neuronasv.model.culprit.
  Culprit` the documents carry.
* :func:`attach_culprits` puts on each change point of a ``regressions`` document the
  bisection that narrowed its range (the stored records), or — when the change point's
  range is a single first-parent commit — that commit itself: no bisection is needed to
  name it.
* :func:`pull_from_subject` reads a pull request number from a commit subject, for when
  there is no GitHub token (``Fix (#123)``, ``Merge pull request #123 from ...``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from neuronasv.analyse.bisect import SearchResult
from neuronasv.analyse.pairwise import compare
from neuronasv.errors import IncomparableError, UsageError
from neuronasv.metrics import by_unit
from neuronasv.model import ChangePoint, FindingsDocument, History, SeriesId
from neuronasv.model.bisect import BisectDocument
from neuronasv.model.culprit import Axis, Culprit, PullRef

__all__ = [
    "MAX_ADJACENT",
    "Explainer",
    "Wanted",
    "attach_culprits",
    "culprit_of",
    "explain",
    "explain_pair",
    "pull_from_subject",
    "same_config",
]

#: At most this many one-commit change points get an explanation per document (each is a
#: comparison; the open regressions come first).
MAX_ADJACENT = 50

_SQUASH = re.compile(r"\(#(\d{1,9})\)\s*$")
_MERGE = re.compile(r"^Merge pull request #(\d{1,9})\b")


def pull_from_subject(subject: str) -> PullRef | None:
    """The PR a commit subject names (GitHub's squash and merge-commit subjects)."""
    m = _SQUASH.search(subject) or _MERGE.match(subject)
    return PullRef(int(m.group(1)), source="subject") if m else None


def same_config(a: SeriesId, b: SeriesId) -> bool:
    """Whether two series belong to one (workload, shape, dtype) — or one plain benchmark."""
    if a.workload is None or b.workload is None:
        return a.benchmark == b.benchmark and a.params == b.params
    return a.config == b.config


@dataclass(frozen=True)
class Wanted:
    """An explanation asked for: ``commit`` against its first parent ``parent`` on
    ``machine``, kept to ``series``' configuration."""

    machine: str
    parent: str
    commit: str
    series: SeriesId

    @property
    def pair(self) -> tuple[str, str, str]:
        """``(machine, parent, commit)``: what one comparison answers for."""
        return (self.machine, self.parent, self.commit)


#: Explanations of each asked-for change point, in order (``{}``: none could be made).
Explainer = Callable[[Sequence[Wanted]], Sequence[Mapping[str, Any]]]


def _for_series(doc: FindingsDocument, series: SeriesId) -> FindingsDocument:
    """``doc`` kept to ``series``' configuration (rows, work changes, causes)."""
    findings = tuple(f for f in doc.findings if same_config(f.series, series))
    cfg = series.config
    work = tuple(w for w in doc.work if w.config == cfg)
    causes = tuple(c for c in doc.causes if cfg in c.places)
    return replace(doc, findings=findings, work=work, causes=causes)


def _compare_pair(
    history: History, parent: str, culprit: str, machine: str, created: str
) -> FindingsDocument | None:
    try:
        return compare(history, parent, culprit, machine=machine, created=created)
    except (IncomparableError, UsageError):
        return None


def explain(
    history: History, parent: str, culprit: str, machine: str, series: SeriesId,
    *, created: str = "",
) -> FindingsDocument | None:  # fmt: skip
    """The culprit against its parent, the series' configuration only (None: not both
    stored on ``machine``, or not comparable)."""
    doc = _compare_pair(history, parent, culprit, machine, created)
    return None if doc is None else _for_series(doc, series)


def explain_pair(
    history: History, parent: str, culprit: str, machine: str, series: Sequence[SeriesId],
) -> list[dict[str, Any]]:  # fmt: skip
    """:func:`explain` of each of ``series`` as JSON (``{}``: none), with one comparison."""
    doc = _compare_pair(history, parent, culprit, machine, "")
    return [{} if doc is None else _for_series(doc, s).to_json() for s in series]


def _axis(unit: str) -> Axis:
    metric = by_unit(unit)  # an exact metric's series: its own axis
    return "time" if metric is None else metric.name


def culprit_of(
    result: SearchResult,
    axis: Axis,
    *,
    subject: str = "",
    pull: PullRef | None = None,
    explanation: FindingsDocument | None = None,
) -> Culprit:
    """The document form of a search's answer."""
    return Culprit(
        outcome=result.outcome,
        axis=axis,
        lo=result.lo,
        hi=result.hi,
        commit=result.culprit or "",
        subject=subject if result.culprit else "",
        pull=pull if result.culprit else None,
        measured=len(result.measured),
        seconds=round(result.seconds, 3),
        alpha=result.alpha,
        decided_by=result.decided_by,
        explanation=explanation.to_json() if explanation is not None else {},
    )


def _record_for(
    cp: ChangePoint, records: Sequence[BisectDocument], pos: Mapping[str, int]
) -> BisectDocument | None:
    """The newest bisection of this series whose answer lies in the change point's range."""
    lo, hi = pos.get(cp.commit_before), pos.get(cp.commit_after)
    if lo is None or hi is None:
        return None

    def fits(r: BisectDocument) -> bool:
        if r.machine != cp.machine or r.series != cp.series or r.result.outcome == "no change":
            return False
        at = pos.get(r.result.hi)
        if at is not None:
            return lo < at <= hi
        g, b = pos.get(r.good), pos.get(r.bad)
        return g is not None and b is not None and g < hi and b > lo

    found = [r for r in records if fits(r)]
    return max(found, key=lambda r: (r.created, r.key)) if found else None


def _one_commit(cp: ChangePoint, first_parent: Callable[[str], str | None] | None) -> bool:
    """Whether a change point's range is its commit and that commit's first parent."""
    # git is asked last: only for a regression that may still be explained
    if cp.kind != "regression" or first_parent is None:
        return False
    return first_parent(cp.commit_after) == cp.commit_before


def attach_culprits(
    doc: FindingsDocument,
    records: Sequence[BisectDocument],
    commits: Sequence[str],
    *,
    explainer: Explainer | None = None,
    first_parent: Callable[[str], str | None] | None = None,
    subject: Callable[[str], str] | None = None,
) -> FindingsDocument:
    """Each change point with what is known of its culprit.

    Args:
        doc: a ``regressions`` document (mode ``history``).
        records: the stored bisections (:func:`neuronasv.store.bisections.load_bisections`).
        commits: the history's commits, in history order.
        explainer: the explanations of the one-commit ranges (at most
            :data:`MAX_ADJACENT`), asked for once, all together: the comparison of each
            commit with its parent, for the cause sentence (:func:`explain_pair` per pair;
            the command caches and spreads them); None: no comparison.
        first_parent: a commit's first parent (git); None: one-commit ranges are not named.
        subject: a commit's subject (git), for one-commit ranges.
    """
    pos = {c: i for i, c in enumerate(commits)}
    named: list[ChangePoint | BisectDocument | None] = []
    wanted: list[Wanted] = []
    for cp in doc.change_points:
        rec = _record_for(cp, records, pos)
        if rec is None and len(wanted) < MAX_ADJACENT and _one_commit(cp, first_parent):
            wanted.append(Wanted(cp.machine, cp.commit_before, cp.commit_after, cp.series))
            named.append(cp)
        else:
            named.append(rec)
    whys = iter(explainer(wanted) if explainer is not None and wanted else [{}] * len(wanted))
    out: list[ChangePoint] = []
    for cp, how in zip(doc.change_points, named, strict=True):
        if isinstance(how, BisectDocument):
            out.append(replace(cp, culprit=how.result))
        elif how is None:
            out.append(cp)
        else:
            out.append(replace(cp, culprit=_adjacent(cp, dict(next(whys)), subject)))
    return replace(doc, change_points=tuple(out))


def _adjacent(
    cp: ChangePoint, why: dict[str, Any], subject: Callable[[str], str] | None
) -> Culprit:
    """The culprit of a one-commit range: that commit (no bisection needed)."""
    words = subject(cp.commit_after) if subject is not None else ""
    return Culprit(
        outcome="culprit",
        axis=_axis(cp.unit),
        lo=cp.commit_before,
        hi=cp.commit_after,
        commit=cp.commit_after,
        subject=words,
        pull=pull_from_subject(words),
        decided_by=f"measured at the commit and its first parent (no bisection"
        f" needed): {cp.reason}",
        explanation=why,
    )
