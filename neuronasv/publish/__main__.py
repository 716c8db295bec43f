"""``python -m neuronasv.publish ...``: the publish command without the full CLI.

Same arguments as ``neuronasv publish``. It exists because ``neuronasv`` builds its parser
by importing every command module (some pull scipy/torch: seconds of start-up), which
would dominate an incremental publish that itself takes about a second.
"""

from __future__ import annotations

import argparse
import sys

from neuronasv.commands import publish
from neuronasv.errors import NeuronasvError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m neuronasv.publish")
    publish.add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["publish", *(sys.argv[1:] if argv is None else argv)])
    try:
        return publish.run(args)
    except NeuronasvError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        if exc.hint:
            print(f"hint: {exc.hint}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
