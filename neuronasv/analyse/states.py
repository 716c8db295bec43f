"""Row states, the gate, and series states: decided once, here (pure, light: no scipy).

**A row's state** (:class:`~neuronasv.model.RowState`, stored as ``Finding.state``) says
three things that must not be mixed, each in its own words (:mod:`neuronasv.report.rowwords`):

- **work** — exact, from the untimed shapes pass (:mod:`neuronasv.analyse.evidence`):
  ``more``/``less`` when the bytes or FLOPs moved by ops that carry them rose/fell (or an
  op was added/removed), ``different`` when the work changed without one direction — or
  only calls of view, alias or no-op conversion ops (ops with no bytes and no FLOPs)
  changed —, ``same`` with no work change, ``unknown`` for a series without evidence (plain
  asv benchmarks, and exact metrics' rows: their axis is the count);
- **exact** — an exact metric's value (:mod:`neuronasv.analyse.exact`): an exact row's
  own value, and on a device-time row the same series' count of
  :data:`~neuronasv.metrics.BESIDE_TIME`;
- **time** — measured, decided by the test in :mod:`neuronasv.analyse.pairwise` (and by
  the rounds in :mod:`neuronasv.analyse.confirm`): ``slower``/``faster`` only where the
  test decided *and* the printed Δ has that sign, ``noise`` where the change is within the
  minimum effect, ``undecided`` otherwise, ``none`` without a Δ. ``confirmed`` only where
  the interleaved rounds confirmed that time.

The **gate** (``--fail-on``, the commit status) is a policy per axis (:class:`Gate`);
each row records the rule it fires, so every view says which rule fired without deciding
anything itself. :func:`with_states` is called at the end of ``compare`` and of
``confirm``; a findings document always carries its states (schema 4 requires them), so
no reader derives them again.

**A series' state** (:func:`series_state`, the site and ``neuronasv regressions``) comes
from its change points and its newest-commit row. States, most severe first
(:data:`STATES`): ``regression`` (an open, unacknowledged change-point regression),
``confirmed`` (the newest commit is slower than its parent, confirmed by interleaved
rounds), ``suspect`` (slower, not re-measured), ``more-work`` (more bytes/FLOPs, the time
not decided slower), each exact metric's ``state_more`` (more of it, exact, with no more
work and the time not decided slower), ``failed``, ``acknowledged``, ``improved``
(latest change point an improvement, or a confirmed faster time), each exact metric's
``state_less`` (a series of it whose own value fell: its own words, never a time word),
``new
(only the newest commit has it), ``ok``. Noise is not a state: it is a level shown
beside the state.

Kept apart from :mod:`~neuronasv.analyse.newest` because the site imports it: importing
the comparison (scipy.stats) would cost the publish command seconds and ~70 MB.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from neuronasv.analyse.evidence import config_directions
from neuronasv.format import format_delta_pct
from neuronasv.keys import SeriesConfig as _Config
from neuronasv.measure.opnames import carries_work
from neuronasv.metrics import BESIDE_TIME, EXACT, by_unit
from neuronasv.model import ChangePoint, Finding, FindingsDocument, RowState, WorkChange
from neuronasv.model.estimate import ExactAxis, GateRule, WorkAxis
from neuronasv.model.findings import COUNT_KIND
from neuronasv.units import is_exact

__all__ = [
    "ALARMS",
    "CI_LEVEL",
    "EXACT_LESS",
    "EXACT_MORE",
    "FLAGGED",
    "GATE_RULES",
    "MIN_POINTS",
    "STATES",
    "TIME_GATES",
    "WORK_GATES",
    "Coverage",
    "Gate",
    "carried_direction",
    "change_text",
    "ci_beside_time",
    "coverage_of",
    "fired_rules",
    "newest_state",
    "series_state",
    "shown_change",
    "time_axis",
    "with_states",
]

#: Fewer points than this and the change-point detector (:func:`changepoints.detect`)
#: does not run: two a side for its t-test.
MIN_POINTS = 4

#: Each exact metric's states (:mod:`neuronasv.metrics`): its own value rose / fell.
EXACT_MORE: tuple[str, ...] = tuple(m.state_more for m in EXACT)
EXACT_LESS: tuple[str, ...] = tuple(m.state_less for m in EXACT)
STATES = (
    "regression",
    "confirmed",
    "suspect",
    "more-work",
    *EXACT_MORE,
    "failed",
    "acknowledged",
    "improved",
    *EXACT_LESS,
    "new",
    "ok",
)
#: States someone has to act on (the index's "regressions only" filter, the text summary).
ALARMS = frozenset({"regression", "confirmed", "suspect", "more-work", *EXACT_MORE})
#: Newest-commit states that something moved at the head (the site's verdict line, the
#: regressions page's table, the commit details, the marks on a chart).
FLAGGED: tuple[str, ...] = ("confirmed", "suspect", "more-work", *EXACT_MORE, "failed")

#: ``--fail-on-time``: what a slower time must be to fire.
TIME_GATES = ("confirmed", "slower", "never")
#: ``--fail-on-work``: when more work (or, where the work did not change, more of an exact
#: metric) fires.
WORK_GATES = ("undecided", "more", "never")

#: The rule names rows record and headlines quote (the gate's own words: each names its
#: axis).
GATE_RULES: dict[tuple[str, str], GateRule] = {
    ("time", "confirmed"): "confirmed slower time",
    ("time", "slower"): "slower time",
    ("work", "undecided"): "more work, time undecided",
    ("work", "more"): "more work",
    **{
        (m.name, policy): f"{m.gate}, time undecided" if policy == "undecided" else m.gate
        for m in EXACT
        for policy in ("undecided", "more")
    },
}


#: The confidence of the CI a row shows (the bootstrap's and the rounds test's): a
#: per-row interval, *not* adjusted for the rows tested together, whereas the decision
#: is (gatekeeping over the comparison, alpha spent over confirm's looks).
CI_LEVEL = 0.95


# --------------------------------------------------------------------------- the gate


@dataclass(frozen=True)
class Gate:
    """What gates a PR, per axis (recorded in ``settings["gate"]``).

    Attributes:
        time: ``confirmed`` (a slower time the rounds confirmed; the default), ``slower``
            (any decided slower time, single run included) or ``never``.
        work: ``undecided`` (more work where the time could not be decided; the
            default), ``more`` (any more work) or ``never``. The exact axes share it: a
            total whose work did not grow but whose exact count did fires the same rule
            on its metric's axis.
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

    def fires(self, state: RowState, *, total: bool) -> GateRule:
        """The rule ``state`` fires (empty: none). Exact rules fire on workload totals; "the
        time could not be decided" includes a slower time the rounds did not confirm."""
        if state.time == "slower" and (
            self.time == "slower" or (self.time == "confirmed" and state.confirmed)
        ):
            return GATE_RULES[("time", self.time)]
        undecided = state.time in ("undecided", "none") or (
            state.time == "slower" and not state.confirmed
        )
        if not total or self.work == "never" or (self.work == "undecided" and not undecided):
            return ""
        if state.work == "more":
            return GATE_RULES[("work", self.work)]
        if state.exact == "more" and state.work not in ("less", "different"):
            return GATE_RULES[(BESIDE_TIME.name, self.work)]
        return ""


