"""Profiler row names and per-cycle op records: the bottom of the measure stage.

What the profile pass (``profiling``), the trace reader (``neuron_trace``) and the untimed
evidence pass (``evidence``) all need to agree on — which rows are bookkeeping, how a row
name is made stable across runs, what one op's totals in one cycle are — lives here, below
all three, so that none of them imports another for it (no import circle).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from neuronasv.log import relay

if TYPE_CHECKING:
    from neuronasv.model import WorkChange

__all__ = [
    "BOOKKEEPING_PREFIXES",
    "MODULE_RANGE_PREFIX",
    "UNATTRIBUTED_OP",
    "CycleStats",
    "ModuleCycle",
    "OpSample",
    "carries_no_work",
    "carries_work",
    "is_bookkeeping",
    "is_host_event",
    "normalize_op_name",
    "quiet_kineto_stderr",
]

#: Prefix of the ``record_function`` ranges that scope a model's modules
#: (:mod:`neuronasv.measure.modules`): scopes, not ops.
MODULE_RANGE_PREFIX = "neuronasv.module::"
#: Rows that are profiler bookkeeping, not work (module ranges are scopes, not ops).
BOOKKEEPING_PREFIXES: tuple[str, ...] = (
    "ProfilerStep",
    MODULE_RANGE_PREFIX,
    "profiler::",
    "[memory]",
    "[OutOfMemory]",
    # CUPTI's buffer allocation, seen on an H200 (torch 2.11, CUDA 13) as a child of the op
    # whose kernel it interrupted, with that kernel attached again: counting it would count
    # the kernel twice (its parent op keeps it either way).
    "Activity Buffer Request",
)
#: Row for device time whose launching op was not kept (see module docstring).
UNATTRIBUTED_OP = "[unattributed device time]"

_COMPILED_FX_RE = re.compile(r"^## Call CompiledFxGraph\s+\S+(\s+##)?\s*$")
# Inductor/FX cache keys: long lowercase base32/hex tokens with at least one digit.
_HASH_TOKEN_RE = re.compile(
    r"(?<![A-Za-z0-9])(?=[a-z0-9]*[0-9])(?=[a-z0-9]*[a-z])[a-z0-9]{32,}(?![A-Za-z0-9])"
)
_ADDRESS_RE = re.compile(r"0x[0-9a-fA-F]{6,}")
_KINETO_NOISE_RE = re.compile(
    r"^(USDT:.*profiler_(start|stop)\b|STAGE:.*ActivityProfilerController|"
    r"\[W[0-9 :.]*CPUAllocator)"
)

def normalize_op_name(name: str) -> str:
    """A stable identity for a profiler row name.

    Strips what changes between runs and commits but not the work: the FX graph hash of
    ``## Call CompiledFxGraph <hash> ##``, other long hash tokens, and memory addresses.
    ``Torch-Compiled Region: 0/0`` is kept as is (frame/recompile ids are stable for a
    given program).
    """
    text = str(name).strip()
    if _COMPILED_FX_RE.match(text):
        return "## Call CompiledFxGraph"
    text = _HASH_TOKEN_RE.sub("<hash>", text)
    return _ADDRESS_RE.sub("0x?", text)


def is_host_event(event: Any) -> bool:
    """True for host-side (CPU) profiler rows; kernels and other device rows have a
    device ``device_type`` (a ``DeviceType`` or its name; a row without one is host)."""
    kind = getattr(event, "device_type", None)
    if kind is None:
        return True
    return str(getattr(kind, "name", kind)).endswith("CPU")


def is_bookkeeping(name: str) -> bool:
    """True for profiler rows that are not work (``ProfilerStep*`` and friends)."""
    return name.startswith(BOOKKEEPING_PREFIXES)


@dataclass(frozen=True)
class OpSample:
    """One op's totals within one profiler cycle (µs, summed over the active iterations)."""

    self_device_us: float
    self_cpu_us: float
    count: int


