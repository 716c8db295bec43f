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
from pathlib import Path

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
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEURONASV_")}
    env.update(NEURONASV_BACKEND="cpu", PYTHONPATH=os.pathsep.join([str(repo), str(ROOT)]))
    catalogue = repo / "ops.catalogue"
    catalogue.write_text(json.dumps({"backends": {"cpu": {"dkit.double": ["aten::mul"]}}}))
    env["NEURONASV_OPS_CATALOGUE"] = str(catalogue)
    if prepass is not None:
        env["NEURONASV_PREPASS_DIR"] = str(prepass)
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(repo / "benchmarks"), *args],
        cwd=repo, env=env, capture_output=True, text=True, timeout=300, check=True,
    ).stdout  # fmt: skip
    return dict(json.loads(out.splitlines()[-1]))


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
    assert declared_classes("benchmarks.devtime", None) is None  # no record
    path = Path(declaration_path(str(tmp_path)))
    kind = '"kind": "neuronasv.suite-classes"'
    for text in ("{", f'{{{kind}, "version": 99, "modules": {{}}}}', '{"kind": "other"}',
                 f'{{{kind}, "version": 1}}'):  # fmt: skip
        path.write_text(text)
        assert declared_classes("benchmarks.devtime", None) is None
        assert "ignoring the unreadable record" in logged.text
        logged.clear()

    class Fake:
        __module__ = "benchmarks.devtime"
        workload, shapes, dtypes, suite_tag = "w.x", ("4x4",), ("float32",), ""

    record_classes(str(tmp_path), [Fake])
    assert declared_classes("benchmarks.other", None) is None  # another module: import
    assert declared_classes("benchmarks.devtime", "tag") is None  # another call: import
    (got,) = declared_classes("benchmarks.devtime", None) or []
    assert got == ("Fake", "w.x", ("4x4",), ("float32",))
