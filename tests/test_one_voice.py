"""One voice (issue 31 item 2): library code logs, commands print their result.

- No function of the package takes a ``progress`` or ``say`` callable (nor a dataclass holds
  one): modules log through their ``neuronasv.*`` logger (:mod:`neuronasv.log`).
- One output path (issue 38 item 1): the builtin ``print`` and writes to ``sys.stdout`` or
  ``sys.stderr`` appear only in :mod:`neuronasv.log`; a command's result goes through
  ``log.emit`` (and an annotation of ours through ``log.emit_command``), which makes every
  control character inert and fences a workflow command under Actions.
- The Actions handler escapes what it writes by GitHub's rules, so hostile text (a newline,
  ``%``, ``::error::``) can neither end an annotation nor start a workflow command.

Both gates read the source with ``ast``; each is shown able to fail on a made-up module.
"""

from __future__ import annotations

import ast
import io
import logging
import re
from pathlib import Path

import pytest

from neuronasv.log import (
    ActionsHandler,
    TerminalHandler,
    cli_output,
    indented,
    workflow_data,
    workflow_property,
)

PKG = Path(__file__).resolve().parents[1] / "neuronasv"

#: Parameter (and dataclass field) names that carry an output callable.
OUTPUT_CALLABLES = {"progress", "say"}

#: The one module that writes to the process's streams (paths relative to the package).
WRITES_STREAMS = ("log.py",)


def output_callables(source: str) -> list[str]:
    """``line name`` of every parameter or annotated class field named like an output
    callable (``progress``, ``say``)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            a = node.args
            for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs]:
                if arg.arg in OUTPUT_CALLABLES:
                    found.append(f"{node.lineno} {getattr(node, 'name', 'lambda')}({arg.arg})")
        elif isinstance(node, ast.ClassDef):
            for stmt in node.body:
                if (
                    isinstance(stmt, ast.AnnAssign)
                    and isinstance(stmt.target, ast.Name)
                    and stmt.target.id in OUTPUT_CALLABLES
                ):
                    found.append(f"{stmt.lineno} {node.name}.{stmt.target.id}")
    return found


def prints(source: str) -> list[int]:
    """Lines of every call of the builtin ``print`` (``console.print`` is rich's, not it) and
    of every ``sys.stdout.write``/``sys.stderr.write`` (``.writelines``)."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Name) and node.func.id == "print")
            or (
                isinstance(node.func, ast.Attribute)
                and node.func.attr in ("write", "writelines")
                and _is_std_stream(node.func.value)
            )
        )
    ]


