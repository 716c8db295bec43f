"""Options several workflow steps share (``python -m neuronasv.ci``): the results branch."""

from __future__ import annotations

import argparse
import os

from neuronasv.steps.store import StoreRef

__all__ = [
    "add_store_args",
    "branch_name",
    "commit_url",
    "existing_folder",
    "positive_int",
    "positive_seconds",
    "repo_of",
    "store_ref",
]


def positive_int(text: str) -> int:
    """An integer >= 1 (argparse ``type``; ``neuronasv confirm``'s check of its counts)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def positive_seconds(text: str) -> float:
    """A finite number of seconds > 0 (argparse ``type``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive finite number, got {text}")
    return value


def branch_name(text: str) -> str:
    """A branch name (argparse ``type``; :func:`neuronasv.store.git.branch_problem`, as
    ``neuronasv store --branch``); empty: unset."""
    from neuronasv.store.git import branch_problem

    why = branch_problem(text) if text else None
    if why:
        raise argparse.ArgumentTypeError(f"{text!r} is not a branch name: it {why}")
    return text


def existing_folder(text: str) -> str:
    """A folder that exists (argparse ``type``)."""
    if not os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} is not a folder")
    return text


def add_store_args(p: argparse.ArgumentParser) -> None:
    """``--remote R --branch B --token-env VAR``, as for ``neuronasv store``."""
    p.add_argument("--remote", default="origin")
    p.add_argument("--branch", type=branch_name, default=None,
                   help="results branch (default: neuronasv's)")  # fmt: skip
    p.add_argument("--token-env", default=None, metavar="VAR")


def repo_of(args: argparse.Namespace) -> str:
    """``--repo``, absolute."""
    return os.path.abspath(args.repo)


def store_ref(args: argparse.Namespace) -> StoreRef:
    """The results branch the store options name, in the repository at ``--repo``."""
    return StoreRef(repo_of(args), remote=args.remote, branch=args.branch,
                    token_env=args.token_env)  # fmt: skip


def commit_url() -> str | None:
    """The commit link template of the repository the workflow runs for."""
    repo = os.environ.get("GITHUB_REPOSITORY")
    server = os.environ.get("GITHUB_SERVER_URL", "https://github.com")
    return f"{server}/{repo}/commit/{{commit}}" if repo else None
