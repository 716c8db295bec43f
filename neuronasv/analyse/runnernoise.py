"""The runner's noise, said once: the smallest timing change the rounds can confirm (pure).

From the main-branch noise floors (:mod:`neuronasv.analyse.floors`), per machine and
workload: a per-round log-ratio of two runs of the same code has the floor's spread
``sd``; the rounds test averages ``R`` of them, so a change is confirmed (two-sided, at
``alpha``, 80 % of the time) once ``|log ratio| ≥ (t_{1-α/2, df} + z_{0.8}) · sd / √R``,
with ``df`` the floor's degrees of freedom plus ``R - 1``. A workload's figure is the
median over its totals' floors; without floors (a young history) ``confirm`` takes the
spread of the rounds it ran (:func:`from_rounds`). Views show the one sentence
(:func:`sentence`) and collapse the rows the timing could not decide behind it instead of
listing each as "noisy".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from neuronasv.format import format_pct
from neuronasv.model import SeriesId
from neuronasv.samples import median

if TYPE_CHECKING:  # the views import :func:`sentence` only: no numpy/scipy for them
    from neuronasv.analyse.floors import FloorKey, NoiseFloor

__all__ = ["POWER_Z", "from_rounds", "min_change", "runner_noise", "sentence", "with_rounds"]

#: z for 80 % power.
POWER_Z = 0.8416


def min_change(sd: float, df: float, rounds: int, alpha: float) -> float:
    """Smallest relative timing change (0.35 = 35 %) ``rounds`` rounds confirm (module doc)."""
    from neuronasv.analyse.stats import t_quantile

    r = max(rounds, 2)
    t = t_quantile(1.0 - alpha / 2.0, max(df + r - 1, 1.0))
    return math.exp((t + POWER_Z) * sd / math.sqrt(r)) - 1.0


def runner_noise(
    floors: Mapping[FloorKey, NoiseFloor], machine: str, rounds: int, alpha: float
) -> dict[str, Any]:
    """``settings["runner_noise"]``: per workload, the floors' median spread and df, and
    the smallest change ``rounds`` rounds confirm. Empty without workload-total floors."""
    per: dict[str, list[NoiseFloor]] = {}
    for key, fl in floors.items():
        # workload totals only: ("w", workload, shape, dtype, op=None)
        if len(key) == 5 and key[0] == "w" and key[4] is None and isinstance(key[1], str):
            per.setdefault(key[1], []).append(fl)
    if not per:
        return {}
    sd = {w: median([f.sd for f in fs]) for w, fs in sorted(per.items())}
    df = {w: median([f.df for f in fs]) for w, fs in sorted(per.items())}
    noise = {"machine": machine, "alpha": alpha, "sd": sd, "df": df, "from": "floors"}
    return with_rounds(noise, rounds)


def _round_log_ratios(
    base: Sequence[Sequence[float]], head: Sequence[Sequence[float]]
) -> list[float]:
    n = min(len(base), len(head))
    out = []
    for b, h in zip(base[:n], head[:n], strict=True):
        mb, mh = (median(list(b)) if b else 0.0), (median(list(h)) if h else 0.0)
        if mb > 0 and mh > 0:
            out.append(math.log(mh / mb))
    return out


def from_rounds(
    rounds: Mapping[SeriesId, tuple[Sequence[Sequence[float]], Sequence[Sequence[float]]]],
    machine: str,
    alpha: float,
) -> dict[str, Any]:
    """The same figures from the rounds themselves when there are no floors (a young
    history): per workload, the pooled spread of its totals' per-round log-ratios about
    their mean (``df`` = the rounds less one per total)."""
    ss: dict[str, float] = {}
    dfs: dict[str, float] = {}
    r = 0
    for sid, (base, head) in rounds.items():
        if sid.op is not None or sid.workload is None:
            continue
        lr = _round_log_ratios(base, head)
        if len(lr) < 2:
            continue
        r = max(r, len(lr))
        mean = sum(lr) / len(lr)
        ss[sid.workload] = ss.get(sid.workload, 0.0) + sum((x - mean) ** 2 for x in lr)
        dfs[sid.workload] = dfs.get(sid.workload, 0.0) + len(lr) - 1
    if not ss:
        return {}
    sd = {w: math.sqrt(ss[w] / dfs[w]) for w in sorted(ss)}
    noise = {"machine": machine, "alpha": alpha, "sd": sd, "df": dict(sorted(dfs.items())),
             "from": "rounds"}  # fmt: skip
    return with_rounds(noise, r)


def with_rounds(noise: Mapping[str, Any], rounds: int) -> dict[str, Any]:
    """``noise`` recomputed for a round budget (``confirm`` knows the rounds it ran)."""
    try:
        sd, df, alpha = noise["sd"], noise["df"], float(noise["alpha"])
        change = {w: min_change(float(sd[w]), float(df[w]), rounds, alpha) for w in sd}
    except (KeyError, TypeError, ValueError, AttributeError):
        return {}  # absent, or not what compare wrote: no sentence rather than a wrong one
    return {**noise, "rounds": max(rounds, 2), "min_change": change}


def sentence(noise: Any) -> str:
    """``on `demo-cpu`, timing changes under ~35 % (rmsnorm.naive), ~20 % (rmsnorm.fused)
    are not measurable at 6 rounds`` (plain text, names unescaped; empty without data)."""
    if not isinstance(noise, Mapping) or not isinstance(noise.get("min_change"), Mapping):
        return ""
    parts = [
        f"~{format_pct(float(x))} ({w})"
        for w, x in sorted(noise["min_change"].items(), key=lambda kv: (-float(kv[1]), kv[0]))
    ]
    if not parts:
        return ""
    how = " (from the spread of these rounds)" if noise.get("from") == "rounds" else ""
    return (
        f"on {noise.get('machine', '')}, timing changes under {', '.join(parts)}"
        f" are not measurable at {noise.get('rounds')} rounds{how}"
    )
