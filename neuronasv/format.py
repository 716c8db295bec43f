"""Every number people read, formatted one way: the one home of the rounding rules.

A leaf (imports only :mod:`math` and the unit registry :mod:`neuronasv.units`; numpy
inside :func:`value_labels` only), so every stage may use it: the verdict reasons of
``analyse``, the PR comment, job summary and terminal view of ``report``, the GitHub
issues, the history site. One rule per quantity:

- **Percentage** (a change, a noise level, a share, a threshold): one decimal below 10 %,
  whole percent from 10 % (two significant figures), a space before ``%``, changes signed:
  ``+2.5 %``, ``+18 %``, ``-95 %``, ``+2300 %``, ``12 %``. A confidence interval of a
  ratio gives both bounds by the same rule: ``+12 … +25 %``.
- **p-value**: two significant figures; below 0.0001 ``<0.0001``: ``0.032``,
  ``0.00041``, ``<0.0001``; in a sentence ``p=0.032``, ``p<0.0001`` (:func:`p_text`).
- **Duration** (unit seconds): three significant figures in the unit that leaves 1–3
  integer digits (s, ms, µs, ns): ``2.36 ms``, ``23.6 µs``, ``236 ns``.
- **Bytes**: three significant figures in binary units (KiB, MiB, GiB), plain bytes below
  1 KiB: ``512 bytes``, ``1.50 KiB``, ``64.0 MiB``.
- **Any other unit**: four significant figures and the unit's name (``3.142 flops``).
- **Calls per iteration**: whole numbers plainly, else two decimals (``3``, ``2.50``);
  unknown ``–`` (:func:`format_calls_per_iter`, two sides :func:`format_calls`).
- **Ratio** (a factor of work or range): three significant figures after ``×``; below 1
  as ``÷`` its inverse unless asked otherwise: ``×512``, ``×1.3``, ``÷2`` (``×0.5``).
- **Fraction of a peak**: a percentage up to 100 %; above it the op outran the roof (data
  served from cache against a DRAM roof), so it reads ``above peak``, never a figure
  (:func:`format_peak_fraction`). It is a fact about the op, never advice: a roof that
  could not be measured honestly is not stored, and then there is no fraction at all.
- **Rate** (a roof, a throughput): three significant figures with a decimal prefix:
  ``26.1 GB/s``, ``94.2 GFLOP/s``, ``1.98 TFLOP/s`` (:func:`format_rate`).
- **An exact count** (an exact metric of :mod:`neuronasv.metrics`): every digit, thousands
  separated, two decimals only when the per-iteration count is fractional, then the
  metric's unit: ``12,102 <unit>``, ``+2,443.25``.
- **Wall time** (what a search or a run cost, not a measurement): seconds below a minute
  (one decimal below 10 s), minutes below an hour, hours above, two significant figures
  from 10 on: ``4.2 s``, ``38 s``, ``3.5 min``, ``14 min``, ``1.2 h`` (:func:`format_wall`).

Two sides of a change share one scale unless they differ by over 100× (:func:`format_pair`).
Many values at once (the history site's data files) have the same text, each distinct label
written once (:func:`value_labels`); a chart's value axis gets 1-2-5 steps on one scale,
the unit's name as the axis title (:func:`axis_ticks`).
Unknown or non-finite values read ``n/a`` (values) or nothing (p-values, intervals).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from neuronasv.metrics import by_unit, of_unit
from neuronasv.units import TIME_UNITS, is_exact, is_time

__all__ = [
    "ABOVE_PEAK",
    "TIME_UNITS",
    "axis_ticks",
    "format_bytes",
    "format_calls",
    "format_calls_per_iter",
    "format_ci",
    "format_count",
    "format_delta_pct",
    "format_load",
    "format_mhz",
    "format_p",
    "format_pair",
    "format_pct",
    "format_peak_fraction",
    "format_rate",
    "format_ratio",
    "format_signed",
    "format_value",
    "format_wall",
    "p_text",
    "pct_number",
    "pick_time_scale",
    "plural",
    "value_labels",
]

_SCALES: tuple[tuple[float, str], ...] = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))
_BINARY: tuple[tuple[float, str], ...] = ((2.0**30, "GiB"), (2.0**20, "MiB"), (2.0**10, "KiB"))
#: Smallest p-value shown as a number; smaller ones read ``<0.0001``.
P_FLOOR = 1e-4


def plural(n: int, word: str, words: str | None = None) -> str:
    """``1 regression``, ``2 regressions``."""
    return f"{n} {word if n == 1 else (words or word + 's')}"


# --- percentages ---------------------------------------------------------------------------


def pct_number(fraction: float, *, signed: bool = False) -> str:
    """``fraction`` (0.182) as a percentage without the sign ``%`` (``18``, ``+2.5``)."""
    v = fraction * 100.0
    # decided on the rounded figure, so 9.96 % reads "10 %", not "10.0 %"
    spec = ("+" if signed else "") + (".1f" if abs(round(v, 1)) < 10 else ".0f")
    return format(v, spec)


def format_pct(fraction: float | None, *, signed: bool = False) -> str:
    """``0.123`` → ``12 %``, ``0.034`` → ``3.4 %`` (``+3.4 %`` signed); unknown → ``n/a``."""
    if fraction is None or not math.isfinite(fraction):
        return "n/a"
    return f"{pct_number(fraction, signed=signed)} %"


def format_delta_pct(ratio: float | None) -> str:
    """Ratio head/base → signed percent change (``1.182`` → ``+18 %``, ``1.025`` → ``+2.5 %``)."""
    if ratio is None or not math.isfinite(ratio):
        return "n/a"
    return format_pct(ratio - 1.0, signed=True)


def format_ci(low: float | None, high: float | None) -> str:
    """CI of the ratio as percent changes: ``+12 … +25 %``; unknown → empty."""
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return ""
    return f"{pct_number(low - 1, signed=True)} … {pct_number(high - 1, signed=True)} %"


# --- p-values ------------------------------------------------------------------------------


def format_p(p: float | None) -> str:
    """p-value with two significant figures; tiny ones as ``<0.0001``; unknown → empty."""
    if p is None or not math.isfinite(p):
        return ""
    if p < P_FLOOR:
        return "<0.0001"
    return f"{p:.2g}"


def p_text(p: float) -> str:
    """The p-value in a sentence: ``p=0.032``, ``p<0.0001``."""
    text = format_p(p)
    return f"p{text}" if text.startswith("<") else f"p={text}"


# --- values with units ---------------------------------------------------------------------


def pick_time_scale(seconds: float) -> tuple[float, str]:
    """The (factor, suffix) that shows ``seconds`` with 1–3 integer digits."""
    mag = abs(seconds)
    for factor, suffix in _SCALES:
        if mag >= factor:
            return factor, suffix
    return _SCALES[-1]


def _digits(x: float) -> str:
    """Three significant figures without exponent notation (2.36, 23.6, 236, 2360)."""
    # decided on the rounded figure, so 9.996 reads "10.0", not "10.00"
    if abs(round(x, 1)) >= 100:
        return f"{x:.0f}"
    if abs(round(x, 2)) >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def format_bytes(n: float) -> str:
    """``512 bytes``, ``1.50 KiB``, ``64.0 MiB``, ``2.00 GiB``."""
    for factor, suffix in _BINARY:
        if abs(n) >= factor:
            return f"{_digits(n / factor)} {suffix}"
    return f"{n:.0f} bytes"


def format_value(value: float | None, unit: str, *, scale: tuple[float, str] | None = None) -> str:
    """``0.002355, "seconds"`` → ``2.36 ms``; bytes in KiB/MiB/GiB; other units keep their
    name; None → ``n/a``."""
    if value is None or not math.isfinite(value):
        return "n/a"
    if is_time(unit):
        factor, suffix = scale or pick_time_scale(value)
        return f"{_digits(value / factor)} {suffix}"
    if unit == "bytes":
        return format_bytes(value)
    if is_exact(unit):
        return f"{format_count(value)} {unit}"
    text = f"{value:.4g}"
    return f"{text} {unit}" if unit and unit != "unit" else text


def format_count(n: float) -> str:
    """An exact count with every digit: ``12,102``, ``2,443.25`` (fractional per iteration)."""
    if not math.isfinite(n):
        return "n/a"
    return f"{n:,.0f}" if float(n).is_integer() else f"{n:,.2f}"


def format_signed(value: float, unit: str) -> str:
    """A signed change in the unit's own scale: ``+2.10 µs``, ``-0.41 ms``, ``+3 bytes``."""
    if not math.isfinite(value):
        return "n/a"
    sign = "+" if value >= 0 else "-"
    return sign + format_value(abs(value), unit)


