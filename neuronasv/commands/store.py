"""``neuronasv store``: move results between a local asv results folder and the results branch.

    neuronasv store push [--results-dir DIR] [--machine M] [--commit HASH ...]
    neuronasv store pull [--out DIR] [--machine M]
    neuronasv store missing --machine M [COMMIT ...]      (commits with no stored result)
    neuronasv store list

Common options: ``--repo`` (a git checkout used for objects; untouched), ``--remote``
(name or URL, default ``origin``), ``--branch`` (default ``benchmark-results``) and
``--token-env VAR``: take a token from that environment variable and hand it to git as an
HTTP header through ``GIT_CONFIG_*`` variables, so it never lands in ``.git/config`` (the
workflows check out with ``persist-credentials: false``).
"""

from __future__ import annotations

import argparse
import logging
import sys

from neuronasv.commands.args import (
    add_repo_arg,
    branch_name,
    command_parser,
    int_at_least,
    machine_name,
    output_dir,
)
from neuronasv.errors import UsageError
from neuronasv.log import emit
from neuronasv.steps.store import StoreRef, pull, pull_lines, push, results_store
from neuronasv.store.asvconf import results_dir_for
from neuronasv.store.gitstore import (
    DEFAULT_BRANCH,
    ResultsStore,
)

log = logging.getLogger(__name__)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = command_parser(
        subparsers, "store", description=__doc__,
        exits={0: None, 2: None, 5: None, 7: None},
    )  # fmt: skip
    common = argparse.ArgumentParser(add_help=False)
    add_repo_arg(common, purpose="its objects are used, its work tree untouched")
    common.add_argument("--remote", default="origin", help="remote name or URL (default: origin)")
    common.add_argument("--branch", type=branch_name, default=DEFAULT_BRANCH,
                        help=f"results branch (default: {DEFAULT_BRANCH})")
    common.add_argument("--token-env", metavar="VAR",
                        help="environment variable holding a token for HTTPS git (CI)")
    common.add_argument("--max-attempts", type=int_at_least(1), default=8,
                        help="push attempts before giving up (default: 8)")
    sub = p.add_subparsers(dest="store_command", metavar="ACTION", required=True)

    push = sub.add_parser("push", parents=[common], help="store local results on the branch")
    push.add_argument("--results-dir", help="asv results folder (default: from asv.conf.json)")
    push.add_argument("--machine", type=machine_name, help="only this machine's results")
    push.add_argument("--commit", action="append", default=[], metavar="HASH",
                      help="only results of this commit (repeatable)")
    push.add_argument("--message", help="commit message on the results branch")

    pull = sub.add_parser("pull", parents=[common], help="copy the branch's results locally")
    pull.add_argument("--out", type=output_dir,
                      help="destination results folder (default: from asv.conf.json)")
    pull.add_argument("--machine", type=machine_name, help="only this machine's results")

    missing = sub.add_parser("missing", parents=[common],
                             help="print the given commits that have no stored result")
    missing.add_argument("--machine", type=machine_name, required=True,
                         help="the machine whose results are looked for")
    missing.add_argument("commits", nargs="*", metavar="COMMIT",
                         help="full commit hashes (default: read from standard input)")

    sub.add_parser("list", parents=[common], help="list the files on the branch")
    p.set_defaults(func=run)


def results_dir_from_config(start: str = ".") -> str:
    """``results_dir`` of ``asv.conf.json`` in ``start`` (``.asv/results`` when absent)."""
    return results_dir_for(start)


def _ref(args: argparse.Namespace) -> StoreRef:
    return StoreRef(args.repo, args.remote, args.branch, args.token_env, args.max_attempts)


def _store(args: argparse.Namespace) -> ResultsStore:
    return results_store(_ref(args))


def run(args: argparse.Namespace) -> int:
    action = args.store_command
    if action == "push":
        rep = push(_ref(args), results_dir=args.results_dir or results_dir_from_config(args.repo),
                   machine=args.machine, commits=tuple(args.commit),
                   message=args.message)  # fmt: skip
        state = "stored" if rep.changed else "already stored (no change)"
        emit(f"{state}: {len(rep.files)} files on {args.branch} at {rep.commit[:12]}"
              f" after {rep.attempts} attempt(s)")
        return 0
    if action == "pull":
        out = args.out or results_dir_from_config(args.repo)
        pulled = pull(_ref(args), out, machine=args.machine)
        line, kept = pull_lines(pulled, args.branch, out)
        emit(line)
        for warning in kept:
            log.warning(warning)
        return 0
    if action == "missing":
        commits = args.commits or sys.stdin.read().split()
        for c in _store(args).missing_commits(commits, args.machine):
            emit(c)
        return 0
    if action == "list":
        for path in _store(args).list_files():
            emit(path)
        return 0
    raise UsageError(f"unknown store action {action!r}")
