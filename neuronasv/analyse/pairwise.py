"""PR mode: base vs head, one row per series of one comparison (pure, no I/O).

Each row is an :class:`~neuronasv.model.Estimate` (base, head, the CI of head/base) and a
time axis decided from it (:class:`~neuronasv.model.RowState`); the printed base and head
are the estimator's own, so Δ = head / base - 1 of the printed numbers is the ratio the
test judged, and the CI bounds that same ratio.

The unit of replication is the *run*: two profiling runs (separate processes) of the same
code differ by more than their within-run sample spread. So a series is judged one of two
ways, and every tested series of the comparison shares one multiple-testing procedure:
totals first (graphical gatekeeping, :mod:`neuronasv.analyse.multitest`).

**Rounds** (``PairInput.base_rounds``/``head_rounds``, at least 2 paired rounds a side,
from ``neuronasv confirm``'s interleaved ABAB re-measurement or ``compare --round``):

1. per-round log-ratio of medians ``d_r = log(median(head_r) / median(base_r))``;
2. the estimate: base and head are the geometric means of each side's round medians
   (:func:`stats.round_levels`), so ``head / base = exp(mean(d))`` exactly;
3. moderated t test of ``mean(d) = 0`` (:func:`stats.moderated_t`): the per-series
   variance of ``d`` (R-1 df) is pooled with a prior — the series' history noise floor
   when known (:mod:`neuronasv.analyse.floors`), else the pooled round-to-round variance of
   the *other* workloads' series of the same kind (a workload's own series share each
   round's process offset, so they cannot inform each other's variance);
4. CI of the ratio: ``exp(mean(d) ± t · se)``, the same model as the test;
5. time: gatekeeping-adjusted p <= alpha **and** beyond the rule's minimum effect **and**
   every round shifted the same way -> slower/faster; beyond the minimum effect but not
   significant or not consistent -> undecided; within it -> noise.

**Single run** a side (``neuronasv compare`` on two results): the estimate is each side's
median, the ratio the ratio of medians; two-sided Mann–Whitney U on the samples (scipy;
exact for small tie-free samples), 95 % percentile-bootstrap CI of the ratio of medians
(seeded per series label), then the per-series noise floor: a change must also exceed
``k x floor`` (``k = Phi^-1(1 - alpha / 2m)``, :func:`stats.floor_k`), since the within-run
test cannot see run-to-run shifts. Within the floor -> undecided, with the floor in the
reason; re-measure in rounds to decide. Without a floor (no main-branch history) the
decision is the within-run test alone and the document's settings say so.

**Gatekeeping** over every tested series of the comparison controls the family-wise error
rate — the chance of *any* false alarm in one PR comparison, what a reviewer pays for —
under arbitrary dependence (op series of one workload share their samples), while a
workload total never competes with a hundred op series for alpha. Benjamini–Hochberg
would bound only the expected share of false alarms among alarms.

A side without a value: absent at base -> new; absent at head -> removed; failed at head
-> failed (no Δ, no time). Series with a value but no samples (asv without
``--record-samples``, ``track_``) get a factor-only decision against the same rule, with a
warning and no p-value. The work and exact axes, the gate and the causes come after
(:func:`neuronasv.analyse.states.with_states`, :func:`neuronasv.analyse.causes.find_causes`).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from neuronasv.analyse import stats
from neuronasv.analyse.acks import Acknowledgement, match_ack
from neuronasv.analyse.attribution import attribute, pooled
from neuronasv.analyse.causes import with_causes
from neuronasv.analyse.comparable import (
    INCOMPARABLE_KEYS,
    check_comparable,
    incomparable,
    pick_machine,
)
from neuronasv.analyse.envdiff import env_changes
from neuronasv.analyse.evidence import work_changes
from neuronasv.analyse.exact import count_changes, judge_exact
from neuronasv.analyse.floors import FloorKey, NoiseFloor, floor_key, noise_floors
from neuronasv.analyse.health import device_health
from neuronasv.analyse.multitest import DEFAULT_OP_SHARE, adjusted_pvalues, hierarchy
from neuronasv.analyse.rules import RuleSet
from neuronasv.analyse.runnernoise import runner_noise
from neuronasv.analyse.runnershift import (
    canary_ratio,
    runner_shift,
    shift_df,
    shift_inputs,
    side_state,
)
from neuronasv.analyse.states import CI_LEVEL, Gate, with_states
from neuronasv.analyse.verdict import Bar, Evidence, PairInput, ShiftBar, against_shift, verdict
from neuronasv.errors import UsageError
from neuronasv.format import format_pct, pct_number
from neuronasv.model import (
    Finding,
    FindingsDocument,
    History,
    Point,
    RunRef,
    Series,
    SeriesId,
    WorkChange,
)
from neuronasv.model.findings import RunnerShift
from neuronasv.samples import NOISE_THRESHOLD, median, noise
from neuronasv.units import is_exact

__all__ = [
    "INCOMPARABLE_KEYS",
    "MIN_ROUNDS",
    "MIN_SAMPLES",
    "Evidence",
    "PairInput",
    "Settings",
    "compare",
    "floor_summary",
    "incomparable",
    "judge",
]

MIN_ROUNDS = 2  # paired rounds a side for the rounds test (one round = a single run)
#: Cap on the prior df pooled over other workloads' series (no history floor): their
#: between-run variances differ somewhat from this series', which few rounds cannot show,
#: so the pooled prior must not count as more than this.
MAX_POOLED_DF = 8.0
MIN_SAMPLES = 3  # below this on either side the test cannot reach significance: factor-only


@dataclass(frozen=True)
class Settings:
    """Knobs of one comparison (recorded verbatim in ``FindingsDocument.settings``)."""

    rules: RuleSet = field(default_factory=RuleSet)
    alpha: float = 0.01
    confidence: float = CI_LEVEL  # the per-row interval every view shows
    resamples: int = 2000
    seed: int = 0
    floor_k: float | None = None  # None: t quantile 1 - alpha/2m on the floor's df
    op_share: float = DEFAULT_OP_SHARE  # share of alpha the op series start with
    gate: Gate = field(default_factory=Gate)  # what fails a PR, per axis

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Settings:
        """The settings a document recorded (rules, alpha, gate); defaults where absent."""
        d = cls()
        rules, alpha = data.get("rules"), data.get("alpha")
        ok = isinstance(alpha, (int, float)) and not isinstance(alpha, bool) and 0 < alpha < 1
        return cls(
            rules=RuleSet.parse(rules) if isinstance(rules, list) and rules else d.rules,
            alpha=float(alpha) if ok and alpha is not None else d.alpha,
            gate=Gate.from_json(data.get("gate")),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "rules": self.rules.describe(),
            "gate": self.gate.to_json(),
            "min_effect": self.rules.default.text,
            "alpha": self.alpha,
            "test": "Mann-Whitney U, two-sided (scipy)",
            "correction": "gatekeeping",
            "correction_reason": (
                "graphical gatekeeping (Bretz et al. 2009): workload totals first, a moved"
                f" total passes its alpha to its ops (ops start with {format_pct(self.op_share)});"
                " controls the chance of any false alarm in one comparison under arbitrary"
                " dependence between series"
            ),
            "ci": f"{format_pct(self.confidence)} percentile bootstrap of the ratio of medians"
            f" ({self.resamples} resamples, seed {self.seed})",
            "noise_warn": NOISE_THRESHOLD,
            "rounds_test": (
                "per-round log-ratio of medians, moderated t (prior: the series' noise"
                " floor, else the pooled round-to-round variance of the other workloads'"
                " totals, or ops); every round the same direction; CI exp(mean ± t·se)"
            ),
            "floor_k": (
                "t quantile 1 - alpha/2m on the floor's df"
                if self.floor_k is None
                else self.floor_k
            ),
        }


def judge(
    pairs: Sequence[PairInput],
    settings: Settings = Settings(),
    floors: Mapping[FloorKey, NoiseFloor] | None = None,
    family: Sequence[int] | None = None,
    *,
    level: float | None = None,
    rejected: Collection[int] = (),
    boost: Collection[tuple[str | None, str | None, str | None]] = (),
    shift: RunnerShift | None = None,
) -> list[Finding]:
    """Verdicts for one comparison (all series together: the correction spans them all).

    Args:
        pairs: every series of the comparison (with rounds where measured in rounds).
        settings: rules, alpha, bootstrap settings.
        floors: per-series between-run noise floors (:func:`floors.noise_floors`).
        family: indices of the pairs the correction spans (default: all). Pairs outside it
            only lend their round-to-round variance to the pooled prior (confirmation
            re-measures whole workloads but judges only the suspects).
        level: the alpha this look spends (default ``settings.alpha``; confirmation
            spends less per look, :func:`multitest.spend`).
        rejected: family indices rejected at an earlier look (their alpha is passed on).
        boost: (workload, shape, dtype) whose exact work changed: their totals start with
            more alpha (:func:`multitest.hierarchy`).
        shift: the runner's shared shift (:func:`runnershift.runner_shift`); when it is
            the runner's (``status`` ``runner``), every single-run row's time is judged
            on its change over the shift (:func:`verdict.against_shift`), which must also
            clear ``k`` times the series' spread about it.

    Returns:
        One finding per pair, in the given order (attribution and acks are added by
        :func:`compare`).
    """
    fl = floors or {}
    ev = _with_mann_whitney([_measure(pi, settings) for pi in pairs])
    ev = _rounds_test(pairs, ev, settings, fl)
    shifted = shift if shift is not None and shift.shifted and shift.factor else None
    # Against the runner's shift: the single-run rows' evidence over its factor (their
    # Mann–Whitney again on those samples); rounds rows are judged as measured.
    judged = (
        _with_mann_whitney([against_shift(e, shifted.factor) for e in ev])  # type: ignore[arg-type]
        if shifted is not None
        else ev
    )
    fam = list(range(len(pairs)) if family is None else family)
    tested = len([i for i in fam if judged[i].p is not None])
    judged = _gatekeep([pi.series for pi in pairs], judged, fam, settings.op_share, rejected,
                       boost)  # fmt: skip
    alpha = settings.alpha if level is None else level
    out = []
    for pi, e, j in zip(pairs, ev, judged, strict=True):
        # the measured figures stay the row's estimate; the test's come from ``j``
        against = shifted is not None and e.mode in ("samples", "value")
        bar = _bar(settings, alpha, tested, fl.get(floor_key(pi.series)),
                   shifted if against else None)  # fmt: skip
        out.append(verdict(pi, e if against else j, settings.rules, bar, bool(fl),
                           j if against else None))  # fmt: skip
    return out


def _with_mann_whitney(ev: list[Evidence]) -> list[Evidence]:
    """``ev`` with the Mann–Whitney p of every single-run series that has samples."""
    need = [i for i, e in enumerate(ev) if e.mode == "samples" and e.samples is not None]
    pvals = stats.mann_whitney_many([ev[i].samples for i in need])  # type: ignore[misc]
    for i, p in zip(need, pvals, strict=True):
        ev[i] = replace(ev[i], p=p)
    return ev


def _gatekeep(
    series: Sequence[SeriesId],
    ev: list[Evidence],
    fam: Sequence[int],
    op_share: float,
    rejected: Collection[int],
    boost: Collection[tuple[str | None, str | None, str | None]],
) -> list[Evidence]:
    """``ev`` with the gatekeeping-adjusted p of every tested series of the family."""
    graph = hierarchy([series[i] for i in fam], op_share=op_share, boost=boost)
    pos = {i: k for k, i in enumerate(fam)}
    adjusted = adjusted_pvalues(
        [ev[i].p for i in fam],
        graph,
        rejected=[pos[i] for i in rejected if i in pos],
    )
    for i, adj in zip(fam, adjusted, strict=True):
        if adj is not None:
            ev[i] = replace(ev[i], p_adj=adj)
    return ev


def _bar(
    st: Settings,
    alpha: float,
    tested: int,
    floor: NoiseFloor | None,
    shift: RunnerShift | None = None,
) -> Bar:
    """The bar of one series: ``alpha`` over ``tested`` series, its floor times the
    settings' ``k`` (default: the t quantile 1 - alpha/2m on the floor's df), and the
    runner's shift with its own ``k`` (on the spread's df) when judged against it."""
    k = st.floor_k
    if k is None:
        k = stats.floor_k(st.alpha, tested, floor.df if floor else None)
    sb = None
    if shift is not None and shift.factor and shift.spread is not None:
        ks = st.floor_k
        if ks is None:
            ks = stats.floor_k(st.alpha, tested, shift_df(shift))
        sb = ShiftBar(shift.factor, shift.spread, shift.series, ks)
    return Bar(alpha, tested, floor, k, sb)


def _group(s: SeriesId) -> str:
    """The process a series is measured in: one profiling process per workload and side
    per round, so every series of a workload shares that round's run-to-run offset."""
    return s.workload or s.benchmark


