"""``exits.run_guarded``: every entry point ends in the error tree (issue 22 item 4)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from neuronasv.errors import CorruptResultsError, UntrustedArtifactError
from neuronasv.exits import run_guarded


def _raise(exc: BaseException):  # type: ignore[no-untyped-def]
    def work() -> int:
        raise exc

    return work


@pytest.mark.parametrize(
    ("exc", "code", "first"),
    [
        (CorruptResultsError("x.json: truncated"), 5, "error: x.json: truncated"),
        (UntrustedArtifactError("no"), 9, "error: no"),
        (FileNotFoundError(2, "No such file or directory", "out/x"), 2,
         "error: out/x: No such file or directory"),
        (TypeError("unsupported\noperand"), 11, "internal error: TypeError: unsupported operand"),
        (KeyboardInterrupt(), 130, "interrupted"),
        # A dependency missing is the environment (2, with a hint); our own module is a bug.
        (ModuleNotFoundError("No module named 'lazy_importer'", name="lazy_importer"), 2,
         "error: this Python environment cannot import what neuronasv needs"),
        (ModuleNotFoundError("No module named 'neuronasv.gone'", name="neuronasv.gone"), 11,
         "internal error: ModuleNotFoundError"),
    ],
)  # fmt: skip
def test_each_failure_is_its_code_and_one_line(
    exc: BaseException, code: int, first: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_guarded(_raise(exc), "prog") == code
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert lines[0].startswith(first), err
    assert len(lines) == 1 or (len(lines) == 2 and lines[1].startswith("hint: ")), err
    assert "Traceback" not in err


def test_module_entry_points_keep_the_contract(tmp_path: Path) -> None:
    """``neuronasv issues-sync`` with an unreadable document: exit 5, one line; ``python -m
    neuronasv.ci traces`` with its --out under a file: exit 2."""
    (tmp_path / "bad.json").write_text("{")
    r = subprocess.run([sys.executable, "-m", "neuronasv", "issues-sync", "--dry-run",
                        str(tmp_path / "bad.json")], capture_output=True, text=True,
                       check=False, timeout=120, env={"PATH": "/usr/bin:/bin"})  # fmt: skip
    assert r.returncode == 5 and r.stderr.startswith("error:") and "Traceback" not in r.stderr
    from tests.publish.test_pr_traces import M, _doc, _store

    _store(tmp_path / "store", "rmsnorm.naive")
    (tmp_path / "f.json").write_text(_doc().dumps())
    (tmp_path / "file").write_text("x")
    r = subprocess.run([sys.executable, "-m", "neuronasv.ci", "traces", "--findings",
                        str(tmp_path / "f.json"), "--traces-dir", str(tmp_path / "store"),
                        "--machine", M, "--out", str(tmp_path / "file" / "o")],
                       capture_output=True, text=True, check=False, timeout=120)  # fmt: skip
    assert r.returncode == 2 and r.stderr.startswith("error:"), r.stderr
    assert "Traceback" not in r.stderr
