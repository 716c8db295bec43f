"""The ``neuronasv profile`` tables: one rich op table per workload (with the module
rollup and the fraction of peak), and the comparison line.

Pure rendering of :class:`~neuronasv.model.profile.WorkloadProfile` (moved out of the
command, issue 15); op names come from the profiler and user code, so control characters
are shown escaped. Numbers go through :mod:`neuronasv.format`, statistics through
:mod:`neuronasv.samples`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from neuronasv.format import (
    format_calls_per_iter,
    format_pct,
    format_peak_fraction,
    format_value,
)
from neuronasv.measure.neuron_formats import SOURCE_KEY_AVERAGES
from neuronasv.model.profile import ModuleProfile, OpProfile, WorkloadProfile
from neuronasv.samples import median, noise
from neuronasv.units import US

__all__ = ["comparison_line", "list_line", "render_profile", "safe_text"]


def safe_text(text: str) -> str:
    """Op names come from the profiler (and user code): show control characters escaped."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in str(text))


def _fmt_us(us: float) -> str:
    return format_value(us * US, "seconds")


def _short_bound(label: str | None) -> str:
    """``compute``, ``memory``, ``bw only`` (+ ``, causal?`` when causal was assumed)."""
    if not label:
        return ""
    from neuronasv.measure.roofline import ASSUMED_CAUSAL, BANDWIDTH_ONLY

    parts = label.split("; ")
    head = "bw only" if parts[0] == BANDWIDTH_ONLY else parts[0]
    return safe_text(head + (", causal?" if ASSUMED_CAUSAL in parts[1:] else ""))


def _title(profile: WorkloadProfile, total: float) -> Any:
    """The op table's title: the workload, its config and backend, the median and noise."""
    from rich.text import Text

    return Text(
        f"{safe_text(profile.name)} [{profile.shape}, {profile.dtype}] on {profile.backend}: "
        f"{_fmt_us(total)} per iteration (median of {len(profile.device_time_us)} samples,"
        f" IQR/median {format_pct(noise(profile.device_time_us) or 0.0)})"
    )


def _peak_cell(op: OpProfile) -> str:
    """The op's fraction of peak and the roof it is of: "(memory)", "(compute)", "(bw only)"
    for compiled kernels whose FLOPs are unknown; the full label is in the JSON
    (roofline_bound). ``-`` when unknown."""
    frac = op.roofline_fraction
    if frac is None:
        return "-"
    bound = _short_bound(op.roofline_bound)
    return format_peak_fraction(frac) + (f" ({bound})" if bound else "")


def _op_cells(op: OpProfile, total: float, roofline: bool, sources: bool) -> list[Any]:
    """One op's row: calls, self device time, share, per call, noise, self CPU, of peak,
    and where its device time came from (when any op names it: Neuron)."""
    from rich.text import Text

    dev = median(op.self_device_time_us)
    share = dev / total if total else 0.0
    per_call = dev / op.calls_per_iter if op.calls_per_iter else dev
    cells: list[Any] = [
        Text(safe_text(op.op)),
        format_calls_per_iter(op.calls_per_iter),
        _fmt_us(dev),
        format_pct(share),
        _fmt_us(per_call),
        format_pct(noise(op.self_device_time_us) or 0.0),
        _fmt_us(median(op.self_cpu_time_us)),
    ]
    if roofline:
        cells.append(_peak_cell(op))
    if sources:
        cells.append(Text(safe_text(op.device_time_source or SOURCE_KEY_AVERAGES)))
    return cells


def _per_op_sources(profile: WorkloadProfile) -> bool:
    """Ops name different sources of device time: a column; one source: a line below."""
    named = {op.device_time_source or SOURCE_KEY_AVERAGES for op in profile.ops}
    return any(op.device_time_source for op in profile.ops) and len(named) > 1


