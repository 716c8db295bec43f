"""Confirmation: re-measure base and head interleaved (ABAB) and keep what survives.

A suspected regression from a PR comparison may be a shift between the two profiling runs
(process start, memory layout, a noisy neighbour) rather than the code: the within-run
test of a single-run comparison cannot tell. :func:`confirm` re-measures the suspected
workloads, alternating base and head ``rounds`` times on the same machine (each round a
separate run, so slow drifts hit both sides alike), and judges the suspects with the
**rounds test** of :mod:`neuronasv.analyse.pairwise` (per-round log-ratios, moderated t,
every round the same direction; Holm over the suspects). Every series of a suspected
workload is re-measured (one profile gives them all) so the non-suspects lend their
round-to-round variance to the pooled prior; a history noise floor, when given, is the
prior instead. A row's time is confirmed when the rounds decide a direction (an
undecided suspect that the rounds show significant becomes a confirmed slower/faster
time); the row then carries the rounds' estimate and time (``state.confirmed`` says
whether they confirmed it) and the reason says what the rounds showed.

The measurement is injected (:data:`Runner`): tests pass a function; the CLI passes
:class:`neuronasv.run.worktree.WorktreeProfileRunner` (the run stage starts the processes
and checks out the commits; this module is pure).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace

from neuronasv.analyse.attribution import explain, from_rounds, moved, pooled
from neuronasv.analyse.causes import with_causes
from neuronasv.analyse.floors import FloorKey, NoiseFloor, floor_key
from neuronasv.analyse.multitest import spend
from neuronasv.analyse.pairwise import PairInput, Settings, judge
from neuronasv.analyse.profile_samples import samples_from_profile
from neuronasv.analyse.runnernoise import from_rounds as noise_from_rounds
from neuronasv.analyse.runnernoise import with_rounds
from neuronasv.analyse.states import with_states
from neuronasv.errors import UsageError
from neuronasv.keys import SeriesConfig as _Config
from neuronasv.model import Finding, FindingsDocument, Point, SeriesId, WorkChange
from neuronasv.samples import median
from neuronasv.units import is_exact

__all__ = [
    "Runner",
    "confirm",
    "samples_from_profile",
    "suspects",
]

log = logging.getLogger(__name__)

#: ``runner(side, series, round_index) -> {series: samples}``; ``side`` is "base" or
#: "head"; samples are in the series' unit (seconds for device time).
Runner = Callable[[str, Sequence[SeriesId], int], Mapping[SeriesId, Sequence[float]]]


def suspects(doc: FindingsDocument, *, include_noisy: bool = False) -> list[Finding]:
    """Rows worth re-measuring (unacknowledged, measured on both sides, time rows).

    A decided time (slower or faster: a headline must not carry an unconfirmed one),
    undecided times when asked, and — whatever their single-run time — the totals and
    changed ops of every configuration whose exact work changed (``doc.work``): the
    evidence says something changed there, independently of the timing noise, so its time
    deserves a decision.
    """
    times = ("slower", "faster", "undecided") if include_noisy else ("slower", "faster")
    changed = {w.config for w in doc.work}
    changed_ops = {(w.workload, w.shape, w.dtype, w.op) for w in doc.work}

    def wanted(f: Finding) -> bool:
        if f.acknowledged is not None or f.state.presence != "both":
            return False
        if is_exact(f.unit):  # an exact count is a fact: nothing to re-measure
            return False
        if f.state.time in times:
            return True
        s = f.series
        if s.config in changed:
            return s.op is None or (s.workload, s.shape, s.dtype, s.op) in changed_ops
        return False

    return [f for f in doc.findings if wanted(f)]


def _futile(g: Finding, st: Settings) -> bool:
    """The rounds' CI lies within the minimum effect: more rounds cannot make a verdict."""
    rule = st.rules.for_series(g.series)
    if g.ci_low is None or g.ci_high is None or not (rule.relative and rule.stat == "median"):
        return False
    return not rule.exceeded(1.0, g.ci_high) and not rule.improved(1.0, g.ci_low)


