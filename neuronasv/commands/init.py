"""``neuronasv init``: adopt neuronasv in this git repository (asv config, suite, workflows).

    neuronasv init [--workloads PKG.MODULE] [--project NAME] [--branch NAME]
                   [--from OWNER/REPO] [--ref SHA]
    neuronasv init --check [--branch NAME] [--from OWNER/REPO] [--ref SHA]
    neuronasv init --update-pins [--from OWNER/REPO] [--ref SHA]

Writes ``asv.conf.json``, ``benchmarks/`` (a suite importing the workloads module,
default ``<repo>_workloads``), a commented example workloads module when that module does
not exist (a near name gets "did you mean" instead), the two caller workflows under
``.github/workflows/`` and the output folders in ``.gitignore``. It never overwrites a file:
an existing one is kept and named.

The callers trigger on the default branch: ``--branch``, else the remote's HEAD, never
silently the branch checked out (without a remote HEAD init says what it chose). They pin
the reusable workflows' repository and commit this neuronasv records (a ``git+`` install,
or the wheel's build record), else ``--from OWNER/REPO`` and ``--ref SHA``: never a guess.

``--check`` writes nothing and compares with what ``init`` would write for the branch,
project and workloads module the files already hold: a stale pin, a missing file and an
unsupported edit fail (exit 1); a supported customisation (another ``backend:``, more
inputs or jobs, an edited suite) is listed as kept (docs/getting-started.md).
``--update-pins`` moves the callers' pins (``uses:``, ``package``) to this neuronasv and
changes no other line.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from neuronasv.commands.args import add_repo_arg, command_parser
from neuronasv.errors import UsageError
from neuronasv.log import emit

if TYPE_CHECKING:
    from neuronasv.ci.branches import Branch
    from neuronasv.ci.initcheck import Finding
    from neuronasv.ci.scaffold import Recorded, Source
    from neuronasv.store.git import Git

__all__ = ["add_parser", "run"]


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = command_parser(
        subparsers, "init", description=__doc__,
        exits={0: "--check: nothing to fix", 1: "--check found something to fix",
               2: "not a git repository, a bad name, no repository or commit to pin"},
    )  # fmt: skip
    p.add_argument("--workloads", metavar="PKG.MODULE",
                   help="module registering the workloads (default: <repo>_workloads)")  # fmt: skip
    p.add_argument("--project", help="the project's name (default: from git, else the folder)")
    p.add_argument("--branch", metavar="NAME",
                   help="the default branch the callers run on (default: the remote's"
                   " HEAD)")  # fmt: skip
    p.add_argument("--ref", metavar="SHA",
                   help="neuronasv commit (40 hex) the caller workflows pin")  # fmt: skip
    p.add_argument("--from", dest="source_repo", metavar="OWNER/REPO",
                   help="the reusable workflows' GitHub repository (default: the one this"
                   " neuronasv records; required when it records none)")  # fmt: skip
    p.add_argument("--update-pins", action="store_true",
                   help="move the caller workflows' pins to this neuronasv; every other line"
                   " (your customisations) kept")  # fmt: skip
    p.add_argument("--check", action="store_true",
                   help="compare with what init would write: stale pins and unsupported edits"
                   " fail, customisations are listed")  # fmt: skip
    add_repo_arg(p, purpose="the repository to adopt neuronasv in")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from neuronasv.ci import gitignore, quoting, scaffold
    from neuronasv.store.git import Git

    git = Git(args.repo)
    if not git.is_repo():
        raise UsageError(f"{args.repo} is not inside a git repository", hint="run `git init`")
    root = git.toplevel()
    before = scaffold.recorded(root)
    project = quoting.project_name(
        args.project or before.project or scaffold.project_name(root, git)
    )
    module = quoting.module_name(
        args.workloads or before.module or scaffold.default_workloads_module(project)
    )
    branch = _branch(args, git, before.branch)
    source = scaffold.workflows_source(args.source_repo, args.ref, recorded=before)
    files = scaffold.plan(root, project=project, module=module, branch=branch.name,
                          source=source, example=not args.check)  # fmt: skip
    if args.update_pins:
        return _update_pins(root, before, source)
    ignore, notes = gitignore.missing(git)
    if args.check:
        lines = _missing_module(root, module)
        ignored = [e.line for e in ignore]
        return _check(root, git, files, ignored, branch, source, args.branch, lines)
    _write_new(root, files)
    done = gitignore.add_lines(root, [e.line for e in ignore])
    for line in ([done] if done else []) + notes:
        emit(line)
    emit(f"default branch: {branch.name} ({branch.how})")
    if branch.fallback:
        emit("  not from a remote: check it, and pass --branch NAME to write another")
    emit(f"workflows pinned to {source.repository}@{source.commit[:12]} ({source.how})")
    emit("next: git add -A && git commit -m 'neuronasv init', then `neuronasv run HEAD`")
    return 0


def _branch(args: argparse.Namespace, git: Git, recorded: str | None) -> Branch:
    """The default branch the callers run on: ``--check`` keeps the one the files record
    (unless ``--branch``); otherwise ``--branch``, else the remote's HEAD."""
    from neuronasv.ci import branches

    if args.check and not args.branch and recorded:
        return branches.Branch(recorded, "asv.conf.json")
    return branches.default_branch(git, args.branch)


