"""Device-health canary: a fixed reference kernel timed at the start and end of a run.

A benchmark slowdown means "the code got slower" only if the device ran as fast as it
usually does. The canary is a fixed kernel — one square matmul (compute) and one large
copy (memory bandwidth), sizes fixed per backend, inputs fixed — whose time depends on the
device and not on the code under test. It is timed a few times before a workload runs and
again after (:class:`CanaryRun`), giving a :class:`~neuronasv.model.CanaryReading`.

:func:`judge` compares a reading with the same machine's earlier readings:

* **level**: the reading's median against the history's median, in units of the
  history's noise (scaled MAD, floored at 1 % of the median). More than ``k`` (5) MADs
  slower = degraded (throttled clocks, a sick HBM stack, a noisy neighbour).
* **drift**: end vs start of the same run. More than ``max_drift`` (10 %) apart = the
  device changed *during* the run (thermal throttling), so timings within the run are not
  comparable either.
* fewer than ``min_history`` (5) earlier readings: ``unknown`` — no noise estimate yet
  (drift is still judged).

The pipeline's decision is :mod:`neuronasv.analyse.health` (per run, against the machine's
other runs, with a threshold designed against measured noise; it withholds a comparison's
verdicts and says why). :func:`judge` below is the per-reading check for ad-hoc use; its
fixed 10 % drift rule would flag healthy runs on a shared CPU (drift measured up to 67 %).

Each reading also carries the device state around it (``device_state``, see
:mod:`neuronasv.measure.device_state`): clocks, throttle reasons, ECC via NVML on CUDA.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from statistics import median
from typing import TYPE_CHECKING, Any

from neuronasv.errors import UsageError
from neuronasv.format import format_pair, format_pct
from neuronasv.model.profile import CanaryReading

if TYPE_CHECKING:
    from neuronasv.measure.backends.base import Backend
    from neuronasv.model.history import History


__all__ = [
    "CANARY_KERNELS",
    "CanaryKernel",
    "CanaryRun",
    "CanaryVerdict",
    "build_canary",
    "judge",
    "readings_for_machine",
    "time_canary",
]


@dataclass(frozen=True)
class CanaryKernel:
    """The reference kernel for one backend.

    Attributes:
        matmul_n: size of the square matmul (``n x n @ n x n``).
        copy_mib: MiB copied device-to-device per call (read + write = 2x this).
        dtype: dtype of both.
    """

    matmul_n: int
    copy_mib: int
    dtype: str

    def name(self, backend: str) -> str:
        """Stable identity: readings of different kernels are never compared."""
        return f"canary.{backend}.mm{self.matmul_n}-{self.dtype}+copy{self.copy_mib}MiB"


#: Sized so one call takes ~1-10 ms: long enough to time with a wall clock after a
#: synchronise, short enough that 2 x 5 calls per workload cost well under a second.
CANARY_KERNELS: dict[str, CanaryKernel] = {
    "cpu": CanaryKernel(matmul_n=256, copy_mib=16, dtype="float32"),
    "cuda": CanaryKernel(matmul_n=4096, copy_mib=512, dtype="bfloat16"),
    "neuron": CanaryKernel(matmul_n=2048, copy_mib=256, dtype="bfloat16"),
}


def _us_pair(a_us: float, b_us: float, sep: str) -> str:
    """Two canary levels (µs) in one scale: ``1.23 ms vs 1.00 ms``."""
    return format_pair(a_us * 1e-6, b_us * 1e-6, "seconds", sep=sep)

def _kernel_for(backend: Backend) -> CanaryKernel:
    try:
        return CANARY_KERNELS[backend.name]
    except KeyError:
        raise UsageError(f"no canary kernel for backend {backend.name!r}") from None


def build_canary(backend: Backend) -> tuple[str, Callable[[], object]]:
    """``(name, step)``: the backend's canary kernel with fixed inputs on its device."""
    import torch

    kernel = _kernel_for(backend)
    dtype = getattr(torch, kernel.dtype)
    gen = torch.Generator(device="cpu").manual_seed(1234)
    n = kernel.matmul_n
    a = torch.randn(n, n, generator=gen).to(dtype).to(backend.device)
    b = torch.randn(n, n, generator=gen).to(dtype).to(backend.device)
    elems = kernel.copy_mib * 2**20 // torch.empty((), dtype=dtype).element_size()
    src = torch.ones(elems, dtype=dtype).to(backend.device)
    dst = torch.empty_like(src)

    def step() -> object:
        c = torch.mm(a, b)
        dst.copy_(src)
        return c

    return kernel.name(backend.name), step


