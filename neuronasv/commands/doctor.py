"""``neuronasv doctor``: which backends work here, versions, and what is missing.

Exit 0 when at least the CPU backend works (it always should); the neuron and cuda
backends being unavailable is reported with the reason and how to get them, not an error.

``--neuron-check`` instead checks every assumption the neuron backend makes on this host
(``neuronasv.measure.neuron_check``) and writes ``neuron-check.md`` and
``neuron-check.json`` into ``--out`` (default ``neuron-check/``); exit 3 when a check
failed (the backend will not work here as it is), 0 otherwise.

``--calibrate`` measures this machine's CPU roof (memory bandwidth, matmul FLOP/s per
dtype) with the suite's threads and stores it with the machine's record in the results
folder (``<results>/<machine>/calibration.peaks``), where every later ``run`` reads it. A
measurement taken under load, unsteady (spread > 2x) or out of a CPU's bounds is refused in
one line with its figures, nothing stored, exit 4 (:mod:`neuronasv.measure.cpu_roof`).
``neuronasv run`` calibrates once by itself, by the same rules, when the machine has none.

``--env`` lists every ``NEURONASV_*`` environment variable (:mod:`neuronasv.env`) with its
value here and what neuronasv makes of it, without importing torch; the full report ends
with the same list.
"""

from __future__ import annotations

import argparse
import os
import shutil
from typing import Any

from neuronasv.commands.args import command_parser, machine_name
from neuronasv.errors import BackendUnavailable
from neuronasv.format import format_value
from neuronasv.log import emit
from neuronasv.units import US

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = command_parser(
        subparsers,
        "doctor",
        exits={
            0: "at least the CPU backend works",
            2: None,
            3: "--neuron-check: a check failed",
            4: "--calibrate: refused (taken under load, unsteady or implausible; nothing stored)",
        },
        raw=False,
        description=(
            "Check which backends (neuron, cuda, cpu) can run here, print the environment"
            " fingerprint and how to get what is missing."
        ),
    )
    p.add_argument(
        "--no-smoke", action="store_true", help="skip the tiny profiler capture on each backend"
    )
    p.add_argument(
        "--neuron-check",
        action="store_true",
        help="check every Neuron assumption on this host; write a report (md + json)",
    )
    p.add_argument(
        "--out", default="neuron-check", help="folder for the --neuron-check report and traces"
    )
    p.add_argument(
        "--calibrate",
        action="store_true",
        help="measure this machine's CPU peak once and store it in the results folder",
    )
    p.add_argument(
        "--results-dir",
        default=None,
        help="results folder for --calibrate (default: asv.conf.json's, else .asv/results)",
    )
    p.add_argument(
        "--machine",
        type=machine_name,
        help="asv machine name for --calibrate (default: this host's name)",
    )
    p.add_argument(
        "--env",
        action="store_true",
        help="only list the NEURONASV_* environment variables and their values here",
    )
    p.set_defaults(func=run)
    return p


def _neuron_check(args: argparse.Namespace) -> int:
    from neuronasv.measure.neuron_check import run_neuron_check, write_report

    report = run_neuron_check(args.out)
    md, js = write_report(report, args.out)
    for c in report.checks:
        emit(f"  [{c.status:<4}] {c.name:<16} {c.found}")
    emit(f"report: {md} and {js}")
    if report.failed:
        first = report.failed[0]
        raise BackendUnavailable(
            f"neuron backend not ready here: {len(report.failed)} check(s) failed"
            f" ({', '.join(c.name for c in report.failed)})",
            hint=first.action or None,
        )
    return 0


def _calibrate(args: argparse.Namespace) -> int:
    from neuronasv.fileio import write_atomic
    from neuronasv.measure.backends.cpu import CpuBackend
    from neuronasv.measure.calibration import calibrate, shown
    from neuronasv.store.asvconf import results_dir_for
    from neuronasv.store.layout import peaks_file
    from neuronasv.store.machine import machine_info

    machine = machine_info(args.machine)["machine"]
    path = peaks_file(results_dir_for(".", args.results_dir), machine)
    # refused (load, spread, bounds): CalibrationRefused, one line, exit 4, nothing stored
    peak, text = calibrate(CpuBackend(), measure=_measure_and_show)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    write_atomic(path, text)
    emit(f"calibrated {peak.describe()}")
    emit(f"stored in {shown(path)} (every later `neuronasv run` on {shown(machine)} reads it)")
    return 0


