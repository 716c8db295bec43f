"""Op-level attribution: which ops explain a workload total's change (pure, no I/O).

For a workload total (``SeriesId.op is None``) that moved, every op of that workload is
ranked by its absolute change of median self device time, with its share of the total's
change (``share`` = op delta / total delta; shares can exceed 1 or be negative when ops
move in opposite directions).

**One measurement per row.** A total's breakdown and module chain are read from the
same samples and the same estimator as its figures (a :class:`Measurement`): the compared
runs' sidecar profiles (the samples their asv series hold: medians; without profiles, the
op series' own findings), or, when the total was judged on interleaved rounds (its
estimate's source is ``rounds``: ``compare --round-*`` or ``neuronasv confirm``), the
rounds' samples, each op and module by the rounds' estimator — the geometric mean of its
per-round medians (:func:`from_rounds`). The total of the breakdown is the row's own
estimate, so the parts' shares are of the row's change and the chain starts at the row's
figures. Profiles also hold ops that exist on one side only, which asv's fixed parameter
lists cannot.

**The module the work changed.** When both sides carry module times
(:mod:`neuronasv.measure.modules`), a moved total also gets its ``module_chain``
(:func:`module_chain`). Where the configuration's exact work changed and the untimed pass
recorded which module issued each call (``WorkChange.modules``), the chain follows the
changed ops to that module (the deepest one holding every changed op that carries work)
and ends at the heaviest of them — "block ← block.mlp ← new aten::copy_", whatever moved
most in time. Otherwise (a timing-only change) it walks down through the module that
moved most in the total's direction at each level, but only while that module's CI
excludes no change, to the op that did so within the last one — "block +9 % ← block.mlp
+14 % ← aten::mm +14 %"; a mover inside the noise is never named.

:func:`headline` turns a finding into the sentence a reviewer reads; the Report stage
reuses it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from neuronasv.analyse.causes import is_helper, op_order
from neuronasv.analyse.stats import round_levels
from neuronasv.keys import SeriesConfig as Config
from neuronasv.model import Finding, OpContribution, WorkChange
from neuronasv.model.profile import (
    ModuleProfile,
    OpProfile,
    WorkloadProfile,
    module_series_name,
    module_series_path,
)
from neuronasv.units import US, is_time

__all__ = [
    "Measurement",
    "attribute",
    "contributions",
    "explain",
    "from_profiles",
    "from_rounds",
    "module_chain",
    "moved",
    "pooled",
]

Pair = tuple["float | None", "float | None"]
#: One series' rounds: (base rounds, head rounds), each a list of per-round samples.
SideRounds = tuple[Sequence[Sequence[float]], Sequence[Sequence[float]]]
#: ``config -> op -> its paired rounds``; op None is the total, ``module:<path>`` a
#: module's inclusive time (the rounds' samples, series unit).
Pooled = Mapping[Config, Mapping["str | None", SideRounds]]


def moved(f: Finding, work: Sequence[WorkChange] = ()) -> bool:
    """A row worth a breakdown: measured on both sides, and its time moved or was not
    decided, or its configuration's exact work changed (``work``)."""
    if f.state.presence != "both" or f.base is None or f.head is None:
        return False
    if f.state.time in ("slower", "faster", "undecided"):
        return True
    s = f.series
    return any(w.config == s.config for w in work)


@dataclass(frozen=True)
class Measurement:
    """One configuration's medians from *one* set of samples (the compared runs, or the
    re-measurement's rounds), in the series' unit: what a row's total, breakdown and
    module chain are all read from, so they never mix two measurements.

    Attributes:
        total: the workload total (base, head).
        ops: op -> its self time (base, head); None on the side without the op.
        modules: module path -> inclusive time (base, head).
        in_module: (path, op) -> the op's time within that module (base, head).
        calls: op -> calls per iteration (base, head): exact, from the work evidence.
        roofline: op -> the :class:`OpContribution` roofline fields.
    """

    total: Pair
    ops: Mapping[str, Pair]
    modules: Mapping[str, Pair] = field(default_factory=dict)
    in_module: Mapping[tuple[str, str], Pair] = field(default_factory=dict)
    calls: Mapping[str, Pair] = field(default_factory=dict)
    roofline: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


