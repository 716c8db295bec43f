"""Real valgrind: the callgrind pass counts the naive RMSNorm exactly, per op, repeatably.

Needs valgrind (``ci/setup-system.sh`` installs it, so these run in CI); skipped only where
it is not installed, saying so. One process counts the configuration twice (the same code
counted again must give identical numbers: an A/A pair inside one process); a second
process runs a copy of the package whose naive RMSNorm has one extra elementwise op: the
total and ``aten::mul`` grow by an exact amount, every other op's count is identical. The
second process also counts a transformer block's backward at a tiny shape: deterministic,
its whole step included.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
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


#: A transformer block's forward and backward at a tiny shape (its graph is the same at any
#: size): the autograd engine's tables keyed by node addresses once made its total move.
BACKWARD = "2x8x16x2"


def _count(
    tmp: Path, tree: Path, name: str, repeat: int, *, backward: bool = False
) -> list[dict[str, Any]]:
    out = tmp / name
    helper = build_helper(str(out / "helper"))
    (out / "dumps").mkdir(parents=True)
    regexes = [r"rmsnorm\.Naive\."] + ([r"transformer\.BlockBackward\."] if backward else [])
    cmd = valgrind_command(sys.executable, str(ROOT / "benchmarks"), out_dir=str(out / "counts"),
                           helper=helper, dumps=str(out / "dumps" / "cg.out"),
                           regexes=regexes)  # fmt: skip
    cmd += ["--repeat", str(repeat)]
    # the block needs its own shape: the rmsnorm takes it too, the block refuses 4x512
    shapes = f"4x512,{BACKWARD}" if backward else "4x512"
    env = valgrind_env(
        {**os.environ, "ASV_PYTHONPATH": str(tree), "NEURONASV_BACKEND": "cpu",
         "NEURONASV_SHAPES": shapes, "NEURONASV_DTYPES": "float32", "HOME": str(tmp)}
    )  # fmt: skip
    # cwd outside any checkout: `python -m` puts the cwd first on the import path.
    proc = subprocess.run(cmd, env=env, cwd=tmp, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    counted = finish_payloads(str(out / "counts"), str(out / "dumps" / "cg.out"))
    assert counted == repeat * (3 if backward else 1)
    # every dump read and deleted, callgrind's own ones at each process's exit too
    assert list((out / "dumps").iterdir()) == []
    folders = [out / "counts"] + [out / "counts" / f"rep{k}" for k in range(1, repeat)]
    docs = [json.loads((f / "rmsnorm.naive.json").read_text()) for f in folders]
    meta = json.loads((out / "counts" / "_meta.json").read_text())
    assert meta["torch"].startswith("2.") and meta["threads"] == 1
    assert meta["MKL_ENABLE_INSTRUCTIONS"] == "SSE4_2"  # valgrind runs MKL off FMA
    found = [d["results"]["4x512|float32"] for d in docs]
    if backward:
        block = json.loads((out / "counts" / "transformer.block.backward.json").read_text())
        found.append(block["results"][f"{BACKWARD}|float32"])
    return found


@pytest.fixture(scope="module")
def counted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("instr")
    base = _count(tmp, ROOT, "base", repeat=2)
    tree = tmp / "tree"
    shutil.copytree(ROOT / "neuronasv", tree / "neuronasv",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    path = tree / "neuronasv" / "measure" / "workloads" / "rmsnorm.py"
    anchor = "    sq = x * x  # aten::mul (1)\n"
    text = path.read_text()
    assert anchor in text, "rmsnorm_naive changed: update this test's anchor"
    path.write_text(text.replace(anchor, anchor + "    sq = sq * 1.0\n"))
    head, backward = _count(tmp, tree, "head", repeat=1, backward=True)
    return {"base": base, "head": head, "backward": backward}


def test_counts_are_exact_and_repeatable_in_one_process(counted: dict[str, Any]) -> None:
    first, again = counted["base"]
    assert first["deterministic"] and again["deterministic"], first["unstable"]
    assert first == again  # A/A: every series identical
    assert set(first["ops"]) == {"aten::mul", "aten::mean", "aten::add", "aten::rsqrt"}
    assert first["calls"]["aten::mul"] == 3.0
    assert all(v > 0 for v in first["ops"].values())
    assert first["total"] > sum(first["ops"].values()) * 0.9


def test_one_extra_elementwise_op_is_an_exact_delta_of_that_op_only(
    counted: dict[str, Any],
) -> None:
    base, head = counted["base"][0], counted["head"]
    assert head["deterministic"]
    assert head["calls"]["aten::mul"] == 4.0
    assert head["ops"]["aten::mul"] > base["ops"]["aten::mul"]
    assert head["total"] > base["total"]
    for op in ("aten::mean", "aten::add", "aten::rsqrt"):
        assert head["ops"][op] == base["ops"][op], op


def test_a_backward_counts_exactly_its_whole_step_included(counted: dict[str, Any]) -> None:
    """The block's forward and backward: every op and module, and the whole step too — the
    engine's walk of the graph, keyed by node addresses, is left out of the counts."""
    block = counted["backward"]
    assert block["deterministic"], block.get("why")
    assert block["unstable"] == [] and "why" not in block
    assert block["calls"]["aten::mm"] > 0 and block["total"] > sum(block["ops"].values()) * 0.5
