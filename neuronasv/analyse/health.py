"""Device health: withhold a comparison's verdicts when the device ran slow (pure, no I/O).

Every profiled workload of a run carries a canary reading (:mod:`neuronasv.measure.canary`:
a fixed matmul + copy timed before and after the workload), whose time depends on the
device, not on the code. A run whose canary is slower than its machine's history allows
(throttled clocks, a shared or noisy neighbour, wrong power settings) says nothing about
the code: its verdicts are withheld, with the reason, instead of reported.

**The decision**, per side of a comparison (base, head):

1. *level*: the median of the run's readings (each reading's median over its start and
   end calls; one reading per workload, so one slow workload does not move it);
2. *history*: the levels of the same machine's other runs (every commit but base and head)
   with the same canary kernel;
3. on the log scale, *baseline* = median of the history and *noise* = scaled MAD
   (1.4826 × MAD, robust to a few throttled runs in the history), floored at
   ``min_noise`` (0.5 %) so a perfectly steady history does not flag a wobble;
4. the run is **withheld** when ``log(level) - baseline > k × noise`` with
   ``k = t(1 - alpha; n - 1) × sqrt(1 + 1/n)``: the one-sided upper prediction bound
   for one new run from ``n`` earlier ones (Student t). With ``alpha = 0.001`` a healthy
   run is withheld about once in a thousand comparisons a side; ``k`` is 7.9 with the
   minimum 5 earlier runs, 4.2 with 12, 3.5 with 30;
5. fewer than ``min_history`` (5) earlier runs, or no reading: ``unknown`` — verdicts
   stand, and the document says the device was not checked.

Designed against measured noise (``bench/canary_noise.py``; docs/workloads.md): on the
shared 2-core CPU runner the canary moves ~15–20 % between runs, so with 12 runs of
history a CPU run is withheld only beyond roughly +90 %; on an H200 per-op medians move
0.1–0.2 % between runs (the canary itself is unmeasured there), so the 0.5 % floor governs
and a run is withheld beyond roughly +2 % (30 runs) to +4 % (5 runs) — below the 5–30 %
that clock throttling costs. Only a *slower* canary withholds: a faster one is reported as
a note (the history may hold throttled runs, or the hardware changed) but the runs
compared were not impeded.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import median

from neuronasv.format import format_pair, format_pct
from neuronasv.model import CanaryReading, History
from neuronasv.model.findings import CanaryCheck, DeviceHealth
from neuronasv.units import US

__all__ = [
    "ALPHA",
    "MIN_HISTORY",
    "MIN_NOISE",
    "CanaryRule",
    "check_side",
    "device_health",
    "prediction_k",
    "reading_level",
    "run_readings",
]

ALPHA = 0.001  # one-sided false-withhold rate per side
MIN_HISTORY = 5  # earlier runs needed for a noise estimate
MIN_NOISE = 0.005  # noise floor, relative (0.5 %)
_MAD_SCALE = 1.4826  # MAD -> standard deviation for normal data


@dataclass(frozen=True)
class CanaryRule:
    """How a run's canary is judged against its machine's history.

    Attributes:
        alpha: one-sided false-withhold rate.
        min_history: earlier runs needed for a decision.
        min_noise: relative noise floor.
    """

    alpha: float = ALPHA
    min_history: int = MIN_HISTORY
    min_noise: float = MIN_NOISE

#: Device-state keys named in a withheld reason when present (NVML; see device_state).
_STATE_KEYS = (
    "end.throttle_reasons",
    "end.sm_clock_mhz",
    "end.sm_clock_max_mhz",
    "end.temperature_c",
    "end.ecc_uncorrected_volatile",
)


def reading_level(r: CanaryReading) -> float:
    """One reading's level: the median over its start and end calls (µs)."""
    return float(median((*r.start_us, *r.end_us)))


def prediction_k(n: int, alpha: float = ALPHA) -> float:
    """Noise multiples a new run may exceed the baseline by, given ``n`` earlier runs."""
    if n < 2:
        return math.inf
    from scipy import special  # here, and not scipy.stats (~1 s): t.ppf is stdtrit

    return float(special.stdtrit(n - 1, 1.0 - alpha) * math.sqrt(1.0 + 1.0 / n))


def run_readings(history: History, machine: str, commit: str) -> list[CanaryReading]:
    """The canary readings stored with one run's profiles (sidecar), in profile order."""
    return [
        p.canary
        for p in history.profiles.get((machine, commit), ())
        if p.canary is not None and p.canary.start_us and p.canary.end_us
    ]


def _level(readings: Sequence[CanaryReading], name: str) -> float | None:
    levels = [reading_level(r) for r in readings if r.name == name]
    levels = [v for v in levels if math.isfinite(v) and v > 0]
    return float(median(levels)) if levels else None


def _pct(x: float) -> str:
    return format_pct(abs(x))


def _state_note(state: Mapping[str, str]) -> str:
    bits = [f"{k.removeprefix('end.')} {state[k]}" for k in _STATE_KEYS if state.get(k)]
    return f"; device at the end of the run: {', '.join(bits)}" if bits else ""


def _merged_state(readings: Sequence[CanaryReading]) -> dict[str, str]:
    """The device state of the run's last reading that has one (throttling shows at the end)."""
    for r in reversed(readings):
        if r.device_state:
            return dict(r.device_state)
    return {}


