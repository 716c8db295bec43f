"""One table of exit codes (issue 29 item 5): the README's, every command's ``--help`` and the
error tree agree (``compare --help`` said 9 for withheld verdicts; the code exits 10)."""

from __future__ import annotations

import argparse
import inspect
import re
from pathlib import Path

import pytest

from neuronasv import errors
from neuronasv.commands import COMMANDS, command_module
from neuronasv.errors import EXIT_CODES, INTERNAL_ERROR_EXIT

ROOT = Path(__file__).resolve().parents[1]


def _help(name: str) -> str:
    parser = argparse.ArgumentParser(prog="neuronasv")
    command_module(name).add_parser(parser.add_subparsers())
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return " ".join(sub.choices[name].format_help().split())


def test_the_readme_table_is_the_one_table() -> None:
    text = (ROOT / "README.md").read_text()
    rows = re.findall(r"^\| (\d+) \| ([^|]+) \| ([^|]+) \|$", text, flags=re.M)
    assert {int(c): (n.strip(), m.strip()) for c, n, m in rows} == EXIT_CODES


def test_every_error_class_exits_with_a_code_of_the_table() -> None:
    classes = [c for _, c in inspect.getmembers(errors, inspect.isclass)
               if issubclass(c, errors.NeuronasvError)]  # fmt: skip
    assert len(classes) > 10
    for cls in classes:
        assert cls.exit_code in EXIT_CODES, cls
    assert INTERNAL_ERROR_EXIT in EXIT_CODES and 130 in EXIT_CODES
    assert errors.VerdictsWithheld.exit_code == 10


@pytest.mark.parametrize("name", list(COMMANDS))
def test_each_commands_help_lists_its_codes_from_the_table(name: str) -> None:
    text = _help(name)
    assert text.count("Exit codes:") == 1, name
    listed = text.split("Exit codes:", 1)[1].split(".", 1)[0].strip()
    entries = re.findall(r"(?:^|, )(\d+) ([^,(]+?)(?= \(|,|$)", listed)
    codes = {int(c) for c, _ in entries}
    assert {0, 2, INTERNAL_ERROR_EXIT, 130} <= codes, (name, listed)
    for code, label in entries:
        assert label.strip() == EXIT_CODES[int(code)][0], (name, code, label)
    for mentioned in re.findall(r"\bexit (\d+)\b", text, flags=re.I):
        assert int(mentioned) in codes, (name, mentioned, "said in the help, not listed")


def test_compare_says_10_for_withheld_verdicts() -> None:
    listed = _help("compare").split("Exit codes:", 1)[1]
    assert "10 verdicts withheld" in listed and " 9 " not in listed
