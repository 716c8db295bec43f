"""The results folder's path rules live in store/layout.py and nowhere else."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from neuronasv.store import layout

PKG = Path(__file__).resolve().parents[2] / "neuronasv"
SHA = "0123456789abcdef0123456789abcdef01234567"


def test_names_are_asvs() -> None:
    assert layout.result_file("r", "box", SHA, "existing-py") == os.path.join(
        "r", "box", "01234567-existing-py.json"
    )
    long_env = "x" * 130  # asv hashes a name of 128 characters or more
    digest = hashlib.md5(long_env.encode(), usedforsecurity=False).hexdigest()
    assert layout.result_name(SHA, long_env) == f"01234567-env-{digest}.json"
    from asv.results import get_filename  # the rule it copies

    for env in ("existing-py", long_env):
        assert layout.result_file("r", "box", SHA, env) == os.path.join(
            "r", get_filename("box", SHA, env)
        )
    path = layout.result_file("r", "box", SHA, "e")
    assert layout.sidecar_path(path) == os.path.join("r", "box", "01234567-e.neuronasv")
    assert layout.result_path_of_sidecar(layout.sidecar_path(path)) == path
    assert layout.parse_result_name("box/01234567-e.neuronasv") == ("01234567", "e")
    assert layout.parse_result_name(layout.MACHINE_FILE) is None
    assert layout.is_result_file_name(path, "box", SHA, "e")
    assert not layout.is_result_file_name(path, "other", SHA, "e")
    assert layout.trace_dir("t", "box", SHA) == os.path.join("t", "box", "01234567")
    assert layout.machine_file("r", "box") == os.path.join("r", "box", "machine.json")


def test_result_files_of_commit_lists_every_environment(tmp_path: Path) -> None:
    box = tmp_path / "b[o]x"  # glob characters in a machine name are literal
    box.mkdir()
    for env in ("e1", "e2"):
        (box / layout.result_name(SHA, env)).write_text("{}")
    (box / layout.sidecar_path(layout.result_name(SHA, "e1"))).write_text("{}")
    got = layout.result_files_of_commit(str(tmp_path), "b[o]x", SHA)
    assert [os.path.basename(p) for p in got] == ["01234567-e1.json", "01234567-e2.json"]
    assert got
    assert layout.result_files_of_commit(str(tmp_path), "b[o]x", "f" * 40) == []


def test_no_other_module_spells_a_results_folder_name() -> None:
    spelled = re.compile(
        r"""["'](?:\.neuronasv|machine\.json|benchmarks\.json)["']|\[:8\]\}-[{*]|-\*\.json"""
    )
    offenders = [
        f"{p.relative_to(PKG)}:{i}"
        for p in sorted(PKG.rglob("*.py"))
        if p.name != "layout.py"
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if spelled.search(line) and "ACKS_PATH" not in line
    ]
    assert offenders == []


def test_a_name_with_a_trailing_newline_is_no_result_and_no_record() -> None:
    """``$`` matches before a final newline; a listed file named so is neither (``\\Z``)."""
    assert layout.parse_result_name("abcd1234-env.json") == ("abcd1234", "env")
    assert layout.parse_result_name("abcd1234-env.json\n") is None
    assert layout.is_bisect_name("bisect-0123456789abcdef.bisect")
    assert not layout.is_bisect_name("bisect-0123456789abcdef.bisect\n")
