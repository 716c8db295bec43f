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
import sys
from pathlib import Path

from neuronasv.commands.args import (
    add_repo_arg,
    command_parser,
    int_at_least,
    machine_name,
    output_dir,
)
from neuronasv.errors import CorruptResultsError, NeuronasvError, StoreError, UsageError
from neuronasv.steps.store import StoreRef, pull, pull_lines, results_store
from neuronasv.store.asvconf import results_dir_for
from neuronasv.store.gitstore import (
    DEFAULT_BRANCH,
    ResultsStore,
    collect_result_files,
)
from neuronasv.store.layout import parse_result_name


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = command_parser(
        subparsers, "store", description=__doc__,
        exits={0: None, 2: None, 5: None, 7: None},
    )  # fmt: skip
    common = argparse.ArgumentParser(add_help=False)
    add_repo_arg(common, purpose="its objects are used, its work tree untouched")
    common.add_argument("--remote", default="origin", help="remote name or URL (default: origin)")
    common.add_argument("--branch", default=DEFAULT_BRANCH,
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


def check_result_files(files: dict[str, Path]) -> None:
    """Parse every file to be pushed as the readers will; refuse the push if any fails.

    Results files are parsed by neuronasv's loader and by asv's own
    (``asv.results.Results.load``), sidecars by their schema, ``machine.json`` and
    ``benchmarks.json`` as JSON objects, bisection records by their schema. A truncated or
    corrupt file on the results branch would break every later reader, so nothing is pushed.

    Raises:
        CorruptResultsError: names each bad file and why (exit 5).
    """
    from neuronasv.model._codec import loads
    from neuronasv.model.bisect import BisectDocument
    from neuronasv.store.asvresults import AsvResultsReader
    from neuronasv.store.history import parse_result_file
    from neuronasv.store.layout import METADATA_FILES, PEAKS_FILE, SIDECAR_SUFFIX, is_bisect_name

    reader = AsvResultsReader()
    problems: list[str] = []
    for rel, path in sorted(files.items()):
        try:
            if rel.endswith(SIDECAR_SUFFIX):
                reader.sidecar_bytes(path.read_bytes(), str(path))
            elif is_bisect_name(rel):  # a bisection's record (neuronasv bisect)
                BisectDocument.loads(path.read_text(encoding="utf-8"), source=str(path))
            elif rel.rsplit("/", 1)[-1] in (*METADATA_FILES, PEAKS_FILE):
                if not isinstance(loads(path.read_text(encoding="utf-8"), source=str(path)),
                                  dict):
                    raise CorruptResultsError(f"{path}: expected a JSON object")
            else:
                parsed = parse_result_file(path)
                problems.extend(w for w in parsed.warnings)  # its sidecar is unreadable
                _asv_load(path)
        except (NeuronasvError, OSError, UnicodeDecodeError) as exc:
            msg = str(exc)
            problems.append(msg if msg.startswith(str(path)) else f"{path}: {msg}")
    if problems:
        raise CorruptResultsError(
            f"refusing to push {len(problems)} unreadable file(s); nothing was pushed: "
            + "; ".join(problems[:5]) + (" ..." if len(problems) > 5 else ""),
            hint="re-run `neuronasv run` for those commits, or delete the files (or narrow"
            " the push with --machine / --commit)",
        )


def _asv_load(path: Path) -> None:
    """asv's own reader, so what is pushed is what `asv compare`/`asv publish` can read."""
    from asv.results import Results

    try:
        Results.load(str(path))
    except Exception as exc:  # asv raises its own UserError, KeyError, TypeError, ...
        raise CorruptResultsError(
            f"{path}: asv cannot read it: {type(exc).__name__}: {exc}"[:500]
        ) from None


def _store(args: argparse.Namespace) -> ResultsStore:
    return results_store(StoreRef(args.repo, args.remote, args.branch, args.token_env,
                                  args.max_attempts))  # fmt: skip


def run(args: argparse.Namespace) -> int:
    action = args.store_command
    if action == "push":
        results_dir = args.results_dir or results_dir_from_config(args.repo)
        files = collect_result_files(results_dir, machine=args.machine, commits=args.commit)
        if not any(parse_result_name(p) is not None and "/" in p for p in files):
            raise StoreError(f"no result files to push under {results_dir}"
                             + (f" for machine {args.machine}" if args.machine else ""),
                             hint="run `neuronasv run` first, or check --results-dir")
        check_result_files(files)
        machines = sorted({p.split("/", 1)[0] for p in files if "/" in p})
        message = args.message or (
            f"neuronasv: {len(files)} result files from {', '.join(machines)}"
        )
        rep = _store(args).write(files, message)
        state = "stored" if rep.changed else "already stored (no change)"
        print(f"{state}: {len(rep.files)} files on {args.branch} at {rep.commit[:12]}"
              f" after {rep.attempts} attempt(s)")
        return 0
    if action == "pull":
        out = args.out or results_dir_from_config(args.repo)
        pulled = pull(StoreRef(args.repo, args.remote, args.branch, args.token_env,
                               args.max_attempts), out, machine=args.machine)  # fmt: skip
        line, kept = pull_lines(pulled, args.branch, out)
        print(line)
        for warning in kept:
            print(warning, file=sys.stderr)
        return 0
    if action == "missing":
        commits = args.commits or sys.stdin.read().split()
        for c in _store(args).missing_commits(commits, args.machine):
            print(c)
        return 0
    if action == "list":
        for path in _store(args).list_files():
            print(path)
        return 0
    raise UsageError(f"unknown store action {action!r}")
