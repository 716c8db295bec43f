"""Thin command-line dispatcher: argument parsing and exit codes only.

Each sub-command lives in ``neuronasv/commands/<name>.py`` and exposes
``add_parser(subparsers)`` (registering its arguments and ``func``) and a
``run(args) -> int``. Library errors (:class:`neuronasv.errors.NeuronasvError`) become
``error: ...`` on stderr and the error's documented exit code; see ``neuronasv.errors``.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from collections.abc import Sequence

from neuronasv import __version__
from neuronasv.errors import NeuronasvError

# Order is the order of ``neuronasv --help``: the data flow.
COMMANDS: tuple[str, ...] = (
    "doctor",
    "profile",
    "run",
    "compare",
    "confirm",
    "regressions",
    "ack",
    "comment",
    "status",
    "summary",
    "publish",
    "store",
    "demo",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="neuronasv",
        description="Device-time regression tracking for PyTorch on Trainium, CUDA and CPU.",
    )
    parser.add_argument("--version", action="version", version=f"neuronasv {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        # TEMPORARY while the stages land in parallel: skip commands not written yet.
        if importlib.util.find_spec(f"neuronasv.commands.{name}") is None:
            continue
        module = importlib.import_module(f"neuronasv.commands.{name}")
        module.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
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
