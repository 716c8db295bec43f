"""File names inside a pass's folder (the pre-pass's, the callgrind pass's): one spelling.

Each pass writes one payload per workload, ``<folder>/<workload>.json`` (the workload's
name made safe for a file name), and the pre-pass also its record of the suite's classes
(:data:`DECLARATION_NAME`, not ``*.json``: no workload's payload can take its name).
"""

from __future__ import annotations

import os

from neuronasv.keys import payload_name

__all__ = ["DECLARATION_NAME", "declaration_path", "payload_path"]

#: The pre-pass's record of the suite's classes (:mod:`neuronasv.suite.declare`).
DECLARATION_NAME = "suite.neuronasv-classes"


def payload_path(folder: str, workload: str) -> str:
    """``<folder>/<workload>.json``: where a pass's payload of ``workload`` lies."""
    return os.path.join(folder, payload_name(workload))


def declaration_path(folder: str) -> str:
    """``<folder>/suite.neuronasv-classes``: the pre-pass's record of the suite's classes."""
    return os.path.join(folder, DECLARATION_NAME)
