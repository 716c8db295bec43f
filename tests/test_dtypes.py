"""The one dtype vocabulary: every spelling to one name, one short name, one size."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from neuronasv import dtypes

PKG = Path(__file__).resolve().parents[1] / "neuronasv"


@pytest.mark.parametrize(
    ("spelling", "name", "short", "size"),
    [
        ("c10::BFloat16", "bfloat16", "bf16", 2),
        ("torch.bfloat16", "bfloat16", "bf16", 2),
        ("float", "float32", "fp32", 4),
        ("double", "float64", "fp64", 8),
        ("c10::Half", "float16", "fp16", 2),
        ("long int", "int64", "i64", 8),
        ("unsigned char", "uint8", "u8", 1),
        ("c10::Float8_e4m3fn", "float8_e4m3fn", "fp8e4m3", 1),
    ],
)
def test_every_spelling_has_one_name_short_name_and_size(
    spelling: str, name: str, short: str, size: int
) -> None:
    assert dtypes.canonical(spelling) == dtypes.label(spelling) == name
    assert dtypes.short_name(spelling) == dtypes.short_name(name) == short
    assert dtypes.element_size(spelling) == dtypes.element_size(name) == size


def test_unknown_spellings_and_what_a_workload_accepts() -> None:
    assert dtypes.element_size("Scalar") is None and dtypes.canonical("Scalar") is None
    assert dtypes.label("torch.weird") == "weird" and dtypes.short_name("weird") == "weird"
    assert dtypes.short_name(None) == "" and dtypes.short_name("half") == "fp16"
    assert dtypes.workload_dtype(" BF16 ") == "bfloat16"
    assert dtypes.workload_dtype("torch.half") == "float16"
    assert dtypes.workload_dtype("int64") is None  # not a workload dtype
    assert dtypes.workload_dtype_names() == ["bfloat16", "float16", "float32", "float64"]


def test_no_other_module_keeps_a_dtype_table() -> None:
    table = re.compile(r"""["'](?:c10::BFloat16|bf16)["']\s*:""")
    found = [
        str(p.relative_to(PKG))
        for p in sorted(PKG.rglob("*.py"))
        if p.name != "dtypes.py" and table.search(p.read_text(encoding="utf-8"))
    ]
    assert found == []
