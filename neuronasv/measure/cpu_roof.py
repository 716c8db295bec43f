"""Measuring a CPU's roof honestly, or refusing to.

The roof of "of peak" on a CPU is measured on the machine (a CPU has no datasheet roof):
main-memory bandwidth (a ``dst.copy_(src)`` larger than the caches) and dense matmul
FLOP/s per dtype. What made the first version dishonest (issue 28: float32 0.00015, 0.195,
0.00007 TFLOP/s three runs a minute apart, while a plain 1024² matmul ran at 54 GFLOP/s)
and what this module does instead:

- **The suite's threads.** Measured inside ``backend.measuring()``, the context every
  workload is measured in (the CPU backend pins ``NEURONASV_CPU_THREADS``, default 1) —
  not torch's default of one thread per core. The count is stored with the roof, and a roof
  of other threads is no roof (``CpuBackend.roof``).
- **Calls long enough to time.** Sizes double until the fastest of three calls takes at
  least :attr:`Rules.min_call_s` (a copy of at least 64 MiB per buffer, beyond a CPU's
  last-level cache share; a matmul from 128² up to 2048²) — the size is chosen on the
  fastest call, so one preempted call does not stop the search early.
- **Repeated until steady.** At that size, calls until the three fastest agree within
  :attr:`Rules.steady` (10 %): at least :attr:`Rules.min_calls`, at most
  :attr:`Rules.max_calls` or :attr:`Rules.budget_s` of calls. The rate is the work over the
  median of the three fastest calls.
- **Refused, not stored**, when (:func:`judge`): the measuring threads had less than
  :attr:`Rules.min_cpu_share` of their CPUs over the calls (CPU time over wall time: the
  neighbours ran), or one of the three fastest calls — the roof's — had less than
  :attr:`Rules.fast_cpu_share` (a uniformly loaded machine slows every call alike, which no
  spread shows; a call that had its CPU to itself measured the machine, not the
  neighbours); the median call took more than :attr:`Rules.max_spread` times the fastest;
  the three fastest never agreed; or the rate is outside what a CPU does
  (:data:`PLAUSIBLE`). The refusal is one line with the figures
  (:class:`~neuronasv.errors.CalibrationRefused`), and the first refused quantity stops the
  measurement (a loaded machine is not measured for seconds more).

Every call is timed by an injectable :data:`Timer` (wall and CPU seconds of one call), and
every kernel by an injectable :class:`Probe`, so the rules are tested without a clock.
"""

from __future__ import annotations

import logging
import math
import statistics
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

from neuronasv.errors import CalibrationRefused, UsageError
from neuronasv.format import format_bytes, format_pct, format_rate, format_ratio, plural
from neuronasv.model.calibration import RoofReading

log = logging.getLogger(__name__)

__all__ = [
    "PLAUSIBLE",
    "Kernel",
    "Measuring",
    "Probe",
    "Rules",
    "Timer",
    "Timing",
    "copy_probe",
    "describe_reading",
    "implausible",
    "judge",
    "matmul_probe",
    "measure_cpu_roof",
    "process_timer",
    "reading_of",
    "sample",
]


@dataclass(frozen=True)
class Timing:
    """One timed call: wall seconds, and CPU seconds of the whole process meanwhile."""

    wall_s: float
    cpu_s: float


#: Times one call of a kernel.
Timer = Callable[[Callable[[], object]], Timing]


def process_timer(fn: Callable[[], object]) -> Timing:
    """``fn()`` timed by ``perf_counter`` (wall) and ``process_time`` (every thread's CPU)."""
    c0 = time.process_time()
    w0 = time.perf_counter()
    fn()
    w1 = time.perf_counter()
    c1 = time.process_time()
    return Timing(max(w1 - w0, 1e-9), max(c1 - c0, 0.0))


@dataclass(frozen=True)
class Rules:
    """What an honest roof takes (the defaults are the calibration's).

    Attributes:
        min_call_s: the fastest call at the chosen size takes at least this long.
        min_calls, max_calls: timed calls at that size, fewest and most.
        budget_s: stop adding calls after this much wall time of calls (after min_calls).
        steady: the three fastest calls agree within this factor (third / first).
        max_spread: the median call over the fastest: above it, refused.
        min_cpu_share: CPU time / (wall time x threads) over all the calls: below it,
            refused (the measuring threads waited for a CPU).
        fast_cpu_share: the same of each of the three fastest calls (the roof's): below
            it, refused.
    """

    min_call_s: float = 0.01
    min_calls: int = 5
    max_calls: int = 30
    budget_s: float = 4.0
    steady: float = 1.1
    max_spread: float = 2.0
    min_cpu_share: float = 0.5
    fast_cpu_share: float = 0.9


#: A kernel at one size: ``(call, work of one call, label)``.
Kernel = tuple[Callable[[], object], float, str]


