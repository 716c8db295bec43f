"""Backend knowledge lives in ``neuronasv/measure/backends/``, one file per backend (issue
31, item 4; issue 40, item 5).

What differs by backend (its default sample count, whether it counts instructions, what
"device time" means there, its canary kernel, its device state and fingerprint probes, its
roof, how it looks present without torch, what compiling needs) is asked of the backend
class or object, never decided by its name or its class. This test reads every module
outside that package with ``ast`` and fails on

* a comparison (``==``, ``!=``, ``in``, ``not in``) of anything with a backend name;
* a table keyed by backend names (a ``{"cpu": ...}`` literal, ``dict(cuda=...)``);
* a check of a backend's class (``isinstance``/``issubclass`` with a backend class,
  ``type(b) is CudaBackend``, a ``case CudaBackend()`` pattern).

Inside the package the backends are found by subclass (``discover``), not listed.
"""

from __future__ import annotations

import ast
import sys
import textwrap
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


def backend_class_names(home: Path) -> set[str]:
    """The classes defined in ``home`` that derive from ``Backend`` (by their bases' names,
    transitively): what a class check outside the package would name."""
    bases: dict[str, set[str]] = {}
    for path in home.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                named = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "")
                         for b in node.bases}  # fmt: skip
                bases.setdefault(node.name, set()).update(named)
    found = {"Backend"}
    while True:
        more = {c for c, bs in bases.items() if bs & found} - found
        if not more:
            return found - {"Backend"}
        found |= more


def _names(node: ast.AST | None) -> set[str]:
    """Every plain or dotted name in ``node`` (``CudaBackend``, ``B.CudaBackend``)."""
    if node is None:
        return set()
    return {n.id if isinstance(n, ast.Name) else n.attr
            for n in ast.walk(node) if isinstance(n, (ast.Name, ast.Attribute))}  # fmt: skip


