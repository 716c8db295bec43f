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

__all__ = ["fmt_value", "h", "page", "script_json", "sparkline_svg"]

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


def fmt_value(v: float | None, unit: str) -> str:
    """``2.355 ms`` for seconds, plain 4 significant digits otherwise."""
    if v is None or not math.isfinite(v):
        return "n/a"
    if unit == "seconds":
        for scale, name in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
            if abs(v) >= scale:
                return f"{v / scale:.4g} {name}"
        return f"{v / 1e-9:.4g} ns"
    if unit == "bytes":
        for scale, name in ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
            if abs(v) >= scale:
                return f"{v / scale:.4g} {name}"
        return f"{v:.0f} B"
    return f"{v:.4g} {unit}" if unit and unit != "unit" else f"{v:.4g}"


def sparkline_svg(
    values: np.ndarray, *, width: int = 120, height: int = 24, marks: Sequence[int] = ()
) -> str:
    """A tiny inline SVG polyline of the finite values (no script, no external file).

    ``marks`` are positions (indices into ``values``) drawn as short red ticks.
    """
    idx = np.flatnonzero(np.isfinite(values))
    if idx.size < 2:
        return (
            f'<svg class="spark" width="{width}" height="{height}" role="img"'
            ' aria-label="no data"></svg>'
        )
    v = values[idx]
    lo, hi = float(v.min()), float(v.max())
    span = hi - lo or 1.0
    n = values.size - 1 or 1
    xs = idx * (width - 2) / n + 1
    ys = height - 2 - (v - lo) / span * (height - 4)
    pts = " ".join(f"{x:.1f},{y:.1f}" for x, y in zip(xs, ys, strict=False))
    ticks = "".join(
        f'<line x1="{x:.1f}" x2="{x:.1f}" y1="0" y2="{height}" class="mk"/>'
        for x in (m * (width - 2) / n + 1 for m in marks)
    )
    return (
        f'<svg class="spark" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="trend">{ticks}<polyline points="{pts}"/></svg>'
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
