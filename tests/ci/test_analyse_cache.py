"""The analyse job keeps its history cache between pushes (issue 37 item 5).

``python -m neuronasv.ci analyse --cache-dir DIR`` (neuronasv-commit.yml restores DIR with
``actions/cache/restore`` and, on the default branch only, saves it): a second run over the
same results branch searches no window again, makes no culprit comparison again, and
writes the same change points; the workflow keys the entry so that only a default-branch
run writes what the default branch reads.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.ci.test_workflows import jobs, steps
from tests.publish.conftest import load_synth


def _results_branch(results: Path, where: Path) -> Path:
    """A bare remote whose ``benchmark-results`` branch holds ``results`` at its root."""
    work, bare = where / "publish", where / "origin.git"
    shutil.copytree(results, work)
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}  # fmt: skip
    for args in (["init", "-q", "-b", "benchmark-results"], ["add", "-A"],
                 ["commit", "-qm", "results"], ["init", "-q", "--bare", str(bare)],
                 ["push", "-q", str(bare), "benchmark-results"]):  # fmt: skip
        subprocess.run(["git", *args], cwd=work, env=env, check=True, capture_output=True)
    return bare


def _analyse(repo: Path, remote: Path, out: Path, cache: Path) -> tuple[dict, str]:
    r = subprocess.run([sys.executable, "-m", "neuronasv.ci", "--repo", str(repo), "analyse",
                        "--remote", str(remote), "--out", str(out), "--site", str(out / "site"),
                        "--cache-dir", str(cache)], capture_output=True, text=True,
                       check=False, timeout=600,
                       env={**os.environ, "GITHUB_OUTPUT": ""})  # fmt: skip
    assert r.returncode == 0, r.stderr
    docs = sorted(out.glob("regressions-*.json"))
    assert len(docs) == 1, docs
    doc = json.loads(docs[0].read_text())
    doc.pop("created")
    return doc, r.stderr


def _searched(err: str) -> tuple[int, int]:
    m = re.search(r"change points: (\d+) of (\d+) search windows searched", err)
    assert m, err
    return int(m.group(1)), int(m.group(2))


@pytest.mark.slow
def test_a_second_analysis_reads_the_kept_cache_and_answers_the_same(tmp_path: Path) -> None:
    hist = tmp_path / "h"
    load_synth().generate(hist, commits=40, workloads=2, ops=3)
    remote = _results_branch(hist / "results", tmp_path)
    cache = tmp_path / "cache"
    cold, err = _analyse(hist / "repo", remote, tmp_path / "a", cache)
    done, total = _searched(err)
    assert done == total > 0
    machines = [p.name for p in (cache / "regressions").iterdir()]
    assert machines and (cache / "publish").is_dir()  # per machine; the site's summaries
    # issue 38: the key signing the entries is beside the folder the workflow restores,
    # never in it (a restored entry must not bring its own key)
    assert (tmp_path / "cache.neuronasv-key").is_file()
    assert not list(cache.rglob("*.neuronasv-key"))
    warm, err = _analyse(hist / "repo", remote, tmp_path / "b", cache)
    assert _searched(err) == (0, total), err
    assert warm == cold and cold["change_points"]
    # a fresh runner (the folder restored, no key beside it): every entry a miss, same answer
    (tmp_path / "cache.neuronasv-key").unlink()
    fresh, err = _analyse(hist / "repo", remote, tmp_path / "c", cache)
    assert _searched(err) == (total, total), err
    assert fresh == cold


def test_only_a_default_branch_run_saves_what_the_default_branch_restores() -> None:
    analyse = steps(jobs("neuronasv-commit.yml")["analyse"])
    uses = [str(s.get("uses", "")).split("@")[0] for s in analyse]
    restore, run, save = (uses.index("actions/cache/restore"),
                          next(i for i, s in enumerate(analyse) if s.get("id") == "analyse"),
                          uses.index("actions/cache/save"))  # fmt: skip
    assert restore < run < save
    # The folder and, beside it (never in it), the key that signs its entries: a restored
    # folder without its key would be all misses (issue 38's signed entries).
    path = ("${{ runner.temp }}/neuronasv-cache\n"
            "${{ runner.temp }}/neuronasv-cache.neuronasv-key\n")
    assert analyse[restore]["with"]["path"] == analyse[save]["with"]["path"] == path
    assert '--cache-dir "$RUNNER_TEMP/neuronasv-cache"' in analyse[run]["run"]
    # A key of its own per run (entries are immutable), found again by its prefix.
    key = analyse[save]["with"]["key"]
    assert key == analyse[restore]["with"]["key"] and "github.run_id" in key
    assert key.startswith(analyse[restore]["with"]["restore-keys"])
    # Saved only by a run of the default branch: a PR or another branch writes nothing
    # the default branch reads (GitHub scopes an entry to the branch that saved it).
    assert analyse[save]["if"] == (
        "${{ github.ref == format('refs/heads/{0}', github.event.repository.default_branch) }}")
    assert "if" not in analyse[restore]