def _index(profiles: Sequence[WorkloadProfile]) -> dict[Config, WorkloadProfile]:
    """Profiles by (workload, shape, dtype), the first of each."""
    out: dict[Config, WorkloadProfile] = {}
    for p in profiles:
        out.setdefault((p.name, p.shape, p.dtype), p)
    return out


def _med(xs: Sequence[float]) -> float:
    return float(np.median(xs)) if len(xs) else 0.0


def from_profiles(bp: WorkloadProfile, hp: WorkloadProfile, unit: str) -> Measurement:
    """The compared runs' measurement of one configuration (their sidecar profiles: the
    samples the asv series of that run hold)."""
    k = US if is_time(unit) else 1.0
    names = sorted({o.op for o in bp.ops} | {o.op for o in hp.ops})
    ops = {n: _op_pair(bp.op(n), hp.op(n), k) for n in names}
    paths = sorted({m.path for m in bp.modules} | {m.path for m in hp.modules})
    return Measurement(
        total=(_med(bp.device_time_us) * k, _med(hp.device_time_us) * k),
        ops=ops,
        modules=(
            {p: _module_pair(bp.module(p), hp.module(p), k) for p in paths}
            if bp.modules and hp.modules
            else {}
        ),
        in_module=_in_module(bp, hp, ops),
        calls={n: _calls_pair(bp.op(n), hp.op(n)) for n in names},
        roofline={n: _roofline(bp.op(n), hp.op(n)) for n in names},
    )


def _op_pair(bo: OpProfile | None, ho: OpProfile | None, k: float) -> Pair:
    """An op's median self device time a side (scaled by ``k``), None where it is absent."""
    return (
        _med(bo.self_device_time_us) * k if bo else None,
        _med(ho.self_device_time_us) * k if ho else None,
    )


def _module_pair(mb: ModuleProfile | None, mh: ModuleProfile | None, k: float) -> Pair:
    """A module's median device time a side (scaled by ``k``), None where it is absent."""
    return (
        _med(mb.device_time_us) * k if mb else None,
        _med(mh.device_time_us) * k if mh else None,
    )


def _calls_pair(bo: OpProfile | None, ho: OpProfile | None) -> Pair:
    """An op's calls per iteration a side, None where it is absent."""
    return (bo.calls_per_iter if bo else None, ho.calls_per_iter if ho else None)


def _in_module(
    bp: WorkloadProfile, hp: WorkloadProfile, ops: Mapping[str, Pair]
) -> dict[tuple[str, str], Pair]:
    """(module path, op) -> the op's time within that module a side: its time times the
    share of its calls the module makes (None where that side does not call it there)."""
    in_module: dict[tuple[str, str], Pair] = {}
    for n, (b, h) in ops.items():
        bo, ho = bp.op(n), hp.op(n)
        for path in sorted(set(bo.modules if bo else {}) | set(ho.modules if ho else {})):
            in_module[(path, n)] = (_module_share(b, bo, path), _module_share(h, ho, path))
    return in_module


def _module_share(t: float | None, o: OpProfile | None, path: str) -> float | None:
    """``t`` times the share of ``o``'s calls made under ``path``; None when unknown."""
    return t * o.modules[path] if t is not None and o and path in o.modules else None


def _from_findings(f: Finding, ops: Sequence[Finding]) -> Measurement:
    """Without profiles: the op and module series' own findings (the same runs)."""
    plain = [o for o in ops if module_series_path(o.series.op) is None]
    modules = {
        path: (o.base, o.head)
        for o in ops
        if (path := module_series_path(o.series.op)) is not None
    }
    return Measurement(
        total=(f.base, f.head),
        ops={o.series.op or "?": (o.base, o.head) for o in plain},
        modules=modules,
        calls={o.series.op or "?": (o.calls_base, o.calls_head) for o in plain},
        roofline={
            o.series.op or "?": {
                "roofline_base": o.roofline_base,
                "roofline_head": o.roofline_head,
                "roofline_bound": o.roofline_bound,
            }
            for o in plain
        },
    )


