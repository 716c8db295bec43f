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


def test_torch_dynamo_is_imported_before_the_fork_unless_the_pre_pass_saw_none_need_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An optimizer imports ``torch._dynamo`` (7.5 s under valgrind): once in the pass's
    process where a counted workload may need it, never where the pre-pass saw none do."""
    from neuronasv.run.instrpass import parent_imports

    suites = {n: _suite(n) for n in ("w.fwd", "w.train", "w.after", "w.none")}

    def payload(name: str, state: str | None) -> None:
        s = suites[name]
        doc = {"workload": name, "shapes": list(s.shapes), "dtypes": list(s.dtypes),
               "samples": sample_count(s.repeat, s.rounds), "active": s.active, "results": {}}
        if state is not None:
            doc["dynamo"] = state
        (tmp_path / f"{name}.json").write_text(json.dumps(doc))

    payload("w.fwd", "absent")
    payload("w.train", "imported")
    payload("w.after", "present")  # imported before it ran: unknown
    payload("w.none", None)  # a pre-pass of an older neuronasv: unknown
    monkeypatch.delenv("NEURONASV_PREPASS_DIR", raising=False)
    assert parent_imports({"w.fwd"}, suites) == ("torch._dynamo",)  # no pre-pass: unknown
    monkeypatch.setenv("NEURONASV_PREPASS_DIR", str(tmp_path))
    assert parent_imports({"w.fwd"}, suites) == ()
    assert parent_imports(set(), suites) == ()
    for other in ("w.train", "w.after", "w.none"):
        assert parent_imports({"w.fwd", other}, suites) == ("torch._dynamo",), other
    # a payload that does not fit the class (another shape list) is no evidence
    suites["w.fwd"] = SimpleNamespace(**{**vars(suites["w.fwd"]), "shapes": ("8x8",)})
    assert parent_imports({"w.fwd"}, suites) == ("torch._dynamo",)
