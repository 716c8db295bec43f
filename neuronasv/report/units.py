"""Human formatting of values, changes, confidence intervals and p-values.

asv stores device time in seconds; people read µs and ms. Every number in a report goes
through here so the PR comment, job summary and terminal view agree digit for digit.
"""

from __future__ import annotations

import math

__all__ = [
    "TIME_UNITS",
    "format_calls",
    "format_ci",
    "format_delta_pct",
    "format_p",
    "format_pair",
    "format_signed",
    "format_value",
    "pick_time_scale",
    "plural",
]

#: Unit names that mean "seconds" in results and findings documents.
TIME_UNITS = frozenset({"seconds", "second", "s", "sec"})

_SCALES: tuple[tuple[float, str], ...] = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))


def plural(n: int, word: str, words: str | None = None) -> str:
    """``1 regression``, ``2 regressions``."""
    return f"{n} {word if n == 1 else (words or word + 's')}"


def pick_time_scale(seconds: float) -> tuple[float, str]:
    """The (factor, suffix) that shows ``seconds`` with 1–3 integer digits."""
    mag = abs(seconds)
    for factor, suffix in _SCALES:
        if mag >= factor:
            return factor, suffix
    return _SCALES[-1]


def _digits(x: float) -> str:
    """Three significant figures without exponent notation (2.36, 23.6, 236, 2360)."""
    mag = abs(x)
    if mag >= 100:
        return f"{x:.0f}"
    if mag >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def format_value(value: float | None, unit: str, *, scale: tuple[float, str] | None = None) -> str:
    """``0.002355, "seconds"`` → ``2.36 ms``; other units keep their name; None → ``n/a``."""
    if value is None or not math.isfinite(value):
        return "n/a"
    if unit.lower() in TIME_UNITS:
        factor, suffix = scale or pick_time_scale(value)
        return f"{_digits(value / factor)} {suffix}"
    text = f"{value:.4g}"
    return f"{text} {unit}" if unit else text


def format_signed(value: float, unit: str) -> str:
    """A signed change in the unit's own scale: ``+2.10 µs``, ``-0.41 ms``, ``+3 bytes``."""
    if not math.isfinite(value):
        return "n/a"
    sign = "+" if value >= 0 else "-"
    return sign + format_value(abs(value), unit)


def format_pair(base: float | None, head: float | None, unit: str) -> str:
    """``2.36 ms → 2.79 ms``: one scale for both sides unless they differ by over 100×."""
    known = [abs(v) for v in (base, head) if v is not None and math.isfinite(v) and v != 0]
    scale = None
    if known and unit.lower() in TIME_UNITS and max(known) < 100 * min(known):
        scale = pick_time_scale(max(known))
    return f"{format_value(base, unit, scale=scale)} → {format_value(head, unit, scale=scale)}"


def format_delta_pct(ratio: float | None) -> str:
    """Ratio head/base → signed percent change (``1.182`` → ``+18.2 %``)."""
    if ratio is None or not math.isfinite(ratio):
        return "n/a"
    pct = (ratio - 1.0) * 100.0
    if abs(pct) >= 100:
        return f"{pct:+.0f} %"
    return f"{pct:+.1f} %"


def format_ci(low: float | None, high: float | None) -> str:
    """CI of the ratio as percent changes: ``+12.0 … +25.1 %``; unknown → empty."""
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return ""
    return f"{(low - 1) * 100:+.1f} … {(high - 1) * 100:+.1f} %"


def format_p(p: float | None) -> str:
    """p-value with two significant figures; tiny ones as ``<0.0001``."""
    if p is None or not math.isfinite(p):
        return ""
    if p < 1e-4:
        return "<0.0001"
    return f"{p:.2g}"


def _calls(x: float) -> str:
    return f"{x:.0f}" if float(x).is_integer() else f"{x:.2f}"


def format_calls(base: float | None, head: float | None) -> str:
    """Calls per iteration: ``3`` when equal, ``3 → 4`` when they changed, empty if unknown."""
    if base is None and head is None:
        return ""
    if base is not None and head is not None and base == head:
        return _calls(base)
    b = "–" if base is None else _calls(base)
    h = "–" if head is None else _calls(head)
    return f"{b} → {h}"
