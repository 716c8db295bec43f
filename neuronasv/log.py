"""One voice: the ``neuronasv`` logger, its one terminal handler and its one Actions handler.

Library modules never print progress and take no ``progress``/``say`` callable: each logs
through its own child of the ``neuronasv`` logger (``log = logging.getLogger(__name__)``)::

    INFO     progress a person follows (``==> benchmarking 3 commit(s)``, asv's lines)
    DEBUG    detail (HTTP requests, pacing waits)
    WARNING  something skipped or degraded; the run goes on

What a command *produces* (a table, a verdict, ``name=value`` outputs) is not logging: the
command prints it to stdout. Where log lines go is decided once, by the entry point
(``neuronasv`` in :mod:`neuronasv.cli`, ``python -m neuronasv.ci`` and the other ``__main__``
modules), with :func:`cli_output`:

- :class:`TerminalHandler` (the default): each record on stderr as the message itself, a
  warning as ``warning: MESSAGE`` and an error as ``error: MESSAGE`` (text the terminal
  cannot encode is backslash-escaped, never an exception); progress logged inside
  :func:`indented` is shown after its prefix;
- :class:`ActionsHandler` (``GITHUB_ACTIONS=true``, for the CI steps): a warning or an error
  is one workflow command (``::warning::MESSAGE``), its text escaped by GitHub's rules
  (:func:`workflow_data`); any other line that the runner would read as a workflow command
  (it starts with ``::`` after spaces: asv's output, a branch name) is written between
  ``::stop-commands::TOKEN`` and ``::TOKEN::``, GitHub's way to print untrusted text.

A library user (``neuronasv.api``) who installs nothing sees warnings through Python's
last-resort handler and no progress; ``logging.getLogger("neuronasv")`` is theirs to configure.

**One output path.** Everything the package writes to a terminal or a CI log goes through
:func:`stream_text` here: a command's result on stdout (:func:`emit`), its log lines (both
handlers) and the error line that ends it (:func:`neuronasv.exits.say`), and argparse's own
messages (:class:`InertArgumentParser`). It keeps the text's layout and makes it inert:

- every control character but newline and tab (ESC, BEL, CR, DEL, the C1 range: a terminal's
  escape sequences, a CR that starts a new line for the runner) becomes a space, and so do
  the line and paragraph separators;
- under ``GITHUB_ACTIONS=true``, text holding a line the runner would read as a workflow
  command (``::name::`` after spaces, or a legacy ``##[name]`` anywhere in the line) is
  written between ``::stop-commands::TOKEN`` and ``::TOKEN::`` (:func:`fenced`);
- a JSON result (``emit(..., json=True)``) keeps every value exactly: those characters
  become ``\\uXXXX`` escapes and ``#`` of a ``##[`` becomes ``\\u0023``, so no fence is
  needed and the document still parses (a consumer reads it from stdout).

The views make untrusted values inert before this (:mod:`neuronasv.report.escape`); this
pass is what holds when a view forgets one, and nothing it does is visible in a text that
had nothing hostile in it. Standard library only: the asv suite's light benchmark
processes import this.
"""

from __future__ import annotations

import argparse
import contextlib
import contextvars
import logging
import os
import re
import secrets
import sys
from collections.abc import Iterator, Mapping
from typing import IO, TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

__all__ = [
    "ROOT",
    "ActionsHandler",
    "InertArgumentParser",
    "TerminalHandler",
    "cli_output",
    "emit",
    "emit_command",
    "fenced",
    "indented",
    "inert_json",
    "live_command",
    "on_actions",
    "plain_text",
    "relay",
    "say",
    "stream_text",
    "workflow_data",
    "workflow_property",
    "write_stderr",
]

#: The package's logger; every module's logger is a child (``neuronasv.run.asvrun``).
ROOT = "neuronasv"


_INDENT: contextvars.ContextVar[str] = contextvars.ContextVar("neuronasv_log_indent", default="")


@contextlib.contextmanager
def indented(prefix: str) -> Iterator[None]:
    """Progress logged inside is shown after ``prefix`` (nested: prefixes add up), the way a
    step shows the lines of the work it drives (``neuronasv profile``'s two spaces)."""
    token = _INDENT.set(_INDENT.get() + prefix)
    try:
        yield
    finally:
        _INDENT.reset(token)


