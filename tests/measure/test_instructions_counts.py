"""Counts of a configuration from its dumps (measure/instructions.counts_from_dumps): pure."""

from __future__ import annotations

import pytest

from neuronasv.measure.callgrind import Dump
from neuronasv.measure.instructions import Pending, counts_from_dumps

LABEL = "transformer.block|1x128x256x4|float32"
PAIRS = (
    ("aten::mm", "block.attn"),
    ("aten::mm", "block.mlp"),
    ("aten::mul", "block.mlp"),
    ("aten::add", ""),
)


def dumps(pairs: dict[int, tuple[int, int]], total: tuple[int, int]) -> dict[str, Dump]:
    """``pairs``: index -> (its count, its share of the check dump)."""
    out = {f"{LABEL}|total|{k}": Dump(f"{LABEL}|total|{k}", v + 40, 10, 30)
           for k, v in zip("ab", total, strict=True)}  # fmt: skip
    for i, (a, _) in pairs.items():
        name = f"{LABEL}|pair|a|{i}"
        out[name] = Dump(name, a + 7, 3, 4)  # native = a: the harness and allocators out
    check = f"{LABEL}|pairs|b"
    out[check] = Dump(check, sum(b for _, b in pairs.values()) + 7, 3, 4)
    return out


def test_ops_and_modules_are_the_sums_of_their_pairs() -> None:
    pending = Pending(LABEL, 1, {"aten::mm": 2.0, "aten::mul": 1.0, "aten::add": 1.0}, PAIRS)
    c = counts_from_dumps(pending, dumps({0: (100, 100), 1: (300, 300), 2: (5, 5), 3: (7, 7)},
                                         (1_000, 1_000)))  # fmt: skip
    assert c.total == 1_000 and c.deterministic and c.unstable == ()
    assert c.ops == {"aten::mm": 400.0, "aten::mul": 5.0, "aten::add": 7.0}
    assert c.modules == {"module:block": 405.0, "module:block.attn": 100.0,
                         "module:block.mlp": 305.0}  # fmt: skip
    assert c.calls["aten::mm"] == 2.0


def test_pairs_counted_again_to_another_sum_mark_every_op_and_module() -> None:
    pending = Pending(LABEL, 2, {}, PAIRS)
    c = counts_from_dumps(pending, dumps({0: (100, 100), 1: (300, 301), 2: (6, 6), 3: (8, 8)},
                                         (2_000, 2_000)))  # fmt: skip
    assert c.total == 1_000.0 and c.ops["aten::mm"] == 200.0  # per iteration: a / n
    assert not c.deterministic
    assert c.unstable == ("aten::add", "aten::mm", "aten::mul", "module:block",
                          "module:block.attn", "module:block.mlp")  # fmt: skip
    # the step counted differently twice: named first
    c = counts_from_dumps(pending, dumps({0: (1, 1), 1: (1, 1), 2: (1, 1), 3: (1, 1)}, (5, 6)))
    assert c.unstable == ("total",)


def test_a_missing_dump_is_a_key_error_and_the_record_round_trips() -> None:
    pending = Pending(LABEL, 1, {"aten::mm": 2.0}, PAIRS)
    assert Pending.from_json(pending.to_json()) == pending
    with pytest.raises(KeyError):
        counts_from_dumps(pending, dumps({0: (1, 1)}, (5, 5)))
