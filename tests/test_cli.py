"""The dispatcher: every listed command exists, imports on its own and has --help."""

from __future__ import annotations

import argparse
import ast
import io
import subprocess
import sys
from pathlib import Path

import pytest

from neuronasv.cli import COMMANDS, build_parser, main


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_parses_its_help(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser(name)
    with pytest.raises(SystemExit) as info:
        parser.parse_args([name, "--help"])
    assert info.value.code == 0
    assert f"usage: neuronasv {name}" in capsys.readouterr().out


def test_top_level_help_lists_commands_without_importing_them() -> None:
    code = (
        "import sys\n"
        "from neuronasv.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('torch', 'scipy', 'asv', 'neuronasv.commands.compare')"
        " if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    for name in COMMANDS:
        assert name in out
    assert "HEAVY []" in out


def test_no_command_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "COMMAND" in capsys.readouterr().out


def test_library_errors_become_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    # A findings file that does not exist is a usage/results error, never a traceback.
    code = main(["summary", "--report", "/nonexistent/findings.json"])
    err = capsys.readouterr().err
    assert code == 2  # argparse: the option's own check, before any work
    assert "error: argument --report: /nonexistent/findings.json: no such file" in err
    assert "Traceback" not in err


def _actions(name: str) -> dict[str, argparse.Action]:
    parser = build_parser(name)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {
        a.option_strings[-1] if a.option_strings else a.dest: a
        for a in sub.choices[name]._actions
        if not isinstance(a, argparse._HelpAction)
    }


@pytest.mark.parametrize("name", ["confirm", "regressions", "compare"])
def test_every_option_has_help(name: str) -> None:
    missing = [opt for opt, a in _actions(name).items() if not a.help and opt.startswith("--")]
    assert not missing, f"{name}: options without help: {missing}"


def test_regressions_machine_help_is_its_own() -> None:
    assert _actions("regressions")["--machine"].help != _actions("compare")["--machine"].help
    assert "history" in str(_actions("regressions")["--machine"].help)


def test_profile_table_is_sorted_by_the_median_it_shows() -> None:
    """One op with a huge outlier sample has the larger sum but the smaller median."""
    from rich.console import Console

    from neuronasv.model.profile import OpProfile, WorkloadProfile
    from neuronasv.report.profile import render_profile

    spiky = OpProfile("aten::spiky", 1.0, (1.0, 1.0, 1.0, 1.0, 1000.0), (1.0,) * 5)
    steady = OpProfile("aten::steady", 1.0, (5.0, 5.0, 5.0, 5.0, 5.0), (1.0,) * 5)
    prof = WorkloadProfile(
        "w", "cpu", "4x4", "float32", (10.0,) * 5, (spiky, steady), device_time_is_cpu=True
    )
    console = Console(width=200, record=True, file=io.StringIO())
    render_profile(prof, console)
    text = console.export_text()
    assert text.index("aten::steady") < text.index("aten::spiky")


def test_profile_shows_the_module_rollup_when_the_workload_has_one() -> None:
    from rich.console import Console

    from neuronasv.commands.profile import render_profile
    from neuronasv.model.profile import ModuleProfile, OpProfile, WorkloadProfile

    mm = OpProfile("aten::mm", 2.0, (8.0,), (8.0,), modules={"b.attn": 0.25, "b.mlp": 0.75})
    mods = (
        ModuleProfile("", (8.0,), (0.0,)),
        ModuleProfile("b", (8.0,), (0.0,)),
        ModuleProfile("b.attn", (2.0,), (2.0,)),
        ModuleProfile("b.mlp", (6.0,), (6.0,)),
    )
    prof = WorkloadProfile("w", "cuda", "4x4", "float32", (8.0,), (mm,), modules=mods)
    console = Console(width=200, record=True, file=io.StringIO())
    render_profile(prof, console)
    text = console.export_text()
    assert "by module" in text
    row = next(line for line in text.splitlines() if "b.mlp" in line)
    assert "75 %" in row and "aten::mm 6.00 µs" in row
    plain = Console(width=200, record=True, file=io.StringIO())
    render_profile(WorkloadProfile("w", "cuda", "4x4", "float32", (8.0,), (mm,)), plain)
    assert "by module" not in plain.export_text()


COMMANDS_DIR = Path(__file__).resolve().parents[1] / "neuronasv" / "commands"
#: Modules of neuronasv.commands that are not commands (shared by all of them).
SHARED = {"__init__", "args"}


def _imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, at the top or inside a function (ast, not a regex)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "import_module":
            arg = node.args[0] if node.args else None
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                found.add(arg.value)
    return found


def test_every_command_module_is_listed_and_every_listed_command_has_a_module() -> None:
    modules = {p.stem for p in COMMANDS_DIR.glob("*.py")} - SHARED
    assert modules == {name.replace("-", "_") for name in COMMANDS}


@pytest.mark.parametrize("path", sorted(COMMANDS_DIR.glob("*.py")), ids=lambda p: p.stem)
def test_commands_do_not_import_each_other(path: Path) -> None:
    """Shared logic lives in the stages (analyse, report) or in commands/args.py."""
    commands = {f"neuronasv.commands.{name}" for name in COMMANDS}
    bad = sorted(_imported_modules(path) & commands)
    assert not bad, f"{path.name} imports command module(s) {bad}"


def test_the_import_check_sees_imports_inside_functions(tmp_path: Path) -> None:
    src = tmp_path / "x.py"
    src.write_text(
        "def f():\n    from neuronasv.commands.regressions import newest_for\n"
        "    from neuronasv.commands import compare\n"
    )
    found = _imported_modules(src)
    assert {"neuronasv.commands.regressions", "neuronasv.commands.compare"} <= found


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_one_line_help_is_written_once(name: str) -> None:
    """The command's own parser carries the same one-line help as ``neuronasv --help``."""
    parser = build_parser(name)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    shown = {a.dest: a.help for a in sub._choices_actions}
    assert shown[name] == COMMANDS[name]
    text = (COMMANDS_DIR / f"{name.replace('-', '_')}.py").read_text(encoding="utf-8")
    assert COMMANDS[name] not in text, f"{name}.py repeats its one-line help"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_repo_is_always_a_checkout(name: str) -> None:
    """``--repo`` takes a folder in every command that has it; ``owner/name`` is
    ``--github-repo`` (comment, status keep ``--repo`` hidden as a deprecated alias)."""
    from neuronasv.commands.args import repo_dir

    actions = _actions(name)
    if name == "store":
        parser = build_parser(name)
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        store = sub.choices[name]
        inner = next(a for a in store._actions if isinstance(a, argparse._SubParsersAction))
        push = inner.choices["push"]._actions
        actions = {a.option_strings[-1]: a for a in push if a.option_strings}
    repo = actions.get("--repo")
    if name in ("comment", "status"):
        assert repo is not None and repo.help == argparse.SUPPRESS
        assert repo.dest == "github_repo_deprecated"
        assert actions["--github-repo"].metavar == "OWNER/NAME"
    elif repo is not None:
        assert repo.type is repo_dir and repo.metavar == "DIR", name
        assert str(repo.help).startswith("git checkout"), name


def test_confirm_samples_per_round_by_backend_unless_told() -> None:
    """Single-iteration samples, 10 a round on the CPU and 30 on an accelerator (where the
    median's sampling error is most of the noise); the options win."""
    from neuronasv.model import FindingsDocument, RunRef
    from neuronasv.steps.confirm import default_sampling

    def doc(backend: str | None) -> FindingsDocument:
        fp = {"backend": backend} if backend else {}
        return FindingsDocument("compare", RunRef("a" * 40, "m", fp), RunRef("b" * 40, "m", fp))

    assert default_sampling(None, None, doc("cpu")) == (10, 1)
    assert default_sampling(None, None, doc(None)) == (10, 1)
    assert default_sampling(None, None, doc("cuda")) == (30, 1)
    assert default_sampling(None, None, doc("neuron")) == (30, 1)
    assert default_sampling(40, 3, doc("cuda")) == (40, 3)

