"""What ``neuronasv confirm --rounds-out`` records: every sample of its ABAB re-measurement.

``neuronasv confirm`` judges suspected regressions on re-measured rounds that exist only in
its own process. Recorded here, they can be *replayed*: the privileged PR-comment step
recomputes the confirmation from these numbers with its own code instead of believing the
verdicts an untrusted run wrote (``neuronasv.analyse.replay``). Numbers and series
identities only; no free text.

Schema history (``ROUNDS_SCHEMA_VERSION``):
  1 — first version (with the adaptive design: ``rounds`` before the first look and
      ``max_rounds``, so a replay spends alpha over the same looks).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from neuronasv.errors import CorruptResultsError
from neuronasv.model import _codec
from neuronasv.model.findings import SeriesId

__all__ = ["MAX_ROUNDS", "ROUNDS_SCHEMA_VERSION", "RoundMeasurement", "RoundsDocument"]

ROUNDS_SCHEMA_VERSION = 1
MAX_ROUNDS = 100
_KIND = "neuronasv.rounds"
_SIDES = ("base", "head")


@dataclass(frozen=True)
class RoundMeasurement:
    """One call of confirm's runner: one side, one round, samples per series."""

    side: str  # "base" or "head"
    round: int
    samples: tuple[tuple[SeriesId, tuple[float, ...]], ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "side": self.side,
            "round": self.round,
            "series": [{"series": s.to_json(), "samples": list(x)} for s, x in self.samples],
        }

    @classmethod
    def from_json(cls, data: Any, source: str) -> RoundMeasurement:
        if not isinstance(data, Mapping):
            raise CorruptResultsError(f"{source}: a measurement must be an object")
        side = _codec.field(data, "side", str, source)
        if side not in _SIDES:
            raise CorruptResultsError(f"{source}: side must be 'base' or 'head', got {side!r}")
        rnd = _codec.field(data, "round", int, source)
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
                    _codec.finite_floats(e.get("samples"), f"series[{i}].samples", source),
                )
            )
        return cls(side, rnd, tuple(out))


@dataclass(frozen=True)
class RoundsDocument:
    """Every sample confirm re-measured, per side and round.

    Attributes:
        base, head: the commits (full hashes).
        rounds: ABAB repetitions before the first look (every suspect measured).
        measurements: one per (side, round) runner call, in call order.
        max_rounds: the budget in rounds the confirmation was designed with (later
            rounds re-measure only undecided suspects; a run stopped early by its time
            budget has fewer).
    """

    base: str
    head: str
    rounds: int
    measurements: tuple[RoundMeasurement, ...] = ()
    max_rounds: int = 0  # 0: same as rounds

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

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": _KIND,
            "schema_version": ROUNDS_SCHEMA_VERSION,
            "base": self.base,
            "head": self.head,
            "rounds": self.rounds,
            "max_rounds": self.design_max,
            "measurements": [m.to_json() for m in self.measurements],
        }

    def dumps(self) -> str:
        return _codec.dumps(self.to_json())

    @classmethod
    def from_json(cls, data: Any, source: str = "<rounds>") -> RoundsDocument:
        doc = _codec.check_schema(
            data, kind=_KIND, supported=(ROUNDS_SCHEMA_VERSION,), source=source
        )
        rounds = _codec.field(doc, "rounds", int, source)
        if not 1 <= rounds <= MAX_ROUNDS:
            raise CorruptResultsError(f"{source}: rounds must be 1..{MAX_ROUNDS}, got {rounds}")
        max_rounds = doc.get("max_rounds", rounds)
        if isinstance(max_rounds, bool) or not isinstance(max_rounds, int):
            raise CorruptResultsError(f"{source}: max_rounds must be an integer")
        if not rounds <= max_rounds <= MAX_ROUNDS:
            raise CorruptResultsError(
                f"{source}: max_rounds must be {rounds}..{MAX_ROUNDS}, got {max_rounds}"
            )
        raw = doc.get("measurements", [])
        if not isinstance(raw, list):
            raise CorruptResultsError(f"{source}: measurements must be a list")
        ms = tuple(RoundMeasurement.from_json(m, source) for m in raw)
        for m in ms:
            if not 0 <= m.round < max_rounds:
                raise CorruptResultsError(
                    f"{source}: round {m.round} outside 0..{max_rounds - 1}"
                )
        return cls(
            base=_codec.field(doc, "base", str, source),
            head=_codec.field(doc, "head", str, source),
            rounds=rounds,
            measurements=ms,
            max_rounds=max_rounds,
        )

    @classmethod
    def loads(cls, text: str, source: str = "<rounds>") -> RoundsDocument:
        return cls.from_json(_codec.loads(text, source=source), source)
