"""The one dtype vocabulary: names, short names, element sizes, and every spelling of them.

A dtype reaches neuronasv spelled several ways: a user's ``--dtype bf16``, ``torch.bfloat16``,
the profiler's C++ type name in ``input_dtypes`` (``c10::BFloat16``, ``long int``), and the
canonical name stored in results (``bfloat16``). Every stage maps them here: the workload
registry (what ``--dtype`` accepts), the roofline formulas (element sizes), the exact work
evidence (``bf16[4,512]`` call signatures) and the sentences people read (``4x512 bf16``).

A leaf (no imports from the package), at the bottom stage with ``format`` and ``model``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "DTYPES",
    "DType",
    "canonical",
    "element_size",
    "label",
    "lookup",
    "short_name",
    "workload_dtype",
    "workload_dtype_names",
]


@dataclass(frozen=True)
class DType:
    """One dtype.

    Attributes:
        name: the canonical name, as stored in results (torch's attribute name).
        short: the short name people read (``bf16``).
        itemsize: bytes per element.
        profiler: the profiler's C++ spellings (``input_dtypes``).
        aliases: other spellings a user may type (lower case).
        workload: whether a workload may be profiled in it (``--dtype``).
    """

    name: str
    short: str
    itemsize: int
    profiler: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    workload: bool = False


DTYPES: tuple[DType, ...] = (
    DType("float32", "fp32", 4, ("float",), ("fp32", "float"), workload=True),
    DType("float64", "fp64", 8, ("double",), ("fp64", "double"), workload=True),
    DType("bfloat16", "bf16", 2, ("c10::BFloat16",), ("bf16",), workload=True),
    DType("float16", "fp16", 2, ("c10::Half",), ("fp16", "half"), workload=True),
    DType("float8_e4m3fn", "fp8e4m3", 1, ("c10::Float8_e4m3fn",)),
    DType("float8_e5m2", "fp8e5m2", 1, ("c10::Float8_e5m2",)),
    DType("int64", "i64", 8, ("long int",)),
    DType("int32", "i32", 4, ("int",)),
    DType("int16", "i16", 2, ("short int",)),
    DType("int8", "i8", 1, ("signed char",)),
    DType("uint8", "u8", 1, ("unsigned char",)),
    DType("bool", "bool", 1, ("bool",)),
    DType("complex64", "c64", 8, ("c10::complex<float>",)),
)

_BY_SPELLING: dict[str, DType] = {}
for _d in DTYPES:
    for _s in (_d.name, f"torch.{_d.name}", *_d.profiler):
        _BY_SPELLING.setdefault(_s, _d)
_WORKLOAD: dict[str, DType] = {}
for _d in DTYPES:
    if _d.workload:
        for _s in (_d.name, *_d.aliases):
            _WORKLOAD[_s] = _d


def lookup(spelling: object) -> DType | None:
    """The dtype of an exact spelling: a canonical name, ``torch.<name>``, a profiler name."""
    return _BY_SPELLING.get(str(spelling))


def canonical(spelling: object) -> str | None:
    """``c10::BFloat16`` / ``torch.bfloat16`` / ``bfloat16`` → ``bfloat16``; unknown → None."""
    d = lookup(spelling)
    return d.name if d else None


def label(spelling: object) -> str:
    """The canonical name, or the spelling itself without ``torch.`` when unknown."""
    d = lookup(spelling)
    return d.name if d else str(spelling).removeprefix("torch.")


def element_size(spelling: object) -> int | None:
    """Bytes per element of an exact spelling; None for a non-tensor (``Scalar``) or unknown."""
    d = lookup(spelling)
    return d.itemsize if d else None


def short_name(spelling: str | None) -> str:
    """``bfloat16`` (or any spelling of it, ``half`` included) → ``bf16``; unknown unchanged;
    None or empty → empty."""
    if not spelling:
        return ""
    d = lookup(spelling) or _WORKLOAD.get(spelling.removeprefix("torch."))
    return d.short if d else spelling.removeprefix("torch.")


def workload_dtype(text: str) -> str | None:
    """What ``--dtype`` accepts (``bf16``, ``Float32``, ``torch.half``) → canonical; else None."""
    d = _WORKLOAD.get(str(text).strip().lower().removeprefix("torch."))
    return d.name if d else None


def workload_dtype_names() -> list[str]:
    """The canonical names a workload may use, sorted (for error messages)."""
    return sorted(d.name for d in DTYPES if d.workload)
