"""asv's processes declare an init suite's classes from the pre-pass's record: no user import.

The pre-pass imports the suite (the user's workloads module, which imports torch) and
records its classes; a process with ``NEURONASV_PREPASS_DIR`` set (every asv process under
``neuronasv run``) makes the same classes with the same params without importing either,
and imports the workloads module only when it must take a profile.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from neuronasv.suite.declare import declared_classes, record_classes
from neuronasv.suite.names import declaration_path

ROOT = Path(__file__).resolve().parents[2]

WORKLOADS = """\
import torch  # a user's module: its model imports torch at the top

from neuronasv.measure.workloads import Workload, register


def _build(shape, dtype, device, seed):
    x = torch.ones(shape, dtype=dtype, device=device)
    return lambda: x * 2


register(Workload("dkit.double", "x * 2", "8x16", _build, default_dtype="float32"))
register(Workload("dkit.twice", "x * 2 again", "4x4", _build, default_dtype="float32"))
"""

DEVTIME = """\
from neuronasv.suite import build_suite

WORKLOADS = "dkit.workloads"

globals().update(build_suite(None, module=__name__, workloads=WORKLOADS, cpu_shapes=(), dtypes=()))
"""

PROBE = """\
import json, sys
from neuronasv.run.usersuite import import_suite_modules
from neuronasv.suite.build import suite_classes
from neuronasv.suite.declare import record_classes

classes = suite_classes(import_suite_modules(sys.argv[1]))
if len(sys.argv) > 2:
    record_classes(sys.argv[2], [c for _, c in classes])
seen = {
    name: {m: getattr(getattr(c, m), "params", None) for m in ("devtime_total", "devtime_op")
           if hasattr(c, m)}
    for name, c in classes
}
imported = sorted(m for m in ("dkit.workloads", "torch") if m in sys.modules)
lazy = None
if len(sys.argv) == 2 and classes:
    from neuronasv.suite.feed import workload_of
    lazy = [workload_of(classes[0][1]).name, "dkit.workloads" in sys.modules]
print(json.dumps({"classes": seen, "imported": imported, "lazy": lazy}))
"""


def _probe(repo: Path, *args: str, prepass: Path | None = None) -> dict[str, object]:
    return _probe_run(repo, *args, prepass=prepass)[0]


def _probe_run(
    repo: Path, *args: str, prepass: Path | None = None
) -> tuple[dict[str, object], str]:
    """(what the probe found, its stderr)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEURONASV_")}
    env.update(NEURONASV_BACKEND="cpu", PYTHONPATH=os.pathsep.join([str(repo), str(ROOT)]))
    catalogue = repo / "ops.catalogue"
    catalogue.write_text(json.dumps({"backends": {"cpu": {"dkit.double": ["aten::mul"]}}}))
    env["NEURONASV_OPS_CATALOGUE"] = str(catalogue)
    if prepass is not None:
        env["NEURONASV_PREPASS_DIR"] = str(prepass)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(repo / "benchmarks"), *args],
        cwd=repo, env=env, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    return dict(json.loads(done.stdout.splitlines()[-1])), done.stderr


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "dkit").mkdir(parents=True)
    (root / "dkit" / "__init__.py").write_text("")
    (root / "dkit" / "workloads.py").write_text(WORKLOADS)
    (root / "benchmarks").mkdir()
    (root / "benchmarks" / "__init__.py").write_text("")
    (root / "benchmarks" / "devtime.py").write_text(DEVTIME)
    (root / "asv.conf.json").write_text("{}")
    return root


def test_asv_processes_declare_the_recorded_classes_without_the_users_imports(
    repo: Path, tmp_path: Path
) -> None:
    prepass = tmp_path / "prepass"
    found = _probe(repo, str(prepass))  # the pre-pass: imports, records
    assert found["imported"] == ["dkit.workloads", "torch"]
    assert (prepass / "suite.neuronasv-classes").is_file()
    declared = _probe(repo, prepass=prepass)  # an asv process under `neuronasv run`
    assert declared["classes"] == found["classes"]
    assert declared["classes"] == {
        "devtime.DkitDouble": {
            "devtime_total": [["8x16"], ["float32"]],
            "devtime_op": [["8x16"], ["float32"], ["aten::mul"]],
        },
        "devtime.DkitTwice": {"devtime_total": [["4x4"], ["float32"]]},
    }
    assert declared["imported"] == []  # neither the user's module nor torch
    # Taking a profile needs the workload: the module is imported then, the suite's way.
    assert declared["lazy"] == ["dkit.double", True]
    # Without the record (plain asv run): imported as before, same classes.
    plain = _probe(repo)
    assert plain["classes"] == found["classes"] and plain["imported"] == ["dkit.workloads", "torch"]