def confirm(  # noqa: PLR0913 -- the confirm step's keyword options, one per CLI flag
    doc: FindingsDocument,
    runner: Runner,
    *,
    rounds: int = 3,
    max_rounds: int | None = None,
    budget_seconds: float | None = None,
    settings: Settings | None = None,
    include_noisy: bool = True,
    floors: Mapping[FloorKey, NoiseFloor] | None = None,
    rho: float = 1.0,
    clock: Callable[[], float] = time.monotonic,
) -> FindingsDocument:
    """Re-measure suspects ABAB, adding rounds to the undecided ones, and settle their time.

    Args:
        doc: a compare document.
        runner: measures one side for the given series (one call = one run).
        rounds: ABAB repetitions before the first look (3 = base, head, base, head,
            base, head); at least 2 for the rounds test.
        max_rounds: budget in rounds (default ``rounds``: one look). After each look the
            undecided suspects get one more round each side, until every suspect is
            decided (rejected at the look's level, or its CI within the minimum effect) or
            the budget is spent.
        budget_seconds: budget in wall time: no new round starts when the last round's
            duration would overrun it.
        settings: test settings (default: those ``doc`` records — its rules, alpha and
            gate — so the rounds judge with what ``compare`` was run with).
        include_noisy: also re-measure ``noisy`` findings.
        floors: per-series noise floors from main-branch history (prior variance).
        rho: alpha-spending exponent (:func:`multitest.spend`).
        clock: seconds, monotonic (injected for tests).

    One INFO line per look (this module's logger).

    Returns:
        The document with the suspects' estimates and times from the rounds
        (``state.confirmed`` set), their states and gate again, and causes regrouped.
    """
    st = settings or Settings.from_json(doc.settings)
    if rounds < 1:
        raise UsageError(f"rounds must be at least 1, got {rounds}")
    last = max(rounds, max_rounds or rounds)
    looks = last - rounds + 1
    plan = _plan(doc, include_noisy)
    if plan is None:
        return doc
    state = _State()
    started = clock()
    for look in range(1, looks + 1):
        want = plan.want(state.done)
        if _measure_rounds(runner, want, rounds + look - 1, look, state, clock):
            break  # the runner has no further round
        level = spend(st.alpha, look, looks, rho)
        state.latest = _judge_all(
            plan.measured, state.data, st, floors, len(plan.todo), level, state.rejected,
            plan.changed,
        )  # fmt: skip
        _decide(plan, state, level, st)
        log.info(
            f"  look {look}/{looks} after {state.r} rounds: {len(state.done)}/"
            f"{len(plan.todo)} suspects decided (alpha {level:.2g} this look)"
        )
        if len(state.done) == len(plan.todo):
            break
        spent = clock() - started
        if budget_seconds is not None and spent + state.round_seconds > budget_seconds:
            break
    new_doc = replace(
        doc,
        findings=tuple(_settle_all(doc, plan, state)),
        settings={
            **doc.settings,
            "confirm": (
                f"ABAB, {rounds} rounds then up to {last} ({looks} looks, alpha spent"
                f" evenly{'' if rho == 1.0 else f' (rho {rho:g})'}, union bound), same"
                " machine, rounds test"
                + (", history noise floors as prior" if floors else ", pooled prior")
            ),
            "rounds": state.r,
            "runner_noise": _runner_noise(doc, state, st.alpha),
        },
    )
    return with_causes(with_states(new_doc, st.gate))


def _runner_noise(doc: FindingsDocument, state: _State, alpha: float) -> dict[str, object]:
    """The runner's noise at the rounds run: from compare's floors, else these rounds."""
    machine = doc.base.machine if doc.base else ""
    recorded = with_rounds(doc.settings.get("runner_noise") or {}, state.r)
    return recorded or noise_from_rounds(_paired(state.data), machine, alpha)


def _paired(
    data: Mapping[str, Mapping[SeriesId, Sequence[tuple[float, ...]]]],
) -> dict[SeriesId, tuple[Sequence[tuple[float, ...]], Sequence[tuple[float, ...]]]]:
    """``{series: (base rounds, head rounds)}`` of the series measured on both sides."""
    return {s: (data["base"][s], data["head"][s]) for s in data["base"] if s in data["head"]}


def _config_of(s: SeriesId) -> _Config:
    return s.config


@dataclass(frozen=True)
class _Plan:
    """What a confirmation re-measures: the suspects (``todo``, the family judged), the
    other findings of their configurations and the reference workload (``measured``:
    they lend their variance), and the ops a re-measured total's breakdown needs."""

    todo: list[Finding]
    measured: list[Finding]
    reference: set[_Config]
    breakdown: list[SeriesId]
    changed: set[_Config]

    def want(self, done: Mapping[int, Finding]) -> list[SeriesId]:
        """The series of the configurations still open (the reference goes along in every
        round)."""
        open_configs = {
            _config_of(f.series) for i, f in enumerate(self.todo) if i not in done
        } | self.reference
        return [
            s
            for s in [*(f.series for f in self.measured), *self.breakdown]
            if _config_of(s) in open_configs
        ]


def _plan(doc: FindingsDocument, include_noisy: bool) -> _Plan | None:
    todo = suspects(doc, include_noisy=include_noisy)
    if not todo:
        return None
    todo_ids = {f.series for f in todo}
    configs = {_config_of(f.series) for f in todo}
    reference = _reference(doc, configs)
    configs |= reference
    extra = [
        f
        for f in doc.findings
        if f.series not in todo_ids
        and f.series.workload is not None
        and _config_of(f.series) in configs
        and f.state.presence == "both"
        and not is_exact(f.unit)  # the rounds measure time, never exact counts
    ]
    measured = todo + extra
    return _Plan(
        todo=todo,
        measured=measured,
        reference=reference,
        breakdown=_breakdown_series(doc, configs, measured),
        changed={w.config for w in doc.work},
    )


