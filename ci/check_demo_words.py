"""Words and numbers against each other in a demo's output (issues 20 and 28, by hand).

    .venv/bin/python ci/check_demo_words.py out/demo [REGRESSIONS.txt ...]

Reads the demo's ``comment.md``, ``compare.txt``, every page of its site (regressions.html
included) and any extra text files given (``neuronasv regressions`` output), and applies
the parsers of the property test (``tests/report/test_views_agree.py``): no ``slower``
beside a Δ ≤ 0 or ``faster`` beside a Δ ≥ 0, no regression/improvement word on a line
with a Δ (outside ``regressions`` texts, whose change points are their own kind), no
``confirmed`` of a time the findings document does not record as confirmed, no "not
decided"/"within the noise" beside an interval beyond zero that does not say it is the
per-row, unadjusted one. And the numbers (issue 28, ``tests/report/numbers.py``): every
"X → Y | Δ" in the comment and the compare text has Δ = Y / X - 1 within the printed
precision; "where the time went" adds up to the row's change; no instruction row carries a
work word, no instruction word contradicts its count's sign; the comment is within GitHub's
65,536 characters with at most 20 lines of warnings; the site prints the comment's numbers:
every "X → Y | Δ" row of the comment is the same base, head and Δ on the site's index and
its workload pages (their metadata and the labels their data files carry at the two compared
commits: ``tests/publish/readback.py``). Prints the lines above the comment's
first ``<details>``, its headline, its size and how many rows were checked. Exit 1 on a
problem.
"""

from __future__ import annotations

import glob
import html
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from neuronasv.model import FindingsDocument
from tests.publish.readback import comment_triples, index_triples, page_triples
from tests.report.numbers import check_badges, check_pairs, check_parts, pairs_in
from tests.report.test_views_agree import (
    check_parentheses,
    check_plain_rows,
    check_table_rows,
    check_undecided_intervals,
    check_verdict_words,
)


def text_of(path: str) -> str:
    t = Path(path).read_text(encoding="utf-8")
    if path.endswith(".html"):
        t = re.sub(
            r"<script.*?</script>|<header>.*?</header>|<title>.*?</title>", "", t, flags=re.S
        )
        t = re.sub(r"</(tr|p|li|h\d|div)>", "\n", t)
        t = re.sub(r"</t[dh]>", " | ", t)
        t = html.unescape(re.sub(r"<[^>]+>", "", t))
    return t.replace("\\", "")  # markdown escapes read as the figures


def problems(path: str, confirmed: set[str]) -> list[str]:
    t = text_of(path)
    found = check_parentheses(t) + check_table_rows(t) + check_plain_rows(t)
    found += check_undecided_intervals(t)
    if "regressions" not in Path(path).name:
        found += check_verdict_words(t)
    said = set(re.findall(r"\b(slower|faster)\b(?: \([^)]*\))?, confirmed", t))
    found += [f"'{w}, confirmed' but no stored confirmed {w} time" for w in said - confirmed]
    return found


#: GitHub's limit on a comment body, and the most lines the warnings may take.
COMMENT_LIMIT = 65_536
WARNING_LINES = 20


def numbers(path: str) -> tuple[list[str], int]:
    """The numeric problems of one file, and how many "X → Y | Δ" it showed."""
    t = Path(path).read_text(encoding="utf-8")
    return check_pairs(t) + check_parts(t) + check_badges(t), len(pairs_in(t))


def site_numbers(comment: str, site: Path) -> tuple[list[str], int]:
    """Where the site prints another base, head or Δ than the comment for a row the comment
    shows (a row the comment cut is not compared), and how many rows were compared."""
    if not (site / "index.html").is_file():
        return [f"{site}: no site"], 0
    want = comment_triples(comment)
    index, _ = index_triples((site / "index.html").read_text(encoding="utf-8"))
    pages, found = page_triples(site)
    for key, triple in want.items():
        for where, got in (("index", index.get(key)), ("workload page", pages.get(key))):
            if got != triple:
                found.append(f"{' · '.join(k for k in key if k)}: comment {triple}, {where} {got}")
    return found, len(want)


def warning_lines(comment: str) -> int:
    """Lines of the comment's warnings section (its ``<details>`` block)."""
    start = comment.find("<details><summary>Warnings")
    if start < 0:
        return 0
    return comment[start : comment.find("</details>", start)].count("\n")


def main(argv: list[str]) -> int:
    out = argv[0]
    doc = FindingsDocument.loads(Path(out, "findings-confirmed.json").read_text())
    confirmed = {f.state.time for f in doc.findings if f.state.confirmed}
    files = [f"{out}/comment.md", f"{out}/compare.txt", *argv[1:]]
    files += sorted(glob.glob(f"{out}/site/**/*.html", recursive=True))
    bad = 0
    for path in files:
        found = problems(path, confirmed)
        if found:
            bad += 1
            print(f"{path}: {found[:4]}")
    checked = 0
    for path in (f"{out}/comment.md", f"{out}/compare.txt"):
        found, n = numbers(path)
        checked += n
        if found:
            bad += 1
            print(f"{path}: {len(found)} numeric problems: {found[:4]}")
    text = Path(out, "comment.md").read_text()
    found, on_site = site_numbers(text, Path(out, "site"))
    if found:
        bad += 1
        print(f"site: {len(found)} rows not the comment's: {found[:4]}")
    comment = text.splitlines()
    warn = warning_lines(text)
    if len(text) > COMMENT_LIMIT or warn > WARNING_LINES:
        bad += 1
        print(f"comment.md: {len(text)} characters, {warn} lines of warnings")
    above = next((i for i, line in enumerate(comment) if "<details>" in line), len(comment))
    print(f"{len(files)} files checked, {bad} with problems; {checked} X → Y | Δ rows checked;"
          f" {on_site} comment rows compared with the site's index and workload pages")
    print(f"comment: {len(text)} characters, {warn} lines of warnings, {above} lines above the"
          f" first <details>; headline: {comment[1]}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
