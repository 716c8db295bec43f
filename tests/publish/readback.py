"""Reading the site's numbers back, to hold them against the PR comment's (issue 28).

Every test that reads a number off the published site checks it against the comment's
estimate for the same row (:func:`against_the_comment`): the comment is rendered from the
same findings document (:func:`neuronasv.report.markdown.render_comment`) and its
``base → head | Δ`` cells are the truth the index's cells, the workload pages' metadata
and the labels the pages' data files carry at the two compared commits must repeat
character for character; each printed triple must also hold Δ = head/base − 1 within
its printed precision (:func:`delta_problem`).
"""

from __future__ import annotations

import html
import json
import math
import re
from pathlib import Path
from typing import Any

from neuronasv.model import FindingsDocument
from neuronasv.report.markdown import render_comment

Key = tuple[str, str | None, str]  # (group title, op or None for the total, axis)
Triple = tuple[str, str, str]  # (base, head, Δ) as printed

_TIME = {"s": 1.0, "ms": 1e-3, "µs": 1e-6, "ns": 1e-9}


def parse_value(text: str) -> tuple[float, float]:
    """``87.0 µs`` -> (8.70e-05, half a unit of its last digit); instructions likewise."""
    m = re.fullmatch(r"([0-9,]+(?:\.([0-9]+))?) (s|ms|µs|ns|instructions)", text.strip())
    assert m, f"not a printed value: {text!r}"
    x = float(m.group(1).replace(",", ""))
    half = 0.5 * 10.0 ** -len(m.group(2) or "")
    f = 1.0 if m.group(3) == "instructions" else _TIME[m.group(3)]
    return x * f, half * f


def parse_delta(text: str) -> tuple[float, float]:
    m = re.fullmatch(r"([+-][0-9]+(?:\.([0-9]+))?) %", text.strip())
    assert m, f"not a printed Δ: {text!r}"
    return float(m.group(1)) / 100, 0.5 * 10.0 ** -len(m.group(2) or "") / 100


def delta_problem(base: str, head: str, delta: str) -> str | None:
    """None when Δ = head/base − 1 within the precision the three texts are printed at."""
    (b, eb), (h, eh), (d, ed) = parse_value(base), parse_value(head), parse_delta(delta)
    lo = (h - eh) / (b + eb) - 1 if b + eb > 0 else -math.inf
    hi = (h + eh) / (b - eb) - 1 if b - eb > 0 else math.inf
    if d + ed < lo - 1e-12 or d - ed > hi + 1e-12:
        return f"{base} → {head} is {lo:+.4%}…{hi:+.4%}, printed {delta}"
    return None


def comment_triples(comment: str) -> dict[Key, Triple]:
    """(group, op, axis) -> (base, head, Δ) from the comment's per-series table."""
    out: dict[Key, Triple] = {}
    for line in comment.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 4 or " → " not in cells[2] or not cells[0].startswith("`"):
            continue
        base, head = cells[2].split(" → ")
        if base == "n/a" or head == "n/a":
            continue
        op = None if cells[1] == "_total_" else cells[1].strip("`")
        axis = "instr" if head.endswith("instructions") else "time"
        out[(cells[0].strip("`"), op, axis)] = (base, head, cells[3].strip("*"))
    return out


def text_of(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment)).strip()


def key_of(title: str, label: str) -> Key:
    label = label.replace("\u2003", "").strip()
    axis = "time"
    if label.endswith(" (instructions)"):
        label, axis = label[: -len(" (instructions)")], "instr"
    return (title, None if label == "total" else label, axis)