def format_pair(base: float | None, head: float | None, unit: str, *, sep: str = " → ") -> str:
    """``2.36 ms → 2.79 ms``: one scale for both sides unless they differ by over 100×."""
    known = [abs(v) for v in (base, head) if v is not None and math.isfinite(v) and v != 0]
    scale = None
    if known and is_time(unit) and max(known) < 100 * min(known):
        scale = pick_time_scale(max(known))
    return f"{format_value(base, unit, scale=scale)}{sep}{format_value(head, unit, scale=scale)}"


def format_wall(seconds: float) -> str:
    """Wall time: ``4.2 s``, ``38 s``, ``3.5 min``, ``14 min``, ``1.2 h``; unknown ``n/a``."""
    if not math.isfinite(seconds) or seconds < 0:
        return "n/a"
    for size, unit in ((3600.0, "h"), (60.0, "min")):
        if seconds >= size:
            v = seconds / size
            return f"{v:.1f} {unit}" if round(v, 1) < 10 else f"{v:.0f} {unit}"
    return f"{seconds:.1f} s" if round(seconds, 1) < 10 else f"{seconds:.0f} s"


def format_load(load: float | None) -> str:
    """A load average: ``0.4``, ``5.2``, ``12.0``; unknown ``n/a``."""
    if load is None or not math.isfinite(load):
        return "n/a"
    return f"{load:.1f}"


