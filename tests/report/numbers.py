"""Numbers read back from the views, and the checks the numeric property tests apply.

Every view prints a row's estimate as it is (issue 28): ``X → Y`` and a Δ beside it, and Δ
must be ``Y / X - 1`` *of the printed numbers*. A printed number stands for every value
that rounds to it, so the check is interval arithmetic: some base in ``X ± ½ ulp`` and head
in ``Y ± ½ ulp`` must give a ratio within ``Δ ± ½ ulp`` (``1.70 µs → 1.73 µs | -0.6 %``
fails: no such pair of values gives a negative change). The same reading checks that "where
the time went" adds up to the row's change, that a series reads the same in every view,
and that a badge never contradicts its own axis's sign.

Used by ``tests/report/test_numbers_agree.py`` and by ``ci/check_demo_words.py`` on a
demo's output.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "Number",
    "check_badges",
    "check_pairs",
    "check_parts",
    "parse_number",
    "rows_by_label",
]

_UNITS = {
    "s": 1.0, "ms": 1e-3, "µs": 1e-6, "ns": 1e-9,
    "bytes": 1.0, "KiB": 2.0**10, "MiB": 2.0**20, "GiB": 2.0**30,
    "instructions": 1.0,
}  # fmt: skip
_NUM = r"[0-9][0-9,]*(?:\.[0-9]+)?"
_UNIT = r"(?:instructions|bytes|KiB|MiB|GiB|ms|µs|ns|s)"
VALUE = rf"{_NUM} {_UNIT}"
PAIR = re.compile(rf"(?P<x>{VALUE}|n/a) (?:→|->) (?P<y>{VALUE}|n/a)")
PCT = re.compile(r"(?P<d>[+-][0-9]+(?:\.[0-9]+)?) %")
SIGNED = re.compile(rf"(?P<v>[+-]{_NUM}) (?P<u>{_UNIT})\b")


@dataclass(frozen=True)
class Number:
    """A printed number: its value and half its last printed digit (the rounding), in the
    unit's base (seconds, bytes, instructions)."""

    value: float
    half: float

    @property
    def low(self) -> float:
        return self.value - self.half

    @property
    def high(self) -> float:
        return self.value + self.half


def _decimal(text: str, factor: float = 1.0) -> Number:
    digits = text.replace(",", "").lstrip("+")
    decimals = len(digits.split(".", 1)[1]) if "." in digits else 0
    return Number(float(digits) * factor, 0.5 * 10.0**-decimals * factor)


def parse_number(text: str) -> Number | None:
    """``2.36 ms`` -> Number(0.00236, 5e-6); ``12,102 instructions`` -> (12102, 0.5);
    ``n/a`` -> None."""
    text = text.strip()
    if text == "n/a":
        return None
    num, _, unit = text.rpartition(" ")
    return _decimal(num, _UNITS[unit])


def parse_pct(text: str) -> Number:
    """``+18 %`` -> Number(18, 0.5) (percent)."""
    return _decimal(text.replace("%", "").strip())


def delta_fits(x: Number, y: Number, d: Number, slack: float = 1e-9) -> bool:
    """Whether some base in ``x`` and head in ``y`` give a change within ``d`` (percent)."""
    if x.low <= 0:
        return True  # a base that rounds to zero bounds nothing
    lo, hi = y.low / x.high, y.high / x.low
    want_lo, want_hi = 1 + d.low / 100, 1 + d.high / 100
    return lo <= want_hi + slack and hi >= want_lo - slack


def _cells(line: str) -> list[str] | None:
    sep = "|" if line.startswith("|") else ("│" if line.startswith("│") else None)
    if sep is None:
        return None
    return [c.strip() for c in re.split(r"(?<!\\)" + re.escape(sep), line.strip().strip(sep))]


def pairs_in(text: str) -> list[tuple[str, str, str, str]]:
    """``(line, X, Y, Δ)`` for every "X → Y" the text shows with its Δ: a table cell and
    the Δ cell after it (bold and a CI after it allowed), a ``compare`` text row
    (``X → Y  Δ``), an annotation (``…: Δ (CI …) … — X → Y``) and a change-point row of
    ``regressions`` (``Δ  commits  X -> Y``)."""
    out = []
    for line in text.replace("\\", "").splitlines():
        cells = _cells(line)
        if cells is not None:
            for i, c in enumerate(cells[:-1]):
                m = PAIR.fullmatch(c)
                d = PCT.match(cells[i + 1].strip("*").lstrip("*"))
                if m and d:
                    out.append((line, m.group("x"), m.group("y"), d.group("d")))
            continue
        m = re.search(rf"({PAIR.pattern})\s{{2,}}(?P<d>[+-][0-9.]+) %", line)
        if m:
            out.append((line, m.group("x"), m.group("y"), m.group("d")))
            continue
        m = re.search(rf": (?P<d>[+-][0-9.]+) %.* — {PAIR.pattern}", line)
        if m:
            out.append((line, m.group("x"), m.group("y"), m.group("d")))
            continue
        m = re.search(rf"(?P<d>[+-][0-9.]+) %\s+\S+\.\.\S+\s+{PAIR.pattern}", line)
        if m:
            out.append((line, m.group("x"), m.group("y"), m.group("d")))
            continue
        m = re.search(rf"\*\*(?P<d>[+-][0-9.]+) %\*\*.*?: {PAIR.pattern}", line)
        if m:  # an issue's body: "regressed by **+18 %** on `m`: X → Y"
            out.append((line, m.group("x"), m.group("y"), m.group("d")))
    return out


