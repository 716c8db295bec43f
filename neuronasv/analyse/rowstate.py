"""Row states on two axes and the gate, decided once (pure; the one home of both).

A row (one series of a comparison) says two things that must not be mixed:

- **work** — exact, from the untimed shapes pass (:mod:`neuronasv.analyse.evidence`):
  ``more``/``less`` when the bytes or FLOPs moved by ops that carry them rose/fell (or an
  op was added/removed), ``different`` when the work changed without one direction — or
  only calls of view, alias or no-op conversion ops (ops with no bytes and no FLOPs)
  changed —, ``same`` with no work change, ``unknown`` for a series without evidence;
- **time** — measured, always with its Δ and CI from one measurement: ``slower``/
  ``faster`` only where the timing test decided *and* the Δ has that sign, ``noise``
  where the CI lies within the minimum effect, ``undecided`` otherwise, ``none`` without
  a Δ. ``confirmed`` only where the interleaved rounds confirmed that time.

The **gate** (``--fail-on``, the commit status) is a policy per axis (:class:`Gate`);
each row records the rule it fires, so every view says which rule fired without
deciding anything itself. :func:`with_states` is called at the end of ``compare`` and
of ``confirm``; :func:`ensure_states` gives documents written before states existed
theirs once, when loaded.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from neuronasv.analyse.evidence import config_directions
from neuronasv.analyse.exact import is_exact
from neuronasv.format import format_delta_pct
from neuronasv.measure.opnames import carries_work
from neuronasv.model import Finding, FindingsDocument, RowState, WorkChange
from neuronasv.model.findings import TimeAxis, WorkAxis

__all__ = [
    "CI_LEVEL",
    "GATE_RULES",
    "TIME_GATES",
    "WORK_GATES",
    "Gate",
    "carried_direction",
    "ci_beside_time",
    "ensure_states",
    "fired_rules",
    "row_state",
    "shown_change",
    "with_states",
]

#: ``--fail-on-time``: what a slower time must be to fire.
TIME_GATES = ("confirmed", "slower", "never")
#: ``--fail-on-work``: when more work fires.
WORK_GATES = ("undecided", "more", "never")

#: The rule names rows record and headlines quote (the gate's own words).
GATE_RULES = {
    ("time", "confirmed"): "confirmed slower time",
    ("time", "slower"): "slower time",
    ("work", "undecided"): "more work, time undecided",
    ("work", "more"): "more work",
}

_Config = tuple[str | None, str | None, str | None]

#: The confidence of the CI a row shows (the bootstrap's and the rounds test's): a
#: per-row interval, *not* adjusted for the rows tested together, whereas the decision
#: is (gatekeeping over the comparison, alpha spent over confirm's looks).
CI_LEVEL = 0.95


@dataclass(frozen=True)
class Gate:
    """What gates a PR, per axis (recorded in ``settings["gate"]``).

    Attributes:
        time: ``confirmed`` (a slower time the rounds confirmed; the default), ``slower``
            (any decided slower time, single run included) or ``never``.
        work: ``undecided`` (more work where the time could not be decided; the
            default), ``more`` (any more work) or ``never``.
    """

    time: str = "confirmed"
    work: str = "undecided"

    def to_json(self) -> dict[str, str]:
        return {"time": self.time, "work": self.work}

    @classmethod
    def from_json(cls, data: Any) -> Gate:
        """The recorded policy; the default for a document without one (or a bad one)."""
        if not isinstance(data, Mapping):
            return cls()
        t, w = data.get("time"), data.get("work")
        return cls(
            time=t if t in TIME_GATES else cls.time,
            work=w if w in WORK_GATES else cls.work,
        )

    def fires(self, state: RowState, *, total: bool) -> str:
        """The rule ``state`` fires (empty: none). Work rules fire on workload totals; "the
        time could not be decided" includes a slower time the rounds did not confirm."""
        if state.time == "slower" and (
            self.time == "slower" or (self.time == "confirmed" and state.confirmed)
        ):
            return GATE_RULES[("time", self.time)]
        undecided = state.time in ("undecided", "none") or (
            state.time == "slower" and not state.confirmed
        )
        if (
            total
            and state.work == "more"
            and (self.work == "more" or (self.work == "undecided" and undecided))
        ):
            return GATE_RULES[("work", self.work)]
        return ""


