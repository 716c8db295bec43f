"""Workflow outputs: ``name=value`` lines to stdout and, in Actions, to ``$GITHUB_OUTPUT``."""

from __future__ import annotations

import os
from collections.abc import Mapping

from neuronasv.log import emit

__all__ = ["set_output"]


def set_output(name: str, value: str, environ: Mapping[str, str] | None = None) -> None:
    """Print ``name=value``; append it to ``$GITHUB_OUTPUT`` when that is set."""
    if "\n" in value or "\r" in value:
        raise ValueError(f"output {name} must be one line")
    line = f"{name}={value}\n"
    emit(line, end="")
    path = (os.environ if environ is None else environ).get("GITHUB_OUTPUT")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(line)
