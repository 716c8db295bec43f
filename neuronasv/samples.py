"""Sample statistics every stage shares: median, quantiles, noise (IQR/median), its limit.

Pure Python, no imports beyond :mod:`math`: the measure stage uses it and must not import
scipy or numpy's statistics (series hold tens of samples, where a numpy call costs more
than the arithmetic). One home, so the profile's warning, the comparison's warning and the
site's noise badge agree on what "noisy" means.

- :func:`median`: the middle value, the mean of the two middle ones for an even count
  (as :func:`statistics.median` and ``numpy.median``).
- :func:`quantile`: linear interpolation between order statistics (``numpy.quantile``'s
  default, "type 7").
- :func:`noise`: IQR/median with those quartiles.
- :data:`NOISE_THRESHOLD`: noise above this is "noisy" (10 %, the figure
  ``torch.utils.benchmark.Measurement`` warns at).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

__all__ = ["NOISE_THRESHOLD", "median", "noise", "quantile"]

#: IQR/median above this is noisy: a warning in profiles and comparisons, the "high"
#: noise badge on the history site.
NOISE_THRESHOLD = 0.10


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of already *sorted*, non-empty values, linear."""
    if not sorted_values:
        raise ValueError("quantile of an empty sequence")
    pos = q * (len(sorted_values) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def _median_sorted(s: Sequence[float]) -> float:
    n = len(s)
    if n % 2:
        return s[n // 2]
    return (s[n // 2 - 1] + s[n // 2]) / 2.0


def median(values: Iterable[float]) -> float:
    """Median of non-empty ``values`` (:class:`ValueError` when empty)."""
    s = sorted(float(x) for x in values)
    if not s:
        raise ValueError("median of an empty sequence")
    return _median_sorted(s)


def noise(values: Iterable[float]) -> float | None:
    """IQR/median of ``values``; None for fewer than 2 values or a zero median."""
    s = sorted(float(x) for x in values)
    if len(s) < 2:
        return None
    med = _median_sorted(s)
    if med == 0.0:
        return None
    return (quantile(s, 0.75) - quantile(s, 0.25)) / abs(med)
