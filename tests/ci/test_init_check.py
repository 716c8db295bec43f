"""``neuronasv init --check`` tells a customised line from a stale pin, and ``--update-pins``
moves the pins keeping every customisation (issue 29 item 2)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

SHA = "0123456789abcdef0123456789abcdef01234567"
NEW = "fedcba9876543210fedcba9876543210fedcba98"
PIN = ["--ref", SHA, "--from", "acme/neuronasv"]
WF = ".github/workflows/neuronasv.yml"
COMMENT = ".github/workflows/neuronasv-comment.yml"
RUNNERS = "runner-labels: '[\"self-hosted\"]'"


def nx(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "neuronasv", *args], cwd=repo,
                          capture_output=True, text=True, check=False)  # fmt: skip


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "kernels"
    r.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=r, check=True)
    out = nx(r, "init", *PIN)
    assert out.returncode == 0, out.stderr
    return r


def edit(repo: Path, rel: str, old: str, new: str) -> None:
    text = (repo / rel).read_text()
    assert old in text, (rel, old)
    (repo / rel).write_text(text.replace(old, new, 1))


CUSTOMISED: dict[str, Callable[[Path], None]] = {
    "backend: cpu": lambda r: edit(r, WF, RUNNERS, RUNNERS + ", backend: cpu"),
    "runner labels": lambda r: edit(r, WF, "'[\"self-hosted\"]'", "'[\"self-hosted\",\"gpu\"]'"),
    "another label": lambda r: edit(r, WF, "== 'benchmark'", "== 'perf'"),
    "a second push branch": lambda r: edit(r, WF, 'branches: ["main"]',
                                           'branches: ["main", "release/*"]'),
    "an extra job": lambda r: (r / WF).write_text(
        (r / WF).read_text() + "  hello:\n    runs-on: ubuntu-latest\n    permissions: {}\n"
        "    steps: [{run: echo hi}]\n"),
    "the suite": lambda r: edit(r, "benchmarks/devtime.py", "cpu_shapes=()",
                                'cpu_shapes=["8x512"]'),
    "asv html_dir": lambda r: edit(r, "asv.conf.json", '".asv/html"', '"public"'),
}  # fmt: skip


@pytest.mark.parametrize("change", list(CUSTOMISED))
def test_a_documented_customisation_passes_and_is_listed(repo: Path, change: str) -> None:
    """Issue 29: a deliberate edit such as `backend: cpu` was "stale or edited", exit 1."""
    CUSTOMISED[change](repo)
    check = nx(repo, "init", "--check", *PIN)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "customised: " in check.stdout and "customisations kept" in check.stdout


BROKEN: dict[str, tuple[Callable[[Path], None], str]] = {
    "write-all": (lambda r: edit(r, WF, "permissions: {contents: read}",
                                 "permissions: write-all"), "grants"),
    "pr secrets": (lambda r: edit(r, WF, "permissions: {contents: read}",
                                  "secrets: inherit\n    permissions: {contents: read}"),
                   "passes secrets"),
    "top-level write": (lambda r: edit(r, WF, "permissions: {}", "permissions: {issues: write}"),
                        "permissions grant issues: write"),
    "a narrower permission": (lambda r: edit(r, COMMENT, "statuses: write", "statuses: none"),
                              "does not grant statuses: write, which jobs of"
                              " neuronasv-comment.yml ask: GitHub refuses the whole file"),
    "the caller of issue 37": (lambda r: edit(r, WF, "      pull-requests: read", ""),
                               "jobs.commit does not grant pull-requests: read"),
    "an input typo": (lambda r: edit(r, WF, RUNNERS, RUNNERS + ", metric: devtime"),
                      "jobs.commit.with.metric: neuronasv-commit.yml has no input 'metric'"),
    "a string for a number": (lambda r: edit(r, WF, RUNNERS, RUNNERS + ", bisect-minutes: '5'"),
                              "input bisect-minutes is typed number; '5' is given"),
    "push elsewhere": (lambda r: edit(r, WF, 'branches: ["main"]', 'branches: ["dev"]'),
                       "without the default branch 'main'"),
    "bare package": (lambda r: edit(r, COMMENT, f'"git+https://github.com/acme/neuronasv@{SHA}"',
                                    '"neuronasv"'), "not the neuronasv its workflow is pinned"),
    "another repository": (lambda r: edit(r, COMMENT, "acme/neuronasv/.github", "evil/x/.github"),
                           "calls evil/x"),
    "job removed": (lambda r: (r / COMMENT).write_text(
        (r / COMMENT).read_text().split("jobs:")[0] + "jobs: {}\n"), "no job calls"),
    "environment": (lambda r: edit(r, "asv.conf.json", '"existing"', '"virtualenv"'),
                    "needs 'existing'"),
    "missing file": (lambda r: (r / "benchmarks" / "devtime.py").unlink(),
                     "missing: benchmarks/devtime.py"),
    "not yaml": (lambda r: (r / WF).write_text("jobs: [\n"), "not readable as YAML"),
    "module gone": (lambda r: (r / "kernels_workloads.py").rename(r / "kernel_workloads.py"),
                    "missing: the workloads module kernels_workloads (the suite imports it);"
                    " did you mean kernel_workloads?"),
}  # fmt: skip


@pytest.mark.parametrize("change", list(BROKEN))
def test_an_unsupported_edit_fails_and_says_what(repo: Path, change: str) -> None:
    apply, says = BROKEN[change]
    apply(repo)
    check = nx(repo, "init", "--check", *PIN)
    assert check.returncode == 1, check.stdout
    assert says in check.stdout, check.stdout


def test_a_stale_pin_is_told_from_a_customisation_and_update_pins_keeps_it(repo: Path) -> None:
    CUSTOMISED["backend: cpu"](repo)
    newer = ["--ref", NEW, "--from", "acme/neuronasv"]
    check = nx(repo, "init", "--check", *newer)
    assert check.returncode == 1
    lines = check.stdout.splitlines()
    stale = [ln for ln in lines if ln.startswith("stale pin: ")]
    assert len(stale) == 3, lines  # commit, pr, comment: the uses and package of each
    assert f"jobs.commit pins neuronasv-commit.yml and package at {SHA[:12]}" in stale[0]
    assert any(ln.startswith("customised: ") and "backend = 'cpu'" in ln for ln in lines)
    assert "neuronasv init --update-pins" in check.stdout
    assert not any("benchmarks/" in ln for ln in lines)  # a docs link's commit is no edit
    upd = nx(repo, "init", "--update-pins", *newer)
    assert upd.returncode == 0, upd.stderr
    text = (repo / WF).read_text()
    assert SHA not in text and text.count(NEW) == 5 and "backend: cpu" in text
    again = nx(repo, "init", "--check", *newer)
    assert again.returncode == 0, again.stdout
    assert "customised: .github/workflows/neuronasv.yml: jobs.commit.with.backend = 'cpu'" \
        in again.stdout  # fmt: skip


def test_check_reads_the_repository_from_the_callers_when_the_package_records_none(
    repo: Path,
) -> None:
    """A package that records no GitHub repository: `--check` without `--from` uses the one
    the callers pin (recorded, not guessed) and judges the commit."""
    from neuronasv.ci import scaffold

    src = scaffold.workflows_source(recorded=scaffold.recorded(str(repo)), origin=(None, NEW, ""))
    assert (src.repository, src.commit, src.how) == (
        "acme/neuronasv", NEW, "the caller workflows already here")  # fmt: skip
