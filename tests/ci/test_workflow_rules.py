"""GitHub's start-up rules (``neuronasv/ci/wfrules.py``) on every workflow of this repository and
every caller ``neuronasv init`` writes, as written and with each documented customisation;
and each rule shown able to fail, the bisect permission first (issue 37: the callers granted
``contents: write`` alone while neuronasv-commit.yml's bisect job asks ``pull-requests:
read``, so GitHub would have refused every run of them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from neuronasv.ci import scaffold, wfrules

ROOT = Path(__file__).resolve().parents[2]
WF = ROOT / ".github" / "workflows"
SHA = "0123456789abcdef0123456789abcdef01234567"
SOURCE = scaffold.Source("acme/neuronasv", SHA)
CALLER = ".github/workflows/neuronasv.yml"
COMMENT = ".github/workflows/neuronasv-comment.yml"


def ours() -> dict[str, dict[str, Any]]:
    return {f".github/workflows/{p.name}": wfrules.parse(p.read_text()) for p in WF.glob("*.yml")}


def reusable() -> dict[str, dict[str, dict[str, Any]]]:
    return {SOURCE.repository: {p.name: wfrules.parse(p.read_text())
                                for p in WF.glob("neuronasv-*.yml")}}  # fmt: skip


def init_callers(tmp_path: Path) -> dict[str, dict[str, Any]]:
    files = scaffold.plan(str(tmp_path), project="widgets", module="widgets.workloads",
                          branch="main", source=SOURCE)  # fmt: skip
    return {rel: wfrules.parse(text) for rel, text in files.items()
            if rel in scaffold.WORKFLOW_FILES}  # fmt: skip


def lines(files: dict[str, dict[str, Any]], called: Any = None) -> list[str]:
    return [v.line() for v in wfrules.check(files, called)]


def test_every_workflow_of_this_repository_keeps_the_rules() -> None:
    files = ours()
    assert len(files) == 8 and lines(files) == []
    # Not vacuous: the calls were resolved and read (outputs of called workflows used).
    benchmarks = json.dumps(files[".github/workflows/benchmarks.yml"])
    assert "needs.commit.outputs.regression-detected" in benchmarks


Files = dict[str, dict[str, Any]]


def _documented(callers: Files) -> list[tuple[str, Files]]:
    """init's callers with each customisation docs/getting-started.md and docs/runners.md
    name: other inputs, another label, more push branches, Pages and issues jobs (copied from
    benchmarks.yml, pointed at the pinned workflows), a renamed job."""
    out = []

    def variant(name: str, edit: Any) -> None:
        files = json.loads(json.dumps(callers))
        edit(files[CALLER], files)
        out.append((name, files))

    every_input = {"backend": "cpu", "metrics": "devtime", "bench": "gelu", "machine": "trn2",
                   "runner-labels": '["self-hosted", "trn2"]', "python": "/opt/venv/bin/python"}
    variant("inputs", lambda wf, _: [wf["jobs"][j]["with"].update(every_input)
                                     for j in ("commit", "pr")])  # fmt: skip
    variant("commit-only inputs", lambda wf, _: wf["jobs"]["commit"]["with"].update(
        {"shards": '[{"name": "a", "bench": "x"}]', "site-branch": "gh-pages", "pages": True,
         "traces": False, "backfill": 2, "bisect-minutes": 0, "results-branch": "bench",
         "site-url": "https://example.invalid/"}))  # fmt: skip
    variant("pr-only inputs", lambda wf, _: wf["jobs"]["pr"]["with"].update({"rounds": 1}))
    variant("another label", lambda wf, _: wf["jobs"]["pr"].update(
        {"if": wf["jobs"]["pr"]["if"].replace("'benchmark'", "'perf'")}))  # fmt: skip
    variant("push branches", lambda wf, _: wf["on"]["push"]["branches"].append("release"))
    benchmarks = ours()[".github/workflows/benchmarks.yml"]["jobs"]

    def pages_and_issues(wf: dict[str, Any], _: Any) -> None:
        wf["jobs"]["commit"]["with"]["pages"] = True
        issues = dict(benchmarks["issues"])
        issues["uses"] = SOURCE.workflow("neuronasv-issues.yml")
        issues["with"] = {"package": SOURCE.package}
        wf["jobs"]["issues"] = issues
        wf["jobs"]["deploy"] = dict(benchmarks["deploy"])

    variant("pages and issues", pages_and_issues)

    def renamed(wf: dict[str, Any], files: Any) -> None:
        wf["jobs"]["per-commit"] = wf["jobs"].pop("commit")
        wf["name"] = "benchmarks"
        files[COMMENT]["on"]["workflow_run"]["workflows"] = ["benchmarks"]

    variant("renamed job and workflow", renamed)
    return out


def test_every_caller_init_writes_keeps_the_rules(tmp_path: Path) -> None:
    callers = init_callers(tmp_path)
    assert set(callers) == set(scaffold.WORKFLOW_FILES)
    assert lines(callers, reusable()) == []
    for name, files in _documented(callers):
        assert lines(files, reusable()) == [], name


def test_init_grants_exactly_what_the_called_jobs_ask(tmp_path: Path) -> None:
    """Nothing more (least privilege) and nothing less (GitHub refuses): so ``init --check``
    may call any narrower grant unsupported."""
    callers, called = init_callers(tmp_path), reusable()[SOURCE.repository]
    for wf in callers.values():
        for job in wf["jobs"].values():
            callee = called[job["uses"].split("/")[-1].split("@")[0]]
            asked: dict[str, int] = {}
            for inner in callee["jobs"].values():
                for scope, level in wfrules.grants(inner.get("permissions", {})).items():
                    asked[scope] = max(level, asked.get(scope, 0))
            assert wfrules.grants(job["permissions"]) == asked, (job["uses"], asked)


def test_a_commit_caller_granting_contents_write_alone_is_refused(tmp_path: Path) -> None:
    callers = init_callers(tmp_path)
    callers[CALLER]["jobs"]["commit"]["permissions"] = {"contents": "write"}
    assert lines(callers, reusable()) == [
        f"{CALLER}: jobs.commit: neuronasv-commit.yml's job bisect asks pull-requests: read, which"
        " jobs.commit does not grant: GitHub refuses the whole file before any job runs (grant"
        " it in jobs.commit.permissions)"
    ]
    # The same in this repository's own caller; and no permissions at all is the
    # repository's default token (taken as the restricted one).
    files = ours()
    commit = files[".github/workflows/benchmarks.yml"]["jobs"]["commit"]
    commit["permissions"] = {"contents": "write"}
    assert [v.rule for v in wfrules.check(files)] == ["permissions"]
    del callers[CALLER]["jobs"]["commit"]["permissions"]
    said = " ".join(lines(callers, reusable()))
    assert "job store asks contents: write" in said and "pull-requests: read" in said


@pytest.mark.parametrize(
    ("rule", "edit", "says"),
    [
        ("inputs", lambda wf: wf["jobs"]["commit"]["with"].update({"metric": "devtime"}),
         "neuronasv-commit.yml has no input 'metric'"),
        ("inputs", lambda wf: wf["jobs"]["commit"]["with"].update({"backfill": "five"}),
         "input backfill is typed number; 'five' is given"),
        ("inputs", lambda wf: wf["jobs"]["commit"]["with"].update({"traces": "false"}),
         "input traces is typed boolean; 'false' is given"),
        ("inputs", lambda wf: wf["jobs"]["pr"]["with"].pop("package"),
         "neuronasv-pr.yml's required input 'package' is not given"),
        ("secrets", lambda wf: wf["jobs"]["pr"].update({"secrets": {"token": "x"}}),
         "neuronasv-pr.yml declares no secret 'token'"),
        ("needs", lambda wf: wf["jobs"]["pr"].update({"needs": "bench"}),
         "no job 'bench' to need"),
        ("outputs", lambda wf: wf["jobs"].update({"after": {
            "needs": "commit", "runs-on": "ubuntu-latest",
            "if": "needs.commit.outputs.regressed == 'true'", "steps": [{"run": "true"}]}}),
         "commit has no output 'regressed'"),
        ("needs", lambda wf: wf["jobs"].update({"after": {
            "runs-on": "ubuntu-latest", "if": "needs.commit.outputs.regression-detected",
            "steps": [{"run": "true"}]}}),
         "reads needs.commit without needing commit"),
        ("names", lambda wf: wf.update({"name": "benchmarks"}),
         "no workflow is named 'neuronasv'"),
        ("names", lambda wf: wf["jobs"]["pr"].update(
            {"uses": "./.github/workflows/nosuch.yml"}), "calls nosuch.yml: no such workflow"),
    ],
)  # fmt: skip
def test_each_rule_fails_on_a_broken_caller(
    tmp_path: Path, rule: str, edit: Any, says: str
) -> None:
    callers = init_callers(tmp_path)
    edit(callers[CALLER])
    found = wfrules.check(callers, reusable())
    assert [v.rule for v in found] == [rule] and says in found[0].text, [v.line() for v in found]


def test_the_rules_inside_a_reusable_workflow_fail_too() -> None:
    files = ours()
    commit = files[".github/workflows/neuronasv-commit.yml"]
    commit["on"]["workflow_call"]["outputs"]["regression-detected"]["value"] = (
        "${{ jobs.analyse.outputs.regressed }}")  # fmt: skip
    commit["jobs"]["plan"]["outputs"]["shards"] = "${{ steps.nosuch.outputs.shards }}"
    commit["jobs"]["store"]["steps"][0]["with"]["ref"] = "${{ inputs.nosuch }}"
    texts = " | ".join(v.text for v in wfrules.check(files))
    assert "reads jobs.analyse.outputs.regressed, which is not declared" in texts, texts
    assert "reads steps.nosuch, and no step of plan has that id" in texts, texts
    assert "inputs.nosuch is not an input of this workflow" in texts, texts
