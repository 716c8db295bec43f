"""The ``neuronasv profile`` tables: one rich op table per workload, and the comparison line.

Pure rendering of :class:`~neuronasv.model.profile.WorkloadProfile` (moved out of the
command, issue 15); op names come from the profiler and user code, so control characters
are shown escaped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from neuronasv.model.profile import WorkloadProfile

__all__ = ["comparison_line", "list_line", "render_profile", "safe_text"]


def safe_text(text: str) -> str:
    """Op names come from the profiler (and user code): show control characters escaped."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in str(text))


def _median(values: Sequence[float]) -> float:
    from neuronasv.measure.profiling import _median as med

    return med(values)


def _fmt_us(us: float) -> str:
    if us >= 1000:
        return f"{us / 1000:.3f} ms"
    return f"{us:.2f} µs"


def render_profile(profile: WorkloadProfile, console: Any) -> None:
    """Print one workload's op table (rich) to ``console``."""
    from rich.table import Table
    from rich.text import Text

    from neuronasv.measure.profiling import spread

    n = len(profile.device_time_us)
    total = _median(profile.device_time_us)
    what = (
        "self CPU time (CPU backend: the CPU is the device)"
        if profile.device_time_is_cpu
        else "self device time"
    )
    title = Text(
        f"{safe_text(profile.name)} [{profile.shape}, {profile.dtype}] on {profile.backend}: "
        f"{_fmt_us(total)} per iteration (median of {n} samples, IQR/median "
        f"{spread(profile.device_time_us):.0%})"
    )
    table = Table(
        title=title,
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
    # Largest first by the median shown in the table (not by the sum over samples, which
    # can order two ops differently when one has an outlier sample).
    ranked = sorted(profile.ops, key=lambda o: (-_median(o.self_device_time_us), o.op))
    for op in ranked:
        dev = _median(op.self_device_time_us)
        share = dev / total if total else 0.0
        per_call = dev / op.calls_per_iter if op.calls_per_iter else dev
        cells: list[Text | str] = [
            Text(safe_text(op.op)),
            f"{op.calls_per_iter:g}",
            _fmt_us(dev),
            f"{share:.1%}",
            _fmt_us(per_call),
            f"{spread(op.self_device_time_us):.0%}",
            _fmt_us(_median(op.self_cpu_time_us)),
        ]
        if roofline:
            frac = op.roofline_fraction
            cells.append("-" if frac is None else f"{frac:.1%}")
        table.add_row(*cells)
    console.print(table)
    for w in profile.warnings:
        console.print(Text(f"warning: {safe_text(w)}"))
    for t in profile.trace_files:
        console.print(Text(f"trace: {safe_text(t)}"))
    if profile.canary is not None:
        c = profile.canary
        console.print(
            Text(
                f"canary {safe_text(c.name)}: start {_median(c.start_us):.0f} µs,"
                f" end {_median(c.end_us):.0f} µs"
            )
        )


def comparison_line(profiles: Sequence[WorkloadProfile]) -> str | None:
    """``"rmsnorm.fused is 2.10x faster than rmsnorm.naive; rmsnorm.compiled 1.40x slower"``.

    The first profile is the baseline; ratios are of median device time per iteration.
    """
    if len(profiles) < 2:
        return None
    base = profiles[0]
    base_t = _median(base.device_time_us)
    parts = []
    for i, p in enumerate(profiles[1:]):
        t = _median(p.device_time_us)
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
