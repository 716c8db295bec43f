"""The demo's example change still applies, and its verdict sentence names the op."""

from __future__ import annotations

import argparse
import io
import os
import subprocess
from collections.abc import Sequence
from typing import Any

import pytest

from neuronasv.analyse.causes import with_causes
from neuronasv.analyse.states import with_states
from neuronasv.demo import DEFAULT_PATCH, verdict_sentence
from neuronasv.model import (
    Finding,
    FindingsDocument,
    OpContribution,
    SeriesId,
    WorkChange,
)
from tests.builders import compare_doc, finding

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_example_patch_applies_to_this_tree() -> None:
    proc = subprocess.run(
        ["git", "apply", "--check", os.path.join(ROOT, DEFAULT_PATCH)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr


def _doc(*findings: Finding, work: tuple[WorkChange, ...] = ()) -> FindingsDocument:
    return with_causes(with_states(compare_doc(*findings, work=work)))


def test_verdict_names_the_cause_from_the_work_evidence() -> None:
    op = finding(
        SeriesId("b.op", (), "rmsnorm.naive", "4x512", "bfloat16", "aten::mul"),
        "regression",
        base=1e-5,
        head=1.4e-5,
        confirmed=True,
        source="rounds",
    )
    total = finding(
        SeriesId("b.total", (), "rmsnorm.naive", "4x512", "bfloat16"),
        "regression",
        base=3e-5,
        head=3.4e-5,
        ci=(1.08, 1.2),
        confirmed=True,
        source="rounds",
        attribution=(OpContribution("aten::mul", 1e-5, 1.4e-5, 4e-6, 0.95, 3.0, 4.0),),
    )
    work = WorkChange(
        "rmsnorm.naive", "4x512", "bfloat16", "aten::mul", "calls", calls_base=3.0, calls_head=4.0
    )
    doc = _doc(op, total, work=(work,))
    sentence = verdict_sentence(doc)
    assert sentence == (
        "Fails (gate: confirmed slower time, 2 rows): rmsnorm.naive — more work in 1/1"
        " configurations; time slower in 1 (+13 % at 4x512 bf16, 1 confirmed). aten::mul 3 → 4"
        " calls."
    )


def test_verdict_without_regression_says_so() -> None:
    assert "No change found" in verdict_sentence(_doc())


def _fake_runner(calls: list[list[str]]) -> Any:
    """Records each command; writes an empty findings document where one is expected."""

    def runner(argv: Sequence[str]) -> int:
        argv = list(argv)
        calls.append(argv)
        if argv[0] in ("compare", "confirm") and "--out" in argv:
            out = argv[argv.index("--out") + 1]
            with open(out, "w", encoding="utf-8") as fh:
                fh.write(_doc().dumps() if "json" in argv else "no change\n")
        return 0

    return runner


def _git_repo(path: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    target = os.path.join(path, "neuronasv", "measure", "workloads", "rmsnorm.py")
    os.makedirs(os.path.dirname(target))
    with open(os.path.join(ROOT, "neuronasv", "measure", "workloads", "rmsnorm.py")) as src:
        text = src.read()
    with open(target, "w", encoding="utf-8") as fh:
        fh.write(text)
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "base"]):
        subprocess.run(["git", "-C", path, *args], check=True, env=env, capture_output=True)
    return path


@pytest.mark.parametrize(
    ("resolved", "machine"), [("cuda", "demo-cuda"), ("neuron", "demo-neuron"), ("cpu", "demo-cpu")]
)
def test_demo_runs_the_backend_auto_resolves_to(tmp_path: Any, resolved: str, machine: str) -> None:
    from neuronasv.demo import DemoOptions, run_demo

    repo = _git_repo(str(tmp_path / "src"))
    calls: list[list[str]] = []
    asked: list[str] = []
    out = io.StringIO()

    def resolve(name: str) -> str:
        asked.append(name)
        return resolved

    run_demo(
        repo,
        str(tmp_path / "out"),
        options=DemoOptions(patch=os.path.join(ROOT, DEFAULT_PATCH)),
        stream=out,
        runner=_fake_runner(calls),
        resolve_backend=resolve,
    )
    assert asked == ["auto"]  # the demo never forces the CPU
    run = next(c for c in calls if c[0] == "run")
    assert run[run.index("--backend") + 1] == resolved
    assert run[run.index("--machine") + 1] == machine
    # No shape override: the suite adds the accelerator shapes for any backend but the CPU.
    assert "NEURONASV_SHAPES" not in os.environ and "--shapes" not in run
    confirm = next(c for c in calls if c[0] == "confirm")
    assert confirm[confirm.index("--backend") + 1] == resolved
    said = out.getvalue()
    note = f"backend {resolved}: the accelerator"
    assert (note in said) is (resolved != "cpu")  # the CPU demo's output is unchanged


def test_every_printed_replay_line_is_a_shell_line_that_gives_the_same_argv(
    tmp_path: Any,
) -> None:
    """Issue 29: the printed `run` line (`--bench rmsnorm\\.(Naive|Fused)\\.` unquoted) was a
    bash syntax error. Each `$ ...` line and the two asv lines parse with `bash -n`, and the
    shell's words are the step's own arguments."""
    import shlex

    from neuronasv.demo import DemoOptions, run_demo

    repo = _git_repo(str(tmp_path / "src"))
    calls: list[list[str]] = []
    example = DemoOptions(patch=os.path.join(ROOT, DEFAULT_PATCH))
    out = io.StringIO()
    run_demo(repo, str(tmp_path / "out"), options=example, stream=out,
             runner=_fake_runner(calls), resolve_backend=lambda n: "cpu")  # fmt: skip
    lines = out.getvalue().splitlines()
    replay = [ln[2:] for ln in lines if ln.startswith("$ ")]
    assert len(replay) == len(calls) and any("(Naive|Fused)" in ln for ln in replay)
    asv = [ln.split("   #")[0].strip() for ln in lines if " --config " in ln]
    assert len(asv) == 2
    for line, argv in zip(replay, calls, strict=True):
        r = subprocess.run(["bash", "-n", "-c", line], capture_output=True, text=True,
                           check=False)  # fmt: skip
        assert r.returncode == 0, (line, r.stderr)
        assert shlex.split(line)[1:] == list(argv)
    for line in asv:
        assert subprocess.run(["bash", "-n", "-c", line], check=False).returncode == 0, line


def test_an_interrupted_step_interrupts_the_demo_and_a_relative_repo_works(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step that exits 130 (Ctrl-C) ends the demo with KeyboardInterrupt (the CLI's 130),
    not "failed with exit code 130"; ``--repo .`` (relative) clones the right checkout."""
    from neuronasv.cli import run_parsed
    from neuronasv.demo import DemoOptions, run_demo

    repo = _git_repo(str(tmp_path / "src"))
    monkeypatch.chdir(repo)
    seen: list[list[str]] = []

    def interrupted(argv: Sequence[str]) -> int:
        seen.append(list(argv))
        return 130

    with pytest.raises(KeyboardInterrupt):
        example = DemoOptions(patch=os.path.join(ROOT, DEFAULT_PATCH))
        run_demo(".", str(tmp_path / "out"), options=example,
                 stream=io.StringIO(), runner=interrupted,
                 resolve_backend=lambda n: "cpu")  # fmt: skip
    assert [a[0] for a in seen] == ["run"]
    assert os.path.isfile(os.path.join(str(tmp_path / "out"), "repo", "neuronasv", "measure",
                                       "workloads", "rmsnorm.py"))  # fmt: skip

    def ctrl_c(_: object) -> int:
        raise KeyboardInterrupt

    assert run_parsed(argparse.Namespace(func=ctrl_c, command="demo")) == 130