def _kind(s: SeriesId) -> str:
    return "total" if s.op is None else "op"


def _rounds_test(
    pairs: Sequence[PairInput],
    ev: list[Evidence],
    st: Settings,
    fl: Mapping[FloorKey, NoiseFloor],
) -> list[Evidence]:
    idx = [i for i, e in enumerate(ev) if e.mode == "rounds"]
    if not idx:
        return ev
    # Series without a history floor borrow a prior variance from the *other* workloads'
    # series of the same kind (totals with totals, ops with ops). Not from their own
    # workload: its series share each round's process offset, so their variances are one
    # estimate repeated, not many — pooling them would claim degrees of freedom that do not
    # exist (measured: 5 % false confirmations instead of 1 % in an A/A simulation).
    # Each other workload adds its median variance with R-1 df (pooled variance; valid when
    # run-to-run noise is alike across workloads on one machine, as it is for processes of
    # one runner).
    by: dict[tuple[str, str], tuple[list[float], list[int]]] = {}
    for i in idx:
        sid = pairs[i].series
        d = ev[i].log_ratios
        vs, dfs = by.setdefault((_group(sid), _kind(sid)), ([], []))
        if len(d) >= 2:
            vs.append(float(np.var(d, ddof=1)))
            dfs.append(len(d) - 1)
    # median: a series that really changed (rounds disagree) must not inflate it
    per = {gk: (float(np.median(vs)), float(min(dfs))) for gk, (vs, dfs) in by.items() if vs}
    # Pooled over every group of a kind, less the series' own group (one pass, not one
    # pass over the groups per series).
    kind_sum: dict[str, tuple[float, float]] = {}
    for (_, k), (v, df) in per.items():
        sv, sd = kind_sum.get(k, (0.0, 0.0))
        kind_sum[k] = (sv + v * df, sd + df)
    tail = (1.0 + st.confidence) / 2.0
    out = list(ev)
    for i in idx:
        e = ev[i]
        sid = pairs[i].series
        f = fl.get(floor_key(sid))
        if f is not None:
            pv, pd, src = f.sd**2, float(f.df), "floor"
        else:
            sv, sd = kind_sum.get(_kind(sid), (0.0, 0.0))
            own_v, own_df = per.get((_group(sid), _kind(sid)), (0.0, 0.0))
            pd = float(sd - own_df)
            pv = max(0.0, (sv - own_v * own_df) / pd) if pd > 0 else 0.0
            pd = min(pd, MAX_POOLED_DF)
            src = "pooled"
        mean, se, df, p = stats.moderated_t(e.log_ratios, pv, pd)
        ci = None
        if math.isfinite(se) and df > 0:
            q = stats.t_quantile(tail, df) * se
            ci = (math.exp(mean - q), math.exp(mean + q))
        # base and head are the geometric means of the rounds' medians, so head / base
        # *is* exp(mean(d)): the printed values give the judged ratio (issue 28)
        assert e.base is not None and e.head is not None
        out[i] = replace(
            e,
            p=p,
            ratio=e.head / e.base,
            ci=ci,
            prior=(src, math.sqrt(pv) if pv > 0 else 0.0, pd),
        )
    return out


