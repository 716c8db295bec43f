"""The culprit explained, and named on the change point it narrows (pure).

* :func:`explain` compares the culprit with its first parent as ``neuronasv compare`` does
  (:func:`neuronasv.analyse.pairwise.compare`) and keeps the series' configuration: the
  exact work changes (ops, calls, shapes, bytes, instruction counts), the rows with their
  module chain, and the causes — what :mod:`neuronasv.report.bisect` renders with the PR
  comment's own code.
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
from dataclasses import replace

from neuronasv.analyse.bisect import SearchResult
from neuronasv.analyse.exact import is_exact
from neuronasv.analyse.pairwise import compare
from neuronasv.errors import IncomparableError, UsageError
from neuronasv.model import ChangePoint, FindingsDocument, History, SeriesId
from neuronasv.model.bisect import BisectDocument
from neuronasv.model.culprit import Axis, Culprit, PullRef

__all__ = [
    "MAX_ADJACENT",
    "attach_culprits",
    "culprit_of",
    "explain",
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


def explain(
    history: History, parent: str, culprit: str, machine: str, series: SeriesId,
    *, created: str = "",
) -> FindingsDocument | None:  # fmt: skip
    """The culprit against its parent, the series' configuration only (None: not both
    stored on ``machine``, or not comparable)."""
    try:
        doc = compare(history, parent, culprit, machine=machine, created=created)
    except (IncomparableError, UsageError):
        return None
    findings = tuple(f for f in doc.findings if same_config(f.series, series))
    cfg = series.config
    work = tuple(w for w in doc.work if w.config == cfg)
    causes = tuple(c for c in doc.causes if cfg in c.places)
    return replace(doc, findings=findings, work=work, causes=causes)


def _axis(unit: str) -> Axis:
    return "instructions" if is_exact(unit) else "time"


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


def attach_culprits(
    doc: FindingsDocument,
    records: Sequence[BisectDocument],
    commits: Sequence[str],
    *,
    pair: Callable[[str, str, str], History] | None = None,
    first_parent: Callable[[str], str | None] | None = None,
    subject: Callable[[str], str] | None = None,
) -> FindingsDocument:
    """Each change point with what is known of its culprit.

    Args:
        doc: a ``regressions`` document (mode ``history``).
        records: the stored bisections (:func:`neuronasv.store.bisections.load_bisections`).
        commits: the history's commits, in history order.
        pair: ``(parent, commit, machine)`` -> a history holding both commits (the
            comparison of a one-commit range, for its cause sentence); None: no comparison.
        first_parent: a commit's first parent (git); None: one-commit ranges are not named.
        subject: a commit's subject (git), for one-commit ranges.
    """
    pos = {c: i for i, c in enumerate(commits)}
    out: list[ChangePoint] = []
    explained = 0
    for cp in doc.change_points:
        rec = _record_for(cp, records, pos)
        if rec is not None:
            out.append(replace(cp, culprit=rec.result))
            continue
        # git is asked last: only for a regression that may still be explained
        if explained >= MAX_ADJACENT or cp.kind != "regression" or first_parent is None:
            out.append(cp)
            continue
        if first_parent(cp.commit_after) != cp.commit_before:
            out.append(cp)
            continue
        explained += 1
        unit_axis = _axis(cp.unit)
        why = None
        if pair is not None:
            history = pair(cp.commit_before, cp.commit_after, cp.machine)
            why = explain(history, cp.commit_before, cp.commit_after, cp.machine, cp.series)
        words = subject(cp.commit_after) if subject is not None else ""
        out.append(
            replace(
                cp,
                culprit=Culprit(
                    outcome="culprit",
                    axis=unit_axis,
                    lo=cp.commit_before,
                    hi=cp.commit_after,
                    commit=cp.commit_after,
                    subject=words,
                    pull=pull_from_subject(words),
                    decided_by=f"measured at the commit and its first parent (no bisection"
                    f" needed): {cp.reason}",
                    explanation=why.to_json() if why is not None else {},
                ),
            )
        )
    return replace(doc, change_points=tuple(out))
