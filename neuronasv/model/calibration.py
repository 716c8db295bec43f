"""A machine's calibrated CPU roof: ``<results>/<machine>/calibration.peaks``.

Written by ``neuronasv doctor --calibrate`` or the first ``neuronasv run`` on a machine
(:mod:`neuronasv.measure.calibration`), only when the measurement was honest
(:mod:`neuronasv.measure.cpu_roof`: the suite's threads, calls long enough to time, steady,
unloaded); read by every later run. Numbers and short labels only; each quantity keeps the
figures it was judged on, so a reader can see why the roof was trusted.

Schema history (``CALIBRATION_SCHEMA_VERSION``):
  1 — ``{"kind": "neuronasv.peaks", "version": 1, ...}``: measured with torch's default
      threads (2 here, while the suite measures with 1), stopped at the first size whose one
      call took > 20 ms, stored whatever came out (0.00007 to 0.195 TFLOP/s float32 a minute
      apart). Not trusted: a version-1 file reads as "no roof" and is re-measured.
  2 — ``schema_version``; the thread count; one reading per quantity (size, calls, fastest
      and median call, CPU shares); stored only when the readings pass the rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from neuronasv.errors import CorruptResultsError
from neuronasv.model import _codec
from neuronasv.model._codec import Document, Model, spec

__all__ = [
    "CALIBRATION_KIND",
    "CALIBRATION_SCHEMA_VERSION",
    "MAX_THREADS",
    "Calibration",
    "RoofReading",
]

CALIBRATION_SCHEMA_VERSION = 2
CALIBRATION_KIND = "neuronasv.peaks"
#: More intra-op threads than any machine has: a larger count is no measurement.
MAX_THREADS = 4096
_MAX_LABEL = 80  # "bandwidth", "float32", "128 MiB copy", "1024² float32 matmul"


def _label(data: Mapping[str, Any], name: str, source: str) -> str:
    value = _codec.field(data, name, str, source)
    if not value or len(value) > _MAX_LABEL or not value.isprintable():
        raise CorruptResultsError(
            f"{source}: field {name!r} must be a short printable label, got {value[:40]!r}"
        )
    return value


def _rates(data: Mapping[str, Any], source: str) -> dict[str, float]:
    value = data.get("flops_per_s")
    if not isinstance(value, Mapping) or not value or len(value) > 16:
        raise CorruptResultsError(f"{source}: flops_per_s must be an object of 1..16 dtypes")
    out: dict[str, float] = {}
    for k, v in value.items():
        name = f"flops_per_s[{k[:40]!r}]"
        if not k or len(k) > 32 or not k.isidentifier():
            raise CorruptResultsError(f"{source}: {name}: not a dtype name")
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise CorruptResultsError(f"{source}: {name} is not a number")
        if not _codec.in_range(v, "positive"):
            raise CorruptResultsError(f"{source}: {name} must be finite and > 0, got {v!r}")
        out[k] = float(v)
    return dict(sorted(out.items()))


@dataclass(frozen=True)
class RoofReading(Model):
    """One quantity as measured: the calls it was judged on.

    Attributes:
        what: ``"bandwidth"`` or a dtype (``"float32"``).
        size: what one call did (``"128 MiB copy"``, ``"1024² float32 matmul"``).
        work: bytes (bandwidth) or FLOPs (a matmul) of one call.
        calls: timed calls (after a warm-up call).
        fastest_s, median_s: the fastest and the median call's wall time.
        rate: work per second of the median of the three fastest calls (the roof).
        cpu_share: CPU time / (wall time x threads) over the timed calls: below 1 the
            measuring threads waited for a CPU (load).
        fastest_cpu_share: the lowest such share among the three fastest calls.
    """

    _what = "reading"
    _context = ("reading", "what")

    what: str = field(metadata=spec(decode=lambda d, src: _label(d, "what", src)))
    size: str = field(metadata=spec(decode=lambda d, src: _label(d, "size", src)))
    work: float = field(metadata=spec(bound="positive"))
    calls: int
    fastest_s: float = field(metadata=spec(bound="positive"))
    median_s: float = field(metadata=spec(bound="positive"))
    rate: float = field(metadata=spec(bound="positive"))
    cpu_share: float = field(metadata=spec(bound="nonneg"))
    fastest_cpu_share: float = field(metadata=spec(bound="nonneg"))

    @classmethod
    def _check(cls, values: dict[str, Any], data: Mapping[str, Any], source: str) -> None:
        if not 1 <= values["calls"] <= 10_000:
            raise CorruptResultsError(f"{source}: calls must be 1..10000, got {values['calls']}")
        if values["median_s"] < values["fastest_s"]:
            raise CorruptResultsError(f"{source}: the median call is faster than the fastest")


@dataclass(frozen=True)
class Calibration(Document):
    """A CPU's roof, measured on the machine with the suite's threads.

    Attributes:
        calibrated: when (ISO 8601, UTC).
        threads: the intra-op threads it was measured with (the suite's).
        memory_bytes_per_s: main-memory bandwidth (a copy larger than the caches).
        flops_per_s: dense matmul FLOP/s per dtype (``float32``, ``bfloat16``).
        readings: the figures each quantity was judged on.
    """

    _kind = CALIBRATION_KIND
    _version = CALIBRATION_SCHEMA_VERSION
    _readable = (CALIBRATION_SCHEMA_VERSION,)
    _source = "<calibration>"

    calibrated: str = field(metadata=spec(decode=lambda d, src: _label(d, "calibrated", src)))
    threads: int
    memory_bytes_per_s: float = field(metadata=spec(bound="positive"))
    flops_per_s: Mapping[str, float] = field(metadata=spec(decode=_rates))
    readings: tuple[RoofReading, ...] = ()

    @classmethod
    def _check(cls, values: dict[str, Any], data: Mapping[str, Any], source: str) -> None:
        if not 1 <= values["threads"] <= MAX_THREADS:
            raise CorruptResultsError(
                f"{source}: threads must be 1..{MAX_THREADS}, got {values['threads']}"
            )
        if len(values["readings"]) > 16:
            raise CorruptResultsError(f"{source}: more than 16 readings")