def _measure(pi: PairInput, st: Settings) -> Evidence:
    b, h = pi.base, pi.head
    if b is None or h is None or b.value is None or h.value is None:
        return Evidence("absent")
    sb, sh = stats.capped(b.samples), stats.capped(h.samples)
    warns: list[str] = []
    if max(len(b.samples), len(h.samples)) > stats.MAX_SAMPLES:
        warns.append(
            f"{len(b.samples)}/{len(h.samples)} samples (base/head): judged on"
            f" {stats.MAX_SAMPLES} evenly spaced order statistics a side"
        )
    if pi.rounds >= MIN_ROUNDS:
        r = pi.rounds
        br, hr = pi.base_rounds[:r], pi.head_rounds[:r]
        try:
            d = stats.round_log_ratios(br, hr)
        except ValueError as exc:
            warns.append(f"rounds not usable ({exc}): judged as one pooled run")
        else:
            pb = stats.capped([x for rnd in br for x in rnd])
            ph = stats.capped([x for rnd in hr for x in rnd])
            gb, gh = stats.round_levels(br), stats.round_levels(hr)
            return Evidence(
                "rounds",
                base=gb,
                head=gh,
                samples=(pb, ph),
                log_ratios=tuple(float(x) for x in d),
                noise=(noise(pb), noise(ph)),
                warnings=tuple(warns),
            )
    if len(sb) >= MIN_SAMPLES and len(sh) >= MIN_SAMPLES:
        mb, mh = median(sb), median(sh)
        ci = (
            None
            if st.resamples <= 0
            else stats.bootstrap_ratio_ci(
                sb,
                sh,
                confidence=st.confidence,
                resamples=st.resamples,
                seed=stats.seed_for(str(st.seed), pi.series.label, pi.series.benchmark),
            )
        )
        return Evidence(
            "samples",
            base=mb,
            head=mh,
            ratio=mh / mb if mb != 0.0 else None,
            ci=ci,
            samples=(tuple(sb), tuple(sh)),
            noise=(noise(sb), noise(sh)),
            warnings=tuple(warns),
        )
    warns.append(
        f"only {len(sb)}/{len(sh)} samples (base/head): factor-only verdict, no"
        " significance test (record samples with asv --record-samples)"
    )
    mb, mh = b.value, h.value
    return Evidence(
        "value",
        base=mb,
        head=mh,
        ratio=mh / mb if mb != 0.0 else None,
        warnings=tuple(warns),
    )