def _sums(changes: Sequence[WorkChange], what: str) -> tuple[float, float] | None:
    """Base and head totals of ``what`` (bytes/flops) over the ops that know it."""
    known = [
        w
        for w in changes
        if getattr(w, f"{what}_base") is not None or getattr(w, f"{what}_head") is not None
    ]
    if not known:
        return None
    b = sum(getattr(w, f"{what}_base") or 0.0 for w in known)
    h = sum(getattr(w, f"{what}_head") or 0.0 for w in known)
    return b, h


def _known(w: WorkChange) -> bool:
    return any(v is not None for v in (w.bytes_base, w.bytes_head, w.flops_base, w.flops_head))


def carried_direction(changes: Sequence[WorkChange]) -> WorkAxis:
    """The work axis of a set of op changes (module doc).

    ``more``/``less`` when the bytes and FLOPs moved by the ops that carry them move one
    way (one rises or falls, the other stays or follows), an added/removed carrying op
    counting with its bytes and FLOPs; ``different`` when they move both ways, or when
    only ops that carry no work (views, aliases, allocations:
    :func:`neuronasv.measure.opnames.carries_work`, the definition the cause sentences
    use too) changed. Without any
    cost estimate (no roofline) the calls decide, as :func:`config_directions` does.
    """
    if not changes:
        return "same"
    if not any(_known(w) for w in changes):
        d = config_directions(changes).get(changes[0].config, "mixed")
        return "different" if d == "mixed" else d
    carriers = [w for w in changes if carries_work(w)]
    signs = set()
    for what in ("bytes", "flops"):
        s = _sums(carriers, what)
        if s is None or math.isclose(s[0], s[1], rel_tol=1e-9, abs_tol=1e-12):
            continue
        signs.add(1 if s[1] > s[0] else -1)
    if signs == {1}:
        return "more"
    if signs == {-1}:
        return "less"
    return "different"


def shown_change(ratio: float) -> float:
    """The Δ as people read it (``+0.0 %`` is 0): the sign a time word must agree with."""
    return float(format_delta_pct(ratio).split()[0])


def ci_beside_time(f: Finding) -> Literal["decision", "unadjusted", "beyond zero"]:
    """How the CI a row shows stands beside its time word (the one rule every view uses).

    ``decision``: nothing to say — a decided time (slower/faster: the adjusted test
    rejected, so its interval at the decision's level excludes zero as the per-row one
    does), or an interval that includes zero (as displayed), which the adjusted interval,
    wider still, does too. ``unadjusted``: the time is not decided although the per-row
    :data:`CI_LEVEL` interval excludes zero — the decision was made at the adjusted level
    (or the rounds disagreed), so the row must say which level its interval is at.
    ``beyond zero``: the time is within the minimum effect but its interval excludes
    zero — a real change too small to matter, not noise.
    """
    st = f.state
    if st is None or st.time not in ("undecided", "noise"):
        return "decision"
    if f.ci_low is None or f.ci_high is None:
        return "decision"
    lo, hi = shown_change(f.ci_low), shown_change(f.ci_high)
    if lo <= 0.0 <= hi:
        return "decision"
    return "unadjusted" if st.time == "undecided" else "beyond zero"


def _time(f: Finding) -> TimeAxis:
    if f.verdict in ("new", "removed", "failed") or f.ratio is None or not math.isfinite(f.ratio):
        return "none"
    if is_exact(f.unit):  # an instruction count: exact work, no time was measured
        return "none"
    timing = f.timing if f.basis == "work" else f.verdict
    if f.confirmed is False:
        timing = "noisy"  # the rounds did not reproduce it
    shown = shown_change(f.ratio)
    if timing == "regression" and shown > 0:
        return "slower"
    if timing == "improvement" and shown < 0:
        return "faster"
    if timing == "unchanged":
        return "noise"
    return "undecided"


