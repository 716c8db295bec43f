"""PR mode: base vs head verdicts for every series of one comparison (pure, no I/O).

The unit of replication is the *run*: two profiling runs (separate processes) of the same
code differ by more than their within-run sample spread. So a series is judged one of two
ways, and every tested series of the comparison shares one Holm correction.

**Rounds** (``PairInput.base_rounds``/``head_rounds``, at least 2 paired rounds a side,
from ``neuronasv confirm``'s interleaved ABAB re-measurement or ``compare --round``):

1. per-round log-ratio of medians ``d_r = log(median(head_r) / median(base_r))``;
2. moderated t test of ``mean(d) = 0`` (:func:`stats.moderated_t`): the per-series
   variance of ``d`` (R-1 df) is pooled with a prior — the series' history noise floor
   when known (:mod:`neuronasv.analyse.floors`), else an empirical-Bayes prior from every
   rounds series of the comparison (:func:`stats.ebayes_prior`, Smyth 2004);
3. CI of the ratio: ``exp(mean(d) ± t · se)``, the same model as the test;
4. verdict: Holm-adjusted p < alpha **and** beyond the rule's minimum effect **and** every
   round shifted the same way -> regression/improvement; beyond the minimum effect but not
   significant or not consistent -> noisy.

**Single run** a side (``neuronasv compare`` on two results): two-sided Mann–Whitney U on
the samples (scipy; exact for small tie-free samples), 95 % percentile-bootstrap CI of the
ratio of medians (seeded per series label), then the per-series noise floor: a change must
also exceed ``k x floor`` (``k = Phi^-1(1 - alpha / 2m)``, :func:`stats.floor_k`), since the
within-run test cannot see run-to-run shifts. Within the floor -> noisy, with the floor in
the reason; re-measure in rounds to decide. Without a floor (no main-branch history) the
verdict is the within-run test alone and the document's settings say so.

**Holm** over every tested series of the comparison controls the family-wise error rate —
the chance of *any* false alarm in one PR comparison, what a reviewer pays for — under
arbitrary dependence (op series of one workload share their samples). Benjamini–Hochberg
would bound only the expected share of false alarms among alarms.

Other verdicts: absent at base -> new; absent at head -> removed; failed at head -> failed.
Series with a value but no samples (asv without ``--record-samples``, ``track_``) get a
factor-only verdict against the same rule, with a warning and no p-value.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from neuronasv.analyse import stats
from neuronasv.analyse.acks import Acknowledgement, match_ack
from neuronasv.analyse.attribution import attribute
from neuronasv.analyse.floors import FloorKey, NoiseFloor, floor_key, noise_floors
from neuronasv.analyse.health import device_health
from neuronasv.analyse.rules import Rule, RuleSet
from neuronasv.errors import IncomparableError, UsageError
from neuronasv.model import (
    EnvChange,
    Finding,
    FindingsDocument,
    History,
    Point,
    RunRef,
    Series,
    SeriesId,
)
from neuronasv.model.findings import Verdict

__all__ = [
    "INCOMPARABLE_KEYS",
    "MIN_ROUNDS",
    "MIN_SAMPLES",
    "NOISE_WARN",
    "PairInput",
    "Settings",
    "compare",
    "env_changes",
    "floor_summary",
    "judge",
]

MIN_ROUNDS = 2  # paired rounds a side for the rounds test (one round = a single run)
#: Cap on the prior df pooled over the comparison's own series (no history floor): the
#: series' between-run variances differ (3x in sd between a tiny and a large op, measured),
#: which few rounds cannot show, so the pooled prior must not count as more than this.
MAX_POOLED_DF = 4.0
MIN_SAMPLES = 3  # below this on either side the test cannot reach significance: factor-only
NOISE_WARN = 0.10  # IQR/median above this gets a warning (torch.utils.benchmark's figure)
INCOMPARABLE_KEYS = ("backend", "device_model")


@dataclass(frozen=True)
class Settings:
    """Knobs of one comparison (recorded verbatim in ``FindingsDocument.settings``)."""

    rules: RuleSet = field(default_factory=RuleSet)
    alpha: float = 0.01
    confidence: float = 0.95
    resamples: int = 2000
    seed: int = 0
    floor_k: float | None = None  # None: t quantile 1 - alpha/2m on the floor's df

    def to_json(self) -> dict[str, Any]:
        return {
            "rules": self.rules.describe(),
            "min_effect": self.rules.default.text,
            "alpha": self.alpha,
            "test": "Mann-Whitney U, two-sided (scipy)",
            "correction": "holm",
            "correction_reason": (
                "Holm controls the family-wise error rate: the chance of any false alarm in"
                " one comparison, under arbitrary dependence between series"
            ),
            "ci": f"{self.confidence:.0%} percentile bootstrap of the ratio of medians"
            f" ({self.resamples} resamples, seed {self.seed})",
            "noise_warn": NOISE_WARN,
            "rounds_test": (
                "per-round log-ratio of medians, moderated t (prior: the series' noise"
                " floor, else empirical Bayes over the comparison), every round the same"
                " direction; CI exp(mean ± t·se)"
            ),
            "floor_k": (
                "t quantile 1 - alpha/2m on the floor's df"
                if self.floor_k is None
                else self.floor_k
            ),
        }


@dataclass(frozen=True)
class PairInput:
    """One series on both sides. A side is None when the series is absent there."""

    series: SeriesId
    unit: str
    base: Point | None
    head: Point | None
    base_rounds: tuple[tuple[float, ...], ...] = ()
    head_rounds: tuple[tuple[float, ...], ...] = ()

    @property
    def rounds(self) -> int:
        """Paired rounds (0 or 1 = judged as a single run)."""
        return min(len(self.base_rounds), len(self.head_rounds))


def _pct(x: float) -> str:
    v = (x - 1.0) * 100.0
    return f"{v:+.1f} %" if abs(v) < 10 else f"{v:+.0f} %"


def _fmt_p(p: float) -> str:
    return f"{p:.2g}" if p >= 1e-4 else f"{p:.1e}"


def judge(
    pairs: Sequence[PairInput],
    settings: Settings = Settings(),
    floors: Mapping[FloorKey, NoiseFloor] | None = None,
    family: Sequence[int] | None = None,
) -> list[Finding]:
    """Verdicts for one comparison (all series together: the correction spans them all).

    Args:
        pairs: every series of the comparison (with rounds where measured in rounds).
        settings: rules, alpha, bootstrap settings.
        floors: per-series between-run noise floors (:func:`floors.noise_floors`).
        family: indices of the pairs the Holm correction spans (default: all). Pairs
            outside it only lend their round-to-round variance to the pooled prior
            (confirmation re-measures whole workloads but judges only the suspects).

    Returns:
        One finding per pair, in the given order (attribution and acks are added by
        :func:`compare`).
    """
    fl = floors or {}
    prelim = [_measure(pi, settings) for pi in pairs]
    need = [i for i, d in enumerate(prelim) if d.get("test")]
    pvals = stats.mann_whitney_many([prelim[i]["test"] for i in need])
    for i, p in zip(need, pvals, strict=True):
        prelim[i]["p"] = p
    rounds = [i for i, d in enumerate(prelim) if d.get("d") is not None]
    _rounds_test(pairs, prelim, rounds, settings, fl)
    fam = set(range(len(pairs)) if family is None else family)
    tested = [i for i, d in enumerate(prelim) if d.get("p") is not None and i in fam]
    adjusted = stats.holm([prelim[i]["p"] for i in tested])
    for i, adj in zip(tested, adjusted, strict=True):
        prelim[i]["p_adj"] = adj
    out = []
    for pi, d in zip(pairs, prelim, strict=True):
        f = fl.get(floor_key(pi.series))
        k = settings.floor_k
        if k is None:
            k = stats.floor_k(settings.alpha, len(tested), f.df if f else None)
        out.append(_verdict(pi, d, settings, len(tested), f, k, bool(fl)))
    return out


def _rounds_test(
    pairs: Sequence[PairInput],
    prelim: list[dict[str, Any]],
    idx: Sequence[int],
    st: Settings,
    fl: Mapping[FloorKey, NoiseFloor],
) -> None:
    if not idx:
        return
    # Series without a floor borrow an empirical-Bayes prior from every rounds series.
    variances = [float(np.var(prelim[i]["d"], ddof=1)) for i in idx]
    dfs = {len(prelim[i]["d"]) - 1 for i in idx}
    s0, d0 = stats.ebayes_prior(variances, dfs.pop()) if len(dfs) == 1 else (0.0, 0.0)
    d0 = min(d0, MAX_POOLED_DF)
    tail = (1.0 + st.confidence) / 2.0
    for i in idx:
        d = prelim[i]
        f = fl.get(floor_key(pairs[i].series))
        pv, pd, src = (f.sd**2, f.df, "floor") if f is not None else (s0, d0, "pooled")
        mean, se, df, p = stats.moderated_t(d["d"], pv, pd)
        d["p"] = p
        d["ratio"] = math.exp(mean)
        d["prior"] = (src, math.sqrt(pv) if pv > 0 else 0.0, pd)
        if math.isfinite(se) and df > 0:
            q = stats.t_quantile(tail, df) * se
            d["ci"] = (math.exp(mean - q), math.exp(mean + q))
        else:
            d["ci"] = None


def _measure(pi: PairInput, st: Settings) -> dict[str, Any]:
    b, h = pi.base, pi.head
    d: dict[str, Any] = {"warnings": []}
    if b is None or h is None or b.value is None or h.value is None:
        return d
    sb, sh = b.samples, h.samples
    if pi.rounds >= MIN_ROUNDS:
        r = pi.rounds
        br, hr = pi.base_rounds[:r], pi.head_rounds[:r]
        try:
            d["d"] = stats.round_log_ratios(br, hr)
        except ValueError as exc:
            d["warnings"].append(f"rounds not usable ({exc}): judged as one pooled run")
        else:
            pb = [x for rnd in br for x in rnd]
            ph = [x for rnd in hr for x in rnd]
            d["base"], d["head"] = stats.median(pb), stats.median(ph)
            d["pooled"] = (pb, ph)
            d["noise"] = (stats.noise(pb), stats.noise(ph))
            return d
    if len(sb) >= MIN_SAMPLES and len(sh) >= MIN_SAMPLES:
        mb, mh = stats.median(sb), stats.median(sh)
        d["test"] = (sb, sh)  # tested in one batch by judge()
        d["ci"] = (
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
        d["noise"] = (stats.noise(sb), stats.noise(sh))
    else:
        mb, mh = b.value, h.value
        d["warnings"].append(
            f"only {len(sb)}/{len(sh)} samples (base/head): factor-only verdict, no"
            " significance test (record samples with asv --record-samples)"
        )
    d["base"], d["head"] = mb, mh
    d["ratio"] = mh / mb if mb not in (0.0,) else None
    return d


def _verdict(
    pi: PairInput,
    d: Mapping[str, Any],
    st: Settings,
    m: int,
    floor: NoiseFloor | None,
    k: float,
    have_floors: bool,
) -> Finding:
    b, h = pi.base, pi.head
    common: dict[str, Any] = {
        "series": pi.series,
        "unit": pi.unit,
        "n_base": len(b.samples) if b else 0,
        "n_head": len(h.samples) if h else 0,
    }
    if "pooled" in d:  # judged on the rounds: count what was judged
        common["n_base"], common["n_head"] = (len(x) for x in d["pooled"])
    if b is None and h is None:
        return Finding(
            verdict="removed", base=None, head=None, reason="absent on both sides", **common
        )
    if b is None:
        hv = h.value if h else None
        verdict: Verdict = "failed" if hv is None else "new"
        why = "new at head, failed" if hv is None else "new at head (absent at base)"
        return Finding(verdict=verdict, base=None, head=hv, reason=why, **common)
    if h is None:
        return Finding(
            verdict="removed",
            base=b.value,
            head=None,
            reason="absent at head (present at base)",
            **common,
        )
    if h.value is None:
        why = "failed at head" + (" (also failed at base)" if b.value is None else "")
        return Finding(verdict="failed", base=b.value, head=None, reason=why, **common)
    if b.value is None:
        return Finding(
            verdict="new", base=None, head=h.value, reason="failed at base, works at head", **common
        )

    rule = st.rules.for_series(pi.series)
    warnings: list[str] = list(d["warnings"])
    ratio = d.get("ratio")
    noise = d.get("noise") or (None, None)
    for side, nz in zip(("base", "head"), noise, strict=True):
        if nz is not None and nz > NOISE_WARN:
            warnings.append(f"noisy {side}: IQR/median {nz * 100:.0f} %")
    p, p_adj = d.get("p"), d.get("p_adj")
    ci = d.get("ci")
    effect = f"{_pct(ratio)}" if ratio is not None else "n/a"
    ci_txt = f" (CI {_pct(ci[0])} to {_pct(ci[1])})" if ci else ""
    rounds = d.get("d")
    if rounds is not None:
        verdict, reason = _rounds_verdict(rule, d, st, m, effect + ci_txt)
    elif p is None:
        worse, better = rule.exceeded(d["base"], d["head"]), rule.improved(d["base"], d["head"])
        verdict = "regression" if worse else "improvement" if better else "unchanged"
        reason = (
            f"{effect} by value alone, {'above' if worse or better else 'within'} the"
            f" {rule.describe()} minimum effect (no samples: no test)"
        )
    else:
        sbase, shead = rule.statistic(b.samples), rule.statistic(h.samples)
        worse, better = rule.exceeded(sbase, shead), rule.improved(sbase, shead)
        p_adj = 1.0 if p_adj is None else float(p_adj)
        sig = p_adj < st.alpha
        ptxt = f"p={_fmt_p(p)}, Holm-adjusted {_fmt_p(p_adj)} over {m} series"
        # The between-run floor: a within-run test cannot see run-to-run shifts.
        lr = abs(math.log(ratio)) if ratio is not None and ratio > 0 else 0.0
        within_floor = floor is not None and lr <= k * floor.sd
        floor_txt = (
            f"within the between-run noise floor (±{(math.exp(k * floor.sd) - 1) * 100:.1f} %"
            f" = {k:.2g} × {floor.describe()})"
            if floor is not None
            else ""
        )
        if floor is None and have_floors:
            warnings.append(
                "no between-run noise floor for this series (too little main-branch history):"
                " the within-run test cannot see run-to-run shifts"
            )
        if sig and (worse or better) and not within_floor:
            verdict = "regression" if worse else "improvement"
            reason = f"{effect}{ci_txt}, {ptxt} < {st.alpha:g}, beyond the {rule.describe()} rule"
            if floor is not None:
                reason += f" and the ±{(math.exp(k * floor.sd) - 1) * 100:.1f} % noise floor"
        elif (worse or better) and within_floor:
            verdict = "noisy"
            reason = (
                f"{effect}{ci_txt} beyond the {rule.describe()} rule but {floor_txt}"
                f" ({ptxt}): re-measure in rounds (neuronasv confirm)"
            )
        elif sig:
            verdict = "unchanged"
            reason = (
                f"{effect}{ci_txt}, significant ({ptxt}) but within the"
                f" {rule.describe()} minimum effect"
            )
        elif worse or better:
            verdict = "noisy"
            reason = (
                f"{effect}{ci_txt} beyond the {rule.describe()} rule but not"
                f" significant ({ptxt} ≥ {st.alpha:g})"
            )
        else:
            verdict = "unchanged"
            reason = f"{effect}{ci_txt}, {ptxt}"
    return Finding(
        verdict=verdict,
        base=d["base"],
        head=d["head"],
        ratio=ratio,
        ci_low=ci[0] if ci else None,
        ci_high=ci[1] if ci else None,
        p_value=p,
        p_adjusted=p_adj,
        noise_base=noise[0],
        noise_head=noise[1],
        reason=reason,
        warnings=tuple(warnings),
        **common,
    )


def _rounds_verdict(
    rule: Rule, d: Mapping[str, Any], st: Settings, m: int, effect: str
) -> tuple[Verdict, str]:
    rounds = np.asarray(d["d"], dtype=float)
    r = rounds.size
    ratio = float(d["ratio"])
    if rule.relative and rule.stat == "median":
        worse, better = rule.exceeded(1.0, ratio), rule.improved(1.0, ratio)
    else:  # other statistics: on the pooled samples
        pb, ph = d["pooled"]
        worse = rule.exceeded(rule.statistic(pb), rule.statistic(ph))
        better = rule.improved(rule.statistic(pb), rule.statistic(ph))
    sign = 1.0 if ratio > 1.0 else -1.0
    consistent = bool(np.all(np.sign(rounds) == sign))
    p = float(d["p"])
    p_adj = float(d.get("p_adj", 1.0))
    sig = p_adj < st.alpha
    src, prior_sd, prior_df = d["prior"]
    prior = (
        f"prior: noise floor {prior_sd * 100:.1f} %"
        if src == "floor"
        else f"prior {prior_sd * 100:.1f} % pooled over the comparison"
        if prior_df > 0
        else "no prior"
    )
    per_round = ", ".join(_pct(math.exp(x)) for x in rounds)
    ptxt = (
        f"moderated t over {r} rounds ({per_round}; {prior}), p={_fmt_p(p)},"
        f" Holm-adjusted {_fmt_p(p_adj)} over {m} series"
    )
    if sig and (worse or better) and consistent:
        return (
            "regression" if worse else "improvement",
            f"{effect}, {ptxt} < {st.alpha:g}, every round the same way, beyond the"
            f" {rule.describe()} rule",
        )
    if (worse or better) and sig:
        return (
            "noisy",
            f"{effect} beyond the {rule.describe()} rule but the rounds disagree ({ptxt})",
        )
    if worse or better:
        return (
            "noisy",
            f"{effect} beyond the {rule.describe()} rule but not significant"
            f" ({ptxt} ≥ {st.alpha:g})",
        )
    if sig:
        return (
            "unchanged",
            f"{effect}, significant ({ptxt}) but within the {rule.describe()} minimum effect",
        )
    return "unchanged", f"{effect}, {ptxt}"


def env_changes(before: Mapping[str, str], after: Mapping[str, str]) -> tuple[EnvChange, ...]:
    """Fingerprint keys whose value differs (sorted by key)."""
    keys = sorted(set(before) | set(after))
    return tuple(
        EnvChange(k, before.get(k), after.get(k)) for k in keys if before.get(k) != after.get(k)
    )


def _pick_machine(history: History, base: str, head: str, machine: str | None) -> str:
    if machine is not None:
        return machine
    has: dict[str, set[str]] = {}
    for s in history.series:
        for p in s.points:
            if p.commit in (base, head):
                has.setdefault(s.machine, set()).add(p.commit)
    both = sorted(m for m, cs in has.items() if cs == {base, head})
    if len(both) == 1:
        return both[0]
    if not both:
        raise UsageError(
            f"no machine has results for both {base[:12]} and {head[:12]}"
            f" (machines with either: {', '.join(sorted(has)) or 'none'})"
        )
    raise UsageError(
        f"results for both commits on several machines ({', '.join(both)}):"
        " choose one with --machine"
    )


def compare(
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
    rounds: Mapping[FloorKey, tuple[Sequence[Sequence[float]], Sequence[Sequence[float]]]]
    | None = None,
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
        IncomparableError: different machine, backend or device model without ``force``.
        UsageError: no results for a commit.
    """
    bm = _pick_machine(history, base, head, machine) if head_machine is None else machine
    if bm is None:
        raise UsageError("give --machine together with a head machine")
    hm = head_machine or bm
    fp_b = history.fingerprints.get((bm, base), {})
    fp_h = history.fingerprints.get((hm, head), {})
    problems: list[str] = []
    if bm != hm:
        problems.append(f"machine {bm!r} vs {hm!r}")
    for k in INCOMPARABLE_KEYS:
        if k in fp_b and k in fp_h and fp_b[k] != fp_h[k]:
            problems.append(f"{k} {fp_b[k]!r} vs {fp_h[k]!r}")
    if problems and not force:
        raise IncomparableError(
            "base and head were measured differently: " + "; ".join(problems),
            hint="measure both on the same machine, or pass --force to compare anyway",
        )

    def side(machine_name: str, commit: str) -> dict[tuple[str, str, tuple[str, ...]], Series]:
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
    if floors is None:
        floors = noise_floors(history, bm, exclude=(head,))
    rnd = rounds or {}
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
    findings = judge(pairs, settings, floors)
    findings = attribute(
        findings,
        base_profiles=history.profiles.get((bm, base), ()),
        head_profiles=history.profiles.get((hm, head), ()),
    )
    ack_list = list(acks)
    if ack_list:
        findings = [_apply_ack(f, ack_list, head) for f in findings]
    warnings_env = env_changes(fp_b, fp_h)
    # Device health (canary vs each machine's history): a separate decision that the
    # renderers, the commit status and --fail-on read; the verdicts above stay as data.
    health = device_health(history, base=base, head=head, base_machine=bm, head_machine=hm)
    return FindingsDocument(
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
        },
        load_errors=history.load_errors,
        created=created,
        health=health,
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
        f"{len(sds)} series, {sds[0] * 100:.1f}–{sds[-1] * 100:.1f} % (median"
        f" {sds[len(sds) // 2] * 100:.1f} %): single-run changes must exceed k × floor"
    )


def _apply_ack(f: Finding, acks: Sequence[Acknowledgement], head: str) -> Finding:
    if f.verdict not in ("regression", "improvement", "noisy", "failed", "new", "removed"):
        return f
    a = match_ack(acks, f.series, head)
    return f if a is None else replace(f, acknowledged=a.reason)


def _isfinite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)
