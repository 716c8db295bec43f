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
Standard library only: the asv suite's light benchmark processes import this.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import os
import secrets
import sys
from collections.abc import Iterator, Mapping

__all__ = [
    "ROOT",
    "ActionsHandler",
    "TerminalHandler",
    "cli_output",
    "indented",
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


def write_stderr(line: str) -> None:
    """One line on stderr, even when it holds text the terminal cannot encode."""
    stream = sys.stderr
    enc = getattr(stream, "encoding", None) or "utf-8"
    stream.write(line.encode(enc, "backslashreplace").decode(enc, "replace") + "\n")
    stream.flush()


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
            return f"error: {message}"
        if record.levelno >= logging.WARNING:
            return f"warning: {message}"
        return _INDENT.get() + message


class ActionsHandler(TerminalHandler):
    """Records as a GitHub Actions runner reads them (see the module doc)."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if record.levelno >= logging.ERROR:
            return "::error::" + workflow_data(message)
        if record.levelno >= logging.WARNING:
            return "::warning::" + workflow_data(message)
        if any(line.lstrip().startswith("::") for line in message.splitlines()):
            token = secrets.token_hex(16)
            return f"::stop-commands::{token}\n{_INDENT.get()}{message}\n::{token}::"
        return _INDENT.get() + message


def _handler(environ: Mapping[str, str] | None, actions: bool) -> logging.Handler:
    on_actions = (os.environ if environ is None else environ).get("GITHUB_ACTIONS") == "true"
    return ActionsHandler() if actions and on_actions else TerminalHandler()


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