def fired_rules(findings: Iterable[Finding]) -> dict[str, int]:
    """``{rule: rows}`` of the gate rules the rows fire, in :data:`GATE_RULES` order."""
    counts: dict[str, int] = {}
    for f in findings:
        if f.state.gate:
            counts[f.state.gate] = counts.get(f.state.gate, 0) + 1
    order: dict[str, int] = {rule: i for i, rule in enumerate(GATE_RULES.values())}
    return {r: counts[r] for r in sorted(counts, key=lambda r: order.get(r, len(order)))}


# --------------------------------------------------------------------------- the axes


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
    use too) changed. Without any cost estimate (no roofline) the calls decide, as
    :func:`config_directions` does. Count changes are not work: they are the exact axis
    (:func:`with_states`).
    """
    changes = [w for w in changes if w.kind != COUNT_KIND]
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


def time_axis(
    outcome: Literal["slower", "faster", "noise", "undecided"], ratio: float | None
) -> Literal["slower", "faster", "noise", "undecided", "none"]:
    """A timing decision as the row's time axis: ``slower``/``faster`` only where the
    printed Δ has that sign (a decided +0.04 % reads ``+0.0 %``: not decided); ``none``
    without a finite ratio."""
    if ratio is None or not math.isfinite(ratio):
        return "none"
    if outcome == "slower" and shown_change(ratio) <= 0:
        return "undecided"
    if outcome == "faster" and shown_change(ratio) >= 0:
        return "undecided"
    return outcome


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
    if st.time not in ("undecided", "noise"):
        return "decision"
    ci = f.estimate.ci_against  # the interval the time was judged on (over a runner shift)
    if ci is None:
        return "decision"
    lo, hi = shown_change(ci[0]), shown_change(ci[1])
    if lo <= 0.0 <= hi:
        return "decision"
    return "unadjusted" if st.time == "undecided" else "beyond zero"


# --------------------------------------------------------------------------- row states


def _index(
    work: Iterable[WorkChange],
) -> tuple[dict[_Config, list[WorkChange]], dict[tuple[_Config, str], WorkChange]]:
    by_config: dict[_Config, list[WorkChange]] = {}
    by_op: dict[tuple[_Config, str], WorkChange] = {}
    for w in work:
        by_config.setdefault(w.config, []).append(w)
        by_op[(w.config, w.op)] = w
    return by_config, by_op


def _key(f: Finding) -> tuple[_Config, str | None]:
    s = f.series
    return s.config, s.op


def _row_state(
    f: Finding,
    changes: Sequence[WorkChange],
    counted: Finding | None,
    *,
    gate: Gate,
    withheld: bool,
) -> RowState:
    """The state of one row: the time and presence analyse decided, the work axis from
    its changes, the exact axis from its own value (an exact row) or its series' count
    (``counted``), and the gate rule it fires."""
    st = f.state
    metric = by_unit(f.unit)
    if metric is not None:  # an exact row: its own axis, no work words
        state = replace(st, work="unknown", time="none", gate="")
        # A beside-time metric's row fires nothing: its device-time row carries its axis
        # and fires there. A metric that no time row carries fires its own rule on its
        # workload total.
        if (
            metric.beside_time or f.series.op is not None or gate.work == "never"
            or st.exact != "more" or f.acknowledged is not None or withheld
        ):  # fmt: skip
            return state
        return replace(state, gate=GATE_RULES[(metric.name, "more")])
    work: WorkAxis = carried_direction(changes) if f.series.workload is not None else "unknown"
    instr: ExactAxis = "none"
    ib = ih = None
    if counted is not None and counted.state.presence == "both":
        instr = counted.state.exact
        # beside every time: a slower time whose counts are equal must say so (issue 39)
        if instr in ("more", "fewer", "same") and st.time != "none":
            ib, ih = counted.base, counted.head
    state = replace(st, work=work, exact=instr, exact_base=ib, exact_head=ih, gate="")
    if f.acknowledged is not None or withheld:
        return state
    return replace(state, gate=gate.fires(state, total=f.series.op is None))


def with_states(doc: FindingsDocument, gate: Gate | None = None) -> FindingsDocument:
    """``doc`` with every row's work and exact axes and gate rule set (and
    ``settings["gate"]``); the time axis, presence and confirmation are analyse's
    decisions already on each row.

    A withheld document (unhealthy device) keeps its states but no row fires the gate.
    A history document's findings (the newest commit against its parent) get theirs too.
    """
    policy = gate or Gate.from_json(doc.settings.get("gate"))
    by_config, by_op = _index(doc.work)
    counts = {
        _key(f): f for f in doc.findings if (m := by_unit(f.unit)) is not None and m.beside_time
    }
    out = []
    for f in doc.findings:
        cfg, op = _key(f)
        if op is None:
            changes = by_config.get(cfg, [])
        else:
            hit = by_op.get((cfg, op))
            changes = [] if hit is None else [hit]
        state = _row_state(
            f, changes, counts.get((cfg, op)), gate=policy, withheld=doc.withheld is not None
        )
        out.append(replace(f, state=state))
    return replace(doc, findings=tuple(out), settings={**doc.settings, "gate": policy.to_json()})


# --------------------------------------------------------------------------- series states


@dataclass(frozen=True)
class Coverage:
    """Whether the change-point detector could run on one machine's history.

    Attributes:
        machine: asv machine name.
        commits: commits with results on that machine.
        need: the fewest points the detector needs (:data:`MIN_POINTS`).
    """

    machine: str
    commits: int
    need: int = MIN_POINTS

    @property
    def ran(self) -> bool:
        return self.commits >= self.need

    @property
    def sentence(self) -> str:
        if self.ran:
            return f"change points over {self.commits} commits"
        return f"too few commits for change points (have {self.commits}, need {self.need})"

    def to_json(self) -> dict[str, Any]:
        return {
            "machine": self.machine,
            "commits": self.commits,
            "need": self.need,
            "ran": self.ran,
            "note": self.sentence,
        }

    @classmethod
    def from_json(cls, data: Any) -> Coverage | None:
        if not isinstance(data, Mapping):
            return None
        try:
            return cls(str(data["machine"]), int(data["commits"]), int(data["need"]))
        except (KeyError, TypeError, ValueError):
            return None


def coverage_of(doc: FindingsDocument) -> list[Coverage]:
    """The coverage recorded in a history document's settings (empty for older documents)."""
    raw = doc.settings.get("coverage")
    if not isinstance(raw, list):
        return []
    return [c for c in (Coverage.from_json(x) for x in raw) if c is not None]


