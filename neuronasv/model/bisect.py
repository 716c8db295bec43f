"""What ``neuronasv bisect`` writes: the search, every probe, every sample, and its answer.

One document per bisection (``--out``, and ``<results>/<machine>/bisect-<key>.bisect``
beside the results it measured, so ``neuronasv regressions`` and the results branch carry
it). The answer is a :class:`~neuronasv.model.culprit.Culprit`; the probes say how it was
reached; ``measurements`` keeps every sample the rounds took (the time axis), so the search
can be recomputed from its numbers.

Schema history (``BISECT_SCHEMA_VERSION``):
  1 — first version.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from neuronasv.errors import CorruptResultsError
from neuronasv.model._codec import Document, Model, spec
from neuronasv.model.culprit import Culprit, check_commit
from neuronasv.model.findings import SeriesId

__all__ = ["BISECT_SCHEMA_VERSION", "BisectDocument", "Probe", "RoundSamples", "bisect_key"]

BISECT_SCHEMA_VERSION = 1
_KIND = "neuronasv.bisect"

ProbeVerdict = Literal["good", "bad", "undecided", "failed"]


@dataclass(frozen=True)
class Probe(Model):
    """One commit the search looked at.

    Attributes:
        commit: the commit.
        verdict: ``good`` (at the old level), ``bad`` (changed), ``undecided`` (the rounds
            could not tell within their budget), ``failed`` (it could not be measured).
        source: ``stored`` (a result already stored decided it: no cost) or ``measured``.
        value: exact axes: the count (per iteration) or a digest of the work;
            time: the probe's median against the old level's (ratio), when measured.
        rounds: interleaved rounds measured at this probe (time axis).
        reason: the test's words (the rounds test's reason; exact: the two counts).
        seconds: wall time of this probe's measurements.
    """

    _what = "probe"

    commit: str
    verdict: ProbeVerdict = field(metadata=spec(label="probe verdict"))
    source: Literal["stored", "measured"] = field(metadata=spec(label="probe source"))
    value: float | None = None
    rounds: int = 0
    reason: str = ""
    seconds: float | None = field(default=None, metadata=spec(bound="nonneg"))

    @classmethod
    def _check(cls, values: dict[str, Any], data: Mapping[str, Any], source: str) -> None:
        check_commit(values["commit"], "a probe's commit", source)
        if values["rounds"] < 0:
            raise CorruptResultsError(f"{source}: a probe's rounds must be >= 0")


@dataclass(frozen=True)
class RoundSamples(Model):
    """One process's samples of the series: ``commit`` in round ``round`` of test ``test``
    (0 = the range's ends, then one test per probe)."""

    _what = "round samples"

    test: int
    round: int
    commit: str
    samples: tuple[float, ...] = field(default=(), metadata=spec(bound="positive"))

    @classmethod
    def _check(cls, values: dict[str, Any], data: Mapping[str, Any], source: str) -> None:
        check_commit(values["commit"], "a round's commit", source)
        if values["test"] < 0 or values["round"] < 0:
            raise CorruptResultsError(f"{source}: a round's test and round must be >= 0")


def bisect_key(machine: str, series: SeriesId, good: str, bad: str) -> str:
    """Stable identity of a bisection (16 hex digits): the same search replaces its record."""
    ident = [machine, series.to_json(), good, bad]
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class BisectDocument(Document):
    """One bisection of one series between two commits.

    Attributes:
        series: the series bisected (as ``regressions`` and the comment name it).
        machine: the asv machine its results belong to.
        unit: the series' unit.
        good, bad: the range's ends as given (full hashes).
        candidates: commits in ``good..bad`` on ``bad``'s first-parent chain.
        result: the answer (its ``outcome`` says ``no change`` when the ends do not differ).
        probes: the commits looked at, in order.
        measurements: every sample the rounds took (time axis).
        settings: how it searched (alpha and its split, rounds, budget, bench, ...).
        side_branch: when the first-parent culprit is a merge and its side branch was
            bisected on request, that search (its own document).
        created: ISO timestamp.
    """

    _kind = _KIND
    _version = BISECT_SCHEMA_VERSION
    _readable = (BISECT_SCHEMA_VERSION,)
    _source = "<bisect>"

    series: SeriesId
    machine: str
    unit: str
    good: str
    bad: str
    candidates: int
    result: Culprit
    probes: tuple[Probe, ...] = ()
    measurements: tuple[RoundSamples, ...] = ()
    settings: Mapping[str, Any] = field(default_factory=dict)
    side_branch: Mapping[str, Any] = field(default_factory=dict, metadata=spec(omit_empty=True))
    created: str = ""

    @classmethod
    def _check(cls, values: dict[str, Any], data: Mapping[str, Any], source: str) -> None:
        """Read as untrusted data: the range's ends are full hashes (the result's and the
        probes' are checked by their own types), a count is a count."""
        if values["candidates"] < 1:
            raise CorruptResultsError(f"{source}: candidates must be at least 1")
        check_commit(values["good"], "good", source)
        check_commit(values["bad"], "bad", source)

    @property
    def key(self) -> str:
        return bisect_key(self.machine, self.series, self.good, self.bad)