@dataclass(frozen=True)
class Probe:
    """One quantity to measure.

    Attributes:
        what: ``"bandwidth"`` or a dtype name.
        unit: ``"B/s"`` or ``"FLOP/s"``.
        sizes: tried in order until a call is long enough to time.
        make: the kernel at a size.
    """

    what: str
    unit: str
    sizes: tuple[int, ...]
    make: Callable[[int], Kernel]


class Measuring(Protocol):
    """What the measurement asks of the backend: the context its workloads run in."""

    def measuring(self) -> AbstractContextManager[None]: ...


def _copy(mib: int) -> Kernel:
    import torch

    n = mib * 2**20 // 4
    src = torch.ones(n, dtype=torch.float32)
    dst = torch.empty_like(src)
    # bytes read + bytes written
    return (lambda: dst.copy_(src)), 2.0 * n * 4, f"{format_bytes(mib * 2**20)} copy"


def _matmul(dtype: str, size: int) -> Kernel:
    import torch

    dt = getattr(torch, dtype, None)
    if not isinstance(dt, torch.dtype):
        raise UsageError(f"measure_cpu_roof: unknown dtype {dtype!r}")
    a = torch.ones(size, size, dtype=dt)
    b = torch.ones(size, size, dtype=dt)
    return (lambda: torch.mm(a, b)), 2.0 * size**3, f"{size}² {dtype} matmul"


def copy_probe() -> Probe:
    """Main-memory bandwidth: ``dst.copy_(src)`` of 64 MiB buffers and up."""
    return Probe("bandwidth", "B/s", (64, 128, 256), _copy)


def matmul_probe(dtype: str) -> Probe:
    """Dense FLOP/s of ``dtype``: square ``torch.mm`` from 128² up to 2048²."""
    return Probe(dtype, "FLOP/s", (128, 256, 512, 1024, 2048),
                 lambda size: _matmul(dtype, size))  # fmt: skip


#: What one intra-op thread of a CPU can do, (lowest, highest): a rate outside is a timing
#: failure or a cache, not a roof. Bandwidth: a DRAM copy on one thread reaches 5-30 GB/s;
#: float32: 8-32 FLOP/cycle x 2-4 GHz per core with AVX2/AVX-512 FMA; bfloat16 and float16:
#: ~1 GFLOP/s converted in software up to AMX's few TFLOP/s a core. The highest scales with
#: the threads, the lowest does not.
PLAUSIBLE: dict[str, tuple[float, float]] = {
    "bandwidth": (1e9, 2e11),
    "float32": (1e9, 1e12),
    "float64": (5e8, 5e11),
    "bfloat16": (2e8, 1e13),
    "float16": (2e8, 1e13),
}
_ANY_DTYPE = (1e8, 1e13)


def implausible(what: str, rate: float, threads: int) -> str | None:
    """Why ``rate`` is no CPU's roof for ``what`` with ``threads`` threads (None: plausible)."""
    lo, hi = PLAUSIBLE.get(what, _ANY_DTYPE)
    hi *= max(threads, 1)
    if math.isfinite(rate) and lo <= rate <= hi:
        return None
    unit = "B/s" if what == "bandwidth" else "FLOP/s"
    return (
        f"{what} {format_rate(rate, unit)} is outside what a CPU does with"
        f" {plural(threads, 'thread')} ({format_rate(lo, unit)} … {format_rate(hi, unit)})"
    )


def sample(
    fn: Callable[[], object], timer: Timer, rules: Rules, threads: int = 1
) -> tuple[Timing, ...]:
    """Timed calls of ``fn`` (after one untimed warm-up) until the three fastest agree
    within ``rules.steady`` — at least ``min_calls``, at most ``max_calls`` or
    ``budget_s`` of wall time; after ``min_calls``, as soon as the calls so far had less
    than ``rules.min_cpu_share`` of their CPUs (refused anyway: a loaded machine is not
    kept busy for nothing)."""
    fn()  # first-touch page faults, kernel selection
    out: list[Timing] = []
    spent = cpu = 0.0
    while len(out) < rules.max_calls:
        t = timer(fn)
        out.append(t)
        spent += t.wall_s
        cpu += t.cpu_s
        loaded = cpu < rules.min_cpu_share * spent * max(threads, 1)
        enough = _steady(out) <= rules.steady or spent >= rules.budget_s or loaded
        if len(out) >= rules.min_calls and enough:
            break
    return tuple(out)


def _fastest(timings: Sequence[Timing], k: int = 3) -> list[float]:
    return sorted(t.wall_s for t in timings)[:k]


def _steady(timings: Sequence[Timing]) -> float:
    """The third fastest call over the fastest (inf with fewer than three)."""
    fast = _fastest(timings)
    return fast[-1] / fast[0] if len(fast) == 3 else math.inf


def _share(t: Timing, threads: int) -> float:
    return t.cpu_s / (t.wall_s * max(threads, 1))


