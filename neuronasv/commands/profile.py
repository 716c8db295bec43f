"""``neuronasv profile``: the seed's study — an op table per workload, sorted by device time.

Progress goes to stderr; the tables and the comparison line go to stdout; ``--json`` writes
a :class:`neuronasv.model.ProfileDocument` (with the environment fingerprint).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import sys
from collections.abc import Sequence
from typing import Any

from neuronasv.commands.args import int_at_least, output_dir, output_file, write_output
from neuronasv.format import format_pct, format_value
from neuronasv.model.profile import ProfileDocument, WorkloadProfile
from neuronasv.samples import median, noise

__all__ = ["DEFAULT_VARIANTS", "add_parser", "comparison_line", "render_profile", "run"]

DEFAULT_VARIANTS: tuple[str, ...] = ("naive", "fused", "compiled")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "profile",
        help="profile workloads: device time per op (RMSNorm variants by default)",
        description=(
            "Run workloads under torch.profiler and print, per workload, an op table sorted"
            " by self device time, then compare them. On the CPU backend device time is the"
            " ops' self CPU time."
        ),
    )
    p.add_argument("--backend", default="auto", help="auto (default), cpu, cuda or neuron")
    p.add_argument(
        "--variant",
        action="append",
        choices=DEFAULT_VARIANTS,
        help="RMSNorm variant (repeatable; default: all three)",
    )
    p.add_argument(
        "--workload",
        action="append",
        metavar="NAME",
        help="workload by registry name, e.g. rmsnorm.fused (repeatable; see --list)",
    )
    p.add_argument("--list", action="store_true", help="list registered workloads and exit")
    p.add_argument(
        "--shape",
        action="append",
        default=None,
        help="shape, e.g. 4x512 (repeatable; default: the workload's)",
    )
    p.add_argument(
        "--dtype",
        action="append",
        default=None,
        help="dtype (repeatable; default: the workload's; bfloat16 for RMSNorm)",
    )
    p.add_argument(
        "--samples",
        type=int_at_least(1),
        default=10,
        help="samples (profiler cycles), default 10",
    )
    p.add_argument(
        "--active",
        type=int_at_least(1),
        default=1,
        help="iterations averaged per sample (default 1)",
    )
    p.add_argument("--seed", type=int, default=0, help="input seed (default 0)")
    p.add_argument(
        "--json",
        type=output_file,
        metavar="FILE",
        help="write the profile document (JSON) here (its folder must exist)",
    )
    p.add_argument(
        "--trace-dir",
        type=output_dir,
        metavar="DIR",
        help="export traces here (one per workload; created)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.add_argument(
        "--canary",
        action="store_true",
        help="time the device-health canary before and after each workload (stored in --json)",
    )
    p.add_argument(
        "--no-roofline",
        dest="roofline",
        action="store_false",
        help="skip the per-op FLOPs/bytes/fraction-of-peak estimate (an extra untimed pass)",
    )
    p.set_defaults(func=run)
    return p


def _selected(args: argparse.Namespace) -> list[str]:
    names: list[str] = list(args.workload or [])
    names += [f"rmsnorm.{v}" for v in (args.variant or [])]
    if not names:
        names = [f"rmsnorm.{v}" for v in DEFAULT_VARIANTS]
    seen: list[str] = []
    for n in names:
        if n not in seen:
            seen.append(n)
    return seen


def _safe(text: str) -> str:
    """Op names come from the profiler (and user code): show control characters escaped."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in str(text))


def _fmt_us(us: float) -> str:
    return format_value(us * 1e-6, "seconds")


