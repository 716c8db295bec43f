"""The one git gateway (store/git.py): one call path, one error, the one fake."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from neuronasv.errors import StoreError
from neuronasv.store.git import Git, GitResult, SubprocessGit, git_for
from tests.fakegit import FakeGit

PKG = Path(__file__).resolve().parents[2] / "neuronasv"


def test_one_error_wording_with_credentials_redacted() -> None:
    fake = FakeGit(
        {("push",): GitResult(128, b"", "fatal: https://x-access-token:s3cr3t@github.com/o/r")}
    )
    git = Git("/r", transport=fake, env={"A": "1"})
    with pytest.raises(StoreError) as info:
        git.run("push", "origin", "main", env={"B": "2"})
    msg = str(info.value)
    assert msg.startswith("git push origin failed in /r (exit 128): fatal: https://")
    assert "s3cr3t" not in msg and "***@github.com" in msg
    assert fake.envs == [{"A": "1", "B": "2"}] and fake.cwds == ["/r"]
    assert info.value.exit_code == StoreError.exit_code
    # check=False hands the result back instead
    assert git.run("push", check=False).returncode == 128


def test_operations_are_built_on_the_one_call() -> None:
    fake = FakeGit(
        {
            ("rev-parse", "--verify"): "a" * 40 + "\n",
            ("rev-parse", "--show-toplevel"): "/top\n",
            ("log",): "subject line\n",
            ("remote", "get-url"): GitResult(2, b"", "error: No such remote 'origin'"),
            ("rev-list", "--first-parent"): "c\nb\na\n",
        }
    )
    git = Git("/r", transport=fake)
    assert git.rev_parse("HEAD") == "a" * 40
    assert git.toplevel() == "/top"
    assert git.subject("x") == "subject line"
    assert git.remote_url() is None
    assert git.ancestors("c", 3) == ["c", "b", "a"]
    assert fake.calls[0] == ["rev-parse", "--verify", "--quiet", "HEAD^{commit}"]
    assert git.at("/other").transport is fake
    with pytest.raises(StoreError, match="not a commit"):
        git.rev_parse("--output=x")  # never passed on as an option
    assert len(fake.calls) == 5


def test_real_git(tmp_path: Path) -> None:
    """The subprocess transport against a real repository (no fake)."""
    assert git_for(tmp_path) is None  # not a repository
    assert git_for(tmp_path / "missing") is None
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    git = git_for(tmp_path)
    assert git is not None and git.is_repo()
    assert git.resolve("HEAD") is None  # no commit yet
    assert git.commit_order(["0" * 40]) == []  # unknown commits are left out
    with pytest.raises(StoreError, match=r"git cat-file -p failed in .* \(exit 128\): fatal"):
        git.text("cat-file", "-p", "nope")
    assert SubprocessGit(timeout=1e-9)(["--version"], cwd=str(tmp_path)).returncode in (0, 124)


def test_nothing_else_starts_git() -> None:
    """Every git process of the package starts in store/git.py."""
    pattern = re.compile(r"""\[\s*["']git["']|["']git["']\s*,\s*["']-C["']""")
    offenders = [
        str(p.relative_to(PKG))
        for p in PKG.rglob("*.py")
        if p.name != "git.py" and pattern.search(p.read_text(encoding="utf-8"))
    ]
    assert offenders == []