def _is_std_stream(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and node.attr in ("stdout", "stderr")


def package_violations(root: Path) -> tuple[list[str], list[str]]:
    """(output callables, prints and stream writes outside :data:`WRITES_STREAMS`) of the
    package at ``root``."""
    callables: list[str] = []
    stray: list[str] = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        source = path.read_text(encoding="utf-8")
        callables += [f"{rel}:{hit}" for hit in output_callables(source)]
        if rel not in WRITES_STREAMS:
            stray += [f"{rel}:{line}" for line in prints(source)]
    return callables, stray


def test_no_function_takes_a_progress_or_say_callable() -> None:
    callables, _ = package_violations(PKG)
    assert callables == [], "log through the module's logger (neuronasv/log.py) instead"


def test_only_the_one_output_path_writes_to_the_streams() -> None:
    _, stray = package_violations(PKG)
    assert stray == [], "log through the module's logger; a result through neuronasv.log.emit"


def main_module_loggers(source: str) -> bool:
    """Whether a module that also runs as ``__main__`` takes its logger by ``__name__`` (then
    ``"__main__"``: outside the ``neuronasv`` tree, its lines reach no handler)."""
    runs_as_main = 'if __name__ == "__main__"' in source
    return runs_as_main and "getLogger(__name__)" in source


def test_a_module_run_as_main_logs_under_its_package_name() -> None:
    bad = [
        p.relative_to(PKG).as_posix()
        for p in sorted(PKG.rglob("*.py"))
        if main_module_loggers(p.read_text(encoding="utf-8"))
    ]
    assert bad == [], 'name the logger: logging.getLogger("neuronasv.<module>")'
    assert main_module_loggers('log = logging.getLogger(__name__)\nif __name__ == "__main__":\n')


def test_the_gates_fail_on_a_made_up_module(tmp_path: Path) -> None:
    pkg = tmp_path / "neuronasv"
    (pkg / "run").mkdir(parents=True)
    (pkg / "commands").mkdir()
    (pkg / "run" / "old.py").write_text(
        "from dataclasses import dataclass\n"
        "def run_commits(opts, *, progress=print):\n"
        "    progress('x')\n"
        "def prune(git, say=None):\n"
        "    print('removed', file=__import__('sys').stderr)\n"
        "@dataclass\n"
        "class Stage:\n"
        "    progress: object\n"
    )
    (pkg / "commands" / "fine.py").write_text(
        "import sys\n"
        "def run(args):\n    emit('result')\n    console.print('table')\n"
        "    print('warning: x', file=sys.stderr)\n    sys.stdout.write('raw')\n"
    )
    (pkg / "log.py").write_text("import sys\ndef emit(t):\n    sys.stdout.write(t)\n")
    callables, stray = package_violations(pkg)
    assert callables == [
        "run/old.py:2 run_commits(progress)",
        "run/old.py:4 prune(say)",
        "run/old.py:8 Stage.progress",
    ]
    assert stray == ["commands/fine.py:5", "commands/fine.py:6", "run/old.py:5"]


# --- the handlers -----------------------------------------------------------------------


def _record(level: int, msg: str) -> logging.LogRecord:
    return logging.LogRecord("neuronasv.x", level, __file__, 1, msg, None, None)


HOSTILE = "50% done\r\nwarning text\n::error::pwned %0A"


def test_workflow_escaping_follows_githubs_rules() -> None:
    assert workflow_data(HOSTILE) == "50%25 done%0D%0Awarning text%0A::error::pwned %250A"
    assert workflow_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"


@pytest.mark.parametrize(
    ("level", "command"), [(logging.WARNING, "warning"), (logging.ERROR, "error")]
)
def test_an_actions_warning_is_one_escaped_workflow_command(level: int, command: str) -> None:
    line = ActionsHandler().format(_record(level, HOSTILE))
    # the CR is a control character: a space, as everywhere (neuronasv.log.plain_text)
    assert line == f"::{command}::" + workflow_data(HOSTILE.replace("\r", " "))
    assert "\n" not in line and "\r" not in line and line.count("::") == 2 + 2  # ours + text's


def test_an_actions_progress_line_that_looks_like_a_command_is_inert() -> None:
    """A child's line ``::error::x`` (asv's output, a branch name) is printed between
    ``::stop-commands::TOKEN`` and ``::TOKEN::``: the runner reads no command from it."""
    text = ActionsHandler().format(_record(logging.INFO, "asv says\n  ::error::pwned"))
    first, body, last = text.split("\n", 1)[0], text.split("\n")[1:-1], text.split("\n")[-1]
    token = re.fullmatch(r"::stop-commands::([0-9a-f]{32})", first)
    assert token is not None and last == f"::{token.group(1)}::"
    assert body == ["asv says", "  ::error::pwned"]
    # a plain line is left as it is (the terminal's text)
    assert ActionsHandler().format(_record(logging.INFO, "==> benchmarking")) == "==> benchmarking"
    other = ActionsHandler().format(_record(logging.INFO, "::warning::x"))
    assert other.split("\n")[0] != first  # a fresh token each time: text cannot guess it


def test_the_terminal_handler_prefixes_warnings_and_indents_progress() -> None:
    h = TerminalHandler()
    assert h.format(_record(logging.WARNING, "skipped: x")) == "warning: skipped: x"
    assert h.format(_record(logging.ERROR, "gone")) == "error: gone"
    with indented("  "), indented("  "):
        assert h.format(_record(logging.INFO, "sample 1/3")) == "    sample 1/3"
        assert h.format(_record(logging.WARNING, "w")) == "warning: w"  # never indented
    assert h.format(_record(logging.INFO, "sample 1/3")) == "sample 1/3"


def test_cli_output_is_one_handler_on_stderr_and_goes_away(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    log = logging.getLogger("neuronasv.test_one_voice")
    root = logging.getLogger("neuronasv")
    before = list(root.handlers)
    with (
        cli_output(actions=True, environ={}),  # not in Actions: the terminal's voice
        cli_output(actions=True, environ={"GITHUB_ACTIONS": "true"}),  # nested: no second
    ):
        assert len(root.handlers) == len(before) + 1
        log.info("==> step")
        log.debug("detail")
        log.warning("bad\nthing")
    assert root.handlers == before
    log.info("after")  # no handler any more
    assert err.getvalue() == "==> step\nwarning: bad\nthing\n"
    err.truncate(0)
    err.seek(0)
    with cli_output(actions=True, environ={"GITHUB_ACTIONS": "true"}):
        log.warning("bad\nthing")
    with cli_output(logging.WARNING):  # a command's --quiet
        log.info("progress")
    assert err.getvalue() == "::warning::bad%0Athing\n"