def format_mhz(mhz: float | None) -> str:
    """A clock: ``2,596 MHz``; unknown ``n/a``."""
    if mhz is None or not math.isfinite(mhz):
        return "n/a"
    return f"{mhz:,.0f} MHz"


def format_calls_per_iter(x: float | None) -> str:
    """Calls per iteration: ``3``, ``2.50``; unknown ``–``."""
    if x is None:
        return "–"
    return f"{x:.0f}" if float(x).is_integer() else f"{x:.2f}"


def format_calls(base: float | None, head: float | None) -> str:
    """Calls per iteration: ``3`` when equal, ``3 → 4`` when they changed, empty if unknown."""
    if base is None and head is None:
        return ""
    if base is not None and head is not None and base == head:
        return format_calls_per_iter(base)
    return f"{format_calls_per_iter(base)} → {format_calls_per_iter(head)}"


def format_ratio(ratio: float, *, divide: bool = True) -> str:
    """A factor: ``×512``, ``×1.3``; below 1 ``÷2`` (``divide=False``: ``×0.5``)."""
    if divide and 0 < ratio < 1:
        return f"÷{1 / ratio:.3g}"
    return f"×{ratio:.3g}"


#: What a fraction above the peak reads (see the module docstring): a fact, not advice.
ABOVE_PEAK = "above peak"


def format_peak_fraction(fraction: float) -> str:
    """``0.8`` → ``80 %``; above 1 → :data:`ABOVE_PEAK` (no figure: the roof is DRAM's, the
    data was in cache)."""
    return ABOVE_PEAK if fraction > 1.0 else format_pct(fraction)


