"""``python -m neuronasv.ci requirements``: the installed package's dependencies, one a line.

The hosted jobs install neuronasv with ``pip install --no-deps``, then ask this step which
dependencies to install (all but torch: they only read results and talk to GitHub, and
the default torch wheel is gigabytes). The self-hosted jobs install the pinned package
with ``--no-deps --force-reinstall`` into a venv that sees the runner's packages and ask for
all of them (``--all``: the runner's torch satisfies torch), with ``--installed-in VENV``:
the step fails, saying where it found neuronasv, unless the package it describes and its
``neuronasv`` command are that venv's (a runner's own neuronasv must never be run in the
pinned one's place).

It runs *before* the dependencies are there, so this module and everything ``python -m
neuronasv.ci requirements`` imports is the standard library only: ``neuronasv.ci.__main__``
sends this step here before it builds the parser of the other steps (which import msgspec,
numpy and the rest). ``tests/ci/test_workflow_installs.py`` installs the wheel with
``--no-deps`` into a fresh venv and runs it, and runs the self-hosted install step over a
runner's Python that has another neuronasv.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Sequence

from neuronasv.errors import UsageError

__all__ = ["TORCH", "add_parser", "installed_in", "main", "requirements",
           "torchless_requirements"]

#: The dependencies a hosted job never installs (the accelerator's torch is the runner's).
TORCH = ("torch", "torch-neuronx", "torch_neuronx")


def requirements(*, torch: bool) -> list[str]:
    """The installed neuronasv's dependencies (no extras), with torch or without."""
    from importlib.metadata import requires

    out = []
    for req in requires("neuronasv") or []:
        if "extra ==" in req:
            continue
        name = re.split(r"[<>=!~;\[ ]", req, maxsplit=1)[0].strip().lower()
        if torch or name not in TORCH:
            out.append(req)
    return out


def torchless_requirements() -> list[str]:
    """The installed package's dependencies without torch (hosted jobs only read results)."""
    return requirements(torch=False)


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register the step (``python -m neuronasv.ci``'s parser, for its help)."""
    p = sub.add_parser("requirements", help="dependencies without torch, one a line")
    _arguments(p)
    p.set_defaults(func=_print)
    return p


def installed_in(prefix: str) -> None:
    """A UsageError unless the neuronasv that imports here, its metadata and its
    ``neuronasv`` command all lie under ``prefix`` (a venv)."""
    from importlib import metadata, util

    root = os.path.realpath(prefix) + os.sep
    spec = util.find_spec("neuronasv")
    found = {
        "the package": os.path.realpath(spec.origin) if spec and spec.origin else "nowhere",
        "its metadata": os.path.realpath(str(metadata.distribution("neuronasv").locate_file(""))),
    }  # fmt: skip
    command = os.path.join(prefix, "bin", "neuronasv")
    wrong = [f"{what} is in {path}" for what, path in found.items()
             if not (path + os.sep).startswith(root)]  # fmt: skip
    if not os.access(command, os.X_OK):
        wrong.append(f"{command} is missing")
    if wrong:
        raise UsageError(
            f"the pinned neuronasv is not installed in {prefix}: {'; '.join(wrong)}",
            hint="pip install --no-deps --force-reinstall the pinned package with that venv's"
            " python (pip calls another neuronasv of the same version 'already satisfied')",
        )


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--all", action="store_true",
                   help="torch too (self-hosted jobs: the runner's torch satisfies it)")
    p.add_argument("--installed-in", metavar="VENV", default=None,
                   help="fail unless this neuronasv and its command are in VENV")


def _print(args: argparse.Namespace) -> None:
    from neuronasv.log import emit

    if args.installed_in:
        installed_in(args.installed_in)
    emit("\n".join(requirements(torch=args.all)))


def main(argv: Sequence[str]) -> int:
    """The step on its own (``argv`` after the step's name): standard library only."""
    from neuronasv.exits import run_guarded
    from neuronasv.log import InertArgumentParser, cli_output

    p = InertArgumentParser(prog="python -m neuronasv.ci requirements",
                            description="the installed neuronasv's dependencies")
    _arguments(p)
    args = p.parse_args(list(argv))
    with cli_output(actions=True):
        return run_guarded(lambda: _print(args), "python -m neuronasv.ci requirements")
