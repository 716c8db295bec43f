"""A slow runner is not a regression: the shift every series shares (pure, no I/O).

Two runs of one code on a shared runner differ by more than their samples show: a neighbour
that takes the cores, a lower clock, a throttled device. When that happens between base and
head, *every* series moves, and a single-run comparison names each of them as slower. This
module finds that shared shift once, in analyse, so every view can say it in its first line
and judge each row against it (DESIGN.md §8, "the runner is part of the measurement").

**Which series.** Only series whose code demonstrably did the same thing on both sides say
what the runner did: device-time series measured once a side (not in interleaved rounds,
where base and head share the runner's drift), both sides measured, their configuration's
exact work unchanged (no :class:`~neuronasv.model.WorkChange` of any kind, count
changes included) and their own exact count (:data:`~neuronasv.metrics.BESIDE_TIME`),
where counted, equal
(:func:`shift_inputs`). Plain asv series have no such evidence and never count.

**The rule** (:func:`runner_shift`), on the log-ratios ``d_i = log(head_i / base_i)`` of
those ``n`` series:

1. fewer than :data:`MIN_SERIES` series: ``unknown`` (too few to tell);
2. the shared factor is ``c = median(d_i)``, its spread ``s = 1.4826 · MAD(d_i)`` (robust:
   a few series that really changed move neither);
3. **most series moved together** when ``|c|`` exceeds the minimum effect of the default
   rule (5 % for ``median:5%``) *and* more than :data:`MOST` (three quarters) of the
   series moved ``c``'s way. Under a shift ``c`` with series-to-series scatter ``s``, a
   share ``Φ(|c| / s)`` moves its way, so three quarters also says the factor is
   similar across series (``|c| > 0.67 s``), not one extreme series pulling a median;
   otherwise ``none``;
4. **the canary decides whose shift it is.** The canary (a fixed matmul + copy timed
   beside every workload, :mod:`neuronasv.measure.canary`) does not run the code under
   test. With a reading on both sides, the shift is the runner's only when the canary
   moved the same way by at least half of it on the log scale (``log κ · sign(c) ≥
   |c| / 2``: closer to the shift than to no change); a canary that held while every
   series moved means a change that reaches every series — a global setting in the code
   — and is ``series``: rows are then judged as measured. Without both readings the
   series decide alone (the first line says the canary was not read): ``runner``.

**Judging a row against it** (``runner`` only; :func:`neuronasv.analyse.pairwise.judge`):
a single-run row's time is decided on ``log(ratio) - c`` — its head samples divided by
``exp(c)`` for the test, its CI over the factor — and the change must also clear ``k ·
max(s, floor)`` with ``k`` the same ``1 - alpha / 2m`` t quantile the noise floor uses,
on ``0.37 n`` degrees of freedom (the MAD's efficiency, :data:`stats.MAD_EFFICIENCY`).
So an A/A comparison whose head ran beside four busy processes moves every series by ×2
and names none, while a +30 % change of one op on top of a quiet device's +5 % clock
drop still stands out (its residual +24 % against a spread of tenths of a percent). On
a loaded CPU the scatter about the shift is tens of percent: there the exact axes (work,
exact counts) name a real change, and timing alone names only what clears that
scatter; re-measuring in interleaved rounds (``neuronasv confirm``) cancels the shift.

The machine state each side's sidecar recorded (load at the run's start and end, the CPU
clock, the device's throttle reasons, the canary's level) travels with the decision
(:func:`side_state`), so the first line can say what the runner was doing.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from statistics import median

from neuronasv.analyse.stats import MAD_EFFICIENCY, MAD_K, MIN_FLOOR
from neuronasv.keys import SeriesConfig
from neuronasv.model import History, SeriesId, WorkChange
from neuronasv.model.findings import RunnerShift, SideState
from neuronasv.model.profile import CanaryReading

__all__ = [
    "MIN_SERIES",
    "MOST",
    "canary_level",
    "canary_ratio",
    "runner_shift",
    "shift_df",
    "shift_inputs",
    "side_state",
]

#: Fewer series with equal exact evidence than this and the rule does not decide.
MIN_SERIES = 8
#: "Most series": more than this share of them moved the shift's way.
MOST = 0.75
#: The canary follows the shift when it moved at least this share of it (log scale).
CANARY_SHARE = 0.5

_SeriesKey = tuple[SeriesConfig, str | None]


def shift_df(shift: RunnerShift) -> float:
    """The degrees of freedom the shift's spread is worth (a MAD over its series)."""
    return MAD_EFFICIENCY * shift.series


def _log_ratio(base: float | None, head: float | None) -> float | None:
    if base is None or head is None or not (base > 0 and head > 0):
        return None
    if not (math.isfinite(base) and math.isfinite(head)):
        return None
    return math.log(head / base)