_SideKey = tuple[str, str, tuple[str, ...]]
_Side = Mapping[_SideKey, Series]
_Rounds = Mapping[FloorKey, tuple[Sequence[Sequence[float]], Sequence[Sequence[float]]]]


def _sides(history: History, base: str, head: str, bm: str, hm: str) -> tuple[_Side, _Side]:
    """The series with a value at base (on ``bm``) and at head (on ``hm``), by key."""
    def side(machine_name: str, commit: str) -> dict[_SideKey, Series]:
        return {
            (s.env_name, s.series.benchmark, s.series.params): s
            for s in history.series
            if s.machine == machine_name and s.at(commit) is not None
        }

    sb, sh = side(bm, base), side(hm, head)
    if not sb:
        raise UsageError(f"no results for base {base[:12]} on machine {bm!r}")
    if not sh:
        raise UsageError(f"no results for head {head[:12]} on machine {hm!r}")
    envs_b = {k[0] for k in sb}
    envs_h = {k[0] for k in sh}
    if envs_b != envs_h and len(envs_b) == 1 and len(envs_h) == 1:
        # One environment each but named differently (python upgrade): pair across them.
        sb = {("", k[1], k[2]): v for k, v in sb.items()}
        sh = {("", k[1], k[2]): v for k, v in sh.items()}
    return sb, sh


