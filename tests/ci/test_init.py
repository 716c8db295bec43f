"""``neuronasv init``: what it writes, that it never overwrites, and ``--check``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from neuronasv.ci import scaffold

SHA = "0123456789abcdef0123456789abcdef01234567"


def nx(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "neuronasv", *args], cwd=repo,
                          capture_output=True, text=True, check=False)  # fmt: skip


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "My-Kernels"
    r.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "trunk"], cwd=r, check=True)
    return r


def test_init_writes_everything_once_and_check_says_up_to_date(repo: Path) -> None:
    (repo / ".gitignore").write_text("build/\n")
    first = nx(repo, "init", "--ref", SHA, "--from", "acme/neuronasv")
    assert first.returncode == 0, first.stderr
    for rel in ("asv.conf.json", "benchmarks/__init__.py", "benchmarks/devtime.py",
                ".github/workflows/neuronasv.yml", ".github/workflows/neuronasv-comment.yml",
                "my_kernels_workloads.py"):  # fmt: skip
        assert (repo / rel).is_file(), rel
        assert f"wrote {rel}" in first.stdout
    assert (repo / ".gitignore").read_text() == "build/\n.asv/\n"
    conf = (repo / "asv.conf.json").read_text()
    assert '"project": "My-Kernels"' in conf and '"branches": ["trunk"]' in conf
    assert 'WORKLOADS = "my_kernels_workloads"' in (repo / "benchmarks/devtime.py").read_text()
    wf = (repo / ".github/workflows/neuronasv.yml").read_text()
    assert f"acme/neuronasv/.github/workflows/neuronasv-commit.yml@{SHA}" in wf
    assert f"git+https://github.com/acme/neuronasv@{SHA}" in wf
    assert "branches: [trunk]" in wf
    (repo / "asv.conf.json").write_text("{}\n")  # the user's edit
    again = nx(repo, "init", "--ref", SHA, "--from", "acme/neuronasv")
    assert again.returncode == 0
    assert "kept asv.conf.json (exists; never overwritten)" in again.stdout
    assert (repo / "asv.conf.json").read_text() == "{}\n"
    assert (repo / ".gitignore").read_text() == "build/\n.asv/\n"
    check = nx(repo, "init", "--check", "--ref", SHA, "--from", "acme/neuronasv")
    assert check.returncode == 1
    assert check.stdout.strip() == (
        "differs from what init writes now (stale or edited): asv.conf.json"
    )


def test_check_lists_missing_and_a_stale_pin(repo: Path) -> None:
    assert nx(repo, "init", "--ref", SHA).returncode == 0
    (repo / "benchmarks" / "devtime.py").unlink()
    newer = "f" * 40
    check = nx(repo, "init", "--check", "--ref", newer)
    assert check.returncode == 1
    lines = check.stdout.splitlines()
    assert "missing: benchmarks/devtime.py" in lines
    assert "differs from what init writes now (stale or edited): .github/workflows/neuronasv.yml" \
        in lines  # fmt: skip
    assert nx(repo, "init", "--check", "--ref", SHA).returncode == 1  # devtime.py still missing


def test_an_existing_workloads_module_is_used_as_it_is(repo: Path) -> None:
    (repo / "pkg").mkdir()
    (repo / "pkg" / "wl.py").write_text("# mine\n")
    out = nx(repo, "init", "--workloads", "pkg.wl", "--ref", SHA)
    assert out.returncode == 0, out.stderr
    assert (repo / "pkg" / "wl.py").read_text() == "# mine\n"
    assert "pkg/wl.py" not in out.stdout
    assert 'WORKLOADS = "pkg.wl"' in (repo / "benchmarks/devtime.py").read_text()
    assert nx(repo, "init", "--check", "--ref", SHA).stdout.strip() == "up to date"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--workloads", "not a module", "--ref", SHA], "is not a module name"),
        (["--ref", "abc"], "cannot tell which neuronasv commit"),
    ],
)
def test_usage_errors_write_nothing(repo: Path, args: list[str], message: str) -> None:
    out = nx(repo, "init", *args)
    assert out.returncode == 2 and message in out.stderr
    assert sorted(p.name for p in repo.iterdir()) == [".git"]


def test_outside_a_git_repository_is_a_usage_error(tmp_path: Path) -> None:
    out = nx(tmp_path, "init", "--ref", SHA)
    assert out.returncode == 2 and "not inside a git repository" in out.stderr


def test_caller_workflows_stay_within_40_lines() -> None:
    src = scaffold.Source("acme/neuronasv", SHA)
    files = scaffold.plan("/nonexistent", project="p", module="p_workloads", branch="main",
                          source=src)  # fmt: skip
    lines = sum(len(t.splitlines()) for k, t in files.items() if k.startswith(".github/"))
    assert lines <= 40