def shift_inputs(
    rows: Iterable[tuple[SeriesId, float | None, float | None]],
    work: Iterable[WorkChange],
    counts: Mapping[_SeriesKey, tuple[float | None, float | None]],
    compared: Collection[SeriesConfig],
) -> list[tuple[float, bool]]:
    """The log-ratios of the series whose code did the same thing on both sides.

    Args:
        rows: ``(series, base, head)`` of the single-run device-time rows (each side's
            median, or its value without samples).
        work: the comparison's exact work changes (count changes included).
        counts: ``(config, op) -> (base count, head count)`` of the counted rows.
        compared: the configurations whose work was compared: a profile on both sides
            (without one the work is unknown, not equal).

    A row counts when it belongs to a workload, its configuration's work was compared and
    did not change in any way, and its own count, where one was taken, is equal on both
    sides.
    Each is ``(log-ratio, whether a count was compared)``.
    """
    changed = {w.config for w in work}
    out = []
    for sid, base, head in rows:
        if sid.workload is None or sid.config in changed or sid.config not in compared:
            continue
        count = counts.get((sid.config, sid.op))
        if count is not None and (count[0] is None or count[0] != count[1]):
            continue
        d = _log_ratio(base, head)
        if d is not None:
            out.append((d, count is not None))
    return out


def _sign(x: float) -> int:
    return (x > 0) - (x < 0)


def runner_shift(
    inputs: Sequence[tuple[float, bool]],
    *,
    min_effect: float,
    canary: float | None = None,
    base: SideState | None = None,
    head: SideState | None = None,
) -> RunnerShift:
    """The runner's shared shift over ``log_ratios`` (the module's rule).

    Args:
        inputs: :func:`shift_inputs` of the comparison: each series' log-ratio and
            whether its counts were compared.
        min_effect: the default rule's relative minimum effect (0.05 for ``median:5%``).
        canary: head / base of the two runs' canary levels, None without both.
        base, head: what each side recorded of its machine (:func:`side_state`).
    """
    log_ratios = [d for d, _ in inputs]
    n = len(log_ratios)
    counted = sum(1 for _, c in inputs if c)
    common = dict(series=n, counted=counted, canary=canary, base=base, head=head)
    if n < MIN_SERIES:
        return RunnerShift(status="unknown", **common)  # type: ignore[arg-type]
    c = float(median(log_ratios))
    spread = max(MAD_K * float(median(abs(d - c) for d in log_ratios)), MIN_FLOOR)
    along = sum(1 for d in log_ratios if _sign(d) == _sign(c) != 0)
    figures = dict(factor=math.exp(c), spread=spread, along=along, **common)
    together = abs(c) > math.log1p(min_effect) and along > MOST * n
    if not together:
        return RunnerShift(status="none", **figures)  # type: ignore[arg-type]
    if canary is not None and canary > 0:
        followed = math.log(canary) * _sign(c) >= CANARY_SHARE * abs(c)
        if not followed:
            return RunnerShift(status="series", **figures)  # type: ignore[arg-type]
    return RunnerShift(status="runner", **figures)  # type: ignore[arg-type]


def _readings(history: History, machine: str, commit: str) -> list[CanaryReading]:
    return [
        p.canary
        for p in history.profiles.get((machine, commit), ())
        if p.canary is not None and p.canary.start_us and p.canary.end_us
    ]


def canary_level(readings: Sequence[CanaryReading]) -> float | None:
    """The run's canary level in µs: the median over its readings (one a workload) of each
    reading's median over its start and end calls (as device health reads it), of the
    kernel most readings ran; None without a reading."""
    if not readings:
        return None
    names: dict[str, int] = {}
    for r in readings:
        names[r.name] = names.get(r.name, 0) + 1
    name = max(sorted(names), key=lambda k: names[k])
    levels = [
        float(median((*r.start_us, *r.end_us))) for r in readings if r.name == name
    ]
    levels = [v for v in levels if math.isfinite(v) and v > 0]
    return float(median(levels)) if levels else None


def _throttle(readings: Sequence[CanaryReading]) -> str:
    """The device's throttle reasons at the end of the run (the last reading that has
    them; NVML's ``none`` is no throttling)."""
    for r in reversed(readings):
        for key in sorted(r.device_state):
            if key.startswith("end.") and "throttle" in key:
                return r.device_state[key]
    return ""


def side_state(history: History, side: str, machine: str, commit: str) -> SideState:
    """What one run recorded of its machine: the sidecar's load and clock at its start and
    end, and its canary readings' level and throttle reasons."""
    readings = _readings(history, machine, commit)
    st = history.run_states.get((machine, commit))
    return SideState(
        side=side,
        load_start=st.start.load_1m if st else None,
        load_end=st.end.load_1m if st else None,
        cpu_mhz_start=st.start.cpu_mhz if st else None,
        cpu_mhz_end=st.end.cpu_mhz if st else None,
        cpus=(st.start.cpus or st.end.cpus) if st else 0,
        canary_us=canary_level(readings),
        throttle=_throttle(readings),
    )


def canary_ratio(base: SideState, head: SideState) -> float | None:
    """head / base of the two runs' canary levels (None without both)."""
    if base.canary_us and head.canary_us:
        return head.canary_us / base.canary_us
    return None
