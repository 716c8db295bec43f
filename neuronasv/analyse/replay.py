"""Record confirm's re-measurements, and replay them into the same confirmation.

:func:`neuronasv.analyse.confirm.confirm` takes its measurements from an injected
runner. :class:`RecordingRunner` wraps the real one and keeps every sample it returned
(``neuronasv confirm --rounds-out`` writes them as a :class:`~neuronasv.model.rounds.
RoundsDocument`); :class:`ReplayRunner` answers the same calls from such a document, so
trusted code can rerun the confirmation on an untrusted run's numbers without trusting
its verdicts (``neuronasv/ci/pr_comment.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from neuronasv.analyse.confirm import Runner
from neuronasv.model import SeriesId
from neuronasv.model.rounds import RoundMeasurement, RoundsDocument

__all__ = ["RecordingRunner", "ReplayRunner", "missing_rounds"]


@dataclass
class RecordingRunner:
    """A confirm runner that passes calls to ``inner`` and keeps what they returned."""

    inner: Runner
    measurements: list[RoundMeasurement] = field(default_factory=list)

    def __call__(
        self, side: str, series: Sequence[SeriesId], round_index: int
    ) -> Mapping[SeriesId, Sequence[float]]:
        got = self.inner(side, series, round_index)
        kept = tuple(
            (sid, tuple(float(x) for x in got[sid])) for sid in series if got.get(sid)
        )
        self.measurements.append(RoundMeasurement(side, round_index, kept))
        return got

    def document(
        self, base: str, head: str, rounds: int, max_rounds: int | None = None
    ) -> RoundsDocument:
        return RoundsDocument(
            base, head, rounds, tuple(self.measurements), max_rounds or rounds
        )


@dataclass(frozen=True)
class ReplayRunner:
    """A confirm runner that answers from a recorded :class:`RoundsDocument`."""

    doc: RoundsDocument

    def __call__(
        self, side: str, series: Sequence[SeriesId], round_index: int
    ) -> Mapping[SeriesId, Sequence[float]]:
        recorded = self.doc.samples(side, round_index)
        return {sid: recorded[sid] for sid in series if sid in recorded}


def missing_rounds(doc: RoundsDocument, series: Iterable[SeriesId]) -> list[SeriesId]:
    """Series lacking samples on either side in a round before the first look (later
    rounds re-measure only the suspects still undecided)."""
    want = list(series)
    have = [
        set(doc.samples(side, r)) for r in range(doc.rounds) for side in ("base", "head")
    ]
    return [s for s in want if not all(s in h for h in have)]
