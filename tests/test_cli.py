"""The dispatcher: every listed command exists, imports on its own and has --help."""

from __future__ import annotations

import argparse
import io
import subprocess
import sys

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

    from neuronasv.commands.profile import render_profile
    from neuronasv.model.profile import OpProfile, WorkloadProfile

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
    assert "75.0%" in row and "aten::mm 6.00 µs" in row
    plain = Console(width=200, record=True, file=io.StringIO())
    render_profile(WorkloadProfile("w", "cuda", "4x4", "float32", (8.0,), (mm,)), plain)
    assert "by module" not in plain.export_text()