@dataclass(frozen=True)
class ModuleCycle:
    """One cycle's op time by module (µs, whole cycle; :mod:`neuronasv.measure.modules`).

    Attributes:
        self_us: path -> time of the ops directly in that module (``""`` = the root).
        op_us: (path, op) -> that op's time in that module (op names normalised).
    """

    self_us: Mapping[str, float]
    op_us: Mapping[tuple[str, str], float]


@dataclass(frozen=True)
class CycleStats:
    """One cycle's ops (normalised names), its device total (µs, whole cycle) and, when
    the events were read, the op time by module (:mod:`neuronasv.measure.modules`).

    ``sources`` names, per op, where its device time came from when that is not
    ``key_averages()`` (Neuron: :mod:`neuronasv.measure.neuron_formats`' words); empty on
    the CPU and CUDA.
    """

    ops: dict[str, OpSample]
    device_time_us: float
    modules: ModuleCycle | None = None
    sources: Mapping[str, str] = field(default_factory=dict)


@contextlib.contextmanager
def quiet_kineto_stderr() -> Iterator[None]:
    """Capture file descriptor 2 and re-emit it without Kineto's per-cycle chatter.

    Kineto writes from C++ straight to fd 2, so ``sys.stderr`` redirection cannot catch
    it; this swaps fd 2 for a temporary file for the duration and afterwards writes every
    line that is not known noise back to the real stderr (real errors stay visible).
    """
    with contextlib.suppress(Exception):
        sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no fd 2 (daemonised): nothing to protect
        yield
        return
    buf = tempfile.TemporaryFile()  # noqa: SIM115 - must outlive the dup2 dance below
    try:
        os.dup2(buf.fileno(), 2)
        try:
            yield
        finally:
            with contextlib.suppress(Exception):
                sys.stderr.flush()
            os.dup2(saved, 2)
        buf.seek(0)
        text = buf.read().decode("utf-8", errors="replace")
    finally:
        os.close(saved)
        buf.close()
    kept = [ln for ln in text.splitlines(keepends=True) if not _KINETO_NOISE_RE.match(ln)]
    relay("".join(kept))  # the one output path: its control characters inert


_VIEW_NAMES = """
    view reshape _reshape_alias _unsafe_view transpose t permute expand expand_as
    as_strided slice select unsqueeze squeeze split split_with_sizes chunk narrow unbind
    detach alias resolve_conj resolve_neg empty empty_like empty_strided result_type
    lift_fresh _to_copy to contiguous clone zeros_like ones_like full_like zeros ones full
    is_nonzero item _local_scalar_dense
"""
_VIEW_OPS = frozenset(_VIEW_NAMES.split())
# Ops above that *may* move data do it through child ops (copy_, fill_): they get zero
# self-cost so the child carries the work; ``to``/``clone`` on their own never launch a
# kernel without a ``copy_`` child.


def carries_no_work(op: str) -> bool:
    """True for a view, alias, stride or allocation op (or a wrapper whose child op
    carries the work): zero FLOPs and bytes of its own (the roofline gives it zero cost)."""
    return op.startswith("aten::") and op.removeprefix("aten::").split(".", 1)[0] in _VIEW_OPS


def carries_work(w: WorkChange) -> bool:
    """The one definition of an op change that carries work (the row states' work axis
    and the cause sentences' "helper ops" both use it).

    True when the op has bytes or FLOPs of its own on either side; with a cost estimate
    of zero on every side, False; with no estimate on any side (no roofline formula),
    True unless the op is a view, alias, stride or allocation op by name
    (:func:`carries_no_work`).
    """
    costs = (w.bytes_base, w.bytes_head, w.flops_base, w.flops_head)
    if any((v or 0.0) > 0.0 for v in costs):
        return True
    if any(v is not None for v in costs):
        return False
    return not carries_no_work(w.op)
