"""File names inside a pass's folder (the pre-pass's, the callgrind pass's): one spelling.

Each pass writes one payload per workload, ``<folder>/<workload>.json`` (the workload's
name made safe for a file name), and the pre-pass also its record of the suite's classes
(:data:`DECLARATION_NAME`, not ``*.json``: no workload's payload can take its name).
"""

from __future__ import annotations

import os
import re

__all__ = ["DECLARATION_NAME", "declaration_path", "payload_path", "safe_name"]

#: The pre-pass's record of the suite's classes (:mod:`neuronasv.suite.declare`).
DECLARATION_NAME = "suite.neuronasv-classes"


def safe_name(text: str) -> str:
    """``text`` as a file name: every run of other characters than ``[A-Za-z0-9._-]`` -> _."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)


def payload_path(folder: str, workload: str) -> str:
    """``<folder>/<workload>.json``: where a pass's payload of ``workload`` lies."""
    return os.path.join(folder, safe_name(workload) + ".json")


def declaration_path(folder: str) -> str:
    """``<folder>/suite.neuronasv-classes``: the pre-pass's record of the suite's classes."""
    return os.path.join(folder, DECLARATION_NAME)
