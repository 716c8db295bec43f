"""``neuronasv ack PATTERN --commit C --reason TEXT``: acknowledge an expected shift.

Writes ``.neuronasv/acknowledgements.json`` in the repository (commit it). Acknowledged
findings are shown as such by ``compare``/``regressions`` and never fail ``--fail-on``.
``neuronasv ack --list`` prints the file. Exit codes: 0 done, 2 usage, 5 unreadable file.
"""

from __future__ import annotations

import argparse
import os
import sys

from neuronasv.analyse.acks import ACKS_PATH, Acknowledgement, load_acks, save_acks
from neuronasv.commands.args import command_parser, output_file
from neuronasv.errors import UsageError
from neuronasv.report.escape import clean

__all__ = ["add_parser", "run"]


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = command_parser(subparsers, "ack", description=__doc__)
    p.add_argument("pattern", nargs="?", help="fnmatch pattern: series label or benchmark")
    p.add_argument("--commit", help="hash (prefix) of the commit that shifted; '*' = any")
    p.add_argument("--reason", help="why the shift is expected")
    p.add_argument(
        "--file", type=output_file, help=f"acknowledgements file (default: ./{ACKS_PATH})"
    )
    p.add_argument("--list", action="store_true", help="print the acknowledgements")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    path = args.file or ACKS_PATH
    acks = load_acks(path)
    if args.list:
        for a in acks:
            sys.stdout.write(f"{clean(a.pattern)}\t{clean(a.commit)}\t{clean(a.reason)}\n")
        return 0
    if not args.pattern or not args.commit or not (args.reason or "").strip():
        raise UsageError("give PATTERN, --commit and --reason (or --list)")
    new = Acknowledgement(args.pattern, args.commit, args.reason.strip())
    if new in acks:
        sys.stdout.write(f"already acknowledged in {path}\n")
        return 0
    save_acks(path, [*acks, new])
    sys.stdout.write(
        f"acknowledged {clean(new.pattern)} at {clean(new.commit)} in {os.path.normpath(path)}\n"
    )
    return 0
