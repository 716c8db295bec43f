"""The environment registry: every NEURONASV_* variable declared once, read one way."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from neuronasv import env
from neuronasv.cli import main
from neuronasv.errors import UsageError

ROOT = Path(__file__).resolve().parents[1]
#: The package and the asv suite that ships with it (it runs the package's readers).
SOURCES = [*sorted((ROOT / "neuronasv").rglob("*.py")), *sorted((ROOT / "benchmarks").glob("*.py"))]
NAME = re.compile(r"NEURONASV_[A-Z0-9_]*[A-Z0-9]")


def test_sources_are_found() -> None:
    assert len(SOURCES) > 50 and ROOT / "neuronasv" / "env.py" in SOURCES


def test_every_name_in_the_source_is_declared() -> None:
    """Code, docstrings, comments and messages alike: a name nobody declared is a typo or
    a variable read behind the registry's back."""
    declared = {v.name for v in env.VARIABLES}
    undeclared = {
        f"{name} ({path.relative_to(ROOT)})"
        for path in SOURCES
        for name in NAME.findall(path.read_text(encoding="utf-8"))
        if name not in declared
    }
    assert not undeclared, f"not declared in neuronasv/env.py: {sorted(undeclared)}"


def test_every_declared_variable_is_used() -> None:
    """No stale declarations: each variable's reader or name is used outside env.py."""
    text = "\n".join(p.read_text(encoding="utf-8") for p in SOURCES if p.name != "env.py")
    attrs = {v.name: v.name.removeprefix(env.PREFIX) for v in env.VARIABLES}
    unused = [n for n, attr in attrs.items() if not re.search(rf"env\.{attr}\b", text)]
    assert not unused, f"declared but never read through the registry: {unused}"


def test_no_module_spells_a_name_as_a_string_of_its_own() -> None:
    """Only env.py holds a string that *is* a variable's name: everything else reads the
    typed reader (or uses ``VAR.name`` to set one for a child process)."""
    found = []
    for path in SOURCES:
        if path == ROOT / "neuronasv" / "env.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            is_text = isinstance(node, ast.Constant) and isinstance(node.value, str)
            if is_text and NAME.fullmatch(node.value.strip()):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}")
    assert not found, found


def test_names_are_unique_prefixed_and_documented() -> None:
    names = [v.name for v in env.VARIABLES]
    assert len(names) == len(set(names))
    for v in env.VARIABLES:
        assert v.name.startswith(env.PREFIX) and NAME.fullmatch(v.name)
        assert v.doc and "\n" not in v.doc and len(v.doc) < 100, v.name
        assert env.by_name(v.name) is v


def test_docs_list_every_variable() -> None:
    doc = (ROOT / "docs" / "environment.md").read_text(encoding="utf-8")
    missing = [v.name for v in env.VARIABLES if f"`{v.name}`" not in doc]
    assert not missing, f"docs/environment.md lacks {missing}"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, False),
        ("", False),
        ("  ", False),
        ("0", False),
        ("false", False),
        ("No", False),
        ("OFF", False),
        ("1", True),
        (" 1 ", True),
        ("true", True),
        ("yes", True),
    ],
)
def test_flag_rule(value: str | None, expected: bool) -> None:
    environ = {} if value is None else {"NEURONASV_QUICK": value}
    assert env.QUICK.read(environ) is expected
    environ = {} if value is None else {"NEURONASV_LARGE": value}
    tri = env.LARGE.read(environ)
    assert tri is (None if value is None or not value.strip() else expected)


def test_text_list_and_int_readers() -> None:
    assert env.BACKEND.read({}) == "auto"
    assert env.BACKEND.read({"NEURONASV_BACKEND": "  "}) == "auto"
    assert env.BACKEND.read({"NEURONASV_BACKEND": " cuda "}) == "cuda"
    assert env.PROFILE_OUT.read({}) is None
    assert env.SHAPES.read({"NEURONASV_SHAPES": " 4x512, ,8x64 ,"}) == ("4x512", "8x64")
    assert env.SHAPES.read({"NEURONASV_SHAPES": ""}) == ()
    assert env.CPU_THREADS.read({}) == 1
    assert env.CPU_THREADS.read({"NEURONASV_CPU_THREADS": " 4 "}) == 4
    assert env.SAMPLES.read({}) is None
    assert env.SAMPLES.read({"NEURONASV_SAMPLES": "0"}) == 0  # the suite clamps to 1


@pytest.mark.parametrize("value", ["0", "-2", "two", "1.5"])
def test_bad_integer_names_the_variable(value: str) -> None:
    with pytest.raises(
        UsageError, match=f"NEURONASV_CPU_THREADS must be a positive integer, got '{value}'"
    ):
        env.CPU_THREADS.read({"NEURONASV_CPU_THREADS": value})


def test_readers_read_the_live_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEURONASV_HOST_ID", "rack-7")
    assert env.HOST_ID.read() == "rack-7"
    monkeypatch.delenv("NEURONASV_HOST_ID")
    assert env.HOST_ID.read() is None


def test_describe_shows_values_and_survives_bad_ones() -> None:
    rows = {
        d.name: d
        for d in env.describe(
            {"NEURONASV_CPU_THREADS": "lots", "NEURONASV_SHAPES": "4x512,8x64", "X": "1"}
        )
    }
    assert list(rows) == [v.name for v in env.VARIABLES]
    assert rows["NEURONASV_CPU_THREADS"].effective.startswith("invalid: NEURONASV_CPU_THREADS")
    assert rows["NEURONASV_SHAPES"].value == "'4x512,8x64'"
    assert rows["NEURONASV_SHAPES"].effective == "4x512,8x64"
    assert rows["NEURONASV_BACKEND"].value == "unset"
    assert rows["NEURONASV_BACKEND"].effective == "default (auto)"
    assert rows["NEURONASV_QUICK"].set_by == env.RUN


def test_doctor_env_lists_every_variable_with_its_value(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for v in env.VARIABLES:
        monkeypatch.delenv(v.name, raising=False)
    monkeypatch.setenv("NEURONASV_PEAK", "h100-pcie")
    monkeypatch.setenv("NEURONASV_HOST_ID", "a\x1b[31mb")  # shown escaped, not interpreted
    assert main(["doctor", "--env"]) == 0
    out = capsys.readouterr().out
    for v in env.VARIABLES:
        assert v.name in out
    assert "* NEURONASV_PEAK" in out and "'h100-pcie'" in out
    assert "\x1b" not in out and "a\\x1b[31mb" in out
    line = next(ln for ln in out.splitlines() if "NEURONASV_BACKEND" in ln)
    assert line.split()[-1] == "unset"


def test_doctor_env_imports_no_torch() -> None:
    """``doctor --env`` answers on a light install (the CI jobs without torch)."""
    import subprocess
    import sys

    code = (
        "import sys\nfrom neuronasv.cli import main\nrc = main(['doctor', '--env'])\n"
        "print('HEAVY', [m for m in ('torch', 'scipy', 'numpy') if m in sys.modules], rc)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.splitlines()[-1] == "HEAVY [] 0"
