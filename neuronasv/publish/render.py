"""HTML and data-file text for the site (pure: strings in, strings out).

Escaping rules, all in one place:
* text into HTML goes through :func:`h` (``html.escape`` with quotes);
* JSON into a ``<script type="application/json">`` block or a ``.js`` data file goes
  through :func:`script_json`: strict JSON (no NaN) with ``<``, ``>``, ``&``, U+2028 and
  U+2029 written as ``\\uXXXX`` — still valid JSON, and no op name can close the script;
* the browser code builds the DOM with ``textContent``/attributes, never ``innerHTML``.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any

import msgspec
import numpy as np

from neuronasv.format import format_pct, format_ratio

__all__ = [
    "SPARK_MIN_FACTOR",
    "h",
    "page",
    "script_json",
    "spark_scale",
    "sparkline_svg",
]

_ENCODER = msgspec.json.Encoder()
_SCRIPT_ESC = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}


def h(text: object) -> str:
    """HTML-escape any value for text or a quoted attribute."""
    return html.escape(str(text), quote=True)


def script_json(obj: Any) -> str:
    """Strict JSON safe inside ``<script>`` (see module docstring).

    Encoded by msgspec (data files are megabytes of integer lists: ~8x faster than
    ``json.dumps``); it writes non-finite floats as ``null``, never as bare ``NaN``.
    """
    text = _ENCODER.encode(obj).decode("utf-8")
    for k, v in _SCRIPT_ESC.items():
        text = text.replace(k, v)
    return text


#: A sparkline's vertical extent covers at least this factor (log scale): changes much
#: smaller than it stay near-flat, a doubling or more fills the height.
SPARK_MIN_FACTOR = 2.0


def spark_scale(values: np.ndarray) -> tuple[np.ndarray, str]:
    """Heights in [0, 1] for finite ``values`` and a note on their range.

    The rule (why a min–max scale is wrong: it draws a -1 % wobble and a 24× jump as the
    same full-height step):

    * all values positive: log scale, so equal *ratios* are equal heights; the extent is
      the data's own ratio range but at least :data:`SPARK_MIN_FACTOR` (centred on the
      data), so a 24× jump fills the height, +45 % about half, and -1 % under 2 %;
    * otherwise (zero or negative values): linear from zero, so a value's height is its
      size.
    """
    v = values.astype(np.float64)
    lo, hi = float(v.min()), float(v.max())
    if lo > 0:
        lv = np.log(v)
        a, b = math.log(lo), math.log(hi)
        span = max(b - a, math.log(SPARK_MIN_FACTOR))
        mid = (a + b) / 2
        heights = (lv - (mid - span / 2)) / span
        ratio = hi / lo
        note = f"range {format_ratio(ratio)}" if ratio >= 1.1 else f"range {format_pct(ratio - 1)}"
        return heights, note
    a, b = min(lo, 0.0), max(hi, 0.0)
    span = b - a or 1.0
    return (v - a) / span, "linear from zero"


def sparkline_svg(
    values: np.ndarray,
    *,
    width: int = 120,
    height: int = 24,
    marks: Sequence[int] = (),
    good: Sequence[int] = (),
    label: str = "trend",
) -> str:
    """A tiny inline SVG polyline of the finite values (no script, no external file).

    Scaled by :func:`spark_scale` (log, at least a factor 2 tall). ``marks`` are positions
    (indices into ``values``) drawn as red ticks (regressions), ``good`` as green ones
    (improvements); ``label`` starts the accessible name, which also gives the range.
    """
    idx = np.flatnonzero(np.isfinite(values))
    if idx.size == 0:
        return (
            f'<svg class="spark" width="{width}" height="{height}" role="img"'
            ' aria-label="no data"></svg>'
        )
    if idx.size == 1:
        # one point (a new op, or a series measured once) is drawn, never an empty chart
        n = values.size - 1 or 1
        x = idx[0] * (width - 2) / n + 1 if values.size > 1 else width - 4
        name = h(f"{label}, one measurement")
        return (
            f'<svg class="spark" width="{width}" height="{height}" viewBox="0 0 {width}'
            f' {height}" role="img" aria-label="{name}"><title>{name}</title>'
            f'<circle cx="{x:.1f}" cy="{height / 2:.1f}" r="2.5"/></svg>'
        )
    heights, note = spark_scale(values[idx])
    n = values.size - 1 or 1
    xs = idx * (width - 2) / n + 1
    ys = height - 2 - heights * (height - 4)
    # one %-format over all points (a thousand series' sparklines: 0.18 -> 0.03 s)
    flat = np.column_stack([xs, ys]).ravel().tolist()
    pts = " ".join(["%.1f,%.1f"] * len(xs)) % tuple(flat)
    ticks = "".join(
        f'<line x1="{x:.1f}" x2="{x:.1f}" y1="0" y2="{height}" class="{cls}"/>'
        for ms, cls in ((marks, "mk"), (good, "mk mk-good"))
        for x in (m * (width - 2) / n + 1 for m in ms)
    )
    name = h(f"{label}, {note}")
    return (
        f'<svg class="spark" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="{name}"><title>{name}</title>{ticks}'
        f'<polyline points="{pts}"/></svg>'
    )


def page(title: str, body: str, *, root: str, scripts: Sequence[str] = (), head: str = "") -> str:
    """A complete HTML page; ``root`` is the relative path to the site root ("" or "../../")."""
    tags = "".join(f'<script src="{h(s)}"></script>' for s in scripts)
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{h(title)}</title>"
        f'<link rel="stylesheet" href="{root}assets/site.css">{head}</head><body>'
        f'<header><a class="brand" href="{root}index.html">neuronasv</a>'
        f'<nav><a href="{root}index.html">Series</a> '
        f'<a href="{root}regressions.html">Regressions</a> '
        f'<a href="{root}regressions.atom">Atom</a> '
        f'<a href="{root}regressions.json">JSON</a></nav></header>'
        f"<main>{body}</main>{tags}</body></html>\n"
    )
