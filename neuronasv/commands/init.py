"""``neuronasv init``: adopt neuronasv in this git repository (asv config, suite, workflows).

    neuronasv init [--workloads PKG.MODULE] [--project NAME] [--ref SHA] [--from OWNER/REPO]
    neuronasv init --check

Writes ``asv.conf.json``, ``benchmarks/`` (a suite importing the workloads module,
default ``<repo>_workloads``), a commented example workloads module when that module does
not exist, the two caller workflows under ``.github/workflows/`` (pinned to the neuronasv
commit this package came from, or ``--ref``) and ``.asv/`` in ``.gitignore``. It never
overwrites a file: an existing one is kept and named. ``--check`` writes nothing and lists
what is missing or differs from what ``init`` would write now (a stale workflow pin, an
edited file); exit 1 when something does. The project name (``--project``, else the
GitHub origin's repository name, else the folder's) titles the history site.

Exit codes: 0 done (or nothing to report), 1 ``--check`` found something, 2 usage
(not a git repository, a bad module name, no commit to pin the workflows to).
"""

from __future__ import annotations

import argparse
import os
import sys

from neuronasv.commands.args import add_repo_arg, command_parser
from neuronasv.errors import UsageError

__all__ = ["add_parser", "run"]


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = command_parser(subparsers, "init", description=__doc__)
    p.add_argument("--workloads", metavar="PKG.MODULE",
                   help="module registering the workloads (default: <repo>_workloads)")  # fmt: skip
    p.add_argument("--project", help="the project's name (default: from git, else the folder)")
    p.add_argument("--ref", help="neuronasv commit (40 hex) the caller workflows pin")
    p.add_argument("--from", dest="source_repo", metavar="OWNER/REPO",
                   help="the reusable workflows' repository (default: this package's)")
    p.add_argument("--check", action="store_true", help="list what is missing or stale")
    add_repo_arg(p, purpose="the repository to adopt neuronasv in")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from neuronasv.ci import scaffold
    from neuronasv.store.git import Git

    git = Git(args.repo)
    if not git.is_repo():
        raise UsageError(f"{args.repo} is not inside a git repository", hint="run `git init`")
    root = git.toplevel()
    project = args.project or scaffold.project_name(root, git)
    module = (
        args.workloads
        or scaffold.module_in_suite(root)
        or scaffold.default_workloads_module(project)
    )
    branch = git.run("symbolic-ref", "--short", "HEAD", check=False).text.strip()
    source = scaffold.workflows_source(args.source_repo, args.ref)
    files = scaffold.plan(
        root, project=project, module=module, branch=branch or "main",
        source=source,
    )  # fmt: skip
    gitignore = scaffold.missing_gitignore_lines(root)
    if args.check:
        return _check(root, files, gitignore)
    for rel, text in files.items():
        path = os.path.join(root, rel)
        if rel == ".gitignore":
            if gitignore:
                with open(path, "a", encoding="utf-8") as fh:
                    fh.write("".join(f"{line}\n" for line in gitignore))
                print(f"added {', '.join(gitignore)} to .gitignore")
            continue
        if os.path.exists(path):
            print(f"kept {rel} (exists; never overwritten)")
            continue
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "x", encoding="utf-8") as fh:
            fh.write(text)
        print(f"wrote {rel}")
    print(
        f"next: git add -A && git commit -m 'neuronasv init', then `neuronasv run HEAD`"
        f" (workflows pinned to {source.repository}@{source.commit[:12]})"
    )
    return 0


def _check(root: str, files: dict[str, str], gitignore: list[str]) -> int:
    problems = [f"missing in .gitignore: {line}" for line in gitignore]
    for rel, text in files.items():
        if rel == ".gitignore":
            continue
        path = os.path.join(root, rel)
        if not os.path.exists(path):
            problems.append(f"missing: {rel}")
            continue
        with open(path, encoding="utf-8") as fh:
            if fh.read() != text:
                problems.append(f"differs from what init writes now (stale or edited): {rel}")
    for line in problems:
        print(line)
    if not problems:
        print("up to date")
    sys.stdout.flush()
    return 1 if problems else 0
