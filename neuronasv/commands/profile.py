"""``neuronasv profile``: the seed's study — an op table per workload, sorted by device time.

Progress goes to stderr; the tables and the comparison line go to stdout; ``--json`` writes
a :class:`neuronasv.model.ProfileDocument` (with the environment fingerprint).

``--from-capture DIR`` (``--backend neuron``) replays a Neuron capture offline
(:mod:`neuronasv.measure.neuron_replay`): the same op table and document, each op naming
where its device time came from, with only ``neuron-explorer`` needed here.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import logging
import os
import sys
from typing import TYPE_CHECKING, Any

from neuronasv import env
from neuronasv.commands.args import (
    add_backend_arg,
    command_parser,
    existing_dir,
    int_at_least,
    output_dir,
    output_file,
    write_output,
)
from neuronasv.errors import NeuronasvError, UsageError
from neuronasv.log import indented
from neuronasv.model.profile import ProfileDocument, WorkloadProfile
from neuronasv.report.profile import comparison_line, list_line, render_profile, safe_text
from neuronasv.run.usersuite import import_repo_workloads

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rich.console import Console

    from neuronasv.measure.backends import Backend
    from neuronasv.measure.peaks import Peak
    from neuronasv.measure.workloads import Workload

__all__ = ["DEFAULT_VARIANTS", "add_parser", "run"]

log = logging.getLogger(__name__)

DEFAULT_VARIANTS: tuple[str, ...] = ("naive", "fused", "compiled")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = command_parser(
        subparsers,
        "profile",
        exits={0: None, 2: None, 3: None, 4: None},
        raw=False,
        description=(
            "Run workloads under torch.profiler and print, per workload, an op table sorted"
            " by self device time, then compare them. On the CPU backend device time is the"
            " ops' self CPU time."
        ),
    )
    add_backend_arg(p)
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
        default=None,
        help="iterations averaged per sample (default 1; --from-capture: the ProfilerStep"
        " ranges in each sample's trace.json)",
    )
    p.add_argument(
        "--per-step",
        action="store_true",
        help="each of a cycle's --active iterations is a sample of its own (--samples"
        " samples in samples/active profiler cycles; CPU and CUDA)",
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
        "--from-capture",
        type=existing_dir,
        metavar="DIR",
        help="replay a Neuron capture folder (<instance-id>_pid_<pid>/<timestamp>/ with .ntff,"
        " .neff, trace.json) offline through neuron-explorer: per-op device time and its"
        " source; --workload/--shape/--dtype label it (default: the folder's name)",
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


def _calibration_here() -> Peak | None:
    """This host's calibrated CPU peak in the checkout's results folder (what ``neuronasv
    doctor --calibrate`` and ``neuronasv run`` store), or None."""
    from neuronasv.measure.calibration import read_calibration
    from neuronasv.store.asvconf import results_dir_for
    from neuronasv.store.layout import peaks_file
    from neuronasv.store.machine import machine_info

    try:
        machine = machine_info(None)["machine"]
    except NeuronasvError:
        return None
    return read_calibration(peaks_file(results_dir_for("."), machine))


def _console() -> Console:
    """rich lays the tables out; the one output path writes them (report/terminal.py)."""
    from neuronasv.report.terminal import stdout_console

    width = None if sys.stdout.isatty() else 120
    return stdout_console(highlight=False, width=width, soft_wrap=False)


def run(args: argparse.Namespace) -> int:
    from neuronasv.measure import backends, workloads
    from neuronasv.measure.fingerprint import collect_fingerprint

    console = _console()
    # The repository's own workloads, as asv finds them (run/usersuite.py).
    problems = import_repo_workloads(env.SUITE_REPO.read() or os.getcwd())
    if args.list:
        for w in workloads.all_workloads():
            console.print(list_line(w.name, w.description, w.default_shape))
        return 0
    if args.from_capture:
        return _from_capture(args, console)
    selected = _selected_workloads(args, problems)
    backend = backends.get_backend(args.backend)

    console.print(_backend_header(backend))
    peak = _roofline_peak(backend, console) if args.roofline else None
    with indented("  "):  # the profiles' progress under the command's lines
        profiles = _profile_all(selected, backend, args, peak, console)
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
        write_output(doc.dumps(), args.json, json=True)
        log.info(f"wrote {args.json}")
    return 0


def _one(values: Sequence[str] | None, what: str) -> str | None:
    if values and len(values) > 1:
        raise UsageError(f"--from-capture labels one workload: give one {what}")
    return values[0] if values else None


def _from_capture(args: argparse.Namespace, console: Console) -> int:
    """``--from-capture DIR``: the capture's profile, printed and (``--json``) written."""
    from neuronasv.measure.backends import capture_backend
    from neuronasv.measure.neuron_explorer import profile_format
    from neuronasv.measure.neuron_replay import capture_label, replay_capture

    backend = capture_backend(args.backend)  # UsageError unless it replays captures
    explorer, problem = backend.explorer()
    version = explorer.version()[0] if explorer is not None else None
    name, shape, dtype = capture_label(args.from_capture)
    label = (
        _one(args.workload, "--workload") or name,
        _one(args.shape, "--shape") or shape,
        _one(args.dtype, "--dtype") or dtype,
    )
    tool = version or f"no neuron-explorer ({problem})"
    console.print(f"backend: {backend.name} — a capture replayed by {safe_text(tool)}")
    console.print(f"capture: {safe_text(args.from_capture)}", soft_wrap=True)
    replay = replay_capture(
        args.from_capture,
        explorer=explorer,
        fmt=profile_format(),
        tool_problem=problem,
        label=label,
        active=args.active,
        tool_version=version,
    )
    for line in replay.warnings:
        log.warning(line)
    console.print()
    render_profile(replay.profile, console)
    if args.json:
        doc = ProfileDocument(
            backend=backend.name,
            workloads=(replay.profile,),
            fingerprint=dict(replay.fingerprint),
            created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        )
        write_output(doc.dumps(), args.json)
        log.info(f"wrote {args.json}")
    return 0


