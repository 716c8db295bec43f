"""PR mode: base vs head verdicts for every series of one comparison (pure, no I/O).

For each series with samples on both sides:

1. two-sided Mann–Whitney U p-value (scipy);
2. percentile-bootstrap 95 % CI of the ratio of medians (seeded per series label, so the
   output is deterministic and independent of series order);
3. noise = IQR/median of each side (warning above 10 %);
4. **Holm** correction over every tested series of the comparison. Holm controls the
   family-wise error rate — the chance of *any* false alarm in one PR comparison, which is
   what a reviewer pays for — under arbitrary dependence (op series of one workload share
   their samples). Benjamini–Hochberg would bound only the expected share of false alarms
   among alarms, letting a large suite raise more of them by chance.
5. verdict: significant (adjusted p < alpha) **and** at least the rule's minimum effect
   (default ``median:5%``, per-pattern overrides) -> regression / improvement; significant
   but smaller -> unchanged; an apparent shift above the minimum effect that is not
   significant -> noisy; absent at base -> new; absent at head -> removed; failed at head
   -> failed.

Series with a value but no samples (asv without ``--record-samples``, ``track_``) get a
factor-only verdict against the same rule, with a warning and no p-value.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from neuronasv.analyse import stats
from neuronasv.analyse.acks import Acknowledgement, match_ack
from neuronasv.analyse.attribution import attribute
from neuronasv.analyse.rules import RuleSet
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
    "MIN_SAMPLES",
    "NOISE_WARN",
    "PairInput",
    "Settings",
    "compare",
    "env_changes",
    "judge",
]

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
        }


@dataclass(frozen=True)
class PairInput:
    """One series on both sides. A side is None when the series is absent there."""

    series: SeriesId
    unit: str
    base: Point | None
    head: Point | None


def _pct(x: float) -> str:
    v = (x - 1.0) * 100.0
    return f"{v:+.1f} %" if abs(v) < 10 else f"{v:+.0f} %"


def _fmt_p(p: float) -> str:
    return f"{p:.2g}" if p >= 1e-4 else f"{p:.1e}"


def judge(pairs: Sequence[PairInput], settings: Settings = Settings()) -> list[Finding]:
    """Verdicts for one comparison (all series together: the correction spans them all).

    Args:
        pairs: every series of the comparison.
        settings: rules, alpha, bootstrap settings.

    Returns:
        One finding per pair, in the given order (attribution and acks are added by
        :func:`compare`).
    """
    prelim = [_measure(pi, settings) for pi in pairs]
    need = [i for i, d in enumerate(prelim) if d.get("test")]
    pvals = stats.mann_whitney_many([prelim[i]["test"] for i in need])
    for i, p in zip(need, pvals, strict=True):
        prelim[i]["p"] = p
    tested = [i for i, d in enumerate(prelim) if d.get("p") is not None]
    adjusted = stats.holm([prelim[i]["p"] for i in tested])
    for i, adj in zip(tested, adjusted, strict=True):
        prelim[i]["p_adj"] = adj
    return [_verdict(pi, d, settings, len(tested)) for pi, d in zip(pairs, prelim, strict=True)]


def _measure(pi: PairInput, st: Settings) -> dict[str, Any]:
    b, h = pi.base, pi.head
    d: dict[str, Any] = {"warnings": []}
    if b is None or h is None or b.value is None or h.value is None:
        return d
    sb, sh = b.samples, h.samples
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


def _verdict(pi: PairInput, d: Mapping[str, Any], st: Settings, m: int) -> Finding:
    b, h = pi.base, pi.head
    common: dict[str, Any] = {
        "series": pi.series,
        "unit": pi.unit,
        "n_base": len(b.samples) if b else 0,
        "n_head": len(h.samples) if h else 0,
    }
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
    if p is not None:
        sb, sh = b.samples, h.samples
        sbase, shead = rule.statistic(sb), rule.statistic(sh)
    else:
        sbase, shead = d["base"], d["head"]
    worse, better = rule.exceeded(sbase, shead), rule.improved(sbase, shead)
    effect = f"{_pct(ratio)}" if ratio is not None else "n/a"
    ci_txt = f" (CI {_pct(ci[0])} to {_pct(ci[1])})" if ci else ""
    if p is None:
        verdict = "regression" if worse else "improvement" if better else "unchanged"
        reason = (
            f"{effect} by value alone, {'above' if worse or better else 'within'} the"
            f" {rule.describe()} minimum effect (no samples: no test)"
        )
    else:
        p_adj = 1.0 if p_adj is None else float(p_adj)
        sig = p_adj < st.alpha
        ptxt = f"p={_fmt_p(p)}, Holm-adjusted {_fmt_p(p_adj)} over {m} series"
        if sig and (worse or better):
            verdict = "regression" if worse else "improvement"
            reason = f"{effect}{ci_txt}, {ptxt} < {st.alpha:g}, beyond the {rule.describe()} rule"
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
    pairs: list[PairInput] = []
    for key in sorted(set(sb) | set(sh)):
        s = sh.get(key) or sb[key]
        pairs.append(
            PairInput(
                series=s.series,
                unit=s.unit,
                base=sb[key].at(base) if key in sb else None,
                head=sh[key].at(head) if key in sh else None,
            )
        )
    findings = judge(pairs, settings)
    findings = attribute(
        findings,
        base_profiles=history.profiles.get((bm, base), ()),
        head_profiles=history.profiles.get((hm, head), ()),
    )
    ack_list = list(acks)
    if ack_list:
        findings = [_apply_ack(f, ack_list, head) for f in findings]
    warnings_env = env_changes(fp_b, fp_h)
    return FindingsDocument(
        mode="compare",
        base=RunRef(commit=base, machine=bm, fingerprint=dict(fp_b), label=base_label),
        head=RunRef(commit=head, machine=hm, fingerprint=dict(fp_h), label=head_label),
        findings=tuple(findings),
        env_changes=warnings_env,
        settings={**settings.to_json(), "forced": bool(problems) and force},
        load_errors=history.load_errors,
        created=created,
    )


def _apply_ack(f: Finding, acks: Sequence[Acknowledgement], head: str) -> Finding:
    if f.verdict not in ("regression", "improvement", "noisy", "failed", "new", "removed"):
        return f
    a = match_ack(acks, f.series, head)
    return f if a is None else replace(f, acknowledged=a.reason)


def _isfinite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)