def _is_type_call(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and (
        node.func.id == "type"
    )


def backend_tables_and_class_checks(root: Path, home: Path) -> list[str]:
    """``path:line: what`` for every table keyed by backend names and every check of a
    backend's class outside ``home``."""
    classes = backend_class_names(home)
    out = []
    for path in sorted(root.rglob("*.py")):
        if path.is_relative_to(home):
            continue
        where = path.relative_to(root.parent)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            found: set[str] = set()
            if isinstance(node, ast.Dict):
                found = set().union(*(_names_in(k) for k in node.keys if k is not None))
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                if node.func.id == "dict":
                    found = {k.arg for k in node.keywords if k.arg} & NAMES
                elif node.func.id in ("isinstance", "issubclass") and len(node.args) == 2:
                    found = _names(node.args[1]) & classes
            elif isinstance(node, ast.Compare):
                sides = [node.left, *node.comparators]
                if any(_is_type_call(n) for n in sides):
                    found = set().union(*(_names(n) for n in sides)) & classes
            elif isinstance(node, ast.MatchClass):
                found = _names(node.cls) & classes
            if found:
                kind = "table keyed by" if found <= NAMES else "class check of"
                out.append(f"{where}:{node.lineno}: {kind} {', '.join(sorted(found))}")
    return out


def test_no_backend_name_is_compared_outside_the_backends() -> None:
    found = name_comparisons(PKG, HOME)
    assert not found, "ask the backend (neuronasv.measure.backends) instead:\n" + "\n".join(found)


def test_no_table_by_backend_name_nor_class_check_outside_the_backends() -> None:
    found = backend_tables_and_class_checks(PKG, HOME)
    assert not found, (
        "put it on the backend class (neuronasv/measure/backends/<backend>.py) instead:\n"
        + "\n".join(found)
    )


def test_the_backend_classes_are_known_to_the_scan() -> None:
    assert backend_class_names(HOME) == {"CpuBackend", "CudaBackend", "NeuronBackend"}


@pytest.mark.parametrize(
    "source",
    [
        'KERNELS = {"cpu": 1, "cuda": 2, "neuron": 3}\n',
        'PRESETS = {"cpu": small, "accelerator": large}\n',
        "table = dict(cuda=4096, other=1)\n",
        "if isinstance(backend, CudaBackend):\n    pass\n",
        "ok = isinstance(b, (B.NeuronBackend, int))\n",
        "sub = issubclass(cls, CpuBackend)\n",
        "same = type(backend) is NeuronBackend\n",
        "match backend:\n    case CudaBackend():\n        pass\n",
    ],
)
def test_the_scan_finds_a_table_or_a_class_check(tmp_path: Path, source: str) -> None:
    pkg = tmp_path / "neuronasv"
    home = pkg / "measure" / "backends"
    home.mkdir(parents=True)
    (home / "base.py").write_text("class Backend:\n    pass\n", encoding="utf-8")
    (home / "cuda.py").write_text(
        "class CudaBackend(Backend):\n    pass\n"
        "class NeuronBackend(CudaBackend):\n    pass\n"
        "class CpuBackend(base.Backend):\n    pass\n" + source,
        encoding="utf-8",
    )
    (pkg / "demo.py").write_text(source, encoding="utf-8")
    found = backend_tables_and_class_checks(pkg, home)
    assert len(found) == 1 and found[0].startswith("neuronasv/demo.py:"), found


def test_a_record_or_an_interface_check_is_fine(tmp_path: Path) -> None:
    pkg = tmp_path / "neuronasv"
    (pkg / "measure" / "backends").mkdir(parents=True)
    (pkg / "measure" / "backends" / "cpu.py").write_text(
        "class CpuBackend(Backend):\n    pass\n", encoding="utf-8"
    )
    (pkg / "m.py").write_text(
        'info = {"machine": m, "cpus": 2}\nok = isinstance(b, Backend)\n'
        "t = type(x) is int\nkw = dict(threads=1)\n",
        encoding="utf-8",
    )
    assert backend_tables_and_class_checks(pkg, pkg / "measure" / "backends") == []


def test_the_package_lists_no_backend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A backend is its file: the package finds the subclasses of ``Backend`` in its modules
    (as asv finds benchmark types), in ``auto_order``; none is named in a list to keep."""
    from neuronasv.errors import UsageError
    from neuronasv.measure import backends as B

    init = ast.parse((HOME / "__init__.py").read_text(encoding="utf-8"))
    top_imports = {
        n.module for n in init.body if isinstance(n, ast.ImportFrom) and n.module
    }
    assert not {f"neuronasv.measure.backends.{m}" for m in ("cpu", "cuda", "neuron")} & top_imports
    assert [c.__name__ for c in B.backend_classes()] == [
        "NeuronBackend", "CudaBackend", "CpuBackend"
    ]  # fmt: skip
    assert B.BACKEND_NAMES == ("neuron", "cuda", "cpu")

    pkg = tmp_path / "morebackends"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "tpu.py").write_text(textwrap.dedent("""
        from neuronasv.measure.backends.cpu import CpuBackend

        class TpuBackend(CpuBackend):
            name = "tpu"
            auto_order = 5

        class _Helper(CpuBackend):  # no name: not a backend
            name = ""
    """), encoding="utf-8")  # fmt: skip
    monkeypatch.syspath_prepend(str(tmp_path))
    found = B.discover("morebackends", [str(pkg)])
    assert [c.name for c in found] == ["tpu"]
    (pkg / "tpu2.py").write_text(
        "from morebackends.tpu import TpuBackend\n\nclass Again(TpuBackend):\n    pass\n",
        encoding="utf-8",
    )
    with pytest.raises(UsageError, match="two backends are called tpu"):
        B.discover("morebackends", [str(pkg)])
    for mod in [m for m in sys.modules if m.startswith("morebackends")]:
        monkeypatch.delitem(sys.modules, mod)


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
    assert B.takes(name, "instructions") == (name == "cpu")
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