def row_state(
    f: Finding, changes: Sequence[WorkChange], *, evidence: bool, rounds: bool, gate: Gate
) -> RowState:
    """The state of one row.

    Args:
        f: the finding.
        changes: the work changes of its series (a total: its configuration's; an op: its
            own).
        evidence: whether work was compared for its configuration at all.
        rounds: whether the row's figures come from interleaved rounds (a comparison
            of rounds, or a row ``confirm`` re-measured).
        gate: the policy.
    """
    work: WorkAxis = carried_direction(changes) if evidence else "unknown"
    time = _time(f)
    confirmed = time in ("slower", "faster") and f.confirmed is True and f.basis == "timing"
    source: Literal["rounds", "first run"] = "rounds" if rounds else "first run"
    state = RowState(work=work, time=time, confirmed=confirmed, source=source)
    if f.acknowledged is not None:
        return state
    return replace(state, gate=gate.fires(state, total=f.series.op is None))


def _index(
    work: Iterable[WorkChange],
) -> tuple[dict[_Config, list[WorkChange]], dict[tuple[_Config, str], WorkChange]]:
    by_config: dict[_Config, list[WorkChange]] = {}
    by_op: dict[tuple[_Config, str], WorkChange] = {}
    for w in work:
        by_config.setdefault(w.config, []).append(w)
        by_op[(w.config, w.op)] = w
    return by_config, by_op


def with_states(doc: FindingsDocument, gate: Gate | None = None) -> FindingsDocument:
    """``doc`` with every finding's :class:`RowState` (and ``settings["gate"]``) set.

    A withheld document (unhealthy device) keeps its states but no row fires the gate.
    A history document's findings (the newest commit against its parent) get theirs too.
    """
    policy = gate or Gate.from_json(doc.settings.get("gate"))
    by_config, by_op = _index(doc.work)
    confirmed_run = "confirm" in doc.settings
    rounds = int(doc.settings.get("rounds", 0) or 0) >= 2 and not confirmed_run
    counts = _instruction_counts(doc.findings)
    out = []
    for f in doc.findings:
        s = f.series
        key: _Config = (s.workload, s.shape, s.dtype)
        if s.op is None:
            changes = by_config.get(key, [])
        else:
            hit = by_op.get((key, s.op))
            changes = [] if hit is None else [hit]
        remeasured = rounds or f.from_rounds or (confirmed_run and f.confirmed is not None)
        state = row_state(
            f, changes, evidence=s.workload is not None, rounds=remeasured, gate=policy
        )
        if doc.withheld is not None:
            state = replace(state, gate="")
        exact = counts.get((key, s.op))
        if exact is not None and state.time in ("undecided", "noise") and not is_exact(f.unit):
            state = replace(state, instr_base=exact[0], instr_head=exact[1])
        out.append(replace(f, state=state))
    return replace(doc, findings=tuple(out), settings={**doc.settings, "gate": policy.to_json()})


def _instruction_counts(
    findings: Iterable[Finding],
) -> dict[tuple[_Config, str | None], tuple[float, float]]:
    """``{(configuration, op): (base, head)}`` of the judged instruction counts (a count
    not deterministic on either side is ``noisy`` and says nothing)."""
    out: dict[tuple[_Config, str | None], tuple[float, float]] = {}
    for f in findings:
        judged = f.verdict in ("regression", "improvement", "unchanged")
        if is_exact(f.unit) and judged and f.base is not None and f.head is not None:
            s = f.series
            out[((s.workload, s.shape, s.dtype), s.op)] = (f.base, f.head)
    return out


def ensure_states(doc: FindingsDocument) -> FindingsDocument:
    """``doc`` with states, derived once for documents written before they existed."""
    if all(f.state is not None for f in doc.findings):
        return doc
    return with_states(doc)


def fired_rules(findings: Iterable[Finding]) -> dict[str, int]:
    """``{rule: rows}`` of the gate rules the rows fire, in :data:`GATE_RULES` order."""
    counts: dict[str, int] = {}
    for f in findings:
        if f.state is not None and f.state.gate:
            counts[f.state.gate] = counts.get(f.state.gate, 0) + 1
    order = list(GATE_RULES.values())
    return {r: counts[r] for r in sorted(counts, key=order.index)}
