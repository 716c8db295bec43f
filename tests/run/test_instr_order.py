"""The instructions pass counts the configurations that took longest in the pre-pass first:
the counts do not depend on the order (each starts from the same state), the pass's length
does."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from neuronasv.run.instrpass import _Class, _Config, _longest_first
from neuronasv.suite.feed import sample_count


def _suite(name: str) -> SimpleNamespace:
    return SimpleNamespace(workload=name, shapes=("4x4",), dtypes=("float32", "bfloat16"),
                           repeat=2, rounds=1, active=1)  # fmt: skip


def test_longest_first_by_the_pre_pass_else_the_suite_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suites = {n: _suite(n) for n in ("w.fwd", "w.train", "w.new")}
    todo = []
    for name, s in suites.items():
        group = _Class(name, str(tmp_path), {})
        for dtype in s.dtypes:
            key = f"4x4|{dtype}"
            config = _Config(_suite(name), name, "4x4", dtype, key, f"{name}|{key}", "")
            todo.append((group, config))
    seconds = {"w.fwd": {"4x4|float32": [0.003, 0.004, 0.002], "4x4|bfloat16": [0.001]},
               "w.train": {"4x4|float32": [0.012], "4x4|bfloat16": "not samples"}}  # fmt: skip
    for name, results in seconds.items():
        s = suites[name]
        (tmp_path / f"{name}.json").write_text(json.dumps({
            "workload": name, "shapes": list(s.shapes), "dtypes": list(s.dtypes),
            "samples": sample_count(s.repeat, s.rounds), "active": s.active,
            "results": {k: {"total": v} if isinstance(v, list) else {"error": v}
                        for k, v in results.items()},
        }))  # fmt: skip
    order = list(todo)
    monkeypatch.delenv("NEURONASV_PREPASS_DIR", raising=False)
    _longest_first(order, suites)  # no pre-pass: the suite's order
    assert order == todo
    monkeypatch.setenv("NEURONASV_PREPASS_DIR", str(tmp_path))
    _longest_first(order, suites)
    assert [c.label for _, c in order] == [
        "w.train|4x4|float32", "w.fwd|4x4|float32", "w.fwd|4x4|bfloat16",
        # not timed (an error; a workload the pre-pass did not measure): last, in order
        "w.train|4x4|bfloat16", "w.new|4x4|float32", "w.new|4x4|bfloat16",
    ]  # fmt: skip
