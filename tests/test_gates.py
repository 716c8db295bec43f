"""Gates that keep the package's shape (issue 31): size, complexity, arguments.

- every module of the package is at most :data:`MAX_LINES` lines (a file that grows a second
  concern is split, DESIGN.md §5);
- radon lists at most :data:`MAX_D_BLOCKS` blocks of grade D or worse (cyclomatic complexity
  above 20) — the figure ``radon cc -n D neuronasv`` prints;
- ruff's C901 (complexity 20) and PLR0913 (8 arguments) run with the package's lint
  (pyproject.toml); the functions exempted are listed with ``# noqa: C901`` /
  ``# noqa: PLR0913`` on their ``def`` line, each followed by its reason, and there are at
  most :data:`MAX_EXEMPT` of them.

Each check is shown able to fail on a made-up package.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "neuronasv"
MAX_LINES = 800
#: Issue 31 asked for at most 12 (there were 29); the fourth wave left none, and ruff's C901
#: keeps it so: a function exempted from C901 (with its reason) raises this by one.
MAX_D_BLOCKS = 0
MAX_EXEMPT = 10
NOQA = re.compile(r"#\s*noqa:\s*(?:[A-Z0-9]+,\s*)*(C901|PLR0913)\b(.*)$")


def _modules(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def long_files(root: Path) -> list[str]:
    out = []
    for p in _modules(root):
        n = len(p.read_text(encoding="utf-8").splitlines())
        if n > MAX_LINES:
            out.append(f"{p.relative_to(root.parent)}: {n} lines")
    return out


def d_blocks(root: Path) -> list[str]:
    from radon.complexity import cc_rank, cc_visit

    out = []
    for p in _modules(root):
        for block in cc_visit(p.read_text(encoding="utf-8")):
            blocks = [block, *getattr(block, "methods", [])]
            for b in blocks:
                if cc_rank(b.complexity) in "DEF":
                    out.append(f"{p.relative_to(root.parent)}:{b.lineno} {b.name} {b.complexity}")
    return sorted(set(out))


def exemptions(root: Path) -> list[tuple[str, str]]:
    """``(where, reason)`` of every C901/PLR0913 exemption (a reason is words after ``--``)."""
    out = []
    for p in _modules(root):
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            m = NOQA.search(line)
            if m:
                reason = m.group(2).strip()
                out.append((f"{p.relative_to(root.parent)}:{i}", reason.lstrip("-— ").strip()))
    return out


def test_no_module_over_the_line_limit() -> None:
    assert long_files(PKG) == []


def test_few_blocks_of_grade_d_or_worse() -> None:
    found = d_blocks(PKG)
    assert len(found) <= MAX_D_BLOCKS, "\n".join(found)


def test_exemptions_are_few_and_each_says_why() -> None:
    found = exemptions(PKG)
    assert len(found) <= MAX_EXEMPT, found
    assert [w for w, why in found if len(why.split()) < 3] == [], "an exemption needs a reason"


def test_the_gates_are_on_in_the_lint() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+ (CI and dev run 3.11)

    conf = tomllib.loads((PKG.parent / "pyproject.toml").read_text(encoding="utf-8"))
    lint = conf["tool"]["ruff"]["lint"]
    assert {"C901", "PLR0913"} <= set(lint["select"])
    assert lint["mccabe"]["max-complexity"] == 20
    assert lint["pylint"]["max-args"] == 8


@pytest.fixture
def toy(tmp_path: Path) -> Path:
    root = tmp_path / "toy"
    root.mkdir()
    (root / "big.py").write_text("x = 1\n" * (MAX_LINES + 1), encoding="utf-8")
    branches = "".join(f"    if x == {i}:\n        return {i}\n" for i in range(25))
    (root / "tangled.py").write_text(f"def f(x):\n{branches}    return -1\n", encoding="utf-8")
    (root / "many.py").write_text(
        "def g(a, b, c, d, e, f, g, h, i):  # noqa: PLR0913\n    return a\n", encoding="utf-8"
    )
    return root


def test_the_gates_can_fail(toy: Path) -> None:
    assert long_files(toy) == [f"toy/big.py: {MAX_LINES + 1} lines"]
    assert [b.split()[1] for b in d_blocks(toy)] == ["f"]
    assert exemptions(toy) == [("toy/many.py:1", "")]  # listed, and without a reason
