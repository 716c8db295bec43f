"""Shared arguments, argument checks and output writing for every sub-command.

The one module commands share (a command never imports another command): options that
mean the same in several commands are declared here once, with one help text and one
meaning — ``--repo`` is always a git checkout (:func:`add_repo_arg`); a GitHub
``owner/name`` is ``--github-repo`` (:func:`add_github_repo_arg`, which keeps the old
``comment``/``status`` spelling ``--repo OWNER/NAME`` working with a deprecation warning).

Each checker is an argparse ``type=``: a bad value becomes argparse's own
``error: argument --alpha: ...`` (exit 2) *before* the command does any work, so a
profile that would take minutes never runs only to fail on its ``--json`` path at the end.
Paths are checked for what the option means: an input file must exist, be a file (not a
folder) and be readable; an output file's folder must exist and the file must not be a
folder; an input folder must exist.

:func:`write_output` is the one way commands write a text result to a file: atomically
(temporary file in the same folder, then rename), and the temporary file is removed when
anything fails, so a failed write leaves nothing behind.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from neuronasv.commands import COMMANDS
from neuronasv.errors import UsageError, exit_codes_line
from neuronasv.fileio import write_atomic
from neuronasv.log import emit

if TYPE_CHECKING:
    pass

__all__ = [
    "GITHUB_REPO_DEPRECATED",
    "add_acks_arg",
    "add_backend_arg",
    "add_dry_run_args",
    "add_findings_arg",
    "add_floor_args",
    "add_github_repo_arg",
    "add_out_arg",
    "add_repo_arg",
    "add_results_args",
    "branch_name",
    "command_parser",
    "existing_dir",
    "existing_file",
    "finite_nonnegative",
    "github_environment",
    "int_at_least",
    "machine_name",
    "output_dir",
    "output_file",
    "positive_int",
    "probability_open",
    "pvalue",
    "repo_dir",
    "write_output",
]

log = logging.getLogger(__name__)


def positive_int(text: str) -> int:
    """A positive decimal integer (PR numbers come from untrusted events: digits only)."""
    if not text.isdigit() or int(text) <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return int(text)


def int_at_least(minimum: int) -> Callable[[str], int]:
    """An integer ``>= minimum``."""

    def check(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    check.__name__ = f"integer >= {minimum}"
    return check


def _finite(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def probability_open(text: str) -> float:
    """A probability strictly between 0 and 1 (a significance level: ``--alpha``)."""
    value = _finite(text)
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1 (exclusive), got {text}")
    return value


def pvalue(text: str) -> float:
    """A p-value threshold in (0, 1] (``--max-pvalue``; 1 = no threshold)."""
    value = _finite(text)
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in (0, 1], got {text}")
    return value


def finite_nonnegative(text: str) -> float:
    """A finite number ``>= 0`` (``--min-magnitude``)."""
    value = _finite(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {text}")
    return value


def existing_file(text: str) -> str:
    """An input file: exists, is a file, can be read."""
    if not text:
        raise argparse.ArgumentTypeError("empty path")
    if not os.path.exists(text):
        raise argparse.ArgumentTypeError(f"{text}: no such file")
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} is a folder, not a file")
    if not os.access(text, os.R_OK):
        raise argparse.ArgumentTypeError(f"{text}: not readable (permission denied)")
    return text


def existing_dir(text: str) -> str:
    """An input folder: exists and is a folder."""
    if not text:
        raise argparse.ArgumentTypeError("empty path")
    if not os.path.exists(text):
        raise argparse.ArgumentTypeError(f"{text}: no such folder")
    if not os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} is not a folder")
    return text


def repo_dir(text: str) -> str:
    """``--repo``: an existing folder, made absolute; inside a git work tree, that tree's
    top level, found from any subdirectory as git finds it (``neuronasv compare`` from
    ``docs/`` reads the same ``asv.conf.json`` and results as from the top)."""
    from neuronasv.store.asvconf import checkout_root

    return checkout_root(existing_dir(text))


def output_file(text: str) -> str:
    """A file to write: its folder exists and is writable, and it is not itself a folder.

    ``-`` (stdout) is passed through for the options that document it.
    """
    if text == "-":
        return text
    if not text:
        raise argparse.ArgumentTypeError("empty path")
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} is a folder; give a file name")
    parent = os.path.dirname(os.path.abspath(text))
    if not os.path.isdir(parent):
        raise argparse.ArgumentTypeError(f"{text}: folder {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"{text}: folder {parent} is not writable")
    if os.path.exists(text) and not os.access(text, os.W_OK):
        raise argparse.ArgumentTypeError(f"{text}: not writable (permission denied)")
    return text


def output_dir(text: str) -> str:
    """A folder to write into (created when missing): must not be an existing file."""
    if not text:
        raise argparse.ArgumentTypeError("empty path")
    if os.path.exists(text) and not os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} exists and is not a folder")
    return text


def machine_name(text: str) -> str:
    """An asv machine name: becomes a folder name, so no separators and no ``..``."""
    from neuronasv.store.machine import check_machine_name

    try:
        return check_machine_name(text)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


def branch_name(text: str) -> str:
    """A branch name (:func:`neuronasv.store.git.branch_problem`); empty: unset (the
    option's default)."""
    from neuronasv.store.git import branch_problem

    why = branch_problem(text) if text else None
    if why:
        raise argparse.ArgumentTypeError(f"{text!r} is not a branch name: it {why}")
    return text


def write_output(text: str, path: str | None, *, json: bool = False) -> None:
    """Write ``text`` to ``path`` atomically, or to stdout when ``path`` is None or ``-``.

    A regular file is replaced by rename (a reader never sees half of it); a symlink's
    target is replaced and the link kept; a device or pipe (``/dev/null``) is written in
    place, never replaced. Stdout, a device and a pipe may be a terminal or a CI log: the
    text goes through the one output path (:func:`neuronasv.log.emit`; ``json``: a JSON
    document, kept exact); a file gets the text as rendered.

    Raises:
        UsageError: the file cannot be written (names it); no temporary file is left.
    """
    if not path or path == "-":
        emit(text, end="", json=json)
        return
    if os.path.islink(path):
        path = os.path.realpath(path)  # replace the file it points to, keep the link
    if os.path.exists(path) and not os.path.isfile(path):
        # A device or a pipe (``--out /dev/null``, ``/dev/stdout``, a FIFO): written in
        # place; a rename would replace the device node itself with a regular file.
        try:
            with open(path, "w", encoding="utf-8") as fh:
                emit(text, end="", json=json, stream=fh)
        except OSError as exc:
            raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
        return
    try:
        write_atomic(path, text)  # removes its temporary file when it fails
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    except UnicodeEncodeError as exc:
        raise UsageError(f"cannot write {path}: text is not valid Unicode ({exc.reason})") from None


# --- options shared by several commands: declared once ----------------------------------


def command_parser(
    subparsers: Any,
    name: str,
    *,
    description: str | None,
    raw: bool = True,
    exits: Mapping[int, str | None] | None = None,
) -> argparse.ArgumentParser:
    """The sub-command's parser, with its one-line help from :data:`COMMANDS`.

    ``raw`` keeps the description's line breaks (a module docstring with a usage block).
    ``exits``: the exit codes the command may return, each with an optional note; the help
    ends with their line, made from the one table (:data:`neuronasv.errors.EXIT_CODES`).
    """
    if exits is not None:
        import textwrap

        line = textwrap.fill(exit_codes_line(dict(exits)), width=88, break_on_hyphens=False)
        description = f"{(description or '').rstrip()}\n\n{line}\n"
    kwargs: dict[str, Any] = {"help": COMMANDS[name], "description": description}
    if raw:
        kwargs["formatter_class"] = argparse.RawDescriptionHelpFormatter
    parser: argparse.ArgumentParser = subparsers.add_parser(name, **kwargs)
    return parser


def add_repo_arg(
    p: argparse.ArgumentParser,
    *,
    default: str | None = ".",
    purpose: str = "",
    default_text: str = "the current folder",
) -> None:
    """``--repo DIR``: the git checkout the command works in (always a folder; its git top
    level when it is inside a work tree, see :func:`repo_dir`)."""
    where = default_text
    p.add_argument(
        "--repo",
        type=repo_dir,
        default=default,
        metavar="DIR",
        help=f"git checkout{': ' + purpose if purpose else ''} (default: {where})",
    )


#: The deprecation warning of ``comment``/``status --repo OWNER/NAME``.
GITHUB_REPO_DEPRECATED = (
    "`--repo OWNER/NAME` is deprecated for `neuronasv {command}` (--repo is a git"
    " checkout in every other command); use --github-repo OWNER/NAME"
)


def add_github_repo_arg(p: argparse.ArgumentParser) -> None:
    """``--github-repo OWNER/NAME`` (and the deprecated ``--repo OWNER/NAME`` it replaces)."""
    p.add_argument(
        "--github-repo",
        metavar="OWNER/NAME",
        help="GitHub repository (default: $GITHUB_REPOSITORY)",
    )
    p.add_argument("--repo", dest="github_repo_deprecated", help=argparse.SUPPRESS)


def github_environment(args: argparse.Namespace) -> dict[str, str]:
    """``os.environ`` with ``GITHUB_REPOSITORY`` from ``--github-repo`` when given.

    The deprecated ``--repo OWNER/NAME`` still works, with a warning on stderr; given
    together with ``--github-repo`` (and different), it is a usage error.
    """
    env = dict(os.environ)
    repo = args.github_repo
    old = getattr(args, "github_repo_deprecated", None)
    if old:
        log.warning(GITHUB_REPO_DEPRECATED.format(command=args.command))
        if repo and repo != old:
            raise UsageError(f"--repo {old} and --github-repo {repo} disagree; give only one")
        repo = repo or old
    if repo:
        env["GITHUB_REPOSITORY"] = repo
    return env


def add_findings_arg(p: argparse.ArgumentParser, flag: str = "--report") -> None:
    """The findings document a report command renders (``--report FINDINGS.json``)."""
    p.add_argument(
        flag,
        required=True,
        type=existing_file,
        metavar="FINDINGS.json",
        help="findings document from `neuronasv compare --format json`",
    )


def add_out_arg(p: argparse.ArgumentParser, *, what: str = "the output") -> None:
    """``--out FILE``: where the command's output goes instead of stdout."""
    p.add_argument(
        "--out",
        type=output_file,
        metavar="FILE",
        help=f"write {what} to this file instead of stdout",
    )


def add_dry_run_args(p: argparse.ArgumentParser) -> None:
    """``--dry-run`` and ``--out`` of the commands that talk to GitHub."""
    p.add_argument("--dry-run", action="store_true", help="write what would be sent; send nothing")
    add_out_arg(p, what="the dry run's requests")


def add_acks_arg(p: argparse.ArgumentParser) -> None:
    from neuronasv.analyse.acks import ACKS_PATH

    p.add_argument(
        "--acks", type=existing_file, help=f"acknowledgements file (default: REPO/{ACKS_PATH})"
    )


def add_backend_arg(p: argparse.ArgumentParser, *, purpose: str = "") -> None:
    """``--backend``: where to measure."""
    p.add_argument(
        "--backend",
        default="auto",
        help="auto (default: the accelerator when there is one, else the CPU), cpu, cuda or"
        f" neuron{': ' + purpose if purpose else ''}",
    )


def add_results_args(p: argparse.ArgumentParser, *, machine_help: str) -> None:
    """``--results-dir``, ``--machine`` and ``--repo`` of the commands reading results."""
    p.add_argument("--results-dir", help="asv results folder (default: asv.conf.json's)")
    p.add_argument("--machine", type=machine_name, help=machine_help)
    add_repo_arg(p, purpose="commit names and order")


def add_floor_args(p: argparse.ArgumentParser) -> None:
    """``--history-dir`` and ``--no-floor``: the noise floors of ``compare``/``confirm``."""
    p.add_argument(
        "--history-dir",
        type=existing_dir,
        help="main-branch results folder for per-series noise floors (default: --results-dir)",
    )
    p.add_argument("--no-floor", action="store_true", help="no noise floors")
