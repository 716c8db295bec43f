"""Real valgrind: two passes, two processes whose libraries are mapped differently, one count.

The pass's own check (count "b", the heap shifted inside one process) cannot see what
follows the process's mappings: where the shared libraries were loaded differs from one
valgrind process to the next. A C++ exception's unwinder asks glibc which loaded object holds
each return address (``_dl_find_object``), and that search followed the mappings: the replayed
``profiler::_record_function_exit`` of a ConvNeXt training step (its pybind11 dispatch throws
and catches) counted 164,710 then 164,798 in two passes. Here a small suite of our own wraps
a multiply in ``record_function`` (as an optimizer's step is) and is counted by two passes:
the second from a longer folder, with a larger environment and the unwinder's library
(``libgcc_s``) preloaded: it is then among the objects loaded at start rather than those
torch's import loads later, and the libraries after it map elsewhere. The second pass also
counts another workload beside it: pybind11's cache of registered types is keyed by the
addresses of type objects made before the configuration's process is forked (a ConvNeXt
training step's total moved by 78 between a pass of the whole suite and a pass of its class
alone). Every series must be identical. (Without those two left out of the counts, this
setting counted the range's exit 82,355 then 81,914. Preloading ``libstdc++`` too is not a
layout change: its template instances then replace torch's own copies, other code.)
"""

from __future__ import annotations

import ctypes.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from neuronasv.measure.callgrind import build_helper, valgrind_status
from neuronasv.run.instrpass import finish_payloads
from neuronasv.run.instrrun import valgrind_command, valgrind_env

ROOT = Path(__file__).resolve().parents[2]
USABLE, WHY = valgrind_status()

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not USABLE, reason=f"valgrind not usable here: {WHY}"),
]

WORKLOADS = """
import torch
from torch.autograd.profiler import record_function

from neuronasv.measure.workloads import Workload, register


def _build(shape, dtype, device, seed):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=gen).to(dtype=dtype, device=device)

    def step():
        with record_function("layoutcheck.step"):
            return x * 2.0 + 1.0

    return step


register(Workload("layoutcheck.ranged", "a multiply in a record_function range", "4x64",
                  _build, default_dtype="float32"))
register(Workload("layoutcheck.other", "the same work, counted beside it", "4x64",
                  _build, default_dtype="float32"))
"""

SUITE = """
from neuronasv.suite import build_suite

globals().update(build_suite(None, module=__name__, workloads="layoutcheck_workloads",
                             cpu_shapes=(), dtypes=("float32",)))
"""


def _suite(tmp: Path) -> Path:
    tree = tmp / "tree"
    (tree / "benchmarks").mkdir(parents=True)
    (tree / "layoutcheck_workloads.py").write_text(textwrap.dedent(WORKLOADS))
    (tree / "benchmarks" / "__init__.py").write_text("")
    (tree / "benchmarks" / "devtime.py").write_text(textwrap.dedent(SUITE))
    return tree


def _count(tmp: Path, tree: Path, folder: str, *, shift: str | None) -> dict[str, Any]:
    """The ranged workload's counts: alone in the first pass; beside another in the second
    (the pass's process then makes more objects before it forks the configuration's)."""
    out = tmp / folder
    helper = build_helper(str(out / "helper"))
    (out / "dumps").mkdir(parents=True)
    cmd = valgrind_command(sys.executable, str(tree / "benchmarks"), out_dir=str(out / "counts"),
                           helper=helper, dumps=str(out / "dumps" / "cg.out"),
                           regexes=[] if shift else [r"\.LayoutcheckRanged\."])  # fmt: skip
    env = valgrind_env({**os.environ, "ASV_PYTHONPATH": str(tree), "HOME": str(tmp),
                        "NEURONASV_BACKEND": "cpu"}, scratch=str(out))  # fmt: skip
    if shift is not None:
        env["LD_PRELOAD"] = shift  # loaded at start: the unwinder finds them elsewhere
        env["LAYOUTCHECK_PADDING"] = "x" * 65536  # and a larger stack to start from
    proc = subprocess.run(cmd, env=env, cwd=out, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    counted = finish_payloads(str(out / "counts"), str(out / "dumps" / "cg.out"))
    assert counted == (2 if shift else 1)
    doc = json.loads((out / "counts" / "layoutcheck.ranged.json").read_text())
    found: dict[str, Any] = doc["results"]["4x64|float32"]
    return found


def test_counts_do_not_follow_where_the_libraries_were_mapped(tmp_path: Path) -> None:
    unwinder = ctypes.util.find_library("gcc_s")
    if unwinder is None:
        pytest.skip("libgcc_s (the C++ unwinder) not found here")
    tree = _suite(tmp_path)
    first = _count(tmp_path, tree, "a", shift=None)
    again = _count(tmp_path, tree, "b" + "-moved" * 20, shift=unwinder)
    assert first["deterministic"] and again["deterministic"], (first, again)
    # the range's ops are counted (their replays throw and catch inside pybind11's dispatch)
    assert {"profiler::_record_function_enter_new", "profiler::_record_function_exit"} <= set(
        first["ops"]
    ), sorted(first["ops"])
    assert first["ops"] == again["ops"]
    assert first["modules"] == again["modules"]
    assert first["total"] == again["total"]