def _selected_workloads(args: argparse.Namespace, problems: Sequence[str]) -> list[Workload]:
    """The workloads asked for, with every ``--dtype``/``--shape`` checked before any runs; an
    unknown name says why the suite failed to import, when it did."""
    from neuronasv.measure import workloads

    try:
        selected = [workloads.get(n) for n in _selected(args)]
    except UsageError as exc:
        if not problems:
            raise
        hint = "the suite failed to import: " + "; ".join(problems)
        raise UsageError(exc.message, hint=hint) from None
    for d in args.dtype or ():
        workloads.parse_dtype(d)
    for sh in args.shape or ():
        workloads.parse_shape(sh)
    return selected


def _backend_header(backend: Backend) -> str:
    """The first line: the backend and where its device time comes from."""
    if backend.device_time_is_cpu:
        return f"backend: {backend.name} — device time = self CPU time (the CPU is the device)"
    return (
        f"backend: {backend.name} ({backend.device}) — device time from"
        f" {backend.device_time_origin}"
    )


def _roofline_peak(backend: Backend, console: Console) -> Peak | None:
    """``--roofline``: the device's peak (calibrated here for a CPU), printed with what
    "of peak" means; None when it is unknown."""
    from neuronasv.measure.backends import peak_for
    from neuronasv.measure.fingerprint import collect_fingerprint

    calibrated = backend.roof_is_calibrated
    peak = peak_for(
        backend,
        None if calibrated else collect_fingerprint(backend),
        calibration=_calibration_here() if calibrated else None,
    )
    console.print(
        "of peak = ideal time at the device's peak (bandwidth or FLOP/s, whichever bounds"
        " the op) / measured time"
    )
    console.print(
        "peak: "
        + (
            peak.describe()
            if peak
            else "no calibrated CPU peak for these threads (neuronasv doctor --calibrate)"
            if calibrated
            else "unknown for this device (set NEURONASV_PEAK)"
        )
    )
    return peak


def _profile_all(
    selected: Sequence[Workload],
    backend: Backend,
    args: argparse.Namespace,
    peak: Peak | None,
    console: Console,
) -> list[WorkloadProfile]:
    """Profile and print every selected workload at every (shape, dtype) asked for."""
    from neuronasv.measure.profiling import ProfileOptions, profile_workload

    profiles: list[WorkloadProfile] = []
    for w in selected:
        reason = w.skip_reason(backend)
        if reason:
            console.print(f"skipped {w.name}: {safe_text(reason)}")
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
                    options=ProfileOptions(
                        samples=args.samples,
                        active=args.active or 1,
                        per_step=args.per_step,
                        seed=args.seed,
                        trace_dir=args.trace_dir,
                        roofline=args.roofline,
                        canary=args.canary,
                        peak=peak,
                    ),
                )
                profiles.append(prof)
                console.print()
                render_profile(prof, console)
    return profiles
