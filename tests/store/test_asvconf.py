"""The one asv.conf.json reader: asv's own rules, and every command agrees on the folders."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from neuronasv.commands.store import results_dir_from_config
from neuronasv.errors import ResultsError, UsageError
from neuronasv.run.asvrun import RunOptions, run_dirs
from neuronasv.steps.common import results_folder
from neuronasv.store.asvconf import (
    DEFAULT_RESULTS_DIR,
    read_asv_config,
    repo_config,
    results_dir_for,
)
from neuronasv.store.history import default_results_dir

# A trailing comment after a value: asv accepts it (json5). The old hand-rolled reader
# dropped only whole-line comments, failed to parse this, and fell back to ``results``.
TRAILING = """{
    // a whole-line comment
    "version": 1,
    "results_dir": "custom/res",  // where run writes
    "html_dir": "custom/html", /* block */
    "branches": ["main"],
}
"""


def _conf(tmp_path: Path, text: str) -> Path:
    (tmp_path / "asv.conf.json").write_text(text, encoding="utf-8")
    return tmp_path


def test_reads_what_asv_reads(tmp_path: Path) -> None:
    from asv import util as asv_util

    root = _conf(tmp_path, TRAILING)
    ours = read_asv_config(root / "asv.conf.json")
    assert ours == asv_util.load_json(str(root / "asv.conf.json"), js_comments=True)
    assert ours["results_dir"] == "custom/res"


def test_run_and_every_reader_agree_on_the_results_folder(tmp_path: Path) -> None:
    root = _conf(tmp_path, TRAILING)
    want = os.path.join(str(root), "custom/res")
    results, html, _traces = run_dirs(str(root), RunOptions(repo=str(root)))
    assert results == os.path.abspath(want)
    assert html == os.path.abspath(os.path.join(str(root), "custom/html"))
    assert default_results_dir(root) == want  # compare, regressions, publish
    assert results_dir_from_config(str(root)) == want  # store push/pull
    os.makedirs(want)
    ns = argparse.Namespace(results_dir=None, repo=str(root))
    assert results_folder(ns.results_dir, ns.repo) == want  # what compare/regressions open


@pytest.mark.slow  # end to end through subprocesses: the full lane
def test_compare_cli_looks_where_run_writes(tmp_path: Path) -> None:
    """Through the CLI: the folder compare reports missing is the one run would write."""
    root = _conf(tmp_path, TRAILING)
    proc = subprocess.run(
        [sys.executable, "-m", "neuronasv", "compare", "HEAD~1", "HEAD", "--repo", str(root)],
        capture_output=True, text=True, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == ResultsError.exit_code, proc.stderr
    results, _, _ = run_dirs(str(root), RunOptions(repo=str(root)))
    assert os.path.relpath(results, root) == os.path.join("custom", "res")
    assert os.path.join(str(root), "custom/res") in proc.stderr


def test_no_config_means_one_default_everywhere(tmp_path: Path) -> None:
    want = os.path.join(str(tmp_path), DEFAULT_RESULTS_DIR)
    assert results_dir_for(tmp_path) == want
    assert default_results_dir(tmp_path) == want
    assert results_dir_from_config(str(tmp_path)) == want
    assert run_dirs(str(tmp_path), RunOptions(repo=str(tmp_path)))[0] == os.path.abspath(want)
    # a config without results_dir: the same default
    _conf(tmp_path, json.dumps({"version": 1}))
    assert results_dir_for(tmp_path) == want


def test_override_wins(tmp_path: Path) -> None:
    root = _conf(tmp_path, TRAILING)
    assert results_dir_for(root, override="elsewhere") == "elsewhere"
    opts = RunOptions(repo=str(root), results_dir="rel")
    assert run_dirs(str(root), opts)[0] == os.path.join(str(root), "rel")


@pytest.mark.parametrize(
    ("text", "why"),
    [("{ not json", "not valid JSON"), ("[1, 2]", "must be a JSON object")],
)
def test_a_bad_config_is_an_error_not_a_silent_default(tmp_path: Path, text: str, why: str) -> None:
    root = _conf(tmp_path, text)
    with pytest.raises(UsageError, match=why) as info:
        repo_config(root)
    assert str(root / "asv.conf.json") in str(info.value)
    with pytest.raises(UsageError):
        results_dir_for(root)