@dataclass
class _State:
    """The samples so far (per side, per series, one tuple a round) and the decisions."""

    data: dict[str, dict[SeriesId, list[tuple[float, ...]]]] = field(
        default_factory=lambda: {"base": {}, "head": {}}
    )
    done: dict[int, Finding] = field(default_factory=dict)  # suspect -> deciding judgement
    rejected: set[int] = field(default_factory=set)
    latest: list[Finding] = field(default_factory=list)
    r: int = 0  # rounds measured
    round_seconds: float = 0.0  # the last round's duration


def _measure_rounds(
    runner: Runner,
    want: Sequence[SeriesId],
    target: int,
    look: int,
    state: _State,
    clock: Callable[[], float],
) -> bool:
    """Measure rounds until ``target``; True when the runner had no further round (a
    replay of a run that stopped at its budget: stop exactly where that run stopped)."""
    while state.r < target:
        t0 = clock()
        got = {side: runner(side, want, state.r) for side in ("base", "head")}
        if look > 1 and not (got["base"] and got["head"]):
            return True
        for side in ("base", "head"):
            for sid in want:
                xs = tuple(float(x) for x in got[side].get(sid, ()))
                if xs:
                    state.data[side].setdefault(sid, []).append(xs)
        state.r += 1
        state.round_seconds = clock() - t0
    return False


def _decide(plan: _Plan, state: _State, level: float, st: Settings) -> None:
    """Mark the suspects this look decided: rejected at the look's level, or futile (the
    CI lies within the minimum effect). A suspect whose exact work changed is no
    exception: the work decides its *work* axis, not its time, so it is re-measured
    under the same sequential error control until its time is decided or the budget
    is spent (stopping it at the first look, where the look's alpha is smallest, left
    "time not decided" beside CIs far from zero)."""
    for i, g in enumerate(state.latest[: len(plan.todo)]):
        if i in state.done:
            continue
        if g.p_adjusted is not None and g.p_adjusted <= level:
            state.rejected.add(i)
            state.done[i] = g
        elif _futile(g, st):
            state.done[i] = g


def _settle_all(doc: FindingsDocument, plan: _Plan, state: _State) -> list[Finding]:
    """Every finding after the rounds: the suspects settled, the work applied, and the
    re-measured totals explained from the same rounds."""
    final = {i: state.done.get(i, state.latest[i]) for i in range(len(plan.todo))}
    index = {f.series: i for i, f in enumerate(plan.todo)}
    out = []
    for f in doc.findings:
        k = index.get(f.series)
        out.append(f if k is None else _settle(f, final[k], k in state.done, state.r))
    return _explain_from_rounds(out, state.data, plan.measured, state.latest, doc.work)


def _breakdown_series(
    doc: FindingsDocument,
    configs: Collection[tuple[str | None, str | None, str | None]],
    measured: Sequence[Finding],
) -> list[SeriesId]:
    """The op series a re-measured total's breakdown needs beyond the measured findings:
    every op of its first-run attribution and every changed op (new and removed ones
    have no asv series), so the rounds record per-op samples of all of them."""
    have = {(f.series.workload, f.series.shape, f.series.dtype, f.series.op) for f in measured}
    out: list[SeriesId] = []
    totals = [
        f
        for f in doc.findings
        if f.series.op is None and f.series.workload is not None and not is_exact(f.unit)
    ]
    for t in totals:
        s = t.series
        if s.config not in configs:
            continue
        names = [a.op for a in t.attribution]
        names += [w.op for w in doc.work if w.config == s.config]
        for op in dict.fromkeys(names):
            if (s.workload, s.shape, s.dtype, op) not in have:
                have.add((s.workload, s.shape, s.dtype, op))
                out.append(SeriesId(s.benchmark, (), s.workload, s.shape, s.dtype, op))
    return out


def _explain_from_rounds(
    findings: Sequence[Finding],
    data: Mapping[str, Mapping[SeriesId, Sequence[tuple[float, ...]]]],
    measured: Sequence[Finding],
    latest: Sequence[Finding],
    work: Sequence[WorkChange],
) -> list[Finding]:
    """Totals whose figures the rounds replaced take their breakdown and module chain
    from the same rounds (one measurement per row); a total that no longer moved keeps
    none (a first-run breakdown beside rounds figures would mix two measurements)."""
    rounds = {
        floor_key(sid): (data["base"].get(sid, []), data["head"].get(sid, []))
        for sid in {*data["base"], *data["head"]}
    }
    by_config = pooled(rounds)
    judged: dict[tuple[object, ...], dict[str, Finding]] = {}
    for f, g in zip(measured, latest, strict=False):
        s = f.series
        judged.setdefault(s.config, {})[s.op or ""] = g
    out = []
    for f in findings:
        s = f.series
        cfg = s.config
        if s.op is not None or not f.remeasured or cfg not in by_config:
            out.append(f)
        elif moved(f, work):
            m = from_rounds(f, by_config[cfg])
            out.append(explain(f, m, work, judged.get(cfg, {})))
        else:
            out.append(replace(f, attribution=(), module_chain=()))
    return out


