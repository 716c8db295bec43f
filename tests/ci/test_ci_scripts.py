"""The ci/ scripts as the workflows call them: planning with backfill, and the rehearsal."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from neuronasv.store.gitstore import ResultsStore
from tests.ci.notorch import BLOCK_TORCH

ROOT = Path(__file__).resolve().parents[2]
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env={**os.environ, **GIT_ENV},
                          capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture()
def project(tmp_path: Path) -> tuple[Path, Path, list[str]]:
    """A checkout holding ci/plan.sh + ci/lib.sh, five commits, and a bare remote."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    work = tmp_path / "work"
    (work / "ci").mkdir(parents=True)
    for name in ("plan.sh", "lib.sh"):
        shutil.copy(ROOT / "ci" / name, work / "ci" / name)
    git(work, "init", "-q", "-b", "main")
    commits = []
    for i in range(5):
        (work / "f.txt").write_text(f"{i}\n")
        git(work, "add", "-A")
        git(work, "commit", "-q", "-m", f"c{i}")
        commits.append(git(work, "rev-parse", "HEAD"))
    git(work, "remote", "add", "origin", str(remote))
    git(work, "push", "-q", "origin", "main")
    return work, remote, commits


def plan(work: Path, remote: Path, **env: str) -> subprocess.CompletedProcess[str]:
    nx = str(Path(sys.executable).parent / "neuronasv")
    full = {**os.environ, **GIT_ENV, "NEURONASV_BIN": nx, **env}
    full.pop("GITHUB_OUTPUT", None)
    return subprocess.run(["bash", "ci/plan.sh", "--remote", str(remote), "HEAD"], cwd=work,
                          env=full, capture_output=True, text=True, check=False, timeout=300)


@pytest.mark.slow
def test_plan_backfills_missing_commits_oldest_first(
    project: tuple[Path, Path, list[str]]
) -> None:
    work, remote, c = project
    store = ResultsStore(work, remote=str(remote), env=GIT_ENV, sleep=lambda _s: None)
    store.write({f"m/{c[1][:8]}-py.json": b"{}", f"m/{c[3][:8]}-py.json": b"{}",
                 f"m-gpu/{c[2][:8]}-py.json": b"{}"}, "some stored")

    r = plan(work, remote, NEURONASV_MACHINE="m", NEURONASV_BACKFILL="3")
    assert r.returncode == 0, r.stderr
    # Window: c4 (pushed) + c3, c2, c1; c3 and c1 are stored for machine m.
    assert f"commits={c[2]} {c[4]}\n" in r.stdout
    assert 'shards=[{"name":"all","bench":"","machine":"m"}]' in r.stdout

    # Two shards: a commit missing for either shard's machine is run (for all shards).
    r = plan(work, remote, NEURONASV_MACHINE="m", NEURONASV_BACKFILL="3",
             NEURONASV_SHARDS='[{"name":"all","bench":"a"},{"name":"gpu","bench":"b"}]')
    assert r.returncode == 0, r.stderr
    assert f"commits={c[1]} {c[2]} {c[3]} {c[4]}\n" in r.stdout
    assert ('shards=[{"name":"all","bench":"a","machine":"m"},'
            '{"name":"gpu","bench":"b","machine":"m-gpu"}]') in r.stdout

    r = plan(work, remote, NEURONASV_MACHINE="m", NEURONASV_BACKFILL="0")
    assert r.returncode == 0 and f"commits={c[4]}\n" in r.stdout

    bad = plan(work, remote, NEURONASV_SHARDS='[{"name":"a b"}]')
    assert bad.returncode != 0 and "[A-Za-z0-9._-]" in bad.stderr


@pytest.mark.slow
def test_rehearsal_end_to_end() -> None:
    """ci/rehearse.sh: two pushes (run → bisect → store → detect → publish), a PR with an
    injected aten::mul regression (compare → confirm → artifact → validated comment on the
    loopback GitHub naming the op), a tampered artifact refused, and a push of 4 commits
    measured only at its ends whose change point the next push's bisect step narrows to the
    culprit the regression issue names."""
    r = subprocess.run(["bash", str(ROOT / "ci" / "rehearse.sh")], cwd=ROOT,
                       capture_output=True, text=True, check=False, timeout=3600)
    tail = (r.stdout + r.stderr)[-6000:]
    assert r.returncode == 0, tail
    assert "REHEARSAL OK" in r.stdout, tail
    assert "comment names aten::mul" in r.stdout, tail
    assert "issue names the culprit:" in r.stdout, tail


NO_TORCH = BLOCK_TORCH + r'''from neuronasv.cli import build_parser
p = build_parser()
sub = next(a for a in p._actions if a.dest == "command")
need = {"store", "regressions", "publish", "comment", "status", "summary"}
missing = need - set(sub.choices)
assert not missing, f"commands missing without torch: {missing}"
import neuronasv.github.issues_sync, neuronasv.store.gitstore
sys.argv = ["pr_comment.py", "--help"]
try:
    runpy.run_path("ci/pr_comment.py", run_name="__main__")
except SystemExit as exc:
    assert exc.code == 0, exc.code
assert "torch" not in sys.modules
print("OK without torch")
'''


def test_hosted_jobs_need_no_torch() -> None:
    """ci/install-light.sh installs neuronasv without torch for the hosted jobs: the commands
    they run must import without it."""
    r = subprocess.run([sys.executable, "-c", NO_TORCH], cwd=ROOT, capture_output=True,
                       text=True, check=False, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "OK without torch" in r.stdout
