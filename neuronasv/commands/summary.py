"""``neuronasv summary --report FINDINGS.json``: the job summary and annotations.

Appends the markdown report to ``$GITHUB_STEP_SUMMARY`` when it is set (else prints it),
and prints ``::warning``/``::notice``/``::error`` annotations (at most 10 per kind) when
running in GitHub Actions or with ``--annotations``. ``--format terminal`` prints a
rich table view instead of markdown.
"""

from __future__ import annotations

import argparse
import logging
import os

from neuronasv.commands.args import (
    add_findings_arg,
    command_parser,
    existing_file,
    output_file,
    write_output,
)
from neuronasv.log import emit_command
from neuronasv.report.annotations import render_annotations
from neuronasv.report.load import load_findings, load_history_values
from neuronasv.report.summary import append_summary, render_summary
from neuronasv.report.terminal import render_terminal

__all__ = ["add_parser", "run"]

log = logging.getLogger(__name__)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = command_parser(
        subparsers, "summary", description=__doc__,
        exits={0: None, 2: None, 5: "the findings"},
    )  # fmt: skip
    add_findings_arg(p)
    p.add_argument("--format", choices=("markdown", "terminal"), default="markdown")
    p.add_argument(
        "--out",
        type=output_file,
        metavar="FILE",
        help="append here instead of $GITHUB_STEP_SUMMARY ('-' = stdout)",
    )
    p.add_argument(
        "--history",
        type=existing_file,
        metavar="FILE",
        help="JSON {series label: values} for a chart",
    )
    p.add_argument("--report-url", help="link used if the summary has to be trimmed")
    ann = p.add_mutually_exclusive_group()
    ann.add_argument(
        "--annotations",
        dest="annotations",
        action="store_true",
        default=None,
        help="print annotations (default: only when GITHUB_ACTIONS=true)",
    )
    ann.add_argument("--no-annotations", dest="annotations", action="store_false")
    p.add_argument("--show-unchanged", action="store_true", help="terminal: list every series")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    doc = load_findings(args.report)
    if args.format == "terminal":
        render_terminal(doc, show_unchanged=args.show_unchanged)
    else:
        history = load_history_values(args.history) if args.history else None
        text = render_summary(doc, history=history, report_url=args.report_url)
        if args.out == "-":
            write_output(text, None)
        else:
            written = append_summary(text, args.out)
            if written is None:
                write_output(text, None)
            else:
                log.info(f"summary appended to {written}")
    show = args.annotations
    if show is None:
        show = os.environ.get("GITHUB_ACTIONS") == "true"
    if show:
        # Workflow commands must go to stdout to be seen by the runner.
        for line in render_annotations(doc):
            emit_command(line)
    return 0
