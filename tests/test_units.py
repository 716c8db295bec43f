"""µs ↔ seconds is written once: ``neuronasv.units.US`` (issue 28: it was written 4 times,
and the profile → series mapping twice)."""

from __future__ import annotations

import re
from pathlib import Path

from neuronasv import units

PACKAGE = Path(__file__).resolve().parents[1] / "neuronasv"
#: a multiplication or division by 1e-6 / 1e6 (a constant such as ``EPS = 1e-6`` is not one)
CONVERSION = re.compile(r"[*/]\s*1e-?6\b|\b1e-?6\s*[*/]|[*/]\s*1_000_000\b")


def test_no_module_converts_microseconds_itself() -> None:
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{n}: {line.strip()}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "units.py"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if CONVERSION.search(line.split("#")[0])
    ]
    assert found == [], "use neuronasv.units (US, from_us):\n" + "\n".join(found)


def test_the_one_conversion() -> None:
    assert units.from_us([2.0, 3.5], "seconds") == [2e-6, 3.5e-6]
    assert units.from_us([7.0], "instructions") == [7.0]  # not a time: as it is
