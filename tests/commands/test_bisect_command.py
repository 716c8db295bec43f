"""``neuronasv bisect`` on stored results only (real git, asv's own results files): the
exact work axis decides from the sidecars, nothing is measured; errors are one line and a
documented exit code; the record lands beside the results and ``regressions`` names the
culprit on its change point."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from neuronasv.cli import main
from neuronasv.model import FindingsDocument
from neuronasv.model.bisect import BisectDocument
from neuronasv.store.bisections import load_bisections
from tests.analyse.analyse_asvdata import neuronasv_run

MACHINE = "box"
WL = ("w", "4x4", "float32")


def _git(repo: Path, *args: str) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.invalid",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.invalid")  # fmt: skip
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()  # fmt: skip


def _table(mul_calls: float) -> dict[str, tuple[float, list[float]]]:
    return {"aten::mul": (mul_calls, [10.0 * mul_calls] * 6), "aten::add": (1.0, [5.0] * 6)}


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, list[str]]:
    """12 commits; ``aten::mul`` runs twice per iteration from commit 7 on; results stored
    for every commit (so the search needs no measurement)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    shas = []
    for i in range(12):
        msg = f"change {i}" + (" (#77)" if i == 7 else "")
        _git(repo, "commit", "-q", "--allow-empty", "-m", msg)
        shas.append(_git(repo, "rev-parse", "HEAD"))
    rd = str(repo / ".asv" / "results")
    for i, c in enumerate(shas):
        neuronasv_run(rd, MACHINE, c, 1000 + i, {WL: _table(2.0 if i >= 7 else 1.0)})
    return repo, shas


def _run(repo: Path, *args: str) -> int:
    return main(["bisect", *args, "--repo", str(repo), "--no-github"])


PATTERN = "w 4x4 float32 · aten::mul"


def test_work_axis_names_the_culprit_from_stored_results(repo, capfd) -> None:
    path, shas = repo
    assert _run(path, shas[0], shas[-1], "--series", PATTERN, "--axis", "work") == 0
    out, err = capfd.readouterr()
    first = out.splitlines()[0]
    assert first == f"{PATTERN} on {MACHINE}: culprit {shas[7][:12]} “change 7 (#77)” (PR #77)"
    assert "from results already stored; exact (work)" in out  # nothing measured
    assert "aten::mul: calls 1 → 2" in out  # the exact work between parent and culprit
    assert "1 calls at" in out and "2 calls at" in out  # the proof: both readings
    assert "record:" in err
    records, errors = load_bisections(str(path / ".asv" / "results"))
    assert errors == [] and len(records) == 1
    rec = records[0]
    assert (rec.result.outcome, rec.result.commit, rec.result.lo) == ("culprit", shas[7], shas[6])
    assert rec.result.pull is not None and rec.result.pull.number == 77
    assert all(p.source == "stored" for p in rec.probes)
    assert rec.result.measured == 0  # every reading was stored


def test_auto_searches_the_exact_work_when_the_ends_differ_on_it(repo, capfd) -> None:
    """Issue 40: the ends' stored work evidence differs (``aten::mul`` twice a call), so
    ``--axis auto`` (the default) bisects on the work, measuring nothing; before, auto
    chose device time for a device-time series and started interleaved rounds."""
    path, shas = repo
    assert _run(path, shas[0], shas[-1], "--series", PATTERN) == 0
    out, err = capfd.readouterr()
    assert out.splitlines()[0].endswith(f"culprit {shas[7][:12]} “change 7 (#77)” (PR #77)")
    assert "axis auto: work differs at the ends (1 calls" in err
    (rec,) = load_bisections(str(path / ".asv" / "results"))[0]
    assert rec.result.axis == "work" and rec.result.measured == 0


def test_the_field_form_names_the_series_as_the_label_did(repo, capfd) -> None:
    path, shas = repo
    fields = "workload=w shape=4x4 dtype=float32 op=aten::mul"
    assert _run(path, shas[0], shas[-1], "--series", fields, "--axis", "work") == 0
    first = capfd.readouterr().out.splitlines()[0]
    assert first == f"{PATTERN} on {MACHINE}: culprit {shas[7][:12]} “change 7 (#77)” (PR #77)"


def test_json_output_and_regressions_names_the_culprit(repo, capfd, tmp_path) -> None:
    path, shas = repo
    out = tmp_path / "b.json"
    assert _run(path, shas[2], shas[10], "--series", PATTERN, "--axis", "work", "--format",
                "json", "--out", str(out)) == 0  # fmt: skip
    doc = BisectDocument.loads(out.read_text())
    assert doc.result.commit == shas[7] and doc.candidates == 8
    capfd.readouterr()
    regr = tmp_path / "r.json"
    assert main(["regressions", "--repo", str(path), "--format", "json", "--out", str(regr)]) == 0
    findings = FindingsDocument.loads(regr.read_text())
    named = [cp for cp in findings.change_points if cp.culprit is not None]
    assert named and all(cp.culprit.commit == shas[7] for cp in named), findings.change_points


