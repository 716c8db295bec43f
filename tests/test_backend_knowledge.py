"""Backend knowledge lives in ``neuronasv/measure/backends/`` (issue 31, item 4).

What differs by backend (its default sample count, whether it counts instructions, what
"device time" means there, which device state and fingerprint fields it has, what compiling
needs) is asked of the backend class or object, never decided by comparing its name. This
test reads every module outside that package with ``ast`` and fails on a comparison
(``==``, ``!=``, ``in``, ``not in``) of anything with a backend name.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "neuronasv"
HOME = PKG / "measure" / "backends"
NAMES = frozenset({"cpu", "cuda", "neuron"})


def _names_in(node: ast.expr) -> set[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value} & NAMES
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return set().union(*(_names_in(e) for e in node.elts)) if node.elts else set()
    return set()


def name_comparisons(root: Path, home: Path) -> list[str]:
    """``path:line: name`` for every comparison with a backend name outside ``home``."""
    out = []
    for path in sorted(root.rglob("*.py")):
        if path.is_relative_to(home):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Compare):
                continue
            found = set().union(*(_names_in(n) for n in [node.left, *node.comparators]))
            for name in sorted(found):
                out.append(f"{path.relative_to(root.parent)}:{node.lineno}: {name}")
    return out


def test_no_backend_name_is_compared_outside_the_backends() -> None:
    found = name_comparisons(PKG, HOME)
    assert not found, "ask the backend (neuronasv.measure.backends) instead:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "source",
    [
        'if backend.name == "cuda":\n    pass\n',
        'ok = "cpu" != backend\n',
        'n = 10 if backend in ("cpu", "auto") else 30\n',
        'skip = name not in {"neuron"}\n',
    ],
)
def test_the_scan_finds_a_comparison(tmp_path: Path, source: str) -> None:
    pkg = tmp_path / "neuronasv"
    (pkg / "measure" / "backends").mkdir(parents=True)
    (pkg / "measure" / "backends" / "cpu.py").write_text(source, encoding="utf-8")
    (pkg / "demo.py").write_text(source, encoding="utf-8")
    found = name_comparisons(pkg, pkg / "measure" / "backends")
    assert len(found) == 1 and found[0].startswith("neuronasv/demo.py:"), found


def test_a_name_that_is_not_compared_is_fine(tmp_path: Path) -> None:
    pkg = tmp_path / "neuronasv"
    pkg.mkdir()
    (pkg / "m.py").write_text(
        'b = get_backend("cpu")\nkw = {"cpu": 1}\nok = threads == "cpus"\n', encoding="utf-8"
    )
    assert name_comparisons(pkg, pkg / "measure" / "backends") == []


@pytest.mark.parametrize("name", ["cpu", "cuda", "neuron", "tpu", "", None, "auto", "CPU"])
def test_the_questions_answer_what_the_name_comparisons_did(name: str | None) -> None:
    """The answers by name are the comparisons they replaced, for known and unknown names."""
    from neuronasv.measure import backends as B

    assert B.is_accelerator(name) == (name != "cpu")
    assert B.counts_instructions(name) == (name == "cpu")
    assert B.device_time_note(name) == ("device time = CPU self time" if name == "cpu" else "")
    bisect_old = 10 if name in ("cpu", "auto") else 30  # run/bisect.py (None, "": never reached)
    confirm_old = 10 if (name or "cpu") == "cpu" else 30  # commands/confirm.py
    if name:
        assert B.default_samples(name) == bisect_old
    if name != "auto":
        assert B.default_samples(name) == confirm_old


def test_the_backend_objects_answer_as_their_names_did() -> None:
    from neuronasv.measure.backends import all_backends

    for b in all_backends():
        assert b.roof_is_calibrated == (b.name == "cpu")  # evidence: no fingerprint for a peak
        assert b.runs_nki == (b.name == "neuron")
        assert b.accelerator == (b.name != "cpu")
