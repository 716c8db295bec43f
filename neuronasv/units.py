"""The one registry of series units: which units exist, what their values may be, µs → unit.

Every reader and judge asks here — the asv results reader, the analysis (``compare``,
``confirm``) and the privileged PR step, which recomputes from an untrusted artifact
(:mod:`neuronasv.analyse.recompute`) — so a unit means the same thing on both sides of the
trust boundary (issue 28: the privileged step kept its own table, turned an exact metric's
unit into ``unit`` and judged its counts as timing).

Units:

- **time** (:data:`TIME_UNITS`: ``seconds`` and asv's spellings): measured, judged by the
  statistics; values > 0.
- ``bytes`` (asv's ``mem_``/``peakmem_``): values > 0.
- each exact metric's ``unit`` (:data:`neuronasv.metrics.EXACT`: its series, counted by
  its collector): judged without statistics; a value lies in ``[0, Metric.bound]``
  (``[-bound, bound]`` where ``signed``) and is whole where ``whole`` (a callgrind count
  is per iteration over one iteration, so whole); anything else is not what the
  collector writes and is refused, not posted.
- ``unit``: asv's word for "no unit" (``track_`` benchmarks): any finite value.

Profiles store microseconds; :func:`from_us` is the one conversion into a series' unit.
Which units are exact, and what an exact metric's values may be, are read from the metric
registry (:mod:`neuronasv.metrics`): this module adds the units of no metric of ours.
Pure, and a leaf but for the registry (stage 0), like :mod:`neuronasv.format`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from neuronasv.metrics import EXACT, TIME_UNITS, by_unit

__all__ = [
    "KNOWN_UNITS",
    "TIME_UNITS",
    "US",
    "check_value",
    "from_us",
    "is_exact",
    "is_time",
    "known_unit",
    "value_problem",
]

#: Every unit a series may carry; any other is shown as ``unit`` by the privileged step.
KNOWN_UNITS = frozenset({*TIME_UNITS, "bytes", *(m.unit for m in EXACT), "unit"})
#: Seconds per microsecond (profiles store µs; asv series of device time store seconds).
US = 1e-6


def is_time(unit: str) -> bool:
    """True for a unit of time (judged by the statistics)."""
    return unit.lower() in TIME_UNITS


def is_exact(unit: str) -> bool:
    """True for a series judged exactly (the unit of an exact metric of the registry)."""
    return by_unit(unit) is not None


def known_unit(unit: str) -> str:
    """``unit`` when it is in the registry, else ``unit`` (asv's "no unit")."""
    return unit if unit in KNOWN_UNITS else "unit"


def from_us(values: Iterable[float], unit: str) -> list[float]:
    """Microseconds (a profile's numbers) in ``unit``: seconds for a time unit, else as they
    are (a series without a time unit keeps the profile's microseconds)."""
    k = US if is_time(unit) else 1.0
    return [float(x) * k for x in values]


def value_problem(unit: str, value: float) -> str:
    """Why ``value`` cannot be a value of a series in ``unit`` ("" when it can).

    An exact metric's values must lie in ``[0, Metric.bound]`` and be whole where the
    registry says so (``Metric.whole``); every value must be finite (the other units'
    bounds are the asv reader's, which knows the benchmark).
    """
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return f"{value!r} is not a number"
    if not math.isfinite(value):
        return f"{value!r} is not finite"
    metric = by_unit(unit)
    if metric is not None:
        bound = math.inf if metric.bound is None else metric.bound
        if not (-bound if metric.signed else 0) <= value <= bound:
            return f"{value!r} is not a count of {metric.unit} (0 to {bound:.0e})"
        if metric.whole and not float(value).is_integer():
            return f"{value!r} is not a whole number of {metric.unit}"
    return ""


def check_value(unit: str, value: float, where: str) -> float:
    """``value`` as a float, or :class:`ValueError` naming ``where`` (see :func:`value_problem`)."""
    problem = value_problem(unit, value)
    if problem:
        raise ValueError(f"{where}: {problem}")
    return float(value)