def _level(rounds: Sequence[Sequence[float]]) -> float | None:
    """One side of one series by the rounds' estimator: the geometric mean of its round
    medians (:func:`neuronasv.analyse.stats.round_levels`); the median of the pooled samples
    where a round's median is not positive (a log is not defined); None without samples."""
    if not any(len(r) for r in rounds):
        return None
    try:
        return round_levels(rounds)
    except ValueError:
        return _med([x for r in rounds for x in r])


def from_rounds(f: Finding, samples: Mapping[str | None, SideRounds]) -> Measurement:
    """The re-measurement's measurement of ``f``'s configuration, each series by the
    rounds' estimator, as the row's estimate is (``samples``: op -> its paired rounds;
    ``None`` the total, ``module:<path>`` the modules). Calls and fractions of peak are
    exact work, kept from ``f``'s first-run attribution; an op's time within a module is
    its level times the share the first run's module chain gave it (the whole op when
    unknown)."""

    def pair(xs: SideRounds) -> Pair:
        return (_level(xs[0]), _level(xs[1]))

    total = samples.get(None, ((), ()))
    ops = {k: pair(v) for k, v in samples.items() if k is not None and not is_module(k)}
    modules = {
        module_series_path(k) or "": pair(v) for k, v in samples.items() if k and is_module(k)
    }
    first = {a.op: a for a in f.attribution}
    in_module: dict[tuple[str, str], Pair] = {}
    chain = f.module_chain
    if len(chain) >= 2 and (path := module_series_path(chain[-2].op)) is not None:
        link, whole = chain[-1], first.get(chain[-1].op)
        if whole is not None and link.op in ops:
            rb, rh = ops[link.op]
            in_module[(path, link.op)] = (
                _scaled(rb, link.base, whole.base),
                _scaled(rh, link.head, whole.head),
            )
    return Measurement(
        total=pair(total),
        ops=ops,
        modules=modules,
        in_module=in_module,
        calls={a.op: (a.calls_base, a.calls_head) for a in f.attribution},
        roofline={
            a.op: {
                "roofline_base": a.roofline_base,
                "roofline_head": a.roofline_head,
                "roofline_bound": a.roofline_bound,
            }
            for a in f.attribution
        },
    )


def _scaled(x: float | None, part: float | None, whole: float | None) -> float | None:
    if x is None or part is None or not whole:
        return x
    return x * part / whole


def is_module(op: str) -> bool:
    return module_series_path(op) is not None


Rounds = Mapping[Any, tuple[Sequence[Sequence[float]], Sequence[Sequence[float]]]]


def pooled(rounds: Rounds) -> dict[Config, dict[str | None, SideRounds]]:
    """``floor_key -> (base rounds, head rounds)`` (workload series only) -> per
    configuration, per op, its paired rounds (every round of a side when the op runs on
    that side only: new or removed)."""
    out: dict[Config, dict[str | None, SideRounds]] = {}
    for key, (br, hr) in rounds.items():
        if not key or key[0] != "w":
            continue
        _, wl, shape, dtype, op = key
        n = min(len(br), len(hr)) if br and hr else max(len(br), len(hr))
        pb = [[float(x) for x in r] for r in br[:n]]
        ph = [[float(x) for x in r] for r in hr[:n]]
        out.setdefault((wl, shape, dtype), {})[op] = (pb, ph)
    return out


def _roofline(bo: OpProfile | None, ho: OpProfile | None) -> dict[str, Any]:
    """The op's fraction of peak on each side and the roof it is of (head's, else base's)."""
    rb = bo.roofline_fraction if bo else None
    rh = ho.roofline_fraction if ho else None
    bound = (ho.roofline_bound if ho and rh is not None else None) or (
        bo.roofline_bound if bo and rb is not None else None
    )
    return {"roofline_base": rb, "roofline_head": rh, "roofline_bound": bound}


