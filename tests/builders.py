"""One set of builders for the documents, histories and profiles tests make by hand.

Defaults are the plainest valid values (commits ``a…a``/``b…b`` on machine ``m``, the
4x512 bf16 naive RMSNorm); a test names only what it is about.
"""

from __future__ import annotations

from typing import Any

from neuronasv.model import (
    ChangePoint,
    Finding,
    FindingsDocument,
    OpProfile,
    RunRef,
    WorkloadProfile,
)

BASE = "a" * 40
HEAD = "b" * 40


def compare_doc(
    *findings: Finding, base: str = BASE, head: str = HEAD, machine: str = "m", **fields: Any
) -> FindingsDocument:
    """A compare document of ``findings`` (base vs head on ``machine``)."""
    return FindingsDocument(
        "compare", RunRef(base, machine), RunRef(head, machine), findings, **fields
    )


def history_doc(
    *change_points: ChangePoint, head: str | None = None, machine: str = "m", **fields: Any
) -> FindingsDocument:
    """A history document of ``change_points`` (``head``: its newest commit, if any)."""
    return FindingsDocument(
        mode="history",
        base=None,
        head=None if head is None else RunRef(head, machine),
        change_points=change_points,
        **fields,
    )


def op(name: str, *times: float, calls: float = 1.0, **fields: Any) -> OpProfile:
    """An op row: ``times`` are its self device (and CPU) times per sample, µs."""
    return OpProfile(name, calls, tuple(times), tuple(times), **fields)


def profile(
    name: str = "rmsnorm.naive",
    *ops: OpProfile,
    backend: str = "cpu",
    shape: str = "4x512",
    dtype: str = "bfloat16",
    times: tuple[float, ...] = (1.0, 1.0),
    **fields: Any,
) -> WorkloadProfile:
    """A workload profile with ``ops`` (total device time ``times``, µs)."""
    return WorkloadProfile(name, backend, shape, dtype, times, tuple(ops), **fields)