def _missing_module(root: str, module: str) -> list[str]:
    """``--check``'s line for a workloads module the suite imports but the repository lacks."""
    from neuronasv.ci import scaffold

    if scaffold.workloads_module_path(root, module) is not None:
        return []
    near = scaffold.near_modules(root, module)
    return [f"missing: the workloads module {module} (the suite imports it)"
            + (f"; did you mean {' or '.join(near)}?" if near else "")]  # fmt: skip


def _write_new(root: str, files: dict[str, str]) -> None:
    """Write each planned file that does not exist yet; an existing one is kept and named."""
    for rel, text in files.items():
        path = os.path.join(root, rel)
        if os.path.lexists(path):
            emit(f"kept {rel} (exists; never overwritten)")
            continue
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "x", encoding="utf-8") as fh:
            fh.write(text)
        emit(f"wrote {rel}")


def _check(
    root: str, git: Git, files: dict[str, str], ignore: list[str], branch: Branch,
    source: Source, requested: str | None, lines: list[str],
) -> int:  # fmt: skip
    from neuronasv.ci import branches as br
    from neuronasv.ci import initcheck

    findings: list[initcheck.Finding] = []
    lines = [*lines, *(f"missing in .gitignore: {line}" for line in ignore)]
    head = br.remote_head(git)
    if head is not None and not requested and head[1] != branch.name:
        lines.append(
            f"not supported: asv.conf.json: the files track {branch.name!r}, but {head[0]}'s"
            f" default branch is {head[1]!r} (init --check --branch {branch.name} if deliberate)"
        )
    findings += _judge(root, files, source, branch.name)
    lines += [f.line() for f in findings if f.fails]
    if any(f.kind == "stale pin" for f in findings):
        lines.append("to move the pins and keep every other line: neuronasv init --update-pins")
    kept = [f.line() for f in findings if not f.fails]
    for line in lines + kept:
        emit(line)
    if not lines:
        emit(f"up to date (branch {branch.name}, pinned to {source.repository}"
              f"@{source.commit[:12]}{'; customisations kept' if kept else ''})")  # fmt: skip
    return 1 if lines else 0


def _judge(root: str, files: dict[str, str], source: Source, branch: str) -> list[Finding]:
    """Each file init writes against what is there; then GitHub's start-up rules over the
    callers, against the reusable workflows they pin (when no pin is stale)."""
    from neuronasv.ci import initcheck
    from neuronasv.ci.scaffold import WORKFLOW_FILES, reusable_workflows

    findings: list[initcheck.Finding] = []
    callers: dict[str, str] = {}
    for rel, text in files.items():
        path = os.path.join(root, rel)
        if not os.path.isfile(path):
            findings.append(initcheck.Finding(rel, "missing", ""))
            continue
        with open(path, encoding="utf-8", errors="replace") as fh:
            actual = fh.read()
        findings += initcheck.check_file(rel, text, actual, source, branch)
        if rel in WORKFLOW_FILES:
            callers[rel] = actual
    reusable = reusable_workflows()
    if reusable and not any(f.kind == "stale pin" for f in findings):
        findings += initcheck.start_up_rules(callers, source, reusable)
    return findings


def _update_pins(root: str, before: Recorded, source: Source) -> int:
    from neuronasv import __version__
    from neuronasv.ci.initcheck import repin
    from neuronasv.ci.scaffold import WORKFLOW_FILES
    from neuronasv.fileio import write_atomic

    if not (before.repository and before.commit):
        raise UsageError("no caller workflow pins a neuronasv commit here", hint="run init")
    for rel in WORKFLOW_FILES:
        path = os.path.join(root, rel)
        if os.path.islink(path) or not os.path.isfile(path):
            emit(f"kept {rel} ({'a symbolic link' if os.path.islink(path) else 'missing'})")
            continue
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        new = repin(text, (before.repository, before.commit), source, __version__)
        if new == text:
            emit(f"kept {rel} (already pinned to {source.repository}@{source.commit[:12]})")
            continue
        write_atomic(path, new)
        emit(f"updated the pins of {rel} to {source.repository}@{source.commit[:12]}")
    return 0