def newest_state(f: Finding | None) -> str | None:
    """The state a newest-commit row gives on its own (None: nothing to say).

    From the row state analyse stored, axis by axis (:attr:`RowState.direction`):
    ``confirmed`` is a slower time the rounds confirmed, ``suspect`` a slower time from
    one run a side (over a runner's shift: only where the measured Δ rose too, since the
    site prints that Δ beside the badge), ``more-work`` more bytes/FLOPs whose time was
    not decided slower,
    an exact metric's ``state_more`` (more of it, exact) with no more work and the time
    not decided slower, ``improved`` a confirmed faster time, its ``state_less`` on a
    series of that metric whose value fell (its own axis: not a time word), ``new`` a
    series only the newest commit has (never ``ok``: it has no history to be ok against).
    """
    if f is None:
        return None
    st = f.state
    if st.presence == "failed":
        return "failed" if f.acknowledged is None else "acknowledged"
    if st.direction == "worse":
        if f.acknowledged is not None:
            return "acknowledged"
        # slower than the runner's shift but not as measured: the site prints the measured
        # Δ beside its badge, so no slower badge there (the comment says it, with its Δ)
        measured = f.estimate.shift is None or bool(f.ratio and shown_change(f.ratio) > 0)
        if st.time == "slower" and measured:
            return "confirmed" if st.confirmed else "suspect"
        if st.work == "more":
            return "more-work"
        return _exact_state(f)
    if st.direction == "better" and is_exact(f.unit) and st.exact == "fewer":
        return _exact_state(f)
    if st.direction == "better" and st.time == "faster" and st.confirmed:
        return "improved"
    if st.presence == "new":
        return "new"
    return None


