"""``python -m neuronasv.publish ...``: the publish command without the full CLI.

Same arguments as ``neuronasv publish``. It exists because ``neuronasv`` builds its parser
by importing every command module (some pull scipy/torch: seconds of start-up), which
would dominate an incremental publish that itself takes about a second.
"""

from __future__ import annotations

import argparse
import sys

from neuronasv.cli import run_parsed
from neuronasv.commands import publish


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m neuronasv.publish")
    publish.add_parser(parser.add_subparsers(dest="command", required=True))
    try:
        args = parser.parse_args(["publish", *(sys.argv[1:] if argv is None else argv)])
    except SystemExit as exc:  # --help or a bad argument (argparse printed why)
        return exc.code if isinstance(exc.code, int) else 2
    return run_parsed(args)  # the CLI's error handling: exit codes, never a traceback


if __name__ == "__main__":
    sys.exit(main())
