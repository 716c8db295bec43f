"""Causes, not series: group a comparison's findings by what changed (pure, no I/O).

One code change shows up in many series: every shape and dtype of a workload, its total
and several ops, and often several workloads (an attention and the transformer block that
contains it). A reviewer wants one line per *cause*:

- **work causes** — configurations (workload, shape, dtype) whose exact work changed
  (:mod:`neuronasv.analyse.evidence`) and that share a change (the same op, the same
  kind, the same direction): connected configurations form one cause. Within a workload
  any shared change connects; across workloads only a shared change of an op that
  carries work (not a view, alias, stride or allocation helper, :func:`is_helper`) does,
  so the attention replaced inside a block is one cause listing both workloads, while
  two workloads that each gained an ``aten::empty`` call stay apart;
- **timing causes** — configurations of one workload whose total (or an op) moved with no
  work change, grouped by direction (a slower kernel, a library, the machine);
- plain asv benchmarks that moved: one timing cause per benchmark.

A work cause's ops are in order of weight (:func:`op_order`): ops that carry bytes, FLOPs
and time first (removed and new ones first, then by the bytes, FLOPs and time they moved:
the exact work first, so the order is the same on every run), helper ops last — the
order the cause sentence reads them in.

A cause's direction comes from its totals' states (:attr:`RowState.direction
<neuronasv.model.RowState.direction>`: a decided time first, else the exact axes):
``regression`` if any total of it moved the worse way, else ``improvement`` if any moved
the better way; a work cause whose totals have no direction takes it from its changed
ops; else ``unconfirmed`` (a certain work change whose time did not move beyond the noise
— still worth a reviewer's line).

Causes are computed here once, stored in the findings document (``doc.causes``), and
every view renders them from there.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from neuronasv.keys import Config
from neuronasv.measure.opnames import carries_work
from neuronasv.model import Cause, Finding, FindingsDocument, SeriesId, WorkChange
from neuronasv.model.profile import module_series_path
from neuronasv.units import is_exact

__all__ = ["find_causes", "is_helper", "op_order", "with_causes", "work_key"]

#: A row's direction (:attr:`RowState.direction`) as a cause's.
_WORD = {"worse": "regression", "better": "improvement"}
WorkKey = tuple[str, str, int]
_ORDER = {"regression": 0, "unconfirmed": 1, "improvement": 2}


def work_key(w: WorkChange) -> WorkKey:
    """(op, kind, direction) — what two configurations must share to be one cause."""
    if w.kind == "calls":
        sign = _sign((w.calls_head or 0.0) - (w.calls_base or 0.0))
    elif w.kind in ("shapes", "bytes") and w.bytes_base is not None and w.bytes_head is not None:
        sign = _sign(w.bytes_head - w.bytes_base)
    else:
        sign = 0
    return (w.op, w.kind, sign)


def is_helper(w: WorkChange) -> bool:
    """A view, alias, stride or allocation op (or a wrapper whose child carries the
    work): the op carries no work (:func:`neuronasv.measure.opnames.carries_work`, the
    one definition the row states use too). A cause sentence counts such ops instead of
    naming them; they never join workloads into one cause."""
    return not carries_work(w)


def _time_moved(w: WorkChange) -> float:
    return abs((w.time_head or 0.0) - (w.time_base or 0.0))


def _work_moved(w: WorkChange, what: str) -> float:
    return abs((getattr(w, f"{what}_head") or 0.0) - (getattr(w, f"{what}_base") or 0.0))


def op_order(work: Iterable[WorkChange]) -> tuple[str, ...]:
    """The changed ops by weight: ops that carry work before helpers; among them removed
    ops first, then new ones, then the rest, each by bytes moved, FLOPs moved, time moved
    and the number of configurations that show the change (summed over each op's
    changes)."""
    by_op: dict[str, list[WorkChange]] = {}
    for w in work:
        by_op.setdefault(w.op, []).append(w)

    def weight(op: str) -> tuple[bool, int, float, float, float, int, str]:
        ws = by_op[op]
        kinds = {w.kind for w in ws}
        return (
            all(is_helper(w) for w in ws),
            0 if kinds == {"removed"} else 1 if kinds == {"new"} else 2,
            -sum(_work_moved(w, "bytes") for w in ws),
            -sum(_work_moved(w, "flops") for w in ws),
            -sum(_time_moved(w) for w in ws),
            -len(ws),
            op,
        )

    return tuple(sorted(by_op, key=weight))


def _sign(x: float) -> int:
    return (x > 0) - (x < 0)


def _config(s: SeriesId) -> Config | None:
    if s.workload is None or s.shape is None or s.dtype is None:
        return None
    return Config(s.workload, s.shape, s.dtype)


def _live(f: Finding) -> bool:
    """A row that stands: not acknowledged."""
    return f.acknowledged is None


def _word(f: Finding) -> str | None:
    """``regression``/``improvement`` of a live row that moved (its state's direction)."""
    d = f.state.direction if _live(f) else None
    return None if d is None else _WORD[d]


def _moved(f: Finding) -> bool:
    return _word(f) is not None


def _direction(totals: Sequence[Finding], ops: Sequence[Finding] = ()) -> str:
    """From the totals' directions; when no total has one, from the changed ops'."""
    for group in (totals, ops):
        words = {_word(f) for f in group}
        if "regression" in words:
            return "regression"
        if "improvement" in words:
            return "improvement"
    return "unconfirmed"


def _worst(totals: Sequence[Finding]) -> float:
    rs = [abs(math.log(f.ratio)) for f in totals if f.ratio and f.ratio > 0]
    return max(rs, default=0.0)


def _components(configs: Sequence[Config], keys: dict[Config, set[tuple[object, ...]]]):
    """Connected groups of configurations that share a key (union-find), in input order."""
    parent = {c: c for c in configs}

    def find(c: Config) -> Config:
        while parent[c] != c:
            parent[c] = parent[parent[c]]
            c = parent[c]
        return c

    owner: dict[tuple[object, ...], Config] = {}
    for c in configs:
        for k in sorted(keys[c], key=repr):
            if k in owner:
                parent[find(c)] = find(owner[k])
            else:
                owner[k] = c
    groups: dict[Config, list[Config]] = {}
    for c in configs:
        groups.setdefault(find(c), []).append(c)
    return list(groups.values())


@dataclass
class _Index:
    """One comparison's findings and work changes by configuration."""

    work: dict[Config, list[WorkChange]] = field(default_factory=dict)
    totals: dict[Config, Finding] = field(default_factory=dict)
    ops: dict[Config, list[Finding]] = field(default_factory=dict)
    plain: list[Finding] = field(default_factory=list)

    @classmethod
    def of(cls, findings: Iterable[Finding], work: Iterable[WorkChange]) -> _Index:
        ix = cls()
        for w in work:
            ix.work.setdefault(w.config, []).append(w)
        for f in findings:
            c = _config(f.series)
            if c is None:
                ix.plain.append(f)
            elif f.series.op is None:
                ix.totals[c] = f
            elif module_series_path(f.series.op) is None:  # modules are not ops (their
                ix.ops.setdefault(c, []).append(f)  # chain shows on the total)
        return ix


@dataclass(frozen=True)
class _Ranked:
    cause: Cause
    members: tuple[Finding, ...]

    @property
    def key(self) -> tuple[int, float, str]:
        return (_ORDER[self.cause.direction], -_worst(self.members), self.cause.workload)


def _change_keys(c: Config, changes: Iterable[WorkChange]) -> set[tuple[object, ...]]:
    """A change of an op that carries work joins configurations of any workload; a
    helper's change only configurations of the same workload."""
    return {work_key(w) if not is_helper(w) else (c[0], *work_key(w)) for w in changes}


def _work_groups(ix: _Index) -> list[list[Config]]:
    configs = sorted(ix.work)
    keys = {c: _change_keys(c, ix.work[c]) for c in configs}
    return _components(configs, keys)


def _work_cause(ix: _Index, group: Sequence[Config]) -> _Ranked:
    members = [ix.totals[c] for c in group if c in ix.totals]
    worst_of: dict[str, float] = {}
    for c in group:
        t = ix.totals.get(c)
        worst_of[c[0]] = max(worst_of.get(c[0], 0.0), _worst([t]) if t else 0.0)
    workloads = sorted(worst_of, key=lambda wl: (-worst_of[wl], wl))
    rank = {wl: i for i, wl in enumerate(workloads)}
    ordered = sorted(group, key=lambda c: (rank[c[0]], c[1], c[2]))
    changes = [w for c in ordered for w in ix.work[c]]
    changed = {(w.workload, w.shape, w.dtype, w.op) for w in changes}
    op_findings = [
        f
        for c in ordered
        for f in ix.ops.get(c, [])
        if (f.series.workload, f.series.shape, f.series.dtype, f.series.op) in changed
    ]
    primary = workloads[0]
    cause = Cause(
        kind="work",
        workload=primary,
        direction=_direction(members, op_findings),  # type: ignore[arg-type]
        ops=op_order(changes),
        configs=tuple((c[1], c[2]) for c in ordered if c[0] == primary),
        totals=tuple(ix.totals[c].series for c in ordered if c in ix.totals),
        where=tuple(ordered) if len(workloads) > 1 else (),
    )
    return _Ranked(cause, tuple(members))


def _timing_groups(ix: _Index) -> dict[tuple[str, str], list[Config]]:
    """Configurations without a work change whose total (else first moved op) moved, keyed
    by workload and direction word."""
    timing: dict[tuple[str, str], list[Config]] = {}
    for c in sorted(set(ix.totals) | set(ix.ops)):
        if c in ix.work:
            continue
        t = ix.totals.get(c)
        moved = [f for f in ix.ops.get(c, []) if _moved(f)]
        if t is not None and _moved(t):
            timing.setdefault((c[0], _word(t) or ""), []).append(c)
        elif moved:
            timing.setdefault((c[0], _word(moved[0]) or ""), []).append(c)
    return timing


def _ops_by_motion(ix: _Index, configs: Sequence[Config], verdict: str) -> tuple[str, ...]:
    """The ops of ``configs`` that moved in direction ``verdict``, largest summed absolute
    move first (ties by name)."""
    moved_by: dict[str, float] = {}
    for c in configs:
        for f in ix.ops.get(c, []):
            if _word(f) == verdict:
                op = f.series.op or "?"
                moved_by[op] = moved_by.get(op, 0.0) + abs((f.head or 0.0) - (f.base or 0.0))
    return tuple(sorted(moved_by, key=lambda o: (-moved_by[o], o)))


def _timing_causes(ix: _Index) -> list[_Ranked]:
    """Configurations without a work change whose total or ops moved, per workload and
    direction; the ops that moved most first."""
    out = []
    for (wl, verdict), configs in sorted(_timing_groups(ix).items()):
        members = tuple(ix.totals[c] for c in configs if c in ix.totals)
        cause = Cause(
            kind="timing",
            workload=wl,
            direction=verdict,  # type: ignore[arg-type]
            ops=_ops_by_motion(ix, configs, verdict),
            configs=tuple((c[1], c[2]) for c in configs),
            totals=tuple(f.series for f in members),
        )
        out.append(_Ranked(cause, members))
    return out


def _plain_causes(ix: _Index) -> list[_Ranked]:
    """Plain asv benchmarks (no workload identity): one cause per benchmark that moved."""
    plain: dict[tuple[str, str], list[Finding]] = {}
    for f in ix.plain:
        if _moved(f):
            plain.setdefault((f.series.benchmark, _word(f) or ""), []).append(f)
    return [
        _Ranked(
            Cause(
                kind="timing",
                workload=bench,
                direction=verdict,  # type: ignore[arg-type]
                totals=tuple(f.series for f in members),
            ),
            tuple(members),
        )
        for (bench, verdict), members in sorted(plain.items())
    ]


def find_causes(findings: Sequence[Finding], work: Iterable[WorkChange]) -> tuple[Cause, ...]:
    """Group ``findings`` (one comparison) into causes, worst first (see module docstring).

    Exact counts are left out: their op changes enter as work changes, and a cause's
    totals are the device-time rows (an ``instr_total`` of the same configuration would
    otherwise take the device-time total's place)."""
    ix = _Index.of([f for f in findings if not is_exact(f.unit)], work)
    ranked = [_work_cause(ix, g) for g in _work_groups(ix)]
    ranked += _timing_causes(ix)
    ranked += _plain_causes(ix)
    ranked.sort(key=lambda r: r.key)
    return tuple(r.cause for r in ranked)


def with_causes(doc: FindingsDocument) -> FindingsDocument:
    """``doc`` with its causes regrouped from its rows' states and work changes (after
    anything that changed a state: the comparison, the confirmation)."""
    return replace(doc, causes=find_causes(doc.findings, doc.work))
