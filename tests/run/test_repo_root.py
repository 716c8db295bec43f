"""Every command finds the repository root from any subdirectory, as git does."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from neuronasv.commands.args import repo_dir

NEURONASV = str(Path(sys.executable).parent / "neuronasv")


@pytest.fixture()
def checkout(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "docs" / "deep").mkdir(parents=True)
    (root / "asv.conf.json").write_text(json.dumps({"version": 1, "results_dir": "res"}))
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def test_repo_dir_is_the_top_level_from_a_subdirectory(
    checkout: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(checkout / "docs" / "deep")
    assert Path(repo_dir(".")) == checkout.resolve()
    assert Path(repo_dir("..")) == checkout.resolve()
    plain = tmp_path / "plain"
    plain.mkdir()
    assert repo_dir(str(plain)) == str(plain)  # not a work tree: the folder itself


@pytest.mark.parametrize("command", ["compare", "regressions", "publish"])
def test_readers_look_in_the_roots_results_from_a_subdirectory(
    checkout: Path, command: str
) -> None:
    args = {"compare": ["compare", "a", "b"], "regressions": ["regressions"],
            "publish": ["publish", "--out", "site"]}[command]  # fmt: skip
    proc = subprocess.run([NEURONASV, *args], cwd=checkout / "docs", capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 5, proc.stderr
    assert str(checkout / "res") in proc.stderr  # the root's config, not ./.asv/results
    assert not (checkout / "docs" / "site").exists()
