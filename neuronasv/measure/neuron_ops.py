"""Per-op device time from one Neuron device profile (pure).

A device profile (one NTFF with the NEFFs it ran) gives one device time, its summary's
``total_active_time`` (:mod:`neuronasv.measure.neuron_formats`). This splits it over the
framework's ops, into the same ``{op: µs}`` rows the CPU and CUDA backends make:

The profile's engine rows (:class:`~neuronasv.measure.neuron_formats.EngineEvent`: one
compute-engine step each, a row of its :data:`~neuronasv.measure.neuron_formats.EVENT_TABLE`)
are split this way:

1. **Framework names on the events.** Each compute event's ``layer`` is "the name from
   the framework level debug info" (``NeuronLlamaDecoderLayer[1]/function[2]/aten.add``
   in the schema reference): its last part, without the ``[k]`` index, names the op,
   ``aten.add`` read as ``aten::add`` (:func:`op_from_framework`).
2. **The NEFF ↔ op pairing.** An event without a framework name belongs to the NEFF
   whose execution window (``ExecutionInfo``) holds it: eager TorchNeuron runs one NEFF per
   op, a compiled region one NEFF per graph. A NEFF whose name is an op (``aten.mul``) is
   that op; otherwise it is its own row, ``neff::<name>`` — named by its graph, never
   dropped (:func:`neff_op`).
3. Events in no window of a profile with several NEFFs are the profile's own row
   (``neff::<profile>``).

Setup and wait opcodes (``EVENT_SEMAPHORE``, ``NOP``, ... :data:`SETUP_OPCODES`) are not
work and are left out. Where events of several ops overlap in time (engines run in
parallel), each instant is shared equally by the ops running then, so the rows never count
an instant twice and add up to the union of the events' intervals. The rest of the
total — active time no compute event covers (DMA or collectives alone) — is the
row :data:`UNATTRIBUTED_OP`, so the rows add up to the profile's device time. Should the
events' union exceed the summary's total (inconsistent data), the rows are scaled to
the total and a warning says by how much.

Without engine rows (summary-json only) the whole device time is the NEFF's row
(one NEFF) or the profile's (several).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from neuronasv.measure.neuron_formats import DeviceProfile, EngineEvent, Execution
from neuronasv.measure.opnames import UNATTRIBUTED_OP, normalize_op_name

__all__ = ["NEFF_PREFIX", "OpSplit", "neff_op", "op_from_framework", "split_profile"]

#: Prefix of a row that is a NEFF (or a whole profile) with no finer mapping.
NEFF_PREFIX = "neff::"

_INDEX_RE = re.compile(r"\[\d+\]$")
_DOTTED_OP_RE = re.compile(r"^(aten|prims|nki|c10d|_c10d_functional|torch)\.([A-Za-z_][\w.]*)$")
_NEFF_FILE_RE = re.compile(r"\.neff$", re.IGNORECASE)
_NS_TO_US = 1e-3


def op_from_framework(name: str) -> str | None:
    """The op a framework-level name names: ``.../function[2]/aten.add`` -> ``aten::add``;
    ``aten::mul`` as is; another name (``layer_1``) normalised as it stands; None if empty."""
    text = str(name or "").strip()
    if not text:
        return None
    last = _INDEX_RE.sub("", text.rsplit("/", 1)[-1].strip())
    if "::" in last:
        return normalize_op_name(last)
    m = _DOTTED_OP_RE.match(last)
    if m:
        op = m.group(2).split(".", 1)[0]  # aten.add.Tensor -> aten::add (the profiler's key)
        return f"{m.group(1)}::{op}"
    return normalize_op_name(text)


def neff_op(neff: str) -> str:
    """The row of a NEFF with no finer mapping: the op it is named after (``aten.mul``), or
    ``neff::<name>`` (the file's stem, hashes normalised)."""
    stem = _NEFF_FILE_RE.sub("", str(neff).rsplit("/", 1)[-1]).strip() or "?"
    m = _DOTTED_OP_RE.match(stem)
    if m:
        return f"{m.group(1)}::{m.group(2).split('.', 1)[0]}"
    return NEFF_PREFIX + normalize_op_name(stem)


@dataclass(frozen=True)
class OpSplit:
    """One profile's device time split over ops (µs), and any warning about it."""

    times: dict[str, float]
    warnings: tuple[str, ...] = ()


def _window_label(
    event: EngineEvent, windows: Sequence[Execution], labels: Sequence[str]
) -> str | None:
    for w, label in zip(windows, labels, strict=True):
        if (
            w.start_ns is not None
            and w.end_ns is not None
            and w.start_ns <= event.start_ns < w.end_ns
        ):
            return label
    return None


def _label(
    event: EngineEvent,
    windows: Sequence[Execution],
    window_labels: Sequence[str],
    fallback: str,
) -> str:
    return (
        op_from_framework(event.layer) or _window_label(event, windows, window_labels) or fallback
    )


def _shared_time(intervals: Sequence[tuple[int, int, str]]) -> dict[str, float]:
    """ns per label, each instant shared equally by the labels active then (a sweep)."""
    points: list[tuple[int, int, str]] = []
    for start, end, label in intervals:
        if end > start:
            points.append((start, 1, label))
            points.append((end, -1, label))
    points.sort(key=lambda p: (p[0], p[1]))
    active: dict[str, int] = {}
    out: dict[str, float] = {}
    last = None
    for t, step, label in points:
        if last is not None and t > last and active:
            share = (t - last) / len(active)
            for name in active:
                out[name] = out.get(name, 0.0) + share
        last = t
        n = active.get(label, 0) + step
        if n:
            active[label] = n
        else:
            active.pop(label, None)
    return out


def _fallback_row(profile: DeviceProfile | None, name: str, neffs: Sequence[str]) -> str:
    """The row of what has no finer mapping: the one NEFF's, else the profile's."""
    names = [n for n in (profile.neff_names if profile else ()) if n] or list(neffs)
    return neff_op(names[0]) if len(names) == 1 else neff_op(name)


def _covered(profile: DeviceProfile, fallback: str) -> dict[str, float]:
    """µs per row of the non-setup engine events, overlaps shared (:func:`_shared_time`)."""
    windows = [e for e in profile.executions if e.start_ns is not None and e.end_ns is not None]
    labels = [neff_op(e.neff) if e.neff else fallback for e in windows]
    intervals = [
        (i.start_ns, i.end_ns, _label(i, windows, labels, fallback))
        for i in profile.events
        if not i.is_setup
    ]
    return {k: v * _NS_TO_US for k, v in _shared_time(intervals).items()}


def split_profile(
    total_us: float, profile: DeviceProfile | None, *, name: str, neffs: Sequence[str] = ()
) -> OpSplit:
    """Split ``total_us`` (the profile's device time) over ops (see the module doc).

    Args:
        total_us: the device time to split (µs).
        profile: the device profile's tables; None when only the summary was read.
        name: the profile's name (its row when nothing finer is known).
        neffs: the NEFF files the capture paired with this profile.
    """
    fallback = _fallback_row(profile, name, neffs)
    if profile is None or not profile.events:
        return OpSplit({fallback: total_us} if total_us > 0 else {})
    shared = _covered(profile, fallback)
    covered = sum(shared.values())
    warnings: tuple[str, ...] = ()
    if covered > total_us * (1 + 1e-9) and covered > 0:
        scale = total_us / covered
        warnings = (
            f"{name}: the engine events' union ({covered:.3f} µs) exceeds the summary's device"
            f" time ({total_us:.3f} µs); op rows scaled by {scale:.4f}",
        )
        shared = {k: v * scale for k, v in shared.items()}
        covered = total_us
    times = {k: v for k, v in shared.items() if v > 0}
    rest = total_us - covered
    if rest > 1e-6:
        times[UNATTRIBUTED_OP] = times.get(UNATTRIBUTED_OP, 0.0) + rest
    return OpSplit(times, warnings)
