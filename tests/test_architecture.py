"""The package's shape: no import circle, and no import from a lower stage to a higher one.

Imports are read with ``ast`` (every ``import``/``from ... import``, module-level, lazy
inside a function, or under ``TYPE_CHECKING``: a lazy import hides a circle, it does not
remove it). The stage order is the one of docs/architecture.md::

    errors, model, fileio, proc (and the root package)  <  measure  <  suite  <  store  <  analyse
        <  run  <  report  <  github, publish  <  commands, cli, demo, api (and every ``__main__``)

The same two rules hold one level up, between packages: a module stands for its top-level
package (``neuronasv.publish.site`` is ``publish``), and the packages must form no circle
and no arrow up. An ``__main__`` module is an entry point, not part of its package: it
sits at the top, and nothing imports it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "neuronasv"

STAGES = {
    "errors": 0, "model": 0, "fileio": 0, "samples": 0, "format": 0, "env": 0, "exits": 0,
    "proc": 0, "dtypes": 0, "gcpause": 0, "units": 0, "keys": 0, "log": 0, "metrics": 0,
    "measure": 1,
    "suite": 2,
    "store": 3,
    "analyse": 4,
    "run": 5,
    "report": 6,
    "github": 7, "publish": 7,
    "steps": 8, "commands": 8, "cli": 8, "demo": 8, "api": 8, "ci": 8,
}  # fmt: skip

#: Known up-arrows, shrink-only (the test fails when one disappears and is still listed):
#: none left since the renderers moved from analyse/tables.py into report.
KNOWN_UP: set[tuple[str, str]] = set()


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph(root: Path) -> dict[str, set[str]]:
    """module -> the package's modules it imports (the most specific module named)."""
    top = root.name
    files = {module_name(p, root): p for p in root.rglob("*.py")}

    def resolve(name: str) -> str | None:
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for mod, path in files.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        deps: set[str | None] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                deps.update(resolve(a.name) for a in node.names if a.name.split(".")[0] == top)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    full = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    full = node.module or ""
                if full.split(".")[0] != top:
                    continue
                for a in node.names:
                    sub = f"{full}.{a.name}"
                    deps.add(sub if sub in files else resolve(full))
        deps.discard(None)
        deps.discard(mod)
        graph[mod] = {d for d in deps if d is not None}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def stage(mod: str) -> int:
    parts = mod.split(".")
    if parts[-1] == "__main__":
        return max(STAGES.values())  # an entry point: the top
    if len(parts) == 1:
        return 0  # the root package: __version__ and the base error
    return STAGES[parts[1]]


def up_arrows(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    return {(m, d) for m, deps in graph.items() for d in deps if stage(d) > stage(m)}


def test_no_import_circle() -> None:
    assert circles(import_graph(PKG)) == []


def test_no_arrow_from_a_lower_stage_up() -> None:
    ups = up_arrows(import_graph(PKG))
    assert ups - KNOWN_UP == set(), "imports from a lower stage to a higher one"
    assert KNOWN_UP - ups == set(), "fixed: remove it from KNOWN_UP"


def package_of(mod: str) -> str:
    """The top-level package a module belongs to; an ``__main__`` is an entry point."""
    parts = mod.split(".")
    if parts[-1] == "__main__":
        return mod
    return ".".join(parts[:2])


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """package -> the packages its modules import (the root package and itself left out)."""
    out: dict[str, set[str]] = {}
    for mod, deps in graph.items():
        pkg = package_of(mod)
        out.setdefault(pkg, set()).update(
            p for p in map(package_of, deps) if p != pkg and "." in p
        )
    return out


def test_no_package_circle() -> None:
    assert circles(package_graph(import_graph(PKG))) == []


def test_no_package_arrow_up() -> None:
    assert up_arrows(package_graph(import_graph(PKG))) == set()


def test_every_sub_package_has_a_stage() -> None:
    subs = {p.name for p in PKG.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    mods = {p.stem for p in PKG.glob("*.py")} - {"__init__", "__main__"}
    assert subs | mods <= set(STAGES)


@pytest.fixture()
def toy(tmp_path: Path) -> Path:
    root = tmp_path / "neuronasv"
    for rel, text in {
        "__init__.py": "",
        "store/__init__.py": "",
        "store/a.py": "from neuronasv.store import b\n",
        "store/b.py": "def f():\n    from .a import x\n",  # lazy + relative: still a circle
        "measure/__init__.py": "",
        "measure/m.py": "from neuronasv.store.a import y\n",  # measure -> store: up
        "commands/__init__.py": "",
        "commands/c.py": "from neuronasv.demo import d\n",
        "demo.py": "def d():\n    from neuronasv.commands import c\n",  # a package circle
        "publish/__init__.py": "",
        "publish/p.py": "from neuronasv.commands import c\n",  # publish -> commands: up
        "publish/__main__.py": "from neuronasv.commands import c\n",  # an entry: fine
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_the_checks_can_fail(toy: Path) -> None:
    graph = import_graph(toy)
    assert circles(graph) == [
        ["neuronasv.commands.c", "neuronasv.demo"],
        ["neuronasv.store.a", "neuronasv.store.b"],
    ]
    assert up_arrows(graph) == {
        ("neuronasv.measure.m", "neuronasv.store.a"),
        ("neuronasv.publish.p", "neuronasv.commands.c"),
    }
    packages = package_graph(graph)
    assert circles(packages) == [["neuronasv.commands", "neuronasv.demo"]]
    assert up_arrows(packages) == {
        ("neuronasv.measure", "neuronasv.store"),
        ("neuronasv.publish", "neuronasv.commands"),
    }


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_one_subprocess_runner() -> None:
    """Every child process starts in ``neuronasv/proc.py`` (timeouts, process-group kill)."""
    users = {
        str(p.relative_to(PKG)) for p in PKG.rglob("*.py") if "subprocess" in _imports(p)
    }
    assert users == {"proc.py"}


def test_analyse_is_pure() -> None:
    """analyse starts no process, makes no temporary folder, touches no file tree."""
    impure = {"subprocess", "tempfile", "shutil", "threading", "signal", "multiprocessing"}
    found = {
        str(p.relative_to(PKG)): sorted(_imports(p) & impure)
        for p in (PKG / "analyse").rglob("*.py")
        if _imports(p) & impure
    }
    assert found == {}