def time_canary(
    backend: Backend,
    *,
    repeats: int = 5,
    warmup: int = 2,
    clock: Callable[[], float] = time.perf_counter,
    step: Callable[[], object] | None = None,
) -> tuple[float, ...]:
    """Wall-clock µs of ``repeats`` canary calls, each bracketed by device synchronisation."""
    if repeats < 1:
        raise UsageError(f"canary repeats must be at least 1, got {repeats}")
    if step is None:
        _, step = build_canary(backend)
    for _ in range(warmup):
        step()
    backend.synchronize()
    out: list[float] = []
    for _ in range(repeats):
        t0 = clock()
        step()
        backend.synchronize()
        out.append((clock() - t0) * 1e6)
    return tuple(out)


class CanaryRun:
    """Time the canary at the start and end of a run.

    Usage::

        run = CanaryRun(backend)
        run.start()
        ...  # the workload
        reading = run.finish()
    """

    def __init__(
        self,
        backend: Backend,
        *,
        repeats: int = 5,
        clock: Callable[[], float] = time.perf_counter,
        state: Callable[[str], dict[str, str]] | None = None,
    ) -> None:
        self.backend = backend
        self.repeats = repeats
        self.clock = clock
        self.name, self._step = build_canary(backend)
        self._start: tuple[float, ...] | None = None
        if state is None:
            from neuronasv.measure.device_state import collect_device_state

            state = collect_device_state
        self._state_fn = state
        self._state: dict[str, str] = {}

    def _record_state(self, when: str) -> None:
        try:
            got = self._state_fn(self.backend.name)
        except Exception as exc:  # the state explains; it must never fail a measurement
            got = {"error": f"{type(exc).__name__}: {exc}"}
        self._state.update({f"{when}.{k}": str(v) for k, v in got.items()})

    def start(self) -> None:
        self._record_state("start")
        self._start = time_canary(
            self.backend, repeats=self.repeats, clock=self.clock, step=self._step
        )

    def finish(self) -> CanaryReading:
        if self._start is None:
            raise UsageError("CanaryRun.finish() called before start()")
        end = time_canary(
            self.backend, repeats=self.repeats, warmup=0, clock=self.clock, step=self._step
        )
        self._record_state("end")
        return CanaryReading(
            name=self.name, start_us=self._start, end_us=end, device_state=dict(self._state)
        )


# --- judging ----------------------------------------------------------------------------

_MAD_SCALE = 1.4826  # MAD -> standard deviation for normal data


@dataclass(frozen=True)
class CanaryVerdict:
    """Health of the device for one reading.

    Attributes:
        status: ``"healthy"``, ``"degraded"`` or ``"unknown"`` (too little history).
        reasons: sentences for people, verbatim in reports; empty when all is well.
        level_us: median of the reading (start and end together).
        baseline_us: median level of the machine's history, or None.
        noise_us: the history's scaled MAD (floored), or None.
        deviation: (level - baseline) / noise, or None.
        drift: (median(end) - median(start)) / median(start).
        noise_fraction: noise_us / baseline_us — the machine's relative canary noise.
        history_n: readings of the same kernel the verdict rests on.
    """

    status: str
    reasons: tuple[str, ...]
    level_us: float
    baseline_us: float | None
    noise_us: float | None
    deviation: float | None
    drift: float
    noise_fraction: float | None
    history_n: int

    @property
    def degraded(self) -> bool:
        return self.status == "degraded"

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "reasons": list(self.reasons),
            "level_us": self.level_us,
            "baseline_us": self.baseline_us,
            "noise_us": self.noise_us,
            "deviation": self.deviation,
            "drift": self.drift,
            "noise_fraction": self.noise_fraction,
            "history_n": self.history_n,
        }


def _level(reading: CanaryReading) -> float:
    return median((*reading.start_us, *reading.end_us))