# --- one output path: text made inert for a terminal and for the Actions runner ------------


def on_actions(environ: Mapping[str, str] | None = None) -> bool:
    """Whether this process runs in a GitHub Actions step (``GITHUB_ACTIONS=true``)."""
    return (os.environ if environ is None else environ).get("GITHUB_ACTIONS") == "true"


#: Unicode's control characters (category Cc: U+0000-U+001F, U+007F-U+009F) but newline
#: and tab, and the line and paragraph separators.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def plain_text(text: str) -> str:
    """``text`` with every control character but newline and tab, and the line and
    paragraph separators, as a space (its lines stay its lines)."""
    return _CONTROL.sub(" ", str(text))


#: A legacy workflow command: the runner looks for ``##[`` anywhere in a line.
_LEGACY = "##["


def live_command(line: str) -> bool:
    """Whether the Actions runner would read ``line`` (one line) as a workflow command:
    ``::`` after leading spaces, or ``##[`` anywhere (actions/runner ``ActionCommand``)."""
    return line.lstrip().startswith("::") or _LEGACY in line


def fenced(text: str) -> str:
    """``text`` between ``::stop-commands::TOKEN`` and ``::TOKEN::`` (a fresh random token,
    so the text cannot end the fence): GitHub's way to print untrusted lines."""
    token = secrets.token_hex(16)
    return f"::stop-commands::{token}\n{text}\n::{token}::"


def stream_text(text: str, *, actions: bool | None = None) -> str:
    """``text`` as it may reach a terminal or a CI log: :func:`plain_text`, and fenced
    (:func:`fenced`) when it runs under Actions and a line of it would be a command.

    Args:
        actions: whether the runner reads it (default: :func:`on_actions`).
    """
    out = plain_text(text)
    if not any(live_command(line) for line in out.split("\n")):
        return out
    if actions if actions is not None else on_actions():
        body, nl = (out[:-1], "\n") if out.endswith("\n") else (out, "")
        return fenced(body) + nl
    return out


_JSON_UNSAFE = re.compile(_CONTROL.pattern + "|##\\[")


def inert_json(text: str) -> str:
    """A JSON text with the same values, made inert: control characters (only ever inside
    its strings) as ``\\uXXXX`` and a ``##[`` as ``\\u0023#[`` (it parses to the same
    document; no line of it is a workflow command, so it needs no fence)."""
    return _JSON_UNSAFE.sub(
        lambda m: "\\u0023#[" if m.group() == _LEGACY else f"\\u{ord(m.group()):04x}", text
    )


def _write(stream: IO[str], text: str) -> None:
    enc = getattr(stream, "encoding", None) or "utf-8"
    stream.write(text.encode(enc, "backslashreplace").decode(enc, "replace"))
    stream.flush()


#: A colour/bold sequence (SGR: ``ESC [ n;n m``): it can style text, never move the cursor,
#: clear the screen or set a title.
_SGR = re.compile("\x1b\\[[0-9;]*m")


def _styled_text(text: str) -> str:
    """:func:`stream_text` keeping SGR sequences (a rich table's colours) as they are; a
    text that must be fenced is for a log, not a terminal: it loses them."""
    bare = stream_text(_SGR.sub("", text))
    if bare.startswith("::stop-commands::"):
        return bare
    styles = [*_SGR.findall(text), ""]
    return "".join(plain_text(p) + s for p, s in zip(_SGR.split(text), styles, strict=True))


def emit(text: str = "", *, end: str = "\n", json: bool = False, styled: bool = False,
         stream: IO[str] | None = None) -> None:  # fmt: skip
    """A command's result on stdout (or ``stream``), through the one output path.

    Args:
        text: what the command produces (a table, a document, ``name=value`` lines).
        end: appended (``print``'s).
        json: ``text`` is a JSON document: kept exact (:func:`inert_json`), never fenced.
        styled: ``text`` was laid out by rich for a terminal: its colour sequences (SGR,
            ``ESC [ n m``, nothing else) are kept; text that must be fenced loses them.
        stream: where it goes (default: ``sys.stdout`` as it is now).
    """
    whole = text + end
    if json:
        out = inert_json(whole)
    elif styled:
        out = _styled_text(whole)
    else:
        out = stream_text(whole)
    _write(stream or sys.stdout, out)