def contributions(f: Finding, m: Measurement) -> tuple[OpContribution, ...]:
    """Every op's signed change from ``m``, largest first (ops on one side included)."""
    tb, th = m.total
    total = (th or 0.0) - (tb or 0.0)
    out = []
    for op, (b, h) in m.ops.items():
        delta = (h or 0.0) - (b or 0.0)
        if delta == 0.0 and b is not None and h is not None:
            continue
        cb, ch = m.calls.get(op, (None, None))
        out.append(
            OpContribution(
                op=op,
                base=b,
                head=h,
                delta=delta,
                share=delta / total if total else 0.0,
                calls_base=cb,
                calls_head=ch,
                **m.roofline.get(op, {}),
            )
        )
    out.sort(key=lambda c: (-abs(c.delta), c.op))
    return tuple(out)


def _link(op: str, pair: Pair, total: float) -> OpContribution:
    b, h = pair
    delta = (h or 0.0) - (b or 0.0)
    return OpContribution(op, b, h, delta, delta / total if total else 0.0)


def _common_path(paths: Sequence[str]) -> str:
    """The deepest module path that holds every one of ``paths`` (``""``: the root)."""
    parts = [p.split(".") if p else [] for p in paths]
    common: list[str] = []
    for level in zip(*parts, strict=False):
        if len(set(level)) != 1:
            break
        common.append(level[0])
    return ".".join(common)


def _work_chain(
    m: Measurement, total: float, work: Sequence[WorkChange]
) -> tuple[OpContribution, ...] | None:
    """Total -> the module that issued the changed calls -> the heaviest changed op; None
    when the work evidence recorded no modules (the timing chain then decides)."""
    located = [w for w in work if w.modules]
    heavy = [w for w in located if not is_helper(w)] or located
    if not heavy:
        return None
    target = _common_path([p for w in heavy for p in w.modules])
    links = [_link("", m.total, total)]
    path = ""
    for part in target.split(".") if target else []:
        path = f"{path}.{part}" if path else part
        if path in m.modules:
            links.append(_link(module_series_name(path), m.modules[path], total))
    op = op_order(heavy)[0]
    pair = m.in_module.get((target, op)) or m.ops.get(op, (None, None))
    links.append(_link(op, pair, total))
    return tuple(links)


def _excludes_one(f: Finding | None, sign: float) -> bool:
    """The finding's CI lies wholly on the ``sign`` side of no change."""
    if f is None or f.ci_low is None or f.ci_high is None:
        return False
    return f.ci_low > 1.0 if sign > 0 else f.ci_high < 1.0


def _timing_chain(
    m: Measurement, total: float, judged: Mapping[str, Finding]
) -> tuple[OpContribution, ...]:
    """Total -> at each level the child module that moved most in the total's direction
    *whose CI excludes no change* -> the op that did so within the last one; ``()``
    when no module qualifies (a mover inside the noise is not named)."""
    sign = 1.0 if total > 0 else -1.0
    links = [_link("", m.total, total)]
    current = ""
    while True:
        moves = [
            (sign * ((h or 0.0) - (b or 0.0)), p)
            for p, (b, h) in m.modules.items()
            if p and p.rpartition(".")[0] == current
            and _excludes_one(judged.get(module_series_name(p)), sign)
        ]
        best = max(moves, default=None)
        if best is None or best[0] <= 0.0:
            break
        current = best[1]
        links.append(_link(module_series_name(current), m.modules[current], total))
    if len(links) == 1:
        return ()
    inside = [
        (sign * ((h or 0.0) - (b or 0.0)), op)
        for (path, op), (b, h) in m.in_module.items()
        if path == current and _excludes_one(judged.get(op), sign)
    ]
    best_op = max(inside, default=None)
    if best_op is not None and best_op[0] > 0.0:
        links.append(_link(best_op[1], m.in_module[(current, best_op[1])], total))
    return tuple(links)


