"""The former change-point detector, verbatim: one ``scipy.stats.ttest_ind`` call per
tested split and the pruning loop that re-scores every candidate after each drop
(``neuronasv.analyse.changepoints.detect`` before issue 29). The reference tests in
``test_changepoints_vectorised.py`` hold the batched detector to it."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

import numpy as np
from scipy import stats as _sps

from neuronasv.analyse.acks import Acknowledgement, match_ack
from neuronasv.analyse.changepoints import MIN_POINTS, CPSettings, RawChange
from neuronasv.analyse.envdiff import env_changes
from neuronasv.analyse.exact import (
    count_delta,
    counted_twice_alike,
    is_exact,
    target_name,
)
from neuronasv.format import format_delta_pct, p_text
from neuronasv.model import (
    ChangePoint,
    FindingsDocument,
    History,
    Point,
    RunRef,
    Series,
)
from neuronasv.model.counts import PassCounts


def energy_split(x: np.ndarray, min_size: int = 2) -> tuple[int, float] | None:
    n = x.size
    if n < 2 * min_size:
        return None
    d = np.abs(x[:, None] - x[None, :])
    s = np.zeros((n + 1, n + 1))
    s[1:, 1:] = d.cumsum(0).cumsum(1)

    def block(a: int, b: int, c: int, e: int) -> float:
        return float(s[b, e] - s[a, e] - s[b, c] + s[a, c])

    best: tuple[int, float] | None = None
    for t in range(min_size, n - min_size + 1):
        m, k = t, n - t
        between = block(0, t, t, n) * 2.0 / (m * k)
        within_l = block(0, t, 0, t) / (m * (m - 1))
        within_r = block(t, n, t, n) / (k * (k - 1))
        q = m * k / n * (between - within_l - within_r)
        if best is None or q > best[1]:
            best = (t, q)
    return best


def _ttest(left: np.ndarray, right: np.ndarray) -> float:
    if left.size < 2 or right.size < 2:
        return 1.0
    sl, sr = left.std(ddof=1), right.std(ddof=1)
    if sl == 0.0 and sr == 0.0:
        return 0.0 if left.mean() != right.mean() else 1.0
    p = float(_sps.ttest_ind(left, right, equal_var=False).pvalue)
    return 1.0 if math.isnan(p) else p


SHORT_SIDE = 5
DEFAULT = CPSettings()


def _edge_penalty(left: int, right: int) -> float:
    n = left + right
    return float(max(1, n - 3)) if min(left, right) < SHORT_SIDE else 1.0


def _first_pass(p: float) -> float:
    return p * 10 if p < 0.05 else (p * 2 if p < 0.5 else p)


def _segment(x: np.ndarray, lo: int, hi: int, st: CPSettings, out: set[int]) -> None:
    found = energy_split(x[lo:hi])
    if found is None:
        return
    t = lo + found[0]
    if _ttest(x[lo:t], x[t:hi]) * _edge_penalty(t - lo, hi - t) < _first_pass(st.max_pvalue):
        out.add(t)
        _segment(x, lo, t, st, out)
        _segment(x, t, hi, st, out)


def candidates(values: Sequence[float], settings: CPSettings = DEFAULT) -> set[int]:
    """The first pass alone (every window's binary segmentation)."""
    x = np.asarray(values, dtype=float)
    n = x.size
    if n < MIN_POINTS:
        return set()
    w = max(8, settings.window)
    cands: set[int] = set()
    starts = range(0, max(1, n - w // 2), max(1, w // 2)) if n > w else [0]
    for start in starts:
        _segment(x, start, min(n, start + w), settings, cands)
    return cands


def _score(x: np.ndarray, cps: list[int], i: int) -> RawChange:
    lo = cps[i - 1] if i > 0 else 0
    hi = cps[i + 1] if i + 1 < len(cps) else x.size
    t = cps[i]
    left, right = x[lo:t], x[t:hi]
    return RawChange(t, _ttest(left, right), float(left.mean()), float(right.mean()))


def detect(values: Sequence[float], settings: CPSettings = DEFAULT) -> list[RawChange]:
    x = np.asarray(values, dtype=float)
    cps = sorted(candidates(x, settings))
    while cps:
        scored = [_score(x, cps, i) for i in range(len(cps))]
        weakest = max(
            range(len(scored)),
            key=lambda i: (scored[i].magnitude < settings.min_magnitude, scored[i].p_value),
        )
        w_cp = scored[weakest]
        if w_cp.p_value >= settings.max_pvalue or w_cp.magnitude < settings.min_magnitude:
            cps.pop(weakest)
            continue
        return scored
    return []


# --- the former history mode, verbatim (its detect is the one above) ---------------------

#: (machine, commit, workload, shape, dtype) -> that configuration's instruction counts.
_Counts = dict[tuple[str, str, str | None, str | None, str | None], PassCounts]


def _instruction_counts(history: History) -> _Counts:
    """Every sidecar's instruction counts, indexed once for the whole history."""
    return {
        (machine, commit, p.name, p.shape, p.dtype): p.counted
        for (machine, commit), profiles in history.profiles.items()
        for p in profiles
        if p.counted is not None
    }


def _points(s: Series, settings: CPSettings, counts: _Counts) -> tuple[list[Point], CPSettings]:
    """The points change points are looked for in, and with which settings.

    An instruction count is exact: a step of any size is a fact (a level that does not
    move has no variance, so the t-test separates it at any size), and a point whose count
    the pass found not deterministic (its sidecar names the target) is left out.
    """
    pts = [p for p in s.points if p.value is not None and math.isfinite(p.value)]
    if not is_exact(s.unit):
        return pts, settings
    sid, target = s.series, target_name(s.series)
    kept = [
        p for p in pts
        if counted_twice_alike(
            counts.get((s.machine, p.commit, sid.workload, sid.shape, sid.dtype)), target
        )
    ]  # fmt: skip
    return kept, replace(settings, min_magnitude=0.0)


def _reason(s: Series, rc: RawChange, ratio: float, before_c: str, after_c: str) -> str:
    between = f"between {before_c[:8]} and {after_c[:8]}"
    if is_exact(s.unit):
        delta = count_delta(s.series.op or "whole step", rc.before, rc.after)
        return f"exact: {delta} {between}"
    return f"{format_delta_pct(ratio)} {between} (t-test {p_text(rc.p_value)})"


def _series_changes(
    history: History,
    s: Series,
    settings: CPSettings,
    acks: Sequence[Acknowledgement],
    counts: _Counts,
) -> list[ChangePoint]:
    """The change points of one series (:func:`detect_history`)."""
    pts, found = _points(s, settings, counts)
    raw = detect([p.value for p in pts if p.value is not None], found)
    out: list[ChangePoint] = []
    last_level = raw[-1].after if raw else 0.0
    for rc in raw:
        before_c, after_c = pts[rc.index - 1].commit, pts[rc.index].commit
        ratio = rc.after / rc.before if rc.before else math.inf
        kind = "regression" if ratio > 1.0 else "improvement"
        still = rc.before and (last_level - rc.before) / (rc.after - rc.before) >= 0.5
        fb = history.fingerprints.get((s.machine, before_c))
        fa = history.fingerprints.get((s.machine, after_c))
        envs = env_changes(fb, fa) if fb is not None and fa is not None else ()
        reason = _reason(s, rc, ratio, before_c, after_c)
        if envs:
            named = ", ".join(f"{e.key} {e.before} → {e.after}" for e in envs)
            reason += f"; coincides with an environment change ({named}): likely the cause"
        ack = match_ack(acks, s.series, after_c)
        out.append(
            ChangePoint(
                series=s.series,
                machine=s.machine,
                commit_before=before_c,
                commit_after=after_c,
                index=rc.index,
                before=rc.before,
                after=rc.after,
                ratio=ratio,
                p_value=rc.p_value,
                unit=s.unit,
                kind=kind,  # type: ignore[arg-type]
                open=kind == "regression" and bool(still),
                env_changes=envs,
                acknowledged=ack.reason if ack else None,
                reason=reason,
            )
        )
    return out


def detect_history(
    history: History,
    *,
    machine: str | None = None,
    settings: CPSettings = DEFAULT,
    acks: Iterable[Acknowledgement] = (),
    created: str = "",
) -> FindingsDocument:
    """Change points of every series of a history (mode ``history``).

    Args:
        history: from the loader (points in commit order).
        machine: only this machine.
        settings: detection settings.
        acks: acknowledgements (matched against ``commit_after``).
        created: timestamp to record.

    Returns:
        A findings document whose ``change_points`` are sorted open first, then by
        magnitude; ``head`` is the latest commit.
    """
    ack_list = list(acks)
    counts = _instruction_counts(history)
    out: list[ChangePoint] = []
    for s in history.series:
        if machine is None or s.machine == machine:
            out += _series_changes(history, s, settings, ack_list, counts)
    out.sort(key=lambda c: (not c.open, -abs(c.ratio - 1.0), c.series.label))
    latest = history.commits[-1] if history.commits else None
    head_machine = machine or (history.machines[0] if len(history.machines) == 1 else "")
    head = (
        RunRef(
            commit=latest,
            machine=head_machine,
            fingerprint=dict(_latest_fp(history.fingerprints, head_machine, latest)),
        )
        if latest
        else None
    )
    return FindingsDocument(
        mode="history",
        base=None,
        head=head,
        change_points=tuple(out),
        settings=settings.to_json(),
        load_errors=history.load_errors,
        created=created,
    )


def _latest_fp(
    fps: Mapping[tuple[str, str], Mapping[str, str]], machine: str, commit: str
) -> Mapping[str, str]:
    return fps.get((machine, commit), {})
