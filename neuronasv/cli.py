"""Thin command-line dispatcher: argument parsing and exit codes only.

Each sub-command lives in ``neuronasv/commands/<name>.py`` and exposes
``add_parser(subparsers)`` (registering its arguments and ``func``) and a
``run(args) -> int``. Only the module of the command being run is imported — the analysis
commands pull in scipy and the measure commands torch, and ``neuronasv --help`` or
``neuronasv comment`` should not pay for either. Library errors
(:class:`neuronasv.errors.NeuronasvError`) become ``error: ...`` on stderr and the error's
documented exit code; see ``neuronasv.errors``. A file the system refuses (``OSError``: a
path that vanished, a full disk) becomes ``error: <path>: <reason>`` with exit 2. Anything
else is a bug: it exits with :data:`neuronasv.errors.INTERNAL_ERROR_EXIT` (11) and a one-line
message, never 1 (which means "a regression matched --fail-on"); ``NEURONASV_TRACEBACK=1``
prints the traceback too. Progress and warnings are the ``neuronasv`` logger's, on stderr
through the one handler :func:`run_parsed` installs (:mod:`neuronasv.log`); a command's
result is its own, on stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import signal
import sys
import threading
from collections.abc import Iterator, Sequence

from neuronasv import __version__
from neuronasv.commands import COMMANDS, command_module
from neuronasv.exits import run_guarded, say
from neuronasv.log import InertArgumentParser, cli_output

__all__ = ["COMMANDS", "build_parser", "main", "run_parsed"]


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser, with ``command``'s own options (its module is imported).

    Every other command is a placeholder carrying its one-line help, enough for
    ``neuronasv --help``; ``command=None`` imports no command module at all.
    """
    parser = InertArgumentParser(
        prog="neuronasv",
        description="Device-time regression tracking for PyTorch on Trainium, CUDA and CPU.",
        epilog="Run `neuronasv COMMAND --help` for a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"neuronasv {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, help_text in COMMANDS.items():
        if name == command:
            command_module(name).add_parser(sub)
        else:
            sub.add_parser(name, help=help_text)
    return parser


def _command_in(argv: Sequence[str]) -> str | None:
    # The first argument that is not an option is the command (global options take no value).
    for arg in argv:
        if not arg.startswith("-"):
            return arg if arg in COMMANDS else None
    return None


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    try:
        parser = build_parser(_command_in(args_list))
        args = parser.parse_args(args_list)
    except SystemExit as exc:  # --help (0) or a bad argument (2, message already printed)
        return exc.code if isinstance(exc.code, int) else 2
    except KeyboardInterrupt:  # while options are checked (--repo asks git)
        say("interrupted")
        return 130
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    with _terminate_as_interrupt():
        return run_parsed(args)


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM (a cancelled CI job, ``timeout``) unwinds like Ctrl-C: children killed,
    scratch folders removed, exit 130. Only in the main thread; the old handler comes back."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def run_parsed(args: argparse.Namespace) -> int:
    """Run ``args.func(args)``; every failure becomes its exit code (see the docstring).

    The package's log lines go through one handler meanwhile (:func:`neuronasv.log.cli_output`:
    progress on stderr; a command's ``--quiet`` leaves warnings only)."""
    level = logging.WARNING if getattr(args, "quiet", False) else logging.INFO
    with cli_output(level):
        return run_guarded(lambda: args.func(args), f"neuronasv {args.command}")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