def module_chain(
    f: Finding,
    m: Measurement,
    work: Sequence[WorkChange] = (),
    judged: Mapping[str, Finding] | None = None,
) -> tuple[OpContribution, ...]:
    """Total -> modules -> op for a total (see the module docstring); ``()`` when the
    measurement has no module times or nothing qualifies.

    Where the configuration's work changed (``work``, with the modules that issued the
    changed calls), the chain follows the work; otherwise it names the largest timing
    mover at each level only when its CI (``judged``: op or ``module:<path>`` -> its
    finding on the same samples) excludes no change. Links are :class:`OpContribution`
    s: the total (``op`` ``""``), each module (``op`` ``module:<path>``, inclusive time),
    then the op (its time within the last module when known).
    """
    tb, th = m.total
    if not m.modules or tb is None or th is None or th == tb:
        return ()
    total = th - tb
    chain = _work_chain(m, total, work)
    if chain is not None:
        return chain
    return _timing_chain(m, total, judged or {})


def _op_fields(f: Finding, bp: WorkloadProfile | None, hp: WorkloadProfile | None) -> Finding:
    """An op series: calls per iteration and fractions of peak from the profiles, when
    the finding lacks them."""
    bo = bp.op(f.series.op or "") if bp else None
    ho = hp.op(f.series.op or "") if hp else None
    if (bo or ho) and f.calls_base is None and f.calls_head is None:
        f = replace(
            f,
            calls_base=bo.calls_per_iter if bo else None,
            calls_head=ho.calls_per_iter if ho else None,
        )
    if (bo or ho) and f.roofline_base is None and f.roofline_head is None:
        # The op's fraction of peak (issue 14 item 5): what the comment shows.
        f = replace(f, **_roofline(bo, ho))
    return f


def explain(
    f: Finding,
    m: Measurement,
    work: Sequence[WorkChange] = (),
    judged: Mapping[str, Finding] | None = None,
) -> Finding:
    """``f`` (a workload total) with its breakdown and module chain read from ``m``, whose
    total is the row's own estimate: the parts are shares of the row's change and the
    chain starts at the row's figures."""
    here = [w for w in work if w.config == f.series.config]
    m = replace(m, total=(f.base, f.head))
    return replace(
        f,
        attribution=contributions(f, m),
        module_chain=module_chain(f, m, here, judged),
    )


def attribute(
    findings: Sequence[Finding],
    *,
    base_profiles: Sequence[WorkloadProfile] = (),
    head_profiles: Sequence[WorkloadProfile] = (),
    work: Sequence[WorkChange] = (),
    rounds: Pooled | None = None,
) -> list[Finding]:
    """Add attribution and module chains to moved workload totals (and calls and
    fractions of peak to op findings from profiles).

    Args:
        findings: one comparison's findings.
        base_profiles, head_profiles: sidecar profiles of base and head, when present.
        work: the comparison's exact work changes (they steer the module chain).
        rounds: the rounds by configuration (:func:`pooled`); a total judged on rounds
            (estimate source ``rounds``) takes its breakdown from them, like its figures.

    Returns:
        The findings, same order; totals that moved carry ``attribution`` ranked by
        absolute delta.
    """
    out: list[Finding] = []
    # Profiles and op findings indexed by configuration once: a scan of every finding per
    # moved total was quadratic in the suite (8.6 s of compare at 10,000 series).
    bix, hix = _index(base_profiles), _index(head_profiles)
    ops_of: dict[Config, list[Finding]] = {}
    for o in findings:
        if o.series.op is not None:
            ops_of.setdefault(o.series.config, []).append(o)
    for f in findings:
        s = f.series
        if s.workload is None:
            out.append(f)
            continue
        bp, hp = bix.get(s.config), hix.get(s.config)
        if s.op is not None:
            out.append(_op_fields(f, bp, hp))
            continue
        if not moved(f, work):
            out.append(f)
            continue
        same = ops_of.get(s.config, [])
        if bp is not None and hp is not None:
            m = from_profiles(bp, hp, f.unit)
        else:
            m = _from_findings(f, same)
        judged = {o.series.op or "": o for o in same}
        first = explain(f, m, work, judged)
        cfg = s.config
        if f.remeasured and rounds and cfg in rounds:
            first = explain(first, from_rounds(first, rounds[cfg]), work, judged)
        out.append(first)
    return out
