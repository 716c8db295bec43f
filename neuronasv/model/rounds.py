"""What ``neuronasv confirm --rounds-out`` records: every sample of its ABAB re-measurement.

``neuronasv confirm`` judges suspected regressions on re-measured rounds that exist only in
its own process. Recorded here, they can be *replayed*: the privileged PR-comment step
recomputes the confirmation from these numbers with its own code instead of believing the
verdicts an untrusted run wrote (``neuronasv.analyse.replay``). Numbers and series
identities only; no free text. The series are the re-measured findings and, for each
re-measured total, every op of its breakdown (new and removed ops included): the row's
"where the time went" is recomputed from these same rounds (one measurement per row).

Schema history (``ROUNDS_SCHEMA_VERSION``):
  1 — first version (with the adaptive design: ``rounds`` before the first look and
      ``max_rounds``, so a replay spends alpha over the same looks).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from neuronasv.errors import CorruptResultsError
from neuronasv.model import _codec
from neuronasv.model._codec import Document, Model, spec
from neuronasv.model.findings import SeriesId

__all__ = ["MAX_ROUNDS", "ROUNDS_SCHEMA_VERSION", "RoundMeasurement", "RoundsDocument"]

ROUNDS_SCHEMA_VERSION = 1
MAX_ROUNDS = 100
_KIND = "neuronasv.rounds"
_SIDES = ("base", "head")


def _samples(
    data: Mapping[str, Any], source: str
) -> tuple[tuple[SeriesId, tuple[float, ...]], ...]:
    entries = data.get("series", [])
    if not isinstance(entries, list):
        raise CorruptResultsError(f"{source}: series must be a list")
    out = []
    for i, e in enumerate(entries):
        if not isinstance(e, Mapping):
            raise CorruptResultsError(f"{source}: series[{i}] must be an object")
        out.append(
            (
                SeriesId.from_json(e.get("series"), source),
                _codec.finite_floats(
                    e.get("samples"), f"series[{i}].samples", source, bound="positive"
                ),
            )
        )
    return tuple(out)


def _write_samples(m: RoundMeasurement) -> list[dict[str, Any]]:
    return [{"series": s.to_json(), "samples": list(x)} for s, x in m.samples]


@dataclass(frozen=True)
class RoundMeasurement(Model):
    """One call of confirm's runner: one side, one round, samples per series."""

    _what = "a measurement"

    side: str = field(metadata=spec(choices=_SIDES, label="side"))  # "base" or "head"
    round: int
    # written as ``series``: [{"series": SeriesId, "samples": [...]}, ...]
    samples: tuple[tuple[SeriesId, tuple[float, ...]], ...] = field(
        metadata=spec(key="series", encode=_write_samples, decode=_samples)
    )


@dataclass(frozen=True)
class RoundsDocument(Document):
    """Every sample confirm re-measured, per side and round.

    Attributes:
        base, head: the commits (full hashes).
        rounds: ABAB repetitions before the first look (every suspect measured).
        measurements: one per (side, round) runner call, in call order.
        max_rounds: the budget in rounds the confirmation was designed with (later
            rounds re-measure only undecided suspects; a run stopped early by its time
            budget has fewer).
    """

    _kind = _KIND
    _version = ROUNDS_SCHEMA_VERSION
    _readable = (ROUNDS_SCHEMA_VERSION,)
    _source = "<rounds>"

    base: str
    head: str
    rounds: int
    measurements: tuple[RoundMeasurement, ...] = ()
    # 0: same as rounds; written as ``design_max`` (a reader never sees 0)
    max_rounds: int = field(default=0, metadata=spec(encode=lambda d: d.design_max))

    @classmethod
    def _check(cls, values: dict[str, Any], data: Mapping[str, Any], source: str) -> None:
        rounds = values["rounds"]
        if not 1 <= rounds <= MAX_ROUNDS:
            raise CorruptResultsError(f"{source}: rounds must be 1..{MAX_ROUNDS}, got {rounds}")
        max_rounds = values["max_rounds"] if "max_rounds" in data else rounds
        if not rounds <= max_rounds <= MAX_ROUNDS:
            raise CorruptResultsError(
                f"{source}: max_rounds must be {rounds}..{MAX_ROUNDS}, got {max_rounds}"
            )
        for m in values["measurements"]:
            if not 0 <= m.round < max_rounds:
                raise CorruptResultsError(f"{source}: round {m.round} outside 0..{max_rounds - 1}")
        values["max_rounds"] = max_rounds

    @property
    def design_max(self) -> int:
        return max(self.rounds, self.max_rounds)

    def samples(self, side: str, round_index: int) -> dict[SeriesId, tuple[float, ...]]:
        """Samples per series measured on ``side`` in round ``round_index`` ({} if none)."""
        out: dict[SeriesId, tuple[float, ...]] = {}
        for m in self.measurements:
            if m.side == side and m.round == round_index:
                out.update(m.samples)
        return out