def judge(
    history: Iterable[CanaryReading],
    current: CanaryReading,
    *,
    k: float = 5.0,
    max_drift: float = 0.10,
    min_history: int = 5,
    min_noise_fraction: float = 0.01,
) -> CanaryVerdict:
    """Judge ``current`` against the same machine's earlier readings (pure).

    Args:
        history: earlier readings from the same machine (other kernels are ignored).
        current: the reading to judge.
        k: MADs of slowdown beyond which the device is degraded.
        max_drift: start/end relative difference beyond which the run is degraded.
        min_history: readings needed before the level is judged.
        min_noise_fraction: floor for the noise, as a fraction of the baseline, so a
            perfectly steady history does not flag a 0.1 % wobble.
    """
    if not current.start_us or not current.end_us:
        raise UsageError(f"canary reading {current.name!r} has no start or end samples")
    for v in (*current.start_us, *current.end_us):
        if not math.isfinite(v) or v <= 0:
            raise UsageError(f"canary reading {current.name!r} holds a non-positive time {v!r}")
    reasons: list[str] = []
    degraded = False
    level = _level(current)
    start, end = median(current.start_us), median(current.end_us)
    drift = (end - start) / start
    if abs(drift) > max_drift:
        degraded = True
        if drift > 0:
            reasons.append(
                f"device slowed by {format_pct(drift)} between the start and end of the run"
                f" (canary {_us_pair(start, end, ' -> ')}): thermal throttling or contention"
            )
        else:
            reasons.append(
                f"device was {format_pct(-drift)} slower at the start of the run than at its end"
                f" (canary {_us_pair(start, end, ' -> ')}): busy or clocking up when the run began"
            )
    same = [r for r in history if r.name == current.name and r.start_us and r.end_us]
    levels = [_level(r) for r in same]
    levels = [v for v in levels if math.isfinite(v) and v > 0]
    baseline = noise = deviation = noise_fraction = None
    if len(levels) < min_history:
        reasons.append(
            f"only {len(levels)} earlier canary reading(s) on this machine; {min_history}"
            " are needed for a noise estimate"
        )
        status = "degraded" if degraded else "unknown"
    else:
        baseline = median(levels)
        mad = _MAD_SCALE * median(abs(v - baseline) for v in levels)
        noise = max(mad, min_noise_fraction * baseline)
        noise_fraction = noise / baseline
        deviation = (level - baseline) / noise
        if deviation > k:
            degraded = True
            reasons.append(
                f"canary {format_pct(level / baseline - 1)} slower than this machine's median"
                f" over {len(levels)} runs ({_us_pair(level, baseline, ' vs ')},"
                f" {deviation:.1f} MADs"
                f" > {k:g}): the device is throttled or unhealthy"
            )
        elif deviation < -k:
            reasons.append(
                f"canary {format_pct(1 - level / baseline)} faster than this machine's median"
                f" ({_us_pair(level, baseline, ' vs ')}): different hardware or settings?"
            )
        status = "degraded" if degraded else "healthy"
    return CanaryVerdict(
        status=status,
        reasons=tuple(reasons),
        level_us=level,
        baseline_us=baseline,
        noise_us=noise,
        deviation=deviation,
        drift=drift,
        noise_fraction=noise_fraction,
        history_n=len(levels),
    )


def readings_for_machine(
    history: History,
    machine: str,
    *,
    exclude_commit: str | None = None,
    commits: Sequence[str] | None = None,
) -> list[CanaryReading]:
    """Canary readings stored in ``history``'s sidecar profiles for one machine.

    Args:
        history: a loaded :class:`~neuronasv.model.History` (its ``profiles``).
        machine: asv machine name.
        exclude_commit: leave out this commit's readings (the one being judged).
        commits: only these commits (e.g. those before the one judged); default all.

    Returns:
        Readings in the history's commit order (unknown commits last).
    """
    order = {c: i for i, c in enumerate(history.commits)}
    wanted = set(commits) if commits is not None else None
    rows: list[tuple[int, CanaryReading]] = []
    for (m, commit), profiles in history.profiles.items():
        if m != machine or commit == exclude_commit:
            continue
        if wanted is not None and commit not in wanted:
            continue
        for p in profiles:
            if p.canary is not None:
                rows.append((order.get(commit, len(order)), p.canary))
    rows.sort(key=lambda r: r[0])
    return [r for _, r in rows]