_DECIMAL: tuple[tuple[float, str], ...] = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def format_rate(value: float | None, unit: str) -> str:
    """A rate with a decimal prefix, three significant figures: ``format_rate(2.61e10,
    "B/s")`` → ``26.1 GB/s``, ``(9.42e10, "FLOP/s")`` → ``94.2 GFLOP/s``; unknown ``n/a``."""
    if value is None or not math.isfinite(value):
        return "n/a"
    for factor, prefix in _DECIMAL:
        if abs(value) >= factor:
            return f"{_digits(value / factor)} {prefix}{unit}"
    return f"{_digits(value)} {unit}"


# --- many values at once, and chart axes (the history site's data) ---------------------------

#: Above this magnitude (in the display unit) the vectorised path hands a value to
#: :func:`format_value` (its integer digits no longer fit the exact fast path).
_FAST_MAX = 1e12


def value_labels(values: Sequence[float] | Any, unit: str) -> tuple[list[str], Any]:
    """The :func:`format_value` text of many values, deduplicated: ``(labels, index)``.

    ``index`` (a numpy int64 array, ``values``' shape, flattened) gives each value's label
    in ``labels``; -1 for a value that is not finite. Every label is exactly
    :func:`format_value` of its value (one rule; a test compares them over a million
    values and every rounding boundary): device times take a vectorised path (the scale,
    the digits and the decimals decided with numpy, each distinct label written once;
    values within a hair of a rounding boundary, negative ones and huge ones are handed to
    :func:`format_value` itself), any other unit formats each distinct value once.
    """
    import numpy as np

    v = np.asarray(values, dtype=np.float64).ravel()
    index = np.full(v.shape, -1, dtype=np.int64)
    labels: list[str] = []
    seen: dict[str, int] = {}

    def put(text: str) -> int:
        i = seen.get(text)
        if i is None:
            i = seen[text] = len(labels)
            labels.append(text)
        return i

    fin = np.isfinite(v)
    slow = fin.copy()
    if unit.lower() in TIME_UNITS:
        a = np.abs(v)
        scale = np.select([a >= 1.0, a >= 1e-3, a >= 1e-6], [0, 1, 2], 3)
        factors = np.array([f for f, _ in _SCALES])
        with np.errstate(invalid="ignore", over="ignore"):
            x = v / factors[scale]  # the same division format_value makes
            ax = np.abs(x)
            # _digits: decided on the rounded figure (99.96 -> "100", 9.996 -> "10.0")
            dec = np.select([ax >= 99.95, ax >= 9.995], [0, 1], 2)
            shifted = x * 10.0**dec
            k = np.rint(shifted)
            near = (
                (np.abs(np.abs(shifted - np.floor(shifted)) - 0.5) < 1e-6)
                | (np.abs(ax - 99.95) < 1e-9)
                | (np.abs(ax - 9.995) < 1e-10)
            )
        fast = fin & (v >= 0) & (ax < _FAST_MAX) & ~near
        slow = fin & ~fast
        if fast.any():
            key = (k[fast].astype(np.int64) * 4 + dec[fast]) * 4 + scale[fast]
            uniq, inv = np.unique(key, return_inverse=True)
            texts = [_from_digits(int(u) >> 4, (int(u) >> 2) & 3, _SCALES[int(u) & 3][1])
                     for u in uniq]  # fmt: skip
            ids = np.array([put(t) for t in texts], dtype=np.int64)
            index[fast] = ids[inv.ravel()]
    if slow.any():
        uniq, inv = np.unique(v[slow], return_inverse=True)
        ids = np.array([put(format_value(float(u), unit)) for u in uniq], dtype=np.int64)
        index[slow] = ids[inv.ravel()]
    return labels, index


