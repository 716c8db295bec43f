"""Causes, not series: group a comparison's findings by what changed (pure, no I/O).

One code change shows up in many series: every shape and dtype of a workload, its total
and several ops. A reviewer wants one line per *cause*:

- **work causes** — configurations (shape, dtype) of one workload whose exact work
  changed (:mod:`neuronasv.analyse.evidence`) and that share at least one change (the same
  op, the same kind, the same direction): connected configurations form one cause, so a
  change that touches ``aten::add`` at every shape is one cause even when a dtype adds a
  cast of its own;
- **timing causes** — configurations of one workload whose total (or an op) moved with no
  work change, grouped by direction (a slower kernel, a library, the machine);
- plain asv benchmarks that moved: one timing cause per benchmark.

A cause's direction comes from its totals' verdicts: ``regression`` if any total of it
regressed, else ``improvement`` if any improved; a work cause whose totals have no verdict
takes it from its changed ops; else ``unconfirmed`` (a certain work change whose time did
not move beyond the noise — still worth a reviewer's line).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from neuronasv.model import Cause, Finding, SeriesId, WorkChange
from neuronasv.model.profile import module_series_path

__all__ = ["MOVED_VERDICTS", "find_causes", "work_key"]

MOVED_VERDICTS = ("regression", "improvement")
Config = tuple[str, str, str]


def work_key(w: WorkChange) -> tuple[str, str, int]:
    """(op, kind, direction) — what two configurations must share to be one cause."""
    if w.kind == "calls":
        sign = _sign((w.calls_head or 0.0) - (w.calls_base or 0.0))
    elif w.kind in ("shapes", "bytes") and w.bytes_base is not None and w.bytes_head is not None:
        sign = _sign(w.bytes_head - w.bytes_base)
    else:
        sign = 0
    return (w.op, w.kind, sign)


def _sign(x: float) -> int:
    return (x > 0) - (x < 0)


def _config(s: SeriesId) -> Config | None:
    if s.workload is None or s.shape is None or s.dtype is None:
        return None
    return (s.workload, s.shape, s.dtype)


def _live(f: Finding) -> bool:
    """A verdict that stands: not acknowledged, not refuted by a re-measurement."""
    return f.acknowledged is None and f.confirmed is not False


def _direction(totals: Sequence[Finding], ops: Sequence[Finding] = ()) -> str:
    """From the totals' verdicts; when no total has one, from the changed ops' verdicts."""
    for group in (totals, ops):
        verdicts = {f.verdict for f in group if _live(f)}
        if "regression" in verdicts:
            return "regression"
        if "improvement" in verdicts:
            return "improvement"
    return "unconfirmed"


def _worst(totals: Sequence[Finding]) -> float:
    rs = [abs(math.log(f.ratio)) for f in totals if f.ratio and f.ratio > 0]
    return max(rs, default=0.0)


def _components(configs: Sequence[Config], keys: dict[Config, set[tuple[str, str, int]]]):
    """Connected groups of configurations that share a work key (union-find)."""
    parent = {c: c for c in configs}

    def find(c: Config) -> Config:
        while parent[c] != c:
            parent[c] = parent[parent[c]]
            c = parent[c]
        return c

    owner: dict[tuple[str, str, int], Config] = {}
    for c in configs:
        for k in sorted(keys[c]):
            if k in owner:
                parent[find(c)] = find(owner[k])
            else:
                owner[k] = c
    groups: dict[Config, list[Config]] = {}
    for c in configs:
        groups.setdefault(find(c), []).append(c)
    return list(groups.values())


def find_causes(findings: Sequence[Finding], work: Iterable[WorkChange]) -> tuple[Cause, ...]:
    """Group ``findings`` (one comparison) into causes, worst first (see module docstring)."""
    by_config: dict[Config, list[WorkChange]] = {}
    for w in work:
        by_config.setdefault(w.config, []).append(w)
    totals: dict[Config, Finding] = {}
    ops_of: dict[Config, list[Finding]] = {}
    for f in findings:
        c = _config(f.series)
        if c is None:
            continue
        if f.series.op is None:
            totals[c] = f
        elif module_series_path(f.series.op) is None:  # modules are not ops (their chain
            ops_of.setdefault(c, []).append(f)  # shows on the total: report/causes.py)

    ranked: list[tuple[tuple[int, float, str], Cause]] = []

    def add(cause: Cause, members: Sequence[Finding]) -> None:
        order = {"regression": 0, "unconfirmed": 1, "improvement": 2}[cause.direction]
        ranked.append(((order, -_worst(members), cause.workload), cause))

    # Work causes: per workload, configurations connected by a shared change.
    workloads = sorted({c[0] for c in by_config})
    for wl in workloads:
        configs = sorted(c for c in by_config if c[0] == wl)
        keys = {c: {work_key(w) for w in by_config[c]} for c in configs}
        for group in _components(configs, keys):
            group.sort(key=lambda c: (c[1], c[2]))
            changes = [w for c in group for w in by_config[c]]
            weight: dict[str, float] = {}
            spread: dict[str, int] = {}
            for w in changes:
                delta = abs((w.time_head or 0.0) - (w.time_base or 0.0))
                weight[w.op] = weight.get(w.op, 0.0) + delta
                spread[w.op] = spread.get(w.op, 0) + 1
            # Most time moved first; then the change seen at most configurations.
            ops = tuple(sorted(weight, key=lambda o: (-weight[o], -spread[o], o)))
            members = [totals[c] for c in group if c in totals]
            changed = {(w.shape, w.dtype, w.op) for w in changes}
            op_findings = [
                f
                for c in group
                for f in ops_of.get(c, [])
                if (f.series.shape, f.series.dtype, f.series.op) in changed
            ]
            add(
                Cause(
                    kind="work",
                    workload=wl,
                    direction=_direction(members, op_findings),  # type: ignore[arg-type]
                    ops=ops,
                    configs=tuple((c[1], c[2]) for c in group),
                    totals=tuple(f.series for f in members),
                ),
                members,
            )

    # Timing causes: configurations without a work change whose total or ops moved.
    timing: dict[tuple[str, str], list[Config]] = {}
    for c in sorted(set(totals) | set(ops_of)):
        if c in by_config:
            continue
        t = totals.get(c)
        moved = [f for f in ops_of.get(c, []) if f.verdict in MOVED_VERDICTS and _live(f)]
        if t is not None and t.verdict in MOVED_VERDICTS and _live(t):
            timing.setdefault((c[0], t.verdict), []).append(c)
        elif moved:
            timing.setdefault((c[0], moved[0].verdict), []).append(c)
    for (wl, verdict), configs in sorted(timing.items()):
        members = [totals[c] for c in configs if c in totals]
        movers = [
            f
            for c in configs
            for f in ops_of.get(c, [])
            if f.verdict == verdict and _live(f)
        ]
        moved_by: dict[str, float] = {}
        for f in movers:
            op = f.series.op or "?"
            moved_by[op] = moved_by.get(op, 0.0) + abs((f.head or 0.0) - (f.base or 0.0))
        add(
            Cause(
                kind="timing",
                workload=wl,
                direction=verdict,  # type: ignore[arg-type]
                ops=tuple(sorted(moved_by, key=lambda o: (-moved_by[o], o))),
                configs=tuple((c[1], c[2]) for c in configs),
                totals=tuple(f.series for f in members),
            ),
            members,
        )

    # Plain asv benchmarks (no workload identity): one cause per benchmark that moved.
    plain: dict[tuple[str, str], list[Finding]] = {}
    for f in findings:
        if _config(f.series) is None and f.verdict in MOVED_VERDICTS and _live(f):
            plain.setdefault((f.series.benchmark, f.verdict), []).append(f)
    for (bench, verdict), members in sorted(plain.items()):
        add(
            Cause(
                kind="timing",
                workload=bench,
                direction=verdict,  # type: ignore[arg-type]
                totals=tuple(f.series for f in members),
            ),
            members,
        )
    ranked.sort(key=lambda rc: rc[0])
    return tuple(c for _, c in ranked)