def _pairs(sb: _Side, sh: _Side, base: str, head: str, rnd: _Rounds) -> list[PairInput]:
    """One input per series key on either side, with its re-measured rounds if any."""
    pairs: list[PairInput] = []
    for key in sorted(set(sb) | set(sh)):
        s = sh.get(key) or sb[key]
        br, hr = rnd.get(floor_key(s.series), ((), ()))
        pairs.append(
            PairInput(
                series=s.series,
                unit=s.unit,
                base=sb[key].at(base) if key in sb else None,
                head=sh[key].at(head) if key in sh else None,
                base_rounds=tuple(tuple(float(x) for x in r) for r in br),
                head_rounds=tuple(tuple(float(x) for x in r) for r in hr),
            )
        )
    return pairs


def compare(  # noqa: PLR0913 -- the compare step's keyword options, one per CLI flag
    history: History,
    base: str,
    head: str,
    *,
    machine: str | None = None,
    head_machine: str | None = None,
    settings: Settings = Settings(),
    acks: Iterable[Acknowledgement] = (),
    force: bool = False,
    base_label: str | None = None,
    head_label: str | None = None,
    created: str = "",
    floors: Mapping[FloorKey, NoiseFloor] | None = None,
    rounds: _Rounds | None = None,
) -> FindingsDocument:
    """Compare two commits of a history (PR mode).

    Args:
        history: from :func:`neuronasv.store.history.load_history`.
        base, head: full commit hashes (resolve prefixes before).
        machine: machine of the base (and head unless ``head_machine``); default: the one
            machine that has both commits.
        head_machine: compare against another machine (refused unless ``force``).
        settings: rules and test settings.
        acks: acknowledgements; a matching finding is marked and never fails a check.
        force: compare even across machines, backends or device models.
        base_label, head_label: names the user gave (branch names), kept as labels.
        created: timestamp to record (injected: analysis does not read the clock).
        floors: per-series between-run noise floors; default: learned from this history's
            other commits on the base machine (:func:`floors.noise_floors`); ``{}`` = none.
        rounds: ``floor_key(series) -> (base rounds, head rounds)``, each a list of
            per-round sample lists (interleaved re-measurements, e.g. several profile
            documents a side); series with 2+ paired rounds are judged on the rounds.

    Raises:
        IncomparableError: different machine, backend or device model, or a backend or
            device model unknown on either side (no fingerprint), without ``force``; with
            ``force`` the reasons are kept in the document's ``forced``.
        UsageError: no results for a commit.
    """
    bm = pick_machine(history, base, head, machine) if head_machine is None else machine
    if bm is None:
        raise UsageError("give --machine together with a head machine")
    hm = head_machine or bm
    fp_b = history.fingerprints.get((bm, base), {})
    fp_h = history.fingerprints.get((hm, head), {})
    problems = check_comparable(history, base, head, bm, hm, force=force)
    sb, sh = _sides(history, base, head, bm, hm)
    if floors is None:
        floors = noise_floors(history, bm, exclude=(head,))
    rnd = rounds or {}
    pairs = _pairs(sb, sh, base, head, rnd)
    base_profiles = history.profiles.get((bm, base), ())
    head_profiles = history.profiles.get((hm, head), ())
    work = work_changes(base_profiles, head_profiles)
    # Exact metrics are rows of their own axis, and a counting pass's op changes join the
    # work evidence (analyse/exact).
    work = (*work, *count_changes(base_profiles, head_profiles,
                                        known=[(w.config, w.op) for w in work]))  # fmt: skip
    exact = [p for p in pairs if is_exact(p.unit)]
    pairs = [p for p in pairs if not is_exact(p.unit)]
    shift = _runner_shift(history, pairs, exact, work, settings, (bm, base), (hm, head),
                          forced=bool(problems))  # fmt: skip
    findings = judge(pairs, settings, floors, boost={w.config for w in work}, shift=shift)
    findings = attribute(
        findings,
        base_profiles=base_profiles,
        head_profiles=head_profiles,
        work=work,
        rounds=pooled(rnd) if rnd else None,
    )
    # After attribution: an exact metric's row is not a timing op row of its total.
    findings += judge_exact([(p.series, p.base, p.head, p.unit) for p in exact], base_profiles,
                            head_profiles)  # fmt: skip
    warnings_env = env_changes(fp_b, fp_h)
    # Device health (canary vs each machine's history): a separate decision that the
    # renderers, the commit status and --fail-on read; the verdicts above stay as data.
    health = device_health(history, base=base, head=head, base_machine=bm, head_machine=hm)
    doc = FindingsDocument(
        mode="compare",
        base=RunRef(commit=base, machine=bm, fingerprint=dict(fp_b), label=base_label),
        head=RunRef(commit=head, machine=hm, fingerprint=dict(fp_h), label=head_label),
        findings=tuple(findings),
        env_changes=warnings_env,
        settings={
            **settings.to_json(),
            "forced": bool(problems) and force,
            "noise_floor": floor_summary(floors),
            "rounds": max((p.rounds for p in pairs), default=0),
            "runner_noise": runner_noise(
                floors, bm, max(max((p.rounds for p in pairs), default=0), 3), settings.alpha
            ),
        },
        load_errors=history.load_errors,
        created=created,
        work=work,
        forced=tuple(problems) if force else (),
        health=health,
        runner=shift,
    )
    doc = with_states(doc, settings.gate)
    ack_list = list(acks)
    if ack_list:  # on the rows' states (which way they moved), then their gate again
        findings = [_apply_ack(f, ack_list, head) for f in doc.findings]
        doc = with_states(replace(doc, findings=tuple(findings)), settings.gate)
    return with_causes(doc)  # from the rows' states: which way each moved