def _from_digits(k: int, decimals: int, suffix: str) -> str:
    """``870, 1, "µs"`` -> ``87.0 µs`` (``k`` ≥ 0: the digits of a value × 10^decimals)."""
    digits = str(k)
    if decimals:
        digits = digits.rjust(decimals + 1, "0")
        digits = f"{digits[:-decimals]}.{digits[-decimals:]}"
    return f"{digits} {suffix}"


def axis_ticks(
    lo: float, hi: float, unit: str, *, count: int = 5
) -> tuple[list[float], list[str], str]:
    """Ticks for a chart's value axis between ``lo`` and ``hi``: ``(values, labels, title)``.

    About ``count`` ticks at a step of 1, 2 or 5 × 10^n *in the unit people read* (µs, KiB,
    a count), labelled on one scale for the whole axis with as many decimals as the
    step needs: ``0 µs, 50 µs, 100 µs``; ``1.2 ms, 1.4 ms``. An exact metric's whole counts
    have every digit (``1,200,000``), never an abbreviated or cut label; the axis ``title``
    is the metric's ``axis_label`` (:mod:`neuronasv.metrics`), ``device time`` for time.
    """
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return [], [], _axis_title(unit)
    if hi < lo:
        lo, hi = hi, lo
    factor, suffix = _axis_scale(lo, hi, unit)
    a, b = lo / factor, hi / factor
    span = b - a
    if span <= 0:
        span = abs(a) * 0.1 or 1.0
        a, b = a - span / 2, b + span / 2
    step = _axis_step(span, count, unit)
    decimals = max(0, -math.floor(math.log10(step) + 1e-9))
    first = math.ceil(a / step - 1e-9)
    ticks_d = [round((first + i) * step, decimals) for i in range(int((b - a) / step + 1e-9) + 1)]
    ticks_d = [t for t in ticks_d if a - 1e-9 * abs(step) <= t <= b + 1e-9 * abs(step)]
    texts = _tick_labels(ticks_d, decimals, unit, suffix)
    return [t * factor for t in ticks_d], texts, _axis_title(unit)


def _axis_scale(lo: float, hi: float, unit: str) -> tuple[float, str]:
    """The axis's one scale ``(factor, suffix)``: a time or byte unit people read, else 1."""
    if unit.lower() in TIME_UNITS:
        return pick_time_scale(max(abs(lo), abs(hi)) or 1e-9)
    if unit == "bytes":
        mag = max(abs(lo), abs(hi))
        return next(((f, s) for f, s in _BINARY if mag >= f), (1.0, "bytes"))
    return 1.0, ""


def _axis_step(span: float, count: int, unit: str) -> float:
    """The 1-2-5 × 10^n step whose tick count over ``span`` is nearest ``count``."""
    raw = span / max(count, 1)
    mag10 = 10.0 ** math.floor(math.log10(raw))
    # the 1-2-5 step whose tick count is nearest ``count`` (on a log scale)
    step = min((m * mag10 for m in (1, 2, 5, 10)), key=lambda st: abs(math.log(span / st / count)))
    if _whole(unit):
        step = max(step, 1.0)
    return step


def _tick_labels(ticks_d: list[float], decimals: int, unit: str, suffix: str) -> list[str]:
    """One label per tick on the axis's scale: whole counts with every digit."""
    if _whole(unit):
        texts = [f"{t:,.{decimals}f}" for t in ticks_d]
    else:
        texts = [f"{t:.{decimals}f}" + (f" {suffix}" if suffix else "") for t in ticks_d]
    return ["0" + (f" {suffix}" if suffix else "") if t == 0 else s
            for t, s in zip(ticks_d, texts, strict=True)]  # fmt: skip


def _whole(unit: str) -> bool:
    """An exact metric's unit whose values are whole counts (the registry says)."""
    metric = by_unit(unit)
    return metric is not None and metric.whole


def _axis_title(unit: str) -> str:
    """The value axis's title: the metric's (:mod:`neuronasv.metrics`), else the unit."""
    metric = of_unit(unit)
    if metric is not None:
        return metric.axis_label
    return unit if unit and unit != "unit" else ""
