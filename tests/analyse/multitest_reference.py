"""Multiple testing for one comparison: totals first, ops after, looks spent (pure).

**Graphical gatekeeping** (Bretz, Maurer, Brannath & Posch 2009, "A graphical approach to
sequentially rejective multiple test procedures", Stat. Med. 28:586–604). Every tested
series is a node with an initial share ``w`` of alpha and a transition matrix ``G``: when a
node is rejected, its alpha moves along its edges. This is a shortcut of a closed test
with weighted Bonferroni local tests, so it controls the family-wise error rate (the
chance of *any* false alarm in the comparison) strongly, under any dependence between
series. Our graph (:func:`hierarchy`):

- workload totals hold ``1 - op_share`` of alpha; ops hold ``op_share``. Totals share
  theirs equally, except that a total whose configuration's exact *work* changed
  (:mod:`neuronasv.analyse.evidence`) starts with ``boost_factor`` (4) shares: the work
  evidence is fixed by the code, not drawn from the timing noise, so weighting by it keeps
  the procedure valid and puts the alpha where a change is known to be;
- a rejected total passes its alpha half to the other totals of its workload (the other
  shapes and dtypes of one change), half to the ops of its own (workload, shape, dtype),
  with a small ``leak`` to the other workloads' totals;
- a rejected op passes half to its total and half to its siblings (a small ``leak`` to
  other totals), so an op that regressed strengthens the test of its workload.

So a total never shares alpha with a hundred op series, and an op is tested at full
strength exactly when its workload moved. The weights and edges depend only on which
series exist, never on the data, which the validity argument needs.

:func:`adjusted_pvalues` gives the graph's adjusted p-values (Bretz et al. 2009, section
3.2): reject ``j`` at level ``a`` iff ``p_adj[j] <= a``.

**Looks under optional stopping.** Confirmation adds interleaved rounds to undecided
suspects and looks again after each round (:mod:`neuronasv.analyse.confirm`). Look ``k``
of ``K`` spends ``alpha_k = alpha (t_k^rho - t_{k-1}^rho)``, ``t_k = k / K`` (the power
family of spending functions, Kim & DeMets 1987; ``rho = 1`` spends evenly), and the
procedure at look ``k`` runs at level ``alpha_k``, with the series rejected at earlier looks
passed on as rejected. By the union bound over looks the chance of any false alarm is at
most ``sum(alpha_k) = alpha`` whatever the stopping rule and however the looks'
statistics correlate (the first look that falsely rejects must have rejected the
intersection of the true nulls, an event of probability ``<= alpha_k``). It is
conservative next to a group-sequential boundary computed from the joint distribution,
which rounds of a skewed, run-to-run-noisy quantity do not give us.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np

from neuronasv.model import SeriesId

__all__ = [
    "DEFAULT_LEAK",
    "DEFAULT_OP_SHARE",
    "Graph",
    "adjusted_pvalues",
    "hierarchy",
    "spend",
]

#: Share of alpha the op series start with (the rest is the totals'). Small: ops are
#: tested in earnest once their total moved; the share keeps a large op change findable
#: when its total is too noisy to move.
DEFAULT_OP_SHARE = 0.1
#: Share of a rejected node's alpha that leaks to the other totals.
DEFAULT_LEAK = 0.01
#: How many times the alpha of a total whose work changed starts with.
DEFAULT_BOOST = 4.0


@dataclass(frozen=True)
class Graph:
    """Initial weights (sum <= 1) and transition matrix (rows sum <= 1, zero diagonal)."""

    weights: np.ndarray
    transitions: np.ndarray

    def __post_init__(self) -> None:
        w, g = self.weights, self.transitions
        n = w.shape[0]
        if g.shape != (n, n):
            raise ValueError("transitions must be n x n")
        if np.any(w < 0) or w.sum() > 1.0 + 1e-9:
            raise ValueError("weights must be >= 0 and sum to at most 1")
        if np.any(g < 0) or np.any(g.sum(axis=1) > 1.0 + 1e-9) or np.any(np.diag(g) != 0):
            raise ValueError("transitions: rows sum to at most 1, zero diagonal")


def _config(s: SeriesId) -> tuple[str | None, str | None, str | None]:
    return (s.workload, s.shape, s.dtype)


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


def _reject(j: int, w: np.ndarray, g: np.ndarray, active: np.ndarray) -> None:
    """Bretz et al. (2009) Algorithm 1, update step, in place; ``active`` excludes ``j``."""
    idx = np.flatnonzero(active)
    gj = g[j].copy()
    w[idx] += w[j] * gj[idx]
    w[j] = 0.0
    if idx.size:
        sub = g[np.ix_(idx, idx)]
        glj = g[idx, j][:, None]
        gjk = gj[idx][None, :]
        denom = 1.0 - (g[idx, j] * gj[idx])[:, None]  # 1 - g_lj g_jl, per row l
        safe = np.where(denom > 1e-12, denom, 1.0)
        new = np.where(denom > 1e-12, (sub + glj * gjk) / safe, 0.0)
        np.fill_diagonal(new, 0.0)
        g[np.ix_(idx, idx)] = new
    g[j, :] = 0.0
    g[:, j] = 0.0


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


def spend(alpha: float, look: int, looks: int, rho: float = 1.0) -> float:
    """Alpha spent at ``look`` (1-based) of ``looks``: ``alpha (t_k^rho - t_{k-1}^rho)``."""
    if not 1 <= look <= looks:
        raise ValueError(f"look must be in 1..{looks}, got {look}")
    if rho <= 0:
        raise ValueError("rho must be positive")
    return alpha * ((look / looks) ** rho - ((look - 1) / looks) ** rho)
