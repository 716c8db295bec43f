"""Names of the suite's things, one spelling each: the class a workload becomes, and the
file names inside a pass's folder (the pre-pass's, the callgrind pass's).

Each pass writes one payload per workload, ``<folder>/<workload>.json`` (the workload's
name made safe for a file name), and the pre-pass also its record of the suite's classes
(:data:`DECLARATION_NAME`, not ``*.json``: no workload's payload can take its name).
"""

from __future__ import annotations

import os
import re

from neuronasv.keys import payload_name

__all__ = [
    "DECLARATION_NAME",
    "DYNAMO_KEY",
    "DYNAMO_MODULE",
    "class_name",
    "declaration_path",
    "payload_path",
]

#: The pre-pass's record of the suite's classes (:mod:`neuronasv.suite.declare`).
DECLARATION_NAME = "suite.neuronasv-classes"
#: A pre-pass payload's record of ``torch._dynamo`` around the class's profile: ``"absent"``
#: (not imported after it), ``"imported"`` (its workload imported it: an optimizer's
#: ``add_param_group`` does), ``"present"`` (imported before it ran: unknown). The
#: callgrind pass imports it once before forking unless every class it counts says
#: ``"absent"`` (:mod:`neuronasv.run.instrpass`).
DYNAMO_KEY = "dynamo"
#: The module that record is of.
DYNAMO_MODULE = "torch._dynamo"


def payload_path(folder: str, workload: str) -> str:
    """``<folder>/<workload>.json``: where a pass's payload of ``workload`` lies."""
    return os.path.join(folder, payload_name(workload))


def declaration_path(folder: str) -> str:
    """``<folder>/suite.neuronasv-classes``: the pre-pass's record of the suite's classes."""
    return os.path.join(folder, DECLARATION_NAME)


def class_name(workload: str, tag: str) -> str:
    """``rmsnorm.naive`` (tag ``rmsnorm``) -> ``Naive``; other names CamelCased whole."""
    rest = workload[len(tag) + 1 :] if workload.startswith(tag + ".") else workload
    parts = [p for p in re.split(r"[^A-Za-z0-9]+", rest) if p]
    name = "".join(p[:1].upper() + p[1:] for p in parts) or "Workload"
    return name if name[0].isalpha() else "W" + name