def render_profile(profile: WorkloadProfile, console: Any) -> None:
    """Print one workload's op table (rich) to ``console``."""
    from rich.table import Table
    from rich.text import Text

    n = len(profile.device_time_us)
    total = median(profile.device_time_us)
    what = (
        "self CPU time (CPU backend: the CPU is the device)"
        if profile.device_time_is_cpu
        else "self device time"
    )
    title = Text(
        f"{_safe(profile.name)} [{profile.shape}, {profile.dtype}] on {profile.backend}: "
        f"{_fmt_us(total)} per iteration (median of {n} samples, IQR/median "
        f"{format_pct(noise(profile.device_time_us) or 0.0)})"
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
    ranked = sorted(profile.ops, key=lambda o: (-median(o.self_device_time_us), o.op))
    for op in ranked:
        dev = median(op.self_device_time_us)
        share = dev / total if total else 0.0
        per_call = dev / op.calls_per_iter if op.calls_per_iter else dev
        cells: list[Text | str] = [
            Text(_safe(op.op)),
            f"{op.calls_per_iter:g}",
            _fmt_us(dev),
            format_pct(share),
            _fmt_us(per_call),
            format_pct(noise(op.self_device_time_us) or 0.0),
            _fmt_us(median(op.self_cpu_time_us)),
        ]
        if roofline:
            frac = op.roofline_fraction
            # The roof it is of: "(memory)", "(compute)", "(bw only)" for compiled kernels
            # whose FLOPs are unknown; the full label is in the JSON (roofline_bound).
            bound = _short_bound(op.roofline_bound)
            cells.append(
                "-" if frac is None else format_pct(frac) + (f" ({bound})" if bound else "")
            )
        table.add_row(*cells)
    console.print(table)
    if profile.modules:
        mods = Table(title=Text("by module (inclusive; top ops inside)"), title_justify="left")
        mods.add_column("module", overflow="fold")
        mods.add_column("device", justify="right")
        mods.add_column("%", justify="right")
        mods.add_column("top ops", overflow="fold")
        for m in profile.modules:
            if not m.path:
                continue
            dev = median(m.device_time_us)
            inside = sorted(
                (
                    (median(o.self_device_time_us) * o.modules[m.path], o.op)
                    for o in profile.ops
                    if m.path in o.modules
                ),
                reverse=True,
            )[:3]
            mods.add_row(
                Text("  " * m.path.count(".") + _safe(m.path)),
                _fmt_us(dev),
                format_pct(dev / total) if total else "-",
                Text(", ".join(f"{_safe(op)} {_fmt_us(t).strip()}" for t, op in inside)),
            )
        console.print(mods)
    for w in profile.warnings:
        console.print(Text(f"warning: {_safe(w)}"))
    for t in profile.trace_files:
        console.print(Text(f"trace: {_safe(t)}"))
    if profile.canary is not None:
        c = profile.canary
        console.print(
            Text(
                f"canary {_safe(c.name)}: start {_fmt_us(median(c.start_us))},"
                f" end {_fmt_us(median(c.end_us))}"
            )
        )


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


def _write_json(path: str, doc: ProfileDocument) -> None:
    write_output(doc.dumps(), path)


def _short_bound(label: str | None) -> str:
    """``compute``, ``memory``, ``bw only`` (+ ``, causal?`` when causal was assumed)."""
    if not label:
        return ""
    from neuronasv.measure.roofline import ASSUMED_CAUSAL, BANDWIDTH_ONLY

    parts = label.split("; ")
    head = "bw only" if parts[0] == BANDWIDTH_ONLY else parts[0]
    return _safe(head + (", causal?" if ASSUMED_CAUSAL in parts[1:] else ""))


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from neuronasv.measure import backends, workloads
    from neuronasv.measure.fingerprint import collect_fingerprint
    from neuronasv.measure.profiling import profile_workload

    console = Console(highlight=False, width=None if sys.stdout.isatty() else 120, soft_wrap=False)
    if args.list:
        for w in workloads.all_workloads():
            console.print(_list_line(w.name, w.description, w.default_shape))
        return 0
    selected = [workloads.get(n) for n in _selected(args)]
    for d in args.dtype or ():
        workloads.parse_dtype(d)
    for sh in args.shape or ():
        workloads.parse_shape(sh)
    backend = backends.get_backend(args.backend)

    def progress(msg: str) -> None:
        if not args.quiet:
            print(f"  {msg}", file=sys.stderr, flush=True)

    if backend.device_time_is_cpu:
        header = f"backend: {backend.name} — device time = self CPU time (the CPU is the device)"
    else:
        header = (
            f"backend: {backend.name} ({backend.device}) — device time from the profiler's"
            " device activity"
        )
    console.print(header)
    peak = None
    if args.roofline:
        from neuronasv.measure.roofline import peak_for

        peak = peak_for(backend, None if backend.name == "cpu" else collect_fingerprint(backend))
        console.print(
            "of peak = ideal time at the device's peak (bandwidth or FLOP/s, whichever bounds"
            " the op) / measured time"
        )
        console.print(
            "peak: " + (peak.describe() if peak else "unknown for this device (set NEURONASV_PEAK)")
        )
    profiles: list[WorkloadProfile] = []
    for w in selected:
        reason = w.skip_reason(backend)
        if reason:
            console.print(f"skipped {w.name}: {_safe(reason)}")
            continue
        # Every (shape, dtype) asked for, in the order given: one process can re-measure
        # many combinations (what `neuronasv confirm` does per workload and round).
        for shape in args.shape or [w.default_shape]:
            for dtype in args.dtype or [w.default_dtype]:
                prof = profile_workload(
                    w,
                    backend,
                    shape=shape,
                    dtype=dtype,
                    samples=args.samples,
                    active=args.active,
                    seed=args.seed,
                    trace_dir=args.trace_dir,
                    progress=progress,
                    roofline=args.roofline,
                    canary=args.canary,
                    peak=peak,
                )
                profiles.append(prof)
                console.print()
                render_profile(prof, console)
    one_config = len(args.shape or [None]) == 1 and len(args.dtype or [None]) == 1
    line = comparison_line(profiles) if one_config else None
    if line:
        console.print()
        console.print(line)
    if args.json:
        doc = ProfileDocument(
            backend=backend.name,
            workloads=tuple(profiles),
            fingerprint=collect_fingerprint(backend),
            created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        )
        _write_json(args.json, doc)
        print(f"wrote {args.json}", file=sys.stderr)
    return 0


def _list_line(name: str, description: str, shape: str) -> Any:
    """One ``--list`` line as rich Text (no markup interpretation)."""
    from rich.text import Text

    return Text(f"{name:<28} {shape:<12} {description}")