def emit_command(line: str) -> None:
    """One workflow command of ours on stdout (an annotation built with
    :func:`workflow_data`/:func:`workflow_property`): written as it is, never fenced.

    Raises:
        ValueError: ``line`` is not one line of visible text starting with ``::`` (untrusted
            text must have been escaped into it, not passed as it is).
    """
    if not line.startswith("::") or "\n" in line or plain_text(line) != line:
        raise ValueError(f"not one escaped workflow command: {line[:80]!r}")
    _write(sys.stdout, line + "\n")


def relay(text: str) -> None:
    """Text another program wrote (a C++ library on file descriptor 2), relayed to stderr
    through the one output path."""
    if text:
        _write(sys.stderr, stream_text(text))


def write_stderr(line: str) -> None:
    """One line on stderr, as given (the handlers' formatted lines; see :func:`say`), even
    when it holds text the terminal cannot encode."""
    _write(sys.stderr, line + "\n")


def say(line: str) -> None:
    """One line on stderr through the one output path (the program's last word:
    written whatever handler the ``neuronasv`` logger has)."""
    write_stderr(stream_text(line))


class InertArgumentParser(argparse.ArgumentParser):
    """argparse's parser with its usage, help and errors through the one output path (an
    error quotes the argument as given: a control character or a workflow command in it
    stays inert). Sub-parsers are made of the same class."""

    def _print_message(self, message: str, file: SupportsWrite[str] | None = None) -> None:
        if message:
            out = file or sys.stderr
            out.write(stream_text(message))

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if message:
            self._print_message(message, sys.stderr)
        sys.exit(status)


def workflow_data(text: str) -> str:
    """Escape the message part of a workflow command (``::warning ...::MESSAGE``):
    ``%``, CR and LF, so a message stays one line and cannot start a command of its own."""
    return str(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def workflow_property(text: str) -> str:
    """Escape a property value of a workflow command (``title=VALUE``): as the data, and
    ``:`` and ``,``, which end a property."""
    return workflow_data(text).replace(":", "%3A").replace(",", "%2C")


class TerminalHandler(logging.Handler):
    """Records on stderr (looked up at each record, so a redirected stderr is followed)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            write_stderr(self.format(record))
        except Exception:  # a logging failure must not end the run (logging's own rule)
            self.handleError(record)

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if record.levelno >= logging.ERROR:
            return stream_text(f"error: {message}")
        if record.levelno >= logging.WARNING:
            return stream_text(f"warning: {message}")
        return stream_text(_INDENT.get() + message)


class ActionsHandler(TerminalHandler):
    """Records as a GitHub Actions runner reads them (see the module doc)."""

    def format(self, record: logging.LogRecord) -> str:
        message = plain_text(record.getMessage())
        if record.levelno >= logging.ERROR:
            return "::error::" + workflow_data(message)
        if record.levelno >= logging.WARNING:
            return "::warning::" + workflow_data(message)
        return stream_text(_INDENT.get() + message, actions=True)


def _handler(environ: Mapping[str, str] | None, actions: bool) -> logging.Handler:
    return ActionsHandler() if actions and on_actions(environ) else TerminalHandler()


@contextlib.contextmanager
def cli_output(
    level: int = logging.INFO,
    *,
    actions: bool = False,
    environ: Mapping[str, str] | None = None,
) -> Iterator[logging.Handler]:
    """The ``neuronasv`` logger's one handler while an entry point runs, removed after.

    Args:
        level: the lowest level shown (``INFO``: progress; ``DEBUG``: detail too).
        actions: a CI step: under ``GITHUB_ACTIONS=true`` the :class:`ActionsHandler`.
        environ: where ``GITHUB_ACTIONS`` is read (default ``os.environ``).

    Inside another ``cli_output`` (a step that runs a command in process) the handler
    already there stays the only one.
    """
    logger = logging.getLogger(ROOT)
    ours = [h for h in logger.handlers if isinstance(h, TerminalHandler)]
    if ours:  # an entry point run inside another (a CI step calling a command): one voice
        yield ours[0]
        return
    handler = _handler(environ, actions)
    handler.setLevel(level)
    old_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(level)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