def _point_level(p: Point | None) -> float | None:
    """A single-run side's level: its samples' median, else asv's value."""
    if p is None or p.value is None:
        return None
    return median(p.samples) if len(p.samples) >= MIN_SAMPLES else p.value


def _runner_shift(
    history: History,
    pairs: Sequence[PairInput],
    exact: Sequence[PairInput],
    work: Sequence[WorkChange],
    settings: Settings,
    base: tuple[str, str],
    head: tuple[str, str],
    *,
    forced: bool = False,
) -> RunnerShift | None:
    """The runner's shared shift over this comparison's single-run device-time rows whose
    work and exact counts are equal (:mod:`neuronasv.analyse.runnershift`), with
    what each side recorded of its machine; None for a ``--force``d comparison across
    machines or devices (another machine is not the runner shifting)."""
    if forced:
        return None
    rows = [
        (p.series, _point_level(p.base), _point_level(p.head))
        for p in pairs
        if p.rounds < MIN_ROUNDS
    ]
    counts = {
        (p.series.config, p.series.op): (
            p.base.value if p.base else None,
            p.head.value if p.head else None,
        )
        for p in exact
    }
    rule = settings.rules.default
    min_effect = rule.threshold if rule.relative else 0.05
    sb = side_state(history, "base", *base)
    sh = side_state(history, "head", *head)
    keys = [{(p.name, p.shape, p.dtype) for p in history.profiles.get(side, ())}
            for side in (base, head)]  # fmt: skip
    return runner_shift(
        shift_inputs(rows, work, counts, keys[0] & keys[1]),
        min_effect=min_effect,
        canary=canary_ratio(sb, sh),
        base=sb,
        head=sh,
    )


def floor_summary(floors: Mapping[FloorKey, NoiseFloor]) -> str:
    """One line for the document's settings: how many floors, and their range."""
    if not floors:
        return (
            "none (no main-branch history on this machine): single-run verdicts rest on the"
            " within-run test alone, which cannot see run-to-run shifts; confirm in rounds"
        )
    sds = sorted(f.sd for f in floors.values())
    return (
        f"{len(sds)} series, {pct_number(sds[0])}–{format_pct(sds[-1])} (median"
        f" {format_pct(sds[len(sds) // 2])}): single-run changes must exceed k × floor"
    )


def _apply_ack(f: Finding, acks: Sequence[Acknowledgement], head: str) -> Finding:
    """``f`` acknowledged when an acknowledgement matches a row that moved (any axis), is
    undecided, or exists on one side only."""
    st = f.state
    if st.presence == "both" and st.direction is None and st.time != "undecided":
        return f
    a = match_ack(acks, f.series, head)
    return f if a is None else replace(f, acknowledged=a.reason)
