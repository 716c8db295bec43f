"""The demo's example change still applies, and its verdict sentence names the op."""

from __future__ import annotations

import argparse
import io
import os
import subprocess
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


class _FakeSteps:
    """Stands in for :mod:`neuronasv.api`: records each step's options, returns documents
    the demo can write (an empty comparison, an empty history)."""

    def __init__(self, interrupt: str | None = None) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.interrupt = interrupt

    def _called(self, name: str, opts: Any) -> None:
        self.calls.append((name, opts))
        if name == self.interrupt:
            raise KeyboardInterrupt

    def run(self, opts: Any) -> Any:
        from neuronasv.steps.measure import RunSummary

        self._called("run", opts)
        return RunSummary(())

    def compare(self, opts: Any) -> FindingsDocument:
        self._called("compare", opts)
        return _doc()

    def confirm(self, opts: Any) -> Any:
        from neuronasv.steps.confirm import Confirmed

        self._called("confirm", opts)
        return Confirmed(_doc(), None)  # type: ignore[arg-type]

    def comment(self, opts: Any) -> Any:
        from neuronasv.steps.comment import Commented

        self._called("comment", opts)
        return Commented("body", dry_run="requests")

    def regressions(self, opts: Any) -> FindingsDocument:
        self._called("regressions", opts)
        return FindingsDocument("history", None, None)

    def publish(self, opts: Any) -> Any:
        import types

        from neuronasv.steps.publish import Published

        self._called("publish", opts)
        report = types.SimpleNamespace(series=0, pages=0, written=(), skipped=0)
        return Published(report=report, index="index.html", seconds=0.0)  # type: ignore[arg-type]


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
    steps = _FakeSteps()
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
        steps=steps,
        resolve_backend=resolve,
    )
    assert asked == ["auto"]  # the demo never forces the CPU
    run = next(o for n, o in steps.calls if n == "run")
    assert (run.backend, run.machine) == (resolved, machine)
    # No shape override: the suite adds the accelerator shapes for any backend but the CPU.
    assert "NEURONASV_SHAPES" not in os.environ and "NEURONASV_SHAPES" not in run.extra_env
    confirm = next(o for n, o in steps.calls if n == "confirm")
    assert confirm.backend == resolved
    said = out.getvalue()
    note = f"backend {resolved}: the accelerator"
    assert (note in said) is (resolved != "cpu")  # the CPU demo's output is unchanged


def test_every_printed_replay_line_is_a_shell_line_that_gives_the_same_step(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 29: the printed `run` line (`--bench rmsnorm\\.(Naive|Fused)\\.` unquoted) was a
    bash syntax error. Issue 31: the demo calls the API, not argv. Each `$ ...` line and the
    two asv lines parse with `bash -n`; each `$ ...` line, parsed by its command's own parser,
    gives the very options the demo passed to that step, and every step the demo called has
    its line (compare and regressions print a line per format and run once)."""
    import shlex

    from neuronasv.cli import build_parser
    from neuronasv.commands import command_module
    from neuronasv.demo import DemoOptions, run_demo

    # An environment default of `neuronasv run` (the command line leaves it to the
    # environment): the demo's own call must read it the same way.
    monkeypatch.setenv("NEURONASV_COMPILE_CACHE", str(tmp_path / "cc"))
    repo = _git_repo(str(tmp_path / "src"))
    steps = _FakeSteps()
    out = io.StringIO()
    example = DemoOptions(patch=os.path.join(ROOT, DEFAULT_PATCH))
    run_demo(repo, str(tmp_path / "out"), options=example, stream=out, steps=steps,
             resolve_backend=lambda n: "cpu")  # fmt: skip
    lines = out.getvalue().splitlines()
    replay = [ln[2:] for ln in lines if ln.startswith("$ ")]
    assert any("(Naive|Fused)" in ln for ln in replay)
    asv = [ln.split("   #")[0].strip() for ln in lines if " --config " in ln]
    assert len(asv) == 2
    replayed = []
    for line in replay:
        r = subprocess.run(["bash", "-n", "-c", line], capture_output=True, text=True,
                           check=False)  # fmt: skip
        assert r.returncode == 0, (line, r.stderr)
        argv = shlex.split(line)[1:]
        args = build_parser(argv[0]).parse_args(argv)
        replayed.append((argv[0], command_module(argv[0]).options(args)))
    assert [n for n, _ in replayed] == [
        "run", "compare", "compare", "confirm", "comment", "regressions", "regressions", "publish"
    ]
    for call in replayed:
        assert call in steps.calls, call
    assert all(call in replayed for call in steps.calls)
    for line in asv:
        assert subprocess.run(["bash", "-n", "-c", line], check=False).returncode == 0, line


def test_the_demo_goes_through_the_api_not_argv() -> None:
    """The demo module imports no command and no argv runner: its steps are the API's."""
    import ast

    import neuronasv.demo as demo_module

    with open(demo_module.__file__, encoding="utf-8") as fh:
        text = fh.read()
    tree = ast.parse(text)
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
            imported.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            imported.update(a.name for a in node.names)
    assert not {m for m in imported if m.startswith("neuronasv.commands")}, imported
    assert "neuronasv.cli" not in imported
    assert "neuronasv.api" in imported
    assert "run_command" not in text


def test_an_interrupted_step_interrupts_the_demo_and_a_relative_repo_works(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step interrupted (Ctrl-C) ends the demo with KeyboardInterrupt (the CLI's 130);
    ``--repo .`` (relative) clones the right checkout."""
    from neuronasv.cli import run_parsed
    from neuronasv.demo import DemoOptions, run_demo

    repo = _git_repo(str(tmp_path / "src"))
    monkeypatch.chdir(repo)
    steps = _FakeSteps(interrupt="run")

    with pytest.raises(KeyboardInterrupt):
        example = DemoOptions(patch=os.path.join(ROOT, DEFAULT_PATCH))
        run_demo(".", str(tmp_path / "out"), options=example,
                 stream=io.StringIO(), steps=steps,
                 resolve_backend=lambda n: "cpu")  # fmt: skip
    assert [n for n, _ in steps.calls] == ["run"]
    assert os.path.isfile(os.path.join(str(tmp_path / "out"), "repo", "neuronasv", "measure",
                                       "workloads", "rmsnorm.py"))  # fmt: skip

    def ctrl_c(_: object) -> int:
        raise KeyboardInterrupt

    assert run_parsed(argparse.Namespace(func=ctrl_c, command="demo")) == 130