def reading_of(what: str, label: str, work: float, timings: Sequence[Timing],
               threads: int) -> RoofReading:  # fmt: skip
    """The figures of one quantity's calls (the rate: work over the median of the three
    fastest)."""
    walls = [t.wall_s for t in timings]
    wall, cpu = sum(walls), sum(t.cpu_s for t in timings)
    fastest = sorted(timings, key=lambda t: t.wall_s)[:3]
    return RoofReading(
        what=what,
        size=label,
        work=work,
        calls=len(timings),
        fastest_s=min(walls),
        median_s=statistics.median(walls),
        rate=work / statistics.median(_fastest(timings)),
        cpu_share=cpu / (wall * max(threads, 1)),
        fastest_cpu_share=min(_share(t, threads) for t in fastest),
    )


def judge(r: RoofReading, timings: Sequence[Timing], threads: int, rules: Rules) -> str | None:
    """Why the reading is no honest roof, in one line with its figures (None: it is)."""
    unit = "B/s" if r.what == "bandwidth" else "FLOP/s"
    calls = plural(r.calls, "call")
    cpus = plural(threads, "CPU")
    if r.cpu_share < rules.min_cpu_share:
        return (
            f"under load: the {r.size} had {format_pct(r.cpu_share)} of {cpus} over {calls}"
            f" (needs ≥ {format_pct(rules.min_cpu_share)}; it measured {format_rate(r.rate, unit)})"
        )
    if r.fastest_cpu_share < rules.fast_cpu_share:
        return (
            f"under load: a fastest call of the {r.size} had {format_pct(r.fastest_cpu_share)}"
            f" of {cpus} (needs ≥ {format_pct(rules.fast_cpu_share)}; it measured"
            f" {format_rate(r.rate, unit)})"
        )
    spread = r.median_s / r.fastest_s
    if spread > rules.max_spread:
        return (
            f"spread {format_ratio(spread)} (> {format_ratio(rules.max_spread)}) over {calls}"
            f" of the {r.size}: median {format_rate(r.work / r.median_s, unit)}, fastest"
            f" {format_rate(r.work / r.fastest_s, unit)}"
        )
    steady = _steady(timings)
    if steady > rules.steady:
        return (
            f"unsteady: the three fastest of {calls} of the {r.size} differ by"
            f" {format_ratio(steady)} (needs ≤ {format_ratio(rules.steady)})"
        )
    return implausible(r.what, r.rate, threads)


def _size_for(probe: Probe, timer: Timer, rules: Rules) -> Kernel:
    """The first size whose fastest of three calls takes ``rules.min_call_s`` (else the
    largest)."""
    made: Kernel | None = None
    for size in probe.sizes:
        made = probe.make(size)
        fn = made[0]
        fn()
        if min(timer(fn).wall_s for _ in range(3)) >= rules.min_call_s:
            break
    if made is None:
        raise UsageError(f"measure_cpu_roof: no sizes for {probe.what}")
    return made


def measure_cpu_roof(
    backend: Measuring,
    dtypes: Sequence[str] = ("float32", "bfloat16"),
    *,
    timer: Timer = process_timer,
    rules: Rules = Rules(),
    probes: Sequence[Probe] | None = None,
) -> tuple[int, tuple[RoofReading, ...]]:
    """Measure this CPU's roof under ``backend.measuring()``: ``(threads, readings)``, one
    reading per probe (bandwidth, then each dtype's matmul). Takes a few seconds; each
    reading is logged at DEBUG as it is taken (:func:`describe_reading`).

    Raises:
        CalibrationRefused: a reading is no honest roof (:func:`judge`); the message is one
            line with its figures, and nothing further is measured.
    """
    import torch

    todo = list(probes) if probes is not None else [copy_probe(), *map(matmul_probe, dtypes)]
    readings: list[RoofReading] = []
    with backend.measuring():
        threads = torch.get_num_threads()
        for probe in todo:
            fn, work, label = _size_for(probe, timer, rules)
            timings = sample(fn, timer, rules, threads)
            r = reading_of(probe.what, label, work, timings, threads)
            why = judge(r, timings, threads, rules)
            if why is not None:
                raise CalibrationRefused(
                    f"calibration refused, nothing stored: {why}",
                    hint="calibrate on a quiet machine: neuronasv doctor --calibrate"
                    " (until then no view shows a fraction of peak)",
                )
            log.debug("%s", describe_reading(r))
            readings.append(r)
    return threads, tuple(readings)


def describe_reading(r: RoofReading) -> str:
    """One reading in a line: rate, size, calls, spread and CPU share."""
    unit = "B/s" if r.what == "bandwidth" else "FLOP/s"
    return (
        f"{r.what}: {format_rate(r.rate, unit)} ({r.size}, {plural(r.calls, 'call')},"
        f" spread {format_ratio(r.median_s / r.fastest_s)}, {format_pct(r.cpu_share)} of"
        f" the CPU, {format_pct(r.fastest_cpu_share)} in the fastest calls)"
    )
