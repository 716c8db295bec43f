"""The former gatekeeping procedure, verbatim: the dense n x n graph builder and the
adjusted p-values by Bretz et al.'s update, one rejection at a time (its ``Graph`` and
update step ``_reject`` are unchanged in ``neuronasv.analyse.multitest``). The reference
``test_compact_graph_gives_the_old_dense_rejections`` checks the O(n) procedure against."""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence

import numpy as np

from neuronasv.analyse.multitest import (
    DEFAULT_BOOST,
    DEFAULT_LEAK,
    DEFAULT_OP_SHARE,
    Graph,
    _config,
    _reject,
)
from neuronasv.model import SeriesId


def hierarchy(
    series: Sequence[SeriesId],
    *,
    op_share: float = DEFAULT_OP_SHARE,
    leak: float = DEFAULT_LEAK,
    boost: Collection[tuple[str | None, str | None, str | None]] = (),
    boost_factor: float = DEFAULT_BOOST,
) -> Graph:
    """The totals-first graph over ``series`` (see the module docstring).

    Series without an op (workload totals, plain asv benchmarks) are totals; an op whose
    total is not among ``series`` is a total of its own. Totals of the configurations in
    ``boost`` (those whose exact work changed: fixed by the code, independent of the timing
    noise, so a valid prior weight) start with ``boost_factor`` times the alpha of the
    others. A rejected total passes half of what it passes on to the other totals of its
    workload (other shapes and dtypes of one change usually move together), half to its
    own ops.
    """
    if not 0.0 <= op_share < 1.0 or not 0.0 <= leak < 1.0:
        raise ValueError("op_share and leak must be in [0, 1)")
    n = len(series)
    parent: list[int | None] = [None] * n
    total_of: dict[tuple[str | None, str | None, str | None], int] = {}
    for i, s in enumerate(series):
        if s.op is None:
            total_of.setdefault(_config(s), i)
    for i, s in enumerate(series):
        if s.op is not None:
            parent[i] = total_of.get(_config(s))
    totals = [i for i in range(n) if parent[i] is None]
    ops = [i for i in range(n) if parent[i] is not None]
    children: dict[int, list[int]] = {t: [] for t in totals}
    for i in ops:
        p = parent[i]
        assert p is not None
        children[p].append(i)

    w = np.zeros(n)
    boosted = set(boost)
    tw = np.array([boost_factor if _config(series[t]) in boosted else 1.0 for t in totals])
    if totals and ops:
        w[totals] = (1.0 - op_share) * tw / tw.sum()
        w[ops] = op_share / len(ops)
    elif totals:
        w[totals] = tw / tw.sum()
    g = np.zeros((n, n))

    def spread(row: int, targets: Sequence[int], mass: float) -> None:
        targets = [t for t in targets if t != row]
        for t in targets:
            g[row, t] += mass / len(targets)

    for t in totals:
        family = [u for u in totals if u != t and series[u].workload == series[t].workload]
        family = family if series[t].workload is not None else []
        others = [u for u in totals if u != t and u not in family]
        kids = children[t]
        targets = [(kids, 1.0), (family, 1.0), (others, leak)]
        live = [(grp, mass) for grp, mass in targets if grp]
        if not live:
            continue
        if kids and family:
            live = [(kids, 0.5), (family, 0.5)] + ([(others, leak)] if others else [])
        total = sum(mass for _, mass in live)
        for grp, mass in live:
            spread(t, grp, mass / total)
    for i in ops:
        p = parent[i]
        assert p is not None
        sibs = [k for k in children[p] if k != i]
        others = [u for u in totals if u != p]
        keep = 1.0 - (leak if others else 0.0)
        if sibs:
            g[i, p] += keep / 2.0
            spread(i, sibs, keep / 2.0)
        else:
            g[i, p] += keep
        if others:
            spread(i, others, leak)
    return Graph(w, g)


def adjusted_pvalues(
    pvalues: Sequence[float | None],
    graph: Graph,
    *,
    rejected: Collection[int] = (),
) -> list[float | None]:
    """Graph-adjusted p-values (reject ``j`` at level ``a`` iff the result ``<= a``).

    Args:
        pvalues: one per node; None = not tested this time (never rejected here, but its
            node keeps its place in the graph).
        graph: from :func:`hierarchy`.
        rejected: nodes already rejected at an earlier look: their alpha is passed on
            first, and their adjusted p-value is 0.

    Returns:
        Adjusted p-values (None where the p-value was None).
    """
    n = len(pvalues)
    if graph.weights.shape[0] != n:
        raise ValueError("one p-value per node")
    w = graph.weights.astype(float).copy()
    g = graph.transitions.astype(float).copy()
    active = np.ones(n, dtype=bool)
    out: list[float | None] = [None] * n
    for j in sorted(set(rejected)):
        active[j] = False
        _reject(j, w, g, active)
        out[j] = 0.0
    p = np.array([math.inf if v is None else float(v) for v in pvalues])
    running = 0.0
    while True:
        cand = np.flatnonzero(active & np.isfinite(p))
        if cand.size == 0:
            break
        with np.errstate(divide="ignore", invalid="ignore"):
            q = np.where(w[cand] > 0.0, p[cand] / w[cand], math.inf)
        k = int(np.argmin(q))
        j = int(cand[k])
        running = max(running, float(q[k]))
        if running >= 1.0:
            break  # every node left has an adjusted p-value of 1 (set below)
        out[j] = running
        active[j] = False
        _reject(j, w, g, active)
    for j in range(n):
        if pvalues[j] is not None and out[j] is None:
            out[j] = 1.0
    return out