def check_pairs(text: str) -> list[str]:
    """Every "X → Y | Δ" whose Δ is not ``Y / X - 1`` within the printed precision."""
    bad = []
    for line, xs, ys, ds in pairs_in(text):
        x, y = parse_number(xs), parse_number(ys)
        if x is None or y is None:
            continue
        if not delta_fits(x, y, _decimal(ds)):
            bad.append(f"{xs} → {ys} | {ds} %: {line[:200]}")
    return bad


def check_parts(text: str) -> list[str]:
    """A cause row's "where the time went": its signed parts (the ops and the rest) add up
    to the row's change ``Y - X`` within the printed precision."""
    bad = []
    for line in text.replace("\\", "").splitlines():
        cells = _cells(line)
        if cells is None or len(cells) < 5:
            continue
        m = PAIR.fullmatch(cells[1])
        where = cells[4]
        if not m or ("the rest" not in where and not SIGNED.search(where)):
            continue
        x, y = parse_number(m.group("x")), parse_number(m.group("y"))
        if x is None or y is None:
            continue
        chain, _, parts = where.rpartition("<br>")
        if " ← " in parts:  # a chain alone: no parts
            continue
        got = [_decimal(p.group("v"), _UNITS[p.group("u")]) for p in SIGNED.finditer(parts)]
        if not got:
            continue
        total = sum(g.value for g in got)
        slack = sum(g.half for g in got) + x.half + y.half
        if abs(total - (y.value - x.value)) > slack + 1e-15:
            bad.append(f"parts {total:.3g} vs change {y.value - x.value:.3g}: {line[:200]}")
        if chain:
            tm = re.match(r"total(?: \([^)]*\))? (?P<d>[+-][0-9.]+) %", chain.strip("`"))
            dm = PCT.match(cells[2].strip("*"))
            if tm and dm and tm.group("d") != dm.group("d"):
                bad.append(f"chain {tm.group('d')} % vs row {dm.group('d')} %: {line[:200]}")
    return bad


_INSTR = re.compile(
    r"\b(more|fewer|same) instructions"
    r"(?: \((?P<n>[+-][0-9,.]+) per iteration(?:, (?P<p>[+-][0-9.]+) %)?\))?"
)


def check_badges(text: str) -> list[str]:
    """Words against their own axis's sign: ``more instructions`` only beside a count that
    rose, ``fewer`` beside one that fell, ``same`` beside none; no work word on a row of
    instruction counts (an instruction row states its own axis)."""
    bad = []
    for line in text.replace("\\", "").splitlines():
        for m in _INSTR.finditer(line):
            word, n = m.group(1), m.group("n")
            if n is None:
                continue
            v = float(n.replace(",", ""))
            if (word == "more" and v <= 0) or (word == "fewer" and v >= 0) or word == "same":
                bad.append(f"{m.group(0)}: {line[:200]}")
        cells = _cells(line)
        counts = [c for c in cells or [] if PAIR.fullmatch(c) and "instructions" in c]
        if counts and re.search(r"\b(more|less|different|same) work\b", line):
            bad.append(f"a work word on an instruction row: {line[:200]}")
    return bad


def rows_by_label(text: str) -> dict[str, set[tuple[str, str]]]:
    """``label -> {(X → Y, Δ)}`` of the table rows that name their series: a cell with the
    series' group label (``rmsnorm.naive 4x512 bfloat16``), the op cell after it
    (``_total_``/``total`` for the total) and the pair; or a ``compare`` text row that ends
    with the series' label. Instruction rows are told apart by the pair's unit."""
    out: dict[str, set[tuple[str, str]]] = {}

    def add(label: str, pair: str, d: str) -> None:
        kind = " (instructions)" if "instructions" in pair else ""
        out.setdefault(label.removesuffix(" (instructions)") + kind, set()).add((pair, d))

    for line in text.replace("\\", "").splitlines():
        cells = _cells(line)
        if cells is not None:
            m = PAIR.fullmatch(cells[1]) if len(cells) > 3 else None
            d = PCT.match(cells[2].strip("*")) if m else None
            if m and d and cells[-1].startswith("`"):  # compare --format markdown
                add(cells[-1].strip("`"), m.group(0), d.group("d"))
                continue
            for i in range(len(cells) - 3):
                m = PAIR.fullmatch(cells[i + 2])
                d = PCT.match(cells[i + 3].strip("*"))
                if m and d:
                    group, op = cells[i].strip("`"), cells[i + 1].strip("`")
                    if "…" in op or ".." in op:  # a change point's commits: not a row
                        continue
                    label = group if op in ("_total_", "total", "") else f"{group} · {op}"
                    add(label, m.group(0), d.group("d"))
            continue
        m = re.search(rf"({PAIR.pattern})\s{{2,}}(?P<d>[+-][0-9.]+) %.*\s{{2}}(?P<l>\S.*)$", line)
        if m:
            add(m.group("l"), f"{m.group('x')} → {m.group('y')}", m.group("d"))
    return out


def disagreements(views: Iterable[tuple[str, dict[str, set[tuple[str, str]]]]]) -> list[str]:
    """Series printed with different figures in two views (or twice in one)."""
    seen: dict[str, tuple[str, tuple[str, str]]] = {}
    bad = []
    for name, rows in views:
        for label, figures in rows.items():
            if len(figures) > 1:
                bad.append(f"{name}: {label} printed as {sorted(figures)}")
            for fig in figures:
                other = seen.setdefault(label, (name, fig))
                if other[1] != fig:
                    bad.append(f"{label}: {other[0]} {other[1]} vs {name} {fig}")
    return bad