def _exact_state(f: Finding) -> str | None:
    """The state of a row's exact axis: its own metric's (an exact row), else the count
    of :data:`~neuronasv.metrics.BESIDE_TIME` its device-time row carries."""
    metric = by_unit(f.unit) or BESIDE_TIME
    axis = f.state.exact
    return metric.state_more if axis == "more" else metric.state_less if axis == "fewer" else None


def series_state(cps: Sequence[ChangePoint], newest: Finding | None) -> str:
    """One series' state from its change points and its newest-commit row (see module)."""
    candidates = []
    if any(c.open and c.kind == "regression" and c.acknowledged is None for c in cps):
        candidates.append("regression")
    ns = newest_state(newest)
    if ns is not None:
        candidates.append(ns)
    if any(c.open and c.kind == "regression" and c.acknowledged is not None for c in cps):
        candidates.append("acknowledged")
    if cps and max(cps, key=lambda c: c.index).kind == "improvement":
        candidates.append("improved")
    return min(candidates, key=STATES.index) if candidates else "ok"


def change_text(f: Finding | None) -> str:
    """``+45 %`` for a row's Δ ("" when there is none): ``head / base - 1`` of its estimate."""
    if f is None or f.ratio is None or not math.isfinite(f.ratio):
        return ""
    return format_delta_pct(f.ratio)