def check_side(
    history_levels: Sequence[float],
    readings: Sequence[CanaryReading],
    *,
    side: str,
    commit: str,
    machine: str,
    name: str | None = None,
    rule: CanaryRule = CanaryRule(),
) -> CanaryCheck:
    """Judge one run's canary readings against its machine's earlier run levels.

    Args:
        history_levels: the levels (µs) of the machine's other runs, same canary kernel.
        readings: this run's readings.
        side: ``base`` or ``head`` (for the reason).
        commit, machine: the run.
        name: the canary kernel compared (default: the one most readings carry).
        rule: the false-withhold rate, history needed and noise floor.
    """
    state = _merged_state(readings)
    common = dict(side=side, commit=commit, machine=machine, device_state=state)
    if name is None and readings:
        name = Counter(r.name for r in readings).most_common(1)[0][0]
    level = _level(readings, name) if name is not None else None
    n_read = sum(1 for r in readings if r.name == name)
    if level is None:
        return CanaryCheck(
            status="unknown",
            reason=f"{side} has no canary reading (results from before the canary, or it failed)",
            readings=0,
            **common,  # type: ignore[arg-type]
        )
    hist = [v for v in history_levels if math.isfinite(v) and v > 0]
    n = len(hist)
    if n < rule.min_history:
        return CanaryCheck(
            status="unknown",
            reason=(
                f"{side} canary not judged: {n} earlier run(s) of it on this machine,"
                f" {rule.min_history} needed for a noise estimate"
            ),
            level_us=level,
            history_n=n,
            readings=n_read,
            **common,  # type: ignore[arg-type]
        )
    logs = [math.log(v) for v in hist]
    base_log = float(median(logs))
    spread = _MAD_SCALE * float(median(abs(x - base_log) for x in logs))
    noise = max(spread, math.log1p(rule.min_noise))
    k = prediction_k(n, rule.alpha)
    diff = math.log(level) - base_log
    baseline = math.exp(base_log)
    change = math.expm1(diff)
    threshold = math.expm1(k * noise)
    where = f"{side} {commit[:8]}"
    if diff > k * noise:
        status = "withheld"
        reason = (
            f"{where} canary {_pct(change)} slower than this machine's history (median of"
            f" {n} runs: {format_pair(level * US, baseline * US, 'seconds', sep=' vs ')};"
            f" withheld beyond +{_pct(threshold)})"
            + _state_note(state)
        )
    elif diff < -k * noise:
        status = "ok"
        reason = (
            f"{where} canary {_pct(change)} faster than this machine's history (median of"
            f" {n} runs): the history may hold throttled runs, or the hardware changed"
        )
    else:
        status = "ok"
        reason = (
            f"{where} canary within this machine's history"
            f" ({format_pct(change, signed=True)}, median of {n} runs;"
            f" withheld beyond +{_pct(threshold)})"
        )
    return CanaryCheck(
        status=status,  # type: ignore[arg-type]
        reason=reason,
        level_us=level,
        baseline_us=baseline,
        change=change,
        threshold=threshold,
        history_n=n,
        readings=n_read,
        **common,  # type: ignore[arg-type]
    )


def _history_levels(
    history: History, machine: str, exclude: Sequence[str], name: str | None
) -> list[float]:
    out = []
    for (m, commit), profiles in history.profiles.items():
        if m != machine or commit in exclude or name is None:
            continue
        level = _level([p.canary for p in profiles if p.canary is not None], name)
        if level is not None:
            out.append(level)
    return out


def device_health(
    history: History,
    *,
    base: str,
    head: str,
    base_machine: str,
    head_machine: str | None = None,
    rule: CanaryRule = CanaryRule(),
) -> DeviceHealth:
    """The device-health decision for a base-vs-head comparison.

    Each side is judged against its own machine's other runs (neither base nor head is
    part of either history). Withheld when any side is withheld; ok when both are ok;
    unknown otherwise.
    """
    hm = head_machine or base_machine
    checks = []
    for side, commit, machine in (("base", base, base_machine), ("head", head, hm)):
        readings = run_readings(history, machine, commit)
        name = Counter(r.name for r in readings).most_common(1)[0][0] if readings else None
        levels = _history_levels(history, machine, (base, head), name)
        checks.append(
            check_side(
                levels,
                readings,
                side=side,
                commit=commit,
                machine=machine,
                name=name,
                rule=rule,
            )
        )
    withheld = [c for c in checks if c.status == "withheld"]
    if withheld:
        worst = max(withheld, key=lambda c: c.change or 0.0)
        reason = (
            f"verdicts withheld: {worst.side} canary {_pct(worst.change or 0.0)} slower than"
            f" this machine's history (median of {worst.history_n} runs)"
        )
        return DeviceHealth(status="withheld", reason=reason, checks=tuple(checks))
    if all(c.status == "ok" for c in checks):
        return DeviceHealth(
            status="ok",
            reason="device healthy: " + "; ".join(c.reason for c in checks),
            checks=tuple(checks),
        )
    return DeviceHealth(
        status="unknown",
        reason="device health not checked: "
        + "; ".join(c.reason for c in checks if c.status == "unknown"),
        checks=tuple(checks),
    )
