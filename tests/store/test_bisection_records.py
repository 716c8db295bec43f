"""Bisection records are untrusted data (issue 38 item 3).

A record travels on the results branch and CI uploads it from a self-hosted runner: before
``regressions`` attaches one to a change point (and the issue, the site and the feed name
its culprit, the bot links its commit), every commit it names is a full hash the repository
has, ``alpha`` is a probability, every count is >= 0, it lies in its own machine's folder
under its own key's name and is a regular file; ``store push`` refuses what ``regressions``
would not believe. Each tampering below is a genuine record of ``neuronasv bisect`` changed
in one field, read back through the public commands.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from neuronasv.cli import main
from neuronasv.model import FindingsDocument
from neuronasv.model.bisect import BisectDocument
from neuronasv.report.bisect import culprit_markdown
from tests.analyse.analyse_asvdata import neuronasv_run

MACHINE = "box"
WL = ("w", "4x4", "float32")
PATTERN = "w 4x4 float32 · aten::mul"


def _git(repo: Path, *args: str) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.invalid",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.invalid")  # fmt: skip
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()  # fmt: skip


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str], Path]:
    """12 commits: ``aten::mul`` doubles at commit 7; ``neuronasv bisect`` over the stored
    results wrote its genuine record; then the results of commits 7 and 8 are removed, so
    the change point's range (6..9) is the record's to narrow."""
    repo = tmp_path_factory.mktemp("records") / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    shas = []
    for i in range(12):
        _git(repo, "commit", "-q", "--allow-empty", "-m", f"change {i}")
        shas.append(_git(repo, "rev-parse", "HEAD"))
    rd = repo / ".asv" / "results"
    for i, c in enumerate(shas):
        calls = 2.0 if i >= 7 else 1.0
        table = {"aten::mul": (calls, [10.0 * calls] * 6), "aten::add": (1.0, [5.0] * 6)}
        neuronasv_run(str(rd), MACHINE, c, 1000 + i, {WL: table})
    assert main(["bisect", shas[0], shas[-1], "--series", PATTERN, "--axis", "work",
                 "--repo", str(repo), "--no-github"]) == 0  # fmt: skip
    (record,) = (rd / MACHINE).glob("bisect-*.bisect")
    for c in shas[7:9]:  # unmeasured now: the change point's range is 6..9, not one commit
        for f in (rd / MACHINE).glob(f"{c[:8]}-*"):
            f.unlink()
    return repo, shas, record


def _regressions(repo: Path, capsys: pytest.CaptureFixture[str]) -> tuple[FindingsDocument, str]:
    capsys.readouterr()
    assert main(["regressions", "--repo", str(repo), "--format", "json"]) == 0
    out, err = capsys.readouterr()
    return FindingsDocument.loads(out), err


def _culprits(doc: FindingsDocument) -> set[str]:
    return {cp.culprit.commit for cp in doc.change_points if cp.culprit is not None}


Change = Callable[[dict[str, Any]], None]
FAKE = "f" * 40  # a full hash, but no commit of the repository


def _set(path: str, value: Any) -> Change:
    def change(d: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        for p in parents:
            d = d[p][0] if p == "probes" else d[p]
        d[last] = value

    return change


TAMPERED: dict[str, tuple[Change, str]] = {
    "a culprit that is no commit here": (
        lambda d: d["result"].update(commit=FAKE, hi=FAKE), "not in the repository"),
    "a range end that is no commit here": (_set("result.lo", FAKE), "not in the repository"),
    "a probe that is no commit here": (_set("probes.commit", FAKE), "not in the repository"),
    "alpha 5": (lambda d: d["result"].update(alpha=5.0), "alpha must be a probability"),
    "measured -3": (_set("result.measured", -3), "measured must be >= 0"),
    "a commit that is text": (
        lambda d: d["result"].update(commit="../../x) [y](https://e.example/", hi="../x"),
        "full commit hash"),
    "a short hash": (_set("result.lo", "abc123"), "full commit hash"),
    "a culprit other than hi": (_set("result.commit", FAKE), "must be its range's hi"),
    "a probe's rounds -1": (_set("probes.rounds", -1), "rounds must be >= 0"),
    "pull request 0": (lambda d: d["result"].update(pull={"number": 0}), "pull request number"),
    "another machine's record": (_set("machine", "other"), "in 'box''s folder"),
}  # fmt: skip


def _baseline(recorded: tuple[Path, list[str], Path], capsys: pytest.CaptureFixture[str]) -> None:
    repo, shas, _ = recorded
    doc, err = _regressions(repo, capsys)
    assert _culprits(doc) == {shas[7]} and "skipped bisection record" not in err


@pytest.mark.parametrize("name", sorted(TAMPERED))
def test_a_tampered_record_is_never_attached(
    name: str, recorded: tuple[Path, list[str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    repo, _, record = recorded
    _baseline(recorded, capsys)
    genuine = record.read_bytes()
    change, why = TAMPERED[name]
    data = json.loads(genuine)
    change(data)
    try:
        record.write_text(json.dumps(data))
        doc, err = _regressions(repo, capsys)
        assert _culprits(doc) == set(), (name, _culprits(doc))
        assert "skipped bisection record" in err and why in err, err
        assert "Traceback" not in err
    finally:
        record.write_bytes(genuine)


def test_a_record_under_another_keys_name_or_not_a_file_is_not_read(
    recorded: tuple[Path, list[str], Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    repo, _, record = recorded
    moved = record.with_name("bisect-" + "0" * 16 + ".bisect")
    kept = tmp_path / "kept"
    shutil.move(record, kept)
    try:
        shutil.copyfile(kept, moved)  # a genuine record under a name that is not its key
        doc, err = _regressions(repo, capsys)
        assert _culprits(doc) == set() and "not its file name's" in err, err
        moved.unlink()
        record.symlink_to(kept)  # a symbolic link is not read
        doc, err = _regressions(repo, capsys)
        assert _culprits(doc) == set() and "symbolic link" in err, err
        record.unlink()
        os.mkfifo(record)  # a FIFO does not hang the reader
        doc, err = _regressions(repo, capsys)
        assert _culprits(doc) == set() and "not a regular file" in err, err
        record.unlink()
    finally:
        for p in (moved, record):
            if p.is_symlink() or p.exists():
                p.unlink()
        shutil.move(kept, record)


def test_store_push_refuses_what_regressions_would_not_believe(
    recorded: tuple[Path, list[str], Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Another machine's record copied into a machine's folder, or one under another key's
    name, is refused by ``store push`` (exit 5, nothing pushed)."""
    repo, _, record = recorded
    remote = tmp_path / "remote.git"
    _git(tmp_path, "init", "-q", "--bare", str(remote))
    for name, edit in (("another machine", lambda d: d.update(machine="other")),
                       ("another key", lambda d: d.update(good=d["result"]["lo"]))):  # fmt: skip
        results = tmp_path / name / "results"
        shutil.copytree(repo / ".asv" / "results", results)
        planted = results / MACHINE / record.name
        data = json.loads(planted.read_text())
        edit(data)
        planted.write_text(json.dumps(data))
        capsys.readouterr()
        code = main(["store", "push", "--repo", str(repo), "--remote", str(remote),
                     "--results-dir", str(results)])  # fmt: skip
        err = capsys.readouterr().err
        assert code == 5 and "nothing was pushed" in err and planted.name in err, (name, err)
    assert _git(remote, "for-each-ref").strip() == ""


def test_the_commit_link_is_built_from_a_full_hash_only(
    recorded: tuple[Path, list[str], Path],
) -> None:
    _, shas, record = recorded
    c = BisectDocument.loads(record.read_text()).result
    assert any(f"/commit/{shas[7]})" in line for line in culprit_markdown(c, repository="o/r"))
    from dataclasses import replace

    forged = replace(c, commit="x)[y](https://e.example", hi="x)[y](https://e.example")
    assert not any("/commit/" in line for line in culprit_markdown(forged, repository="o/r"))