def _reference(
    doc: FindingsDocument, configs: set[tuple[str | None, str | None, str | None]]
) -> set[tuple[str | None, str | None, str | None]]:
    """A reference workload to re-measure alongside the suspects' single workload.

    The rounds test borrows its prior variance from *other* workloads' series (a
    workload's own series share each round's process offset); when every suspect belongs
    to one workload, one other workload of the comparison (the first by name, at the
    suspects' shapes and dtypes when it has them) is re-measured too, so the suspects get
    that prior instead of resting on their own R - 1 degrees of freedom. None when the
    suspects already span several workloads or the comparison has no other workload.
    """
    mine = {c[0] for c in configs}
    if len(mine) != 1:
        return set()
    others: dict[str, set[tuple[str | None, str | None, str | None]]] = {}
    for f in doc.findings:
        s = f.series
        if (
            s.workload is not None
            and s.workload not in mine
            and f.state.presence == "both"
        ):
            others.setdefault(s.workload, set()).add(s.config)
    if not others:
        return set()
    name = sorted(others)[0]
    shapes = {(c[1], c[2]) for c in configs}
    same = {c for c in others[name] if (c[1], c[2]) in shapes}
    return same or others[name]


def _judge_all(
    measured: Sequence[Finding],
    data: Mapping[str, Mapping[SeriesId, Sequence[tuple[float, ...]]]],
    st: Settings,
    floors: Mapping[FloorKey, NoiseFloor] | None,
    n_todo: int,
    level: float,
    rejected: set[int],
    changed: Collection[tuple[str | None, str | None, str | None]] = (),
) -> list[Finding]:
    """The measured rows judged on their rounds so far, the first ``n_todo`` (the suspects)
    as the family, at ``level``: the alpha this look spends (:func:`multitest.spend`)."""
    pairs = []
    for f in measured:
        b = list(data["base"].get(f.series, []))
        h = list(data["head"].get(f.series, []))
        n = min(len(b), len(h))
        b, h = b[:n], h[:n]
        pb, ph = [x for rnd in b for x in rnd], [x for rnd in h for x in rnd]
        pairs.append(
            PairInput(
                series=f.series,
                unit=f.unit,
                base=Point("base", 0, median(pb), tuple(pb)) if pb else None,
                head=Point("head", 1, median(ph), tuple(ph)) if ph else None,
                base_rounds=tuple(b),
                head_rounds=tuple(h),
            )
        )
    return judge(
        pairs,
        st,
        floors,
        family=range(n_todo),
        level=level,
        rejected=rejected,
        boost=changed,
    )


def _settle(f: Finding, g: Finding, decided: bool, rounds: int) -> Finding:
    """The single-run row ``f`` after the rounds judged it ``g``.

    The rounds decide: the single run only nominated the suspect. The row takes the
    rounds' estimate (they measured it better than the single run) and their time: a
    slower or faster time the rounds decided is confirmed (even when the single run saw
    the other direction or only noise); a decision within the minimum effect is noise;
    anything else is not decided. The exact axes (work, exact metrics) are not the rounds'
    business: they stay what the evidence says (:func:`with_states`).
    """
    ok = decided and g.state.time in ("slower", "faster")
    method = (
        f"{rounds} interleaved rounds (ABAB, n={g.n_base}/{g.n_head})"
        if rounds >= 2
        else f"one re-measured run a side (n={g.n_base}/{g.n_head})"
    )
    if ok:
        flip = (
            ""
            if f.state.time in (g.state.time, "undecided", "noise")
            else f" (the single run said {f.state.time})"
        )
        note = f"confirmed by {method}{flip}: {g.reason}"
        time = g.state.time
    else:
        note = f"not confirmed by {method}: {g.reason}"
        time = "noise" if decided and g.state.time == "noise" else "undecided"
    estimate = g.estimate if g.ratio is not None else f.estimate
    return replace(
        f,
        estimate=estimate,
        state=replace(f.state, time=time, confirmed=ok),
        p_value=g.p_value if g.ratio is not None else f.p_value,
        p_adjusted=g.p_adjusted if g.ratio is not None else f.p_adjusted,
        reason=f"{f.reason}; {note}",
        warnings=f.warnings + (() if ok else ("not confirmed on re-measurement",)),
    )
