"""The answer of a bisection: the first commit at which one series changed (or how far it got).

``neuronasv bisect`` (:mod:`neuronasv.analyse.bisect`) writes it inside its
:class:`~neuronasv.model.bisect.BisectDocument`; ``neuronasv regressions`` attaches it to
the change point whose range it narrowed (:attr:`ChangePoint.culprit
<neuronasv.model.findings.ChangePoint>`), so the regression issue, the site's regressions
page and the Atom feed name the commit. Data only: the sentences are rendered by
:mod:`neuronasv.report.bisect` from these fields and from ``explanation`` (the comparison of
the culprit with its parent, a findings document) with the PR comment's own code.

Kept apart from :mod:`neuronasv.model.findings` (which only imports it) so the change point
gains one optional field and nothing else moves.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from neuronasv.errors import CorruptResultsError
from neuronasv.metrics import EXACT
from neuronasv.model._codec import Model, spec

__all__ = [
    "AXES",
    "OUTCOMES",
    "Axis",
    "Culprit",
    "Outcome",
    "PullRef",
    "check_commit",
    "is_full_hash",
]

_FULL_HASH = re.compile(r"[0-9a-f]{40}")


def is_full_hash(text: object) -> bool:
    """Whether ``text`` is a full commit hash (40 lowercase hex digits): the only commit
    text a record may hold, and the only one a link is built from."""
    return isinstance(text, str) and _FULL_HASH.fullmatch(text) is not None


def check_commit(value: object, name: str, source: str) -> None:
    """A :class:`~neuronasv.errors.CorruptResultsError` unless ``value`` is a full hash."""
    if not is_full_hash(value):
        raise CorruptResultsError(
            f"{source}: {name} must be a full commit hash (40 hex digits), got {value!r}"[:300]
        )


#: What decides a probe: an exact metric's count (:mod:`neuronasv.metrics`) or the work
#: evidence (exact, one measurement decides), or device time (measured: interleaved
#: rounds, a stated error rate). One of :data:`AXES`.
Axis = str
AXES: tuple[str, ...] = (*(m.name for m in EXACT), "work", "time")
#: ``culprit``: one commit, proven; ``undecided``: the narrowest range the measurements
#: prove (``lo``..``hi``); ``no change``: the range's ends do not differ on the series.
Outcome = Literal["culprit", "undecided", "no change"]
OUTCOMES: tuple[str, ...] = get_args(Outcome)


@dataclass(frozen=True)
class PullRef(Model):
    """The pull request a commit came from.

    ``source``: ``github`` (the REST API's pulls of the commit) or ``subject`` (read from
    the commit subject: ``... (#123)``, ``Merge pull request #123``; no token was given).
    """

    _what = "pull request"

    number: int
    title: str = ""
    url: str = ""
    source: Literal["github", "subject"] = field(
        default="subject", metadata=spec(label="pull request source")
    )

    @classmethod
    def _check(cls, values: dict[str, Any], data: Mapping[str, Any], source: str) -> None:
        if not 1 <= values["number"] <= 10**9:
            raise CorruptResultsError(f"{source}: a pull request number must be 1..10^9")


@dataclass(frozen=True)
class Culprit(Model):
    """Where one series changed, as a bisection proved it.

    Attributes:
        outcome: ``culprit``, ``undecided`` or ``no change`` (:data:`Outcome`).
        axis: what decided (:data:`Axis`).
        lo, hi: the narrowest range proven: the series is at the old level at ``lo`` and
            at the new one at ``hi`` (``hi``'s first parent is ``lo`` when ``outcome`` is
            ``culprit``); the range's ends when nothing narrowed it.
        commit: the culprit (``hi``), "" unless ``outcome`` is ``culprit``.
        subject: the culprit's commit subject (untrusted text).
        pull: its pull request, when known.
        measured: commits the search measured (stored results cost nothing).
        seconds: wall time of those measurements.
        alpha: the bound on the chance that the named commit or range is wrong (time axis:
            the alpha spent over every test of the search); None for an exact axis (a fact).
        decided_by: the test that proves ``lo``..``hi``, in words (exact: the two counts).
        explanation: the culprit against its parent (a ``neuronasv.findings`` document,
            mode ``compare``, the series' configuration only: its exact work changes,
            exact counts, module chain and causes), {} when not compared.
    """

    _what = "culprit"

    outcome: Outcome = field(metadata=spec(label="bisection outcome"))
    axis: Axis = field(metadata=spec(label="bisection axis", choices=AXES))
    lo: str
    hi: str
    commit: str = ""
    subject: str = ""
    pull: PullRef | None = None
    measured: int = 0
    seconds: float | None = field(default=None, metadata=spec(bound="nonneg"))
    alpha: float | None = field(default=None, metadata=spec(bound="nonneg"))
    decided_by: str = ""
    explanation: Mapping[str, Any] = field(default_factory=dict, metadata=spec(omit_empty=True))

    @classmethod
    def _check(cls, values: dict[str, Any], data: Mapping[str, Any], source: str) -> None:
        """Read as untrusted data (a record travels on the results branch): the commits are
        full hashes, ``commit`` is ``hi`` exactly when it names a culprit, ``alpha`` is a
        probability and ``measured`` a count."""
        check_commit(values["lo"], "lo", source)
        check_commit(values["hi"], "hi", source)
        commit = values["commit"]
        if values["outcome"] == "culprit" and commit != values["hi"]:
            raise CorruptResultsError(f"{source}: a culprit's commit must be its range's hi")
        if values["outcome"] != "culprit" and commit:
            raise CorruptResultsError(f"{source}: only a culprit names a commit")
        alpha = values["alpha"]
        if alpha is not None and not 0.0 <= alpha <= 1.0:
            raise CorruptResultsError(f"{source}: alpha must be a probability, got {alpha!r}")
        if values["measured"] < 0:
            raise CorruptResultsError(f"{source}: measured must be >= 0, got {values['measured']}")

    @property
    def found(self) -> bool:
        return self.outcome == "culprit" and bool(self.commit)