def _measure_and_show(backend: Any) -> tuple[int, tuple[Any, ...]]:
    """The CPU roof's readings, each one a line of the result (stdout)."""
    from neuronasv.measure.cpu_roof import describe_reading, measure_cpu_roof

    threads, readings = measure_cpu_roof(backend)
    for r in readings:
        emit(f"  {describe_reading(r)}")
    return threads, readings


def _smoke(backend: Any) -> str:
    """Profile one tiny op on ``backend``; say what the capture held."""
    import torch
    from torch.profiler import profile

    from neuronasv.measure.profiling import extract_cycle, quiet_kineto_stderr

    x = torch.ones(64, 64, device=backend.device)
    with quiet_kineto_stderr(), profile(activities=backend.activities()) as prof:
        (x * x).sum()
        backend.synchronize()
    with quiet_kineto_stderr():
        stats = extract_cycle(prof.key_averages(), device_time_is_cpu=backend.device_time_is_cpu)
    if stats.device_time_us <= 0:
        return "FAILED: the capture holds no device time"
    what = "self CPU time" if backend.device_time_is_cpu else "device time"
    took = format_value(stats.device_time_us * US, "seconds")
    return f"ok ({len(stats.ops)} ops, {took} {what})"


def env_lines() -> list[str]:
    """``neuronasv doctor --env``: one block per variable, value first (set ones marked)."""
    from neuronasv import env

    lines = ["environment (NEURONASV_*; docs/environment.md):"]
    for d in env.describe():
        mark = "*" if d.value != "unset" else " "
        set_by = "" if d.set_by == env.USER else f"; set by {d.set_by}"
        lines.append(f" {mark} {d.name:<26} {d.value}")
        lines.append(f"     {'':<26} -> {d.effective}")
        lines.append(f"     {'':<26} {d.kind}{set_by}: {d.doc}")
    return lines


def run(args: argparse.Namespace) -> int:
    if getattr(args, "env", False):
        emit("\n".join(env_lines()))
        return 0
    if getattr(args, "neuron_check", False):
        return _neuron_check(args)
    if getattr(args, "calibrate", False):
        return _calibrate(args)
    from neuronasv.measure.backends import all_backends, get_backend
    from neuronasv.measure.fingerprint import collect_fingerprint

    emit("backends (order of preference for --backend auto):")
    usable = []
    for backend in all_backends():
        if backend.is_available():
            usable.append(backend)
            note = (
                "device time = self CPU time" if backend.device_time_is_cpu
                else f"device {backend.device}"
            )
            emit(f"  [ok]   {backend.name:<7} {note}")
            if not getattr(args, "no_smoke", False):
                try:
                    emit(f"         profiler smoke test: {_smoke(backend)}")
                except Exception as exc:  # report, keep checking the others
                    emit(f"         profiler smoke test: FAILED: {type(exc).__name__}: {exc}")
        else:
            emit(f"  [--]   {backend.name:<7} unavailable: {backend.unavailable_reason()}")
            hint = backend.install_hint()
            if hint:
                emit(f"         to get it: {hint}")
    if all(b.accelerator for b in usable):
        raise BackendUnavailable("not even the CPU backend works here (is torch installed?)")
    chosen = get_backend("auto")
    emit(f"\nauto selects: {chosen.name}")
    emit("fingerprint:")
    for key, value in collect_fingerprint(chosen).items():
        emit(f"  {key:<21} {value}")
    from neuronasv.measure.callgrind import valgrind_status
    from neuronasv.metrics import CALLGRIND_PASS, counted_by

    usable_vg, vg_line = valgrind_status()
    missing = []
    for metric in counted_by(CALLGRIND_PASS):  # the metrics valgrind's pass counts
        emit(f"{metric.name} metric: [{'ok' if usable_vg else '--'}] {vg_line}")
        if not usable_vg:
            missing.append(
                f"valgrind (and a C compiler): the {metric.name} metric on the CPU"
                f" (--metrics devtime,{metric.name});"
                f" e.g. `apt-get install {' '.join(metric.tools)}`"
            )
    if shutil.which("g++") is None and shutil.which("c++") is None:
        missing.append(
            "a C++ compiler (g++): torch.compile on the CPU (rmsnorm.compiled) needs one;"
            " e.g. `apt-get install g++`"
        )
    if missing:
        emit("missing:")
        for m in missing:
            emit(f"  - {m}")
    emit("\n".join(["", *env_lines()]))
    return 0
