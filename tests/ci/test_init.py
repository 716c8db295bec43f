"""``neuronasv init``: what it writes, the default branch, the pinned repository, .gitignore,
"did you mean", and that it never overwrites."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from neuronasv.ci import scaffold
from neuronasv.errors import UsageError

SHA = "0123456789abcdef0123456789abcdef01234567"
PIN = ["--ref", SHA, "--from", "acme/neuronasv"]
WF = ".github/workflows/neuronasv.yml"


def nx(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "neuronasv", *args], cwd=repo,
                          capture_output=True, text=True, check=False)  # fmt: skip


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True,
                          check=True).stdout.strip()  # fmt: skip


def load_yaml(path: Path) -> dict:
    data = yaml.safe_load(path.read_text())
    data["on"] = data.pop(True, data.get("on"))
    return data


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "My-Kernels"
    r.mkdir()
    git(r, "init", "-q", "-b", "trunk")
    return r


def _commit(repo: Path, name: str = "README") -> None:
    (repo / name).write_text(name + "\n")
    git(repo, "add", name)
    git(repo, "commit", "-qm", name)


def test_init_writes_everything_once(repo: Path) -> None:
    (repo / ".gitignore").write_text("build/\n")
    first = nx(repo, "init", *PIN)
    assert first.returncode == 0, first.stderr
    for rel in ("asv.conf.json", "benchmarks/__init__.py", "benchmarks/devtime.py",
                WF, ".github/workflows/neuronasv-comment.yml",
                "my_kernels_workloads.py"):  # fmt: skip
        assert (repo / rel).is_file(), rel
        assert f"wrote {rel}" in first.stdout
    assert (repo / ".gitignore").read_text() == (
        "build/\n.asv/\n/site/\n/neuron-check/\n/out/demo/\n"
    )
    conf = (repo / "asv.conf.json").read_text()
    assert '"project": "My-Kernels"' in conf and '"branches": ["trunk"]' in conf
    assert 'WORKLOADS = "my_kernels_workloads"' in (repo / "benchmarks/devtime.py").read_text()
    wf = (repo / WF).read_text()
    assert f'"acme/neuronasv/.github/workflows/neuronasv-commit.yml@{SHA}"' in wf
    assert f'"git+https://github.com/acme/neuronasv@{SHA}"' in wf
    assert 'branches: ["trunk"]' in wf
    assert "workflows pinned to acme/neuronasv@0123456789ab (--from)" in first.stdout
    (repo / "asv.conf.json").write_text("{}\n")  # the user's edit
    again = nx(repo, "init", *PIN)
    assert again.returncode == 0
    assert "kept asv.conf.json (exists; never overwritten)" in again.stdout
    assert (repo / "asv.conf.json").read_text() == "{}\n"
    assert (repo / ".gitignore").read_text().count(".asv/") == 1


def test_an_existing_workloads_module_is_used_as_it_is(repo: Path) -> None:
    (repo / "pkg").mkdir()
    (repo / "pkg" / "wl.py").write_text("# mine\n")
    out = nx(repo, "init", "--workloads", "pkg.wl", *PIN)
    assert out.returncode == 0, out.stderr
    assert (repo / "pkg" / "wl.py").read_text() == "# mine\n"
    assert "pkg/wl.py" not in out.stdout
    assert 'WORKLOADS = "pkg.wl"' in (repo / "benchmarks/devtime.py").read_text()
    check = nx(repo, "init", "--check", *PIN)
    assert check.returncode == 0 and check.stdout.startswith("up to date"), check.stdout


# ----------------------------------------------------------------------------- the branch


def _clone_on_a_feature_branch(tmp_path: Path, default: str = "main") -> Path:
    origin = tmp_path / "origin"
    origin.mkdir()
    git(origin, "init", "-q", "-b", default)
    _commit(origin)
    clone = tmp_path / "ropekit"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    git(clone, "checkout", "-qb", "adopt-neuronasv")
    return clone


def test_on_a_feature_branch_the_callers_trigger_on_the_remotes_default(tmp_path: Path) -> None:
    """Issue 29: init on `adopt-neuronasv` wrote `branches: [adopt-neuronasv]`."""
    clone = _clone_on_a_feature_branch(tmp_path, default="develop")
    out = nx(clone, "init", *PIN)
    assert out.returncode == 0, out.stderr
    assert "default branch: develop (origin's HEAD)" in out.stdout
    assert load_yaml(clone / WF)["on"]["push"]["branches"] == ["develop"]
    assert '"branches": ["develop"]' in (clone / "asv.conf.json").read_text()
    assert "adopt-neuronasv" not in (clone / WF).read_text()
    git(clone, "add", "-A")
    git(clone, "commit", "-qm", "neuronasv init")
    for branch in ("adopt-neuronasv", "other"):  # --check passes on any branch
        git(clone, "checkout", "-qB", branch)
        check = nx(clone, "init", "--check", *PIN)
        assert check.returncode == 0, check.stdout + check.stderr
        assert check.stdout.startswith("up to date (branch develop"), check.stdout


def test_without_a_remote_init_says_what_it_chose_and_how_to_change_it(repo: Path) -> None:
    git(repo, "branch", "-m", "main")
    _commit(repo)
    git(repo, "checkout", "-qb", "feature")
    out = nx(repo, "init", *PIN)
    assert out.returncode == 0, out.stderr
    assert "default branch: main (no remote: the local branch main)" in out.stdout
    assert "pass --branch NAME" in out.stdout
    assert load_yaml(repo / WF)["on"]["push"]["branches"] == ["main"]


def test_branch_option_wins_and_is_validated(repo: Path) -> None:
    out = nx(repo, "init", "--branch", "release/2.x", *PIN)
    assert out.returncode == 0, out.stderr
    assert load_yaml(repo / WF)["on"]["push"]["branches"] == ["release/2.x"]
    bad = nx(repo, "init", "--check", "--branch", "a..b", *PIN)
    assert bad.returncode == 2 and "not a valid git branch name" in bad.stderr


def test_check_flags_files_written_for_another_branch_than_the_remotes(tmp_path: Path) -> None:
    clone = _clone_on_a_feature_branch(tmp_path)
    assert nx(clone, "init", "--branch", "adopt-neuronasv", *PIN).returncode == 0
    check = nx(clone, "init", "--check", *PIN)
    assert check.returncode == 1
    assert "the files track 'adopt-neuronasv', but origin's default branch is 'main'" \
        in check.stdout  # fmt: skip
    assert nx(clone, "init", "--check", "--branch", "adopt-neuronasv", *PIN).returncode == 0


# ----------------------------------------------------------------------------- the repository


def test_a_package_that_records_no_repository_is_never_guessed() -> None:
    """Issue 29: a wheel built from a clone with no GitHub origin pinned every line to
    `neuronasv/neuronasv@…` without a word."""
    built = (None, SHA, "recorded in this wheel at build time")
    with pytest.raises(UsageError, match="cannot tell which repository") as err:
        scaffold.workflows_source(origin=built)
    assert "--from OWNER/REPO" in str(err.value.hint)
    src = scaffold.workflows_source("acme/nx", origin=built)
    assert (src.repository, src.commit, src.how) == ("acme/nx", SHA, "--from")
    recorded = scaffold.Recorded(repository="team/fork", commit="f" * 40)
    src = scaffold.workflows_source(origin=built, recorded=recorded)
    assert (src.repository, src.commit) == ("team/fork", SHA)
    src = scaffold.workflows_source(origin=("acme/nx", SHA, "pip"))
    assert src.repository == "acme/nx"
    with pytest.raises(UsageError, match="is not a GitHub repository"):
        scaffold.workflows_source(origin=("evil/x #", SHA, "recorded in this wheel"))


# ----------------------------------------------------------------------------- .gitignore


def test_gitignore_without_a_final_newline_keeps_its_last_line(repo: Path) -> None:
    (repo / ".gitignore").write_text("node_modules")
    assert nx(repo, "init", *PIN).returncode == 0
    lines = (repo / ".gitignore").read_text().splitlines()
    assert lines[:2] == ["node_modules", ".asv/"]


def test_a_symlinked_gitignore_is_not_followed(tmp_path: Path, repo: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("theirs\n")
    (repo / ".gitignore").symlink_to(outside)
    out = nx(repo, "init", *PIN)
    assert out.returncode == 0, out.stderr
    assert outside.read_text() == "theirs\n"
    assert "kept .gitignore (a symbolic link or not a file: not followed)" in out.stdout
    assert "/site/" in out.stdout


def test_folders_already_ignored_or_tracked_are_left_alone(repo: Path) -> None:
    (repo / ".gitignore").write_text("/.asv\nsite/\n")
    (repo / "out" / "demo").mkdir(parents=True)
    (repo / "out" / "demo" / "mine.txt").write_text("tracked\n")
    git(repo, "add", "-A")
    out = nx(repo, "init", *PIN)
    assert out.returncode == 0, out.stderr
    assert (repo / ".gitignore").read_text() == "/.asv\nsite/\n/neuron-check/\n"
    assert "out/demo/ holds tracked files: not ignored" in out.stdout
    check = nx(repo, "init", "--check", *PIN)
    assert "missing in .gitignore" not in check.stdout


def test_every_output_folder_of_the_docs_commands_is_ignored(repo: Path) -> None:
    """publish's `site/`, doctor --neuron-check's `neuron-check/`, demo's `out/demo/`, and
    `.asv/` are ignored by what init writes (git decides, not a string compare)."""
    from neuronasv.commands import command_module

    assert nx(repo, "init", *PIN).returncode == 0
    import argparse

    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers()
    for name in ("publish", "doctor", "demo"):
        command_module(name).add_parser(sub)
    outs = {
        "publish": ap.parse_args(["publish"]).out,
        "doctor": ap.parse_args(["doctor", "--neuron-check"]).out,
        "demo": ap.parse_args(["demo"]).out,
    }
    for name, folder in outs.items():
        probe = os.path.join(os.path.relpath(folder) if os.path.isabs(folder) else folder, "x")
        r = subprocess.run(["git", "check-ignore", "-q", "--no-index", probe], cwd=repo,
                           check=False)  # fmt: skip
        assert r.returncode == 0, (name, folder)


# ----------------------------------------------------------------------------- the module


def test_a_near_module_name_gets_did_you_mean_and_nothing_is_written(repo: Path) -> None:
    """Issue 29: `--workloads ropekit.workload` beside ropekit/workloads.py wrote a second,
    example module."""
    (repo / "ropekit").mkdir()
    (repo / "ropekit" / "__init__.py").write_text("")
    (repo / "ropekit" / "workloads.py").write_text("# the real one\n")
    out = nx(repo, "init", "--workloads", "ropekit.workload", *PIN)
    assert out.returncode == 2
    assert "did you mean ropekit.workloads?" in out.stderr
    assert not (repo / "ropekit" / "workload.py").exists()
    assert not (repo / "asv.conf.json").exists()
    fresh = nx(repo, "init", "--workloads", "ropekit.bench_workloads_v2_new", *PIN)
    assert fresh.returncode == 0, fresh.stderr  # not near anything: the example is written
    assert "wrote ropekit/bench_workloads_v2_new.py" in fresh.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--workloads", "not a module", *PIN], "is not a module name"),
        (["--workloads", "class.wl", *PIN], "is not a module name"),
        (["--ref", "abc", "--from", "acme/neuronasv"], "is not a full commit hash"),
    ],
)
def test_usage_errors_write_nothing(repo: Path, args: list[str], message: str) -> None:
    out = nx(repo, "init", *args)
    assert out.returncode == 2 and message in out.stderr, out.stderr
    assert sorted(p.name for p in repo.iterdir()) == [".git"]


def test_outside_a_git_repository_is_a_usage_error(tmp_path: Path) -> None:
    out = nx(tmp_path, "init", *PIN)
    assert out.returncode == 2 and "not inside a git repository" in out.stderr


def test_caller_workflows_stay_within_40_lines() -> None:
    src = scaffold.Source("acme/neuronasv", SHA)
    files = scaffold.plan("/nonexistent", project="p", module="p_workloads", branch="main",
                          source=src)  # fmt: skip
    lines = sum(len(t.splitlines()) for k, t in files.items() if k.startswith(".github/"))
    assert lines <= 40