def test_an_unusable_record_means_importing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, logged: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("NEURONASV_PREPASS_DIR", str(tmp_path))
    assert declared_classes("benchmarks.devtime", None, "c1") is None  # no record
    path = Path(declaration_path(str(tmp_path)))
    kind = '"kind": "neuronasv.suite-classes"'
    for text in ("{", f'{{{kind}, "version": 99, "modules": {{}}}}', '{"kind": "other"}',
                 f'{{{kind}, "version": 1}}', f'{{{kind}, "version": 2}}'):  # fmt: skip
        path.write_text(text)
        assert declared_classes("benchmarks.devtime", None, "c1") is None
        assert logged.text.count("refused the pre-pass record") == 1
        assert "run `neuronasv run` again" in logged.text
        logged.clear()

    fake = type("WX", (), {"__module__": "benchmarks.devtime", "workload": "w.x",
                           "shapes": ("4x4",), "dtypes": ("float32",), "suite_tag": "",
                           "suite_call": "c1"})  # fmt: skip
    record_classes(str(tmp_path), [fake])
    assert declared_classes("benchmarks.other", None, "c1") is None  # another module: import
    assert declared_classes("benchmarks.devtime", "tag", "c1") is None  # another tag: import
    assert not logged.text
    assert declared_classes("benchmarks.devtime", None, "c2") is None  # another call: refused
    assert "made for another build_suite call" in logged.text
    (got,) = declared_classes("benchmarks.devtime", None, "c1") or []
    assert got == ("WX", "w.x", ("4x4",), ("float32",))


# --- issue 38 item 4: the record is checked before any asv process believes it ----------


def _tamper(change: str) -> Callable[[dict[str, Any]], None]:
    def edit(doc: dict[str, Any]) -> None:
        ((slot,),) = (m.values() for m in doc["modules"].values())
        first, second = slot["classes"]
        if change == "__name__":
            first["class"] = "__name__"
        elif change == "build_suite":
            first["class"] = "build_suite"
        elif change == "stale":  # DkitDouble declared with dkit.twice's workload
            first["workload"], second["workload"] = second["workload"], first["workload"]
        elif change == "shape":
            first["shapes"] = ["8x16\n", "../x"]
        elif change == "dtype":
            first["dtypes"] = ["float32'); import os; os.system('true'); ('"]
        elif change == "extra key":
            first["module"] = "os"

    return edit


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, object]]:
    """A repository, its pre-pass folder with the record, and what the import declared."""
    tmp = tmp_path_factory.mktemp("recorded")
    root = tmp / "repo"
    (root / "dkit").mkdir(parents=True)
    (root / "dkit" / "__init__.py").write_text("")
    (root / "dkit" / "workloads.py").write_text(WORKLOADS)
    (root / "benchmarks").mkdir()
    (root / "benchmarks" / "__init__.py").write_text("")
    (root / "benchmarks" / "devtime.py").write_text(DEVTIME)
    (root / "asv.conf.json").write_text("{}")
    prepass = tmp / "prepass"
    return root, prepass, _probe(root, str(prepass))


CHANGES = ["__name__", "build_suite", "stale", "shape", "dtype", "extra key"]


@pytest.mark.parametrize("change", CHANGES)
def test_each_field_of_the_record_is_checked(
    recorded: tuple[Path, Path, dict[str, object]], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, logged: pytest.LogCaptureFixture, change: str,
) -> None:  # fmt: skip
    """What an asv process's ``build_suite`` asks (in this process: the record's checks)."""
    from neuronasv.suite.build import build_suite

    _, prepass, _ = recorded
    doc = json.loads(Path(declaration_path(str(prepass))).read_text())
    ((module, tags),) = doc["modules"].items()
    ((tag, slot),) = tags.items()
    Path(declaration_path(str(tmp_path))).write_text(json.dumps(doc))
    monkeypatch.setenv("NEURONASV_PREPASS_DIR", str(tmp_path))
    namespace = {"__name__": module, "build_suite": build_suite}
    good = declared_classes(module, tag or None, slot["call"], namespace)
    assert good is not None and len(good) == 2 and not logged.text
    _tamper(change)(doc)
    Path(declaration_path(str(tmp_path))).write_text(json.dumps(doc))
    assert declared_classes(module, tag or None, slot["call"], namespace) is None
    assert logged.text.count("refused the pre-pass record") == 1, logged.text
    assert "run `neuronasv run` again" in logged.text


@pytest.mark.slow
@pytest.mark.parametrize("change", ["__name__", "stale", "fifo", "another call"])
def test_a_record_that_does_not_match_the_suite_is_refused_with_one_line(
    recorded: tuple[Path, Path, dict[str, object]], tmp_path: Path, change: str
) -> None:
    """In an asv process, through the suite's import: a record naming a class ``__name__``
    broke the import (it overwrote the module's globals); a stale one declared
    ``DkitDouble`` with ``dkit.twice``'s workload (its series would hold the other's
    numbers); a FIFO hung every asv import; a record of an earlier suite file was used. Now
    each is refused with one line, and the process imports: the classes of a plain import."""
    import shutil

    src, src_prepass, found = recorded
    repo, prepass = tmp_path / "repo", tmp_path / "prepass"
    shutil.copytree(src, repo)
    shutil.copytree(src_prepass, prepass)
    record = Path(declaration_path(str(prepass)))
    if change == "fifo":
        record.unlink()
        os.mkfifo(record)
    elif change == "another call":  # the suite file changed after the pre-pass
        devtime = repo / "benchmarks" / "devtime.py"
        devtime.write_text(devtime.read_text() + "# edited\n")
    else:
        doc = json.loads(record.read_text())
        _tamper(change)(doc)
        record.write_text(json.dumps(doc))
    declared, err = _probe_run(repo, prepass=prepass)
    assert declared["classes"] == found["classes"]  # the registry's, through the import
    assert declared["imported"] == ["dkit.workloads", "torch"]
    refusals = [ln for ln in err.splitlines() if "refused the pre-pass record" in ln]
    assert len(refusals) == 1 and "run `neuronasv run` again" in refusals[0], err
