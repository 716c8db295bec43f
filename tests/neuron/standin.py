"""Where the Neuron stand-ins live, and the environment that puts them in front (tests only).

* ``BIN``: the stand-in ``neuron-explorer`` executable (tests/neuron/bin);
* ``SITE``: the stand-in TorchNeuron package (``torch_neuronx`` with a simulated
  NeuronCore; tests/neuron/site), for subprocesses only: importing it renames PrivateUse1
  to ``neuron`` for the rest of the process.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
BIN = HERE / "bin"
SITE = HERE / "site"
EXPLORER = BIN / "neuron-explorer"


def tool_path(extra: str = "") -> str:
    """``PATH`` with the stand-in explorer first and this interpreter's folder next (so its
    ``#!/usr/bin/env python3`` is this venv's, with pyarrow when installed)."""
    parts = [str(BIN), os.path.dirname(sys.executable), extra or os.environ.get("PATH", "")]
    return os.pathsep.join(p for p in parts if p)


def standin_env(base: Mapping[str, str] | None = None, *, device: bool = True) -> dict[str, str]:
    """An environment for a subprocess: the stand-in explorer on PATH and, with
    ``device``, the stand-in TorchNeuron importable (also by asv's benchmark processes)."""
    env = dict(os.environ if base is None else base)
    env["PATH"] = tool_path(env.get("PATH", ""))
    if device:
        for var in ("PYTHONPATH", "ASV_PYTHONPATH"):
            parts = [str(SITE), str(ROOT), *[p for p in env.get(var, "").split(os.pathsep) if p]]
            env[var] = os.pathsep.join(parts)
    env.pop("NEURON_RT_INSPECT_ENABLE", None)
    return env
