"""SECURITY.md's promise table names tests that exist (a renamed test must update it)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_test_named_in_the_promise_table_exists() -> None:
    text = (ROOT / "SECURITY.md").read_text(encoding="utf-8")
    table = text.split("## Promises and the tests that check them", 1)[1]
    rows = [ln for ln in table.splitlines() if ln.startswith("| ") and "`" in ln]
    assert len(rows) >= 10
    named = 0
    for row in rows:
        test_cell = row.rstrip(" |").rsplit(" | ", 1)[-1]
        current: str | None = None
        if test_cell.startswith("same test"):
            continue
        for ref in re.findall(r"`([^`]+)`", test_cell):
            path, _, name = ref.rpartition("::")
            if path:
                current = path
            assert current is not None, row
            source = (ROOT / current).read_text(encoding="utf-8")
            assert re.search(rf"^def {re.escape(name)}\(", source, re.M), (current, name)
            named += 1
    assert named >= 20
