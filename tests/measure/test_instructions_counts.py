"""Counts of a configuration from its dumps (measure/instructions.counts_from_dumps): pure."""

from __future__ import annotations

from pathlib import Path

import pytest

from neuronasv.measure.callgrind import Dump, read_dumps
from neuronasv.measure.instructions import Pending, counts_from_dumps, explain

LABEL = "transformer.block|1x128x256x4|float32"
PAIRS = (
    ("aten::mm", "block.attn"),
    ("aten::mm", "block.mlp"),
    ("aten::mul", "block.mlp"),
    ("aten::add", ""),
)


def dumps(pairs: dict[int, int], total: tuple[int, int]) -> dict[str, Dump]:
    """``pairs``: index -> its count; ``total``: the step's counts "a" and "b"."""
    out = {f"{LABEL}|total|{k}": Dump(f"{LABEL}|total|{k}", v + 40, 10, 30)
           for k, v in zip("ab", total, strict=True)}  # fmt: skip
    for i, a in pairs.items():
        name = f"{LABEL}|pair|a|{i}"
        out[name] = Dump(name, a + 7, 3, 4)  # native = a: the harness and allocators out
    return out


def test_ops_and_modules_are_the_sums_of_their_pairs() -> None:
    pending = Pending(LABEL, 1, {"aten::mm": 2.0, "aten::mul": 1.0, "aten::add": 1.0}, PAIRS)
    c = counts_from_dumps(pending, dumps({0: 100, 1: 300, 2: 5, 3: 7}, (1_000, 1_000)))
    assert c.total == 1_000 and c.deterministic and c.unstable == () and c.why == {}
    assert c.ops == {"aten::mm": 400.0, "aten::mul": 5.0, "aten::add": 7.0}
    assert c.modules == {"module:block": 405.0, "module:block.attn": 100.0,
                         "module:block.mlp": 305.0}  # fmt: skip
    assert c.calls["aten::mm"] == 2.0


def test_a_step_counted_to_two_numbers_marks_every_op_and_module_too() -> None:
    pending = Pending(LABEL, 2, {}, PAIRS)
    c = counts_from_dumps(pending, dumps({0: 100, 1: 300, 2: 6, 3: 8}, (2_000, 2_000)))
    assert c.total == 1_000.0 and c.ops["aten::mm"] == 200.0  # per iteration: a / n
    assert c.deterministic
    # the ops are checked through the step: which of them moved is not known
    c = counts_from_dumps(pending, dumps({0: 1, 1: 1, 2: 1, 3: 1}, (5, 6)))
    assert not c.deterministic
    assert c.unstable == ("total", "aten::add", "aten::mm", "aten::mul", "module:block",
                          "module:block.attn", "module:block.mlp")  # fmt: skip


def test_a_missing_dump_is_a_key_error_and_the_record_round_trips() -> None:
    pending = Pending(LABEL, 1, {"aten::mm": 2.0}, PAIRS)
    assert Pending.from_json(pending.to_json()) == pending
    with pytest.raises(KeyError):
        counts_from_dumps(pending, dumps({0: 1}, (5, 5)))


CPU = "/venv/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so"
ENGINE = "torch::autograd::Engine::compute_dependencies(torch::autograd::Node*, unsigned long)"


def test_two_counts_that_differ_are_explained_by_the_functions_that_moved() -> None:
    table = "std::_Hashtable<c10::TensorImpl*, c10::TensorImpl*>::find(c10::TensorImpl* const&)"
    a = {(CPU, ENGINE): 1_000, (CPU, table): 80, (CPU, "at::native::add"): 5}
    b = {(CPU, ENGINE): 1_179, (CPU, table): 56, (CPU, "at::native::add"): 5}
    assert explain(a, b) == (
        "the autograd engine's hash tables are keyed by node addresses (the heap's history)"
        " (torch::autograd::Engine::compute_dependencies +179, std::_Hashtable<…>::find -24)"
    )
    assert explain({}, {(CPU, table): 3}) == (
        "a hash table keyed by addresses (the heap's history) (std::_Hashtable<…>::find +3)"
    )
    other = {(CPU, "at::native::(anonymous namespace)::cat_serial_kernel<float>(at::Tensor)"): 3}
    assert explain({}, other) == (
        "two counts differed by +3 instructions, most in at::native::::cat_serial_kernel<…> +3"
    )
    assert explain(a, a) == ""


def _dump(label: str, body: str) -> str:
    total = body.rsplit(" ", 1)[1]  # one cost line: the dump's total
    return (f"desc: Trigger: Client Request: {label}\npositions: line\nevents: Ir\n"
            f"{body}\ntotals: {total}\n")  # fmt: skip


def test_a_target_counted_to_two_numbers_carries_why_from_its_dumps(tmp_path: Path) -> None:
    label = "w.train|2x65|float32"
    table = "std::_Hashtable<c10::TensorImpl*, c10::TensorImpl*>::find(c10::TensorImpl* const&)"
    files = {
        "total|a": f"ob=(1) {CPU}\nfn=(1) {table}\n0 1000",
        "total|b": f"ob=(1) {CPU}\nfn=(1) {table}\n0 976",
        "pair|a|0": f"ob=(1) {CPU}\nfn=(2) at::native::add\n0 5",
    }
    for i, (what, body) in enumerate(files.items()):
        (tmp_path / f"cg.out.{i}").write_text(_dump(f"{label}|{what}", body))
    found = read_dumps(str(tmp_path), "cg.out", remove=False)
    c = counts_from_dumps(Pending(label, 1, {"aten::add": 1.0}, (("aten::add", ""),)), found)
    assert c.unstable == ("total", "aten::add")
    line = "a hash table keyed by addresses (the heap's history) (std::_Hashtable<…>::find -24)"
    assert c.why == {"total": line, "ops": f"the whole step's two counts differed: {line}"}
    assert c.to_json()["why"] == c.why
