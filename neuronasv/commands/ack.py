"""``neuronasv ack PATTERN --commit C --reason TEXT``: acknowledge an expected shift.

Writes ``.neuronasv/acknowledgements.json`` in the repository (commit it). Acknowledged
findings are shown as such by ``compare``/``regressions`` and never fail ``--fail-on``.
``neuronasv ack --list`` prints the file. PATTERN names series by the fields of their id
(``workload=rmsnorm.naive op=aten::mul``), or in the earlier form, a glob over the label
as version 1 wrote it (``'rmsnorm.naive*'``): docs/analysis.md#series-patterns.

The commit must be one of the repository's (``--repo``, default the current folder; a
prefix, branch or tag is stored as its full hash) or ``*`` (any); a commit git does not
know is accepted only as a full 40-hex hash with ``--force`` (a commit not fetched yet).
"""

from __future__ import annotations

import argparse
import os
import re

from neuronasv.analyse.acks import ACKS_PATH, Acknowledgement, load_acks, save_acks
from neuronasv.analyse.patterns import SeriesPattern
from neuronasv.commands.args import add_repo_arg, command_parser, output_file
from neuronasv.errors import UsageError
from neuronasv.log import emit
from neuronasv.report.escape import clean
from neuronasv.store.git import Git

__all__ = ["add_parser", "run"]


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = command_parser(
        subparsers, "ack", description=__doc__,
        exits={0: None, 2: None, 5: "the acknowledgements file"},
    )  # fmt: skip
    p.add_argument(
        "pattern",
        nargs="?",
        help="the series: FIELD=GLOB terms (workload=rmsnorm.naive op=aten::mul; fields"
        " workload, shape, dtype, op, metric, benchmark, params), or a glob over the label,"
        " benchmark or benchmark(params)",
    )
    p.add_argument("--commit", help="hash (prefix) of the commit that shifted; '*' = any")
    p.add_argument("--reason", help="why the shift is expected")
    p.add_argument(
        "--file", type=output_file, help=f"acknowledgements file (default: ./{ACKS_PATH})"
    )
    p.add_argument("--list", action="store_true", help="print the acknowledgements")
    add_repo_arg(p, purpose="where --commit must exist")
    p.add_argument(
        "--force", action="store_true", help="accept a full 40-hex --commit git does not know"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    path = args.file or ACKS_PATH
    acks = load_acks(path)
    if args.list:
        for a in acks:
            emit(f"{clean(a.pattern.text)}\t{clean(a.commit)}\t{clean(a.reason)}")
        return 0
    if not args.pattern or not args.commit or not (args.reason or "").strip():
        raise UsageError("give PATTERN, --commit and --reason (or --list)")
    commit = _check_commit(args.commit, args.repo, force=args.force)
    new = Acknowledgement(SeriesPattern.parse(args.pattern), commit, args.reason.strip())
    if new in acks:
        emit(f"already acknowledged in {path}")
        return 0
    save_acks(path, [*acks, new])
    where = os.path.normpath(path)
    emit(f"acknowledged {clean(new.pattern.text)} at {clean(new.commit)} in {where}")
    return 0


_FULL_HASH = re.compile(r"[0-9a-fA-F]{40}")


def _check_commit(commit: str, repo: str, *, force: bool) -> str:
    """``commit`` as the full hash git knows, ``*``, or (``force``) a full 40-hex hash.

    Raises:
        UsageError: not a commit of ``repo`` (and not a full hash with ``--force``).
    """
    if commit == "*":
        return commit
    git = Git(repo)
    full = git.resolve(commit) if git.is_repo() else None
    if full:
        return full
    if force and _FULL_HASH.fullmatch(commit):
        return commit.lower()
    where = f"the repository {repo}" if git.is_repo() else f"{repo} (not a git repository)"
    raise UsageError(
        f"--commit {clean(commit)!r} is not a commit in {where}",
        hint="give a commit of this repository (hash prefix, branch or tag), '*' for any,"
        " or a full 40-hex hash with --force for a commit not fetched here",
    )