def _op_table(profile: WorkloadProfile, total: float) -> Any:
    """The op table, largest op first."""
    from rich.table import Table

    what = (
        "self CPU time (CPU backend: the CPU is the device)"
        if profile.device_time_is_cpu
        else "self device time"
    )
    table = Table(
        title=_title(profile, total),
        title_justify="left",
        caption=f"device time = {what}; per iteration ({profile.iterations_per_sample} per sample)",
        caption_justify="left",
    )
    table.add_column("op", overflow="fold")
    table.add_column("calls/iter", justify="right")
    table.add_column(
        "self device" if not profile.device_time_is_cpu else "self device (=CPU)", justify="right"
    )
    table.add_column("%", justify="right")
    table.add_column("per call", justify="right")
    table.add_column("IQR/median", justify="right")
    table.add_column("self CPU", justify="right")
    roofline = any(op.roofline_fraction is not None for op in profile.ops)
    if roofline:
        table.add_column("of peak", justify="right")
    sources = _per_op_sources(profile)
    if sources:
        table.add_column("device time from", overflow="fold")
    # Largest first by the median shown in the table (not by the sum over samples, which
    # can order two ops differently when one has an outlier sample).
    ranked = sorted(profile.ops, key=lambda o: (-median(o.self_device_time_us), o.op))
    for op in ranked:
        table.add_row(*_op_cells(op, total, roofline, sources))
    return table


def _module_row(profile: WorkloadProfile, m: ModuleProfile, total: float) -> list[Any]:
    """One module's row: indented path, inclusive device time, share, its top 3 ops."""
    from rich.text import Text

    dev = median(m.device_time_us)
    inside = sorted(
        (
            (median(o.self_device_time_us) * o.modules[m.path], o.op)
            for o in profile.ops
            if m.path in o.modules
        ),
        reverse=True,
    )[:3]
    return [
        Text("  " * m.path.count(".") + safe_text(m.path)),
        _fmt_us(dev),
        format_pct(dev / total) if total else "-",
        Text(", ".join(f"{safe_text(op)} {_fmt_us(t).strip()}" for t, op in inside)),
    ]


def _module_table(profile: WorkloadProfile, total: float) -> Any:
    """The module rollup (inclusive time, top ops inside), the root left out."""
    from rich.table import Table
    from rich.text import Text

    mods = Table(title=Text("by module (inclusive; top ops inside)"), title_justify="left")
    mods.add_column("module", overflow="fold")
    mods.add_column("device", justify="right")
    mods.add_column("%", justify="right")
    mods.add_column("top ops", overflow="fold")
    for m in profile.modules:
        if m.path:
            mods.add_row(*_module_row(profile, m, total))
    return mods


def _note_lines(profile: WorkloadProfile) -> list[Any]:
    """The lines under the tables: warnings, trace files and the canary."""
    from rich.text import Text

    out = []
    if profile.device_time_source and not _per_op_sources(profile):
        out.append(Text(f"device time from: {safe_text(profile.device_time_source)}"))
    out += [Text(f"warning: {safe_text(w)}") for w in profile.warnings]
    out += [Text(f"trace: {safe_text(t)}") for t in profile.trace_files]
    if profile.canary is not None:
        c = profile.canary
        out.append(
            Text(
                f"canary {safe_text(c.name)}: start {_fmt_us(median(c.start_us))},"
                f" end {_fmt_us(median(c.end_us))}"
            )
        )
    return out


def render_profile(profile: WorkloadProfile, console: Any) -> None:
    """Print one workload's op table (rich) to ``console``."""
    total = median(profile.device_time_us)
    console.print(_op_table(profile, total))
    if profile.modules:
        console.print(_module_table(profile, total))
    for line in _note_lines(profile):
        console.print(line)


def comparison_line(profiles: Sequence[WorkloadProfile]) -> str | None:
    """``"rmsnorm.fused is 2.10x faster than rmsnorm.naive; rmsnorm.compiled 1.40x slower"``.

    The first profile is the baseline; ratios are of median device time per iteration.
    """
    if len(profiles) < 2:
        return None
    base = profiles[0]
    base_t = median(base.device_time_us)
    parts = []
    for i, p in enumerate(profiles[1:]):
        t = median(p.device_time_us)
        if t <= 0 or base_t <= 0:
            continue
        ratio = base_t / t
        word = "faster" if ratio >= 1 else "slower"
        factor = ratio if ratio >= 1 else 1 / ratio
        if i == 0:
            parts.append(f"{p.name} is {factor:.2f}x {word} than {base.name}")
        else:
            parts.append(f"{p.name} {factor:.2f}x {word}")
    if not parts:
        return None
    unit = " (CPU self time)" if base.device_time_is_cpu else " (device time)"
    return "; ".join(parts) + unit


def list_line(name: str, description: str, shape: str) -> Any:
    """One ``--list`` line as rich Text (no markup interpretation)."""
    from rich.text import Text

    return Text(f"{name:<28} {shape:<12} {description}")