@pytest.mark.parametrize(
    ("args", "code", "words"),
    [
        (["nope", "HEAD", "--series", PATTERN], 2, "GOOD 'nope' is not a commit"),
        (["HEAD", "HEAD~3", "--series", PATTERN], 2, "is not a range"),
        (["HEAD~3", "HEAD~3", "--series", PATTERN], 2, "the same commit"),
        (["HEAD~3", "HEAD", "--series", "no such series"], 2, "no series matches"),
        (["HEAD~3", "HEAD", "--series", "w 4x4 float32*"], 2, "matches 3 series"),
        (["HEAD~3", "HEAD", "--series", "workload=w op=?*"], 2,
         "(workload=w shape=4x4 dtype=float32 op=aten::add)"),
        (["HEAD~3", "HEAD", "--series", "workload=w opp=aten::mul"], 2, "did you mean op=?"),
        (["HEAD~3", "HEAD", "--series", "workload=w op=aten::mull"], 2,
         "nearest: 'w 4x4 float32 · aten::mul' (workload=w"),
        (["HEAD~3", "HEAD", "--series", PATTERN, "--axis", "work"], 12, "no change between"),
        (["HEAD~3", "HEAD", "--series", PATTERN, "--rounds", "5", "--max-rounds", "4"], 2,
         "--max-rounds must be at least --rounds"),
    ],
)  # fmt: skip
def test_errors_are_one_line_and_a_documented_exit_code(repo, capfd, args, code, words) -> None:
    path, _ = repo
    assert _run(path, *args) == code
    err = capfd.readouterr().err.strip().splitlines()
    errors = [ln for ln in err if ln.startswith("error:")]
    assert len(errors) == 1 and words in errors[0], err


@pytest.mark.parametrize(
    ("args", "words"),
    [(["--step", "0"], "the step must be a percentage above 0"), (["--pilot", "1"], "--pilot"),
     (["--target", "1"], "--target"), (["--round-sd", "nan"], "--round-sd")],
)  # fmt: skip
def test_bad_sizing_options_are_usage_errors(repo, capfd, args, words) -> None:
    path, _ = repo
    assert _run(path, "HEAD~3", "HEAD", "--series", PATTERN, "--axis", "time", *args) == 2
    assert words in capfd.readouterr().err


def test_the_exit_codes_are_documented() -> None:
    readme = Path(__file__).resolve().parents[2] / "README.md"
    text = readme.read_text(encoding="utf-8")
    assert "| 12 | nothing to bisect | `neuronasv bisect`: the range's ends do not differ" in text
    assert "| analyse | `neuronasv bisect GOOD BAD --series PATTERN` |" in text
    assert json.dumps("bisect")  # the command exists in the one list
    from neuronasv.commands import COMMANDS

    assert "bisect" in COMMANDS


def test_a_merge_is_the_first_parent_culprit_and_its_side_branch_on_request(tmp_path, capfd):
    """First parents only, unless asked: the merge that brought the change is the culprit;
    with --side-branches the merged branch is bisected too and names its own commit."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    sha: dict[str, str] = {}

    def commit(name: str) -> None:
        _git(repo, "commit", "-q", "--allow-empty", "-m", name)
        sha[name] = _git(repo, "rev-parse", "HEAD")

    commit("m0")
    commit("m1")
    _git(repo, "checkout", "-q", "-b", "side")
    commit("s1")
    commit("s2 doubles the mul")
    commit("s3")
    _git(repo, "checkout", "-q", "main")
    commit("m2")
    _git(repo, "merge", "-q", "--no-ff", "-m", "merge side", "side")
    sha["merge"] = _git(repo, "rev-parse", "HEAD")
    commit("m3")
    rd = str(repo / ".asv" / "results")
    doubled = {"s2 doubles the mul", "s3", "merge", "m3"}
    for i, (name, c) in enumerate(sha.items()):
        neuronasv_run(rd, MACHINE, c, 1000 + i, {WL: _table(2.0 if name in doubled else 1.0)})
    assert _run(repo, sha["m0"], sha["m3"], "--series", PATTERN, "--axis", "work") == 0
    out = capfd.readouterr().out
    assert f"culprit {sha['merge'][:12]} “merge side”" in out.splitlines()[0]
    assert "side branch" not in out
    assert _run(repo, sha["m0"], sha["m3"], "--series", PATTERN, "--axis", "work",
                "--side-branches") == 0  # fmt: skip
    out = capfd.readouterr().out
    assert f"side branch: culprit {sha['s2 doubles the mul'][:12]}" in out, out