def index_triples(index: str) -> tuple[dict[Key, Triple], dict[Key, str]]:
    """(group, op, axis) -> (base, head, Δ) and -> its badge, from the index's rows."""
    triples: dict[Key, Triple] = {}
    badges: dict[Key, str] = {}
    for body in re.findall(r'<tbody class="wl"[^>]*>(.*?)</tbody>', index, re.S):
        title = text_of(re.search(r"<a [^>]*>(.*?)</a>", body).group(1))  # type: ignore[union-attr]
        for cls, row in re.findall(r'<tr class="(lead|op)"[^>]*>(.*?)</tr>', body, re.S):
            cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
            badge = text_of(re.match(r'\s*<span class="st[^>]*>(.*?)</span>', cells[0]).group(1))  # type: ignore[union-attr]
            label = "total" if cls == "lead" else text_of(cells[1])
            key = key_of(title, label)
            badges[key] = badge
            m = re.fullmatch(r'(.*?) <span class="from">from (.*?)</span>', cells[3].strip())
            if m:
                triples[key] = (text_of(m.group(2)), text_of(cells[2]), text_of(m.group(1)))
    return triples, badges


def data_files(page: Path) -> list[dict[str, Any]]:
    out = []
    for path in sorted((page.parent / page.stem).glob("c*.js")):
        m = re.fullmatch(r'NASV\.chunk\(("[^\n]*?"),(\{.*\})\);\n', path.read_text(), re.S)
        assert m, path
        out.append(json.loads(m.group(2)))
    return out


def page_meta(page: Path) -> dict[str, Any]:
    m = re.search(
        r'<script type="application/json" id="meta">(.*?)</script>', page.read_text(), re.S
    )
    assert m, page
    return json.loads(m.group(1))  # type: ignore[no-any-return]


def value_at(chunks: list[dict[str, Any]], row: int, col: int) -> tuple[str | None, float | None]:
    """(label, drawn value) of chart row ``row`` at commit ``col`` in the data files."""
    for c in chunks:
        j = col - c["start"]
        if 0 <= j < len(c["commits"]):
            li, v = c["vl"][row][j], c["v"][row][j]
            return (None if li is None else c["labels"][row][li],
                    None if v is None else v * c["scale"][row])  # fmt: skip
    return None, None


def page_triples(site: Path) -> tuple[dict[Key, Triple], list[str]]:
    """(group, op, axis) -> (base, head, Δ) from each workload page's metadata, and where
    the labels its data files carry at the two compared commits are not those."""
    triples: dict[Key, Triple] = {}
    problems: list[str] = []
    for page in sorted((site / "m").rglob("*.html")):
        meta = page_meta(page)
        chunks = data_files(page)
        for pos, row in enumerate(meta["rows"]):
            c = row.get("compared")
            if row["kind"] == "other" or c is None or "n/a" in (c["base"], c["head"]):
                continue
            triples[key_of(meta["title"], row["label"])] = (c["base"], c["head"], c["change"])
            for col, want in ((c["baseIndex"], c["base"]), (c["headIndex"], c["head"])):
                got, _ = value_at(chunks, pos, col)
                if got != want:
                    where = f"{page.name} {row['label']} #{col}"
                    problems.append(f"{where}: data {got!r}, meta {want!r}")
    return triples, problems


def against_the_comment(
    site: Path,
    doc: FindingsDocument,
    pages: dict[Key, Triple] | None = None,
    *,
    at_least: int = 1,
) -> list[str]:
    """Where the site's index or workload pages print another base, head or Δ than the
    comment of ``doc`` for the same row, or a triple whose Δ is not head/base − 1.

    ``pages`` (default: :func:`page_triples`) lets a caller pass the triples it read.
    """
    comment = comment_triples(render_comment(doc))
    index, _ = index_triples((site / "index.html").read_text())
    problems: list[str] = []
    if pages is None:
        pages, problems = page_triples(site)
    assert len(comment) >= at_least, f"only {len(comment)} rows in the comment to compare"
    for key, want in comment.items():
        for where, got in (("index", index.get(key)), ("workload page", pages.get(key))):
            if got != want:
                problems.append(f"{key}: comment {want}, {where} {got}")
    for where, triples in (("comment", comment), ("index", index), ("workload page", pages)):
        for key, (b, h, d) in triples.items():
            if (p := delta_problem(b, h, d)) is not None:
                problems.append(f"{where} {key}: {p}")
    return problems
