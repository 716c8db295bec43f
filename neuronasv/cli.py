"""Thin command-line dispatcher: argument parsing and exit codes only.

Each sub-command lives in ``neuronasv/commands/<name>.py`` and exposes
``add_parser(subparsers)`` (registering its arguments and ``func``) and a
``run(args) -> int``. Only the module of the command being run is imported — the analysis
commands pull in scipy and the measure commands torch, and ``neuronasv --help`` or
``neuronasv comment`` should not pay for either. Library errors
(:class:`neuronasv.errors.NeuronasvError`) become ``error: ...`` on stderr and the error's
documented exit code; see ``neuronasv.errors``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from neuronasv import __version__
from neuronasv.errors import NeuronasvError

__all__ = ["COMMANDS", "build_parser", "main"]

# name -> one-line help, in the order of ``neuronasv --help``: the data flow.
COMMANDS: dict[str, str] = {
    "doctor": "show backends found, versions and what is missing",
    "profile": "profile workloads: device time per op (RMSNorm variants by default)",
    "run": "run the asv suite for commits (default HEAD), samples recorded",
    "compare": "base vs head verdicts with p-values, CIs and op attribution",
    "confirm": "re-measure suspected regressions interleaved (ABAB) and confirm survivors",
    "regressions": "change points over history; open regressions first",
    "ack": "acknowledge an expected shift (benchmark pattern, commit, reason)",
    "comment": "create or update the sticky PR comment from a findings document",
    "status": "set the commit status (and optionally a check run) from a findings document",
    "summary": "job summary ($GITHUB_STEP_SUMMARY) and annotations from a findings document",
    "publish": "write the static history site (index, workload pages, regressions feeds)",
    "store": "push results to / pull results from the results branch",
    "demo": "run the whole flow locally: suite at 2 commits, compare, comment, site",
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser, with ``command``'s own options (its module is imported).

    Every other command is a placeholder carrying its one-line help, enough for
    ``neuronasv --help``; ``command=None`` imports no command module at all.
    """
    parser = argparse.ArgumentParser(
        prog="neuronasv",
        description="Device-time regression tracking for PyTorch on Trainium, CUDA and CPU.",
        epilog="Run `neuronasv COMMAND --help` for a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"neuronasv {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, help_text in COMMANDS.items():
        if name == command:
            module = importlib.import_module(f"neuronasv.commands.{name}")
            module.add_parser(sub)
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
    parser = build_parser(_command_in(args_list))
    args = parser.parse_args(args_list)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except NeuronasvError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        if exc.hint:
            print(f"hint: {exc.hint}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
