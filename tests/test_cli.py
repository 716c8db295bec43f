"""The dispatcher: every listed command exists, imports on its own and has --help."""

from __future__ import annotations

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
