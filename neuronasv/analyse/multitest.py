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

from neuronasv.keys import SeriesConfig as Config
from neuronasv.model import SeriesId

__all__ = [
    "DEFAULT_LEAK",
    "DEFAULT_OP_SHARE",
    "Graph",
    "Hierarchy",
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


def _config(s: SeriesId) -> Config:
    return s.config


@dataclass(frozen=True)
class Hierarchy:
    """The totals-first graph of :func:`hierarchy` in O(n) memory (no n x n matrix).

    A *cluster* is one total (a node without a parent) and its ops. Every edge of the graph
    is one of: total -> its ops (``kid`` each), total -> the other totals of its workload
    (``fam`` each), total -> every other total (``oth`` each), op -> its total (``par``),
    op -> its siblings (``sib`` each), op -> every total but its own (``leak_op`` each).
    Arrays prefixed ``c_`` are per cluster (index = position in ``totals``); ``node_cluster``
    maps a node to its cluster and ``c_family`` a cluster to its workload's family group
    (-1 when the workload has no other total). :meth:`dense` gives the same graph as a
    :class:`Graph`.
    """

    weights: np.ndarray
    totals: np.ndarray
    node_cluster: np.ndarray
    is_total: np.ndarray
    c_kids: np.ndarray
    c_family: np.ndarray
    c_kid: np.ndarray
    c_fam: np.ndarray
    c_oth: np.ndarray
    c_par: np.ndarray
    c_sib: np.ndarray
    c_leak_op: np.ndarray

    def dense(self) -> Graph:
        """The same graph as an explicit ``n x n`` transition matrix (small graphs only)."""
        n = self.weights.size
        g = np.zeros((n, n))
        totals = self.totals
        members = [np.flatnonzero(self.node_cluster == c) for c in range(totals.size)]
        for c, t in enumerate(totals):
            kids = members[c][members[c] != t]
            g[t, totals] = self.c_oth[c]
            if self.c_family[c] >= 0:
                fam = totals[self.c_family == self.c_family[c]]
                g[t, fam] = self.c_fam[c]
            g[t, kids] = self.c_kid[c]
            g[t, t] = 0.0
            for i in kids:
                g[i, totals] = self.c_leak_op[c]
                g[i, kids] = self.c_sib[c]
                g[i, t] = self.c_par[c]
                g[i, i] = 0.0
        return Graph(self.weights.copy(), g)


def _total_row(m: int, f: int, o: int, leak: float) -> tuple[float, float, float]:
    """Per-target transition of a total with ``m`` ops, ``f`` family and ``o`` other
    totals: (to each op, to each family total, to each other total)."""
    groups = [(m, 1.0), (f, 1.0), (o, leak)]
    live = [(k, grp, mass) for k, (grp, mass) in enumerate(groups) if grp]
    if not live:
        return 0.0, 0.0, 0.0
    if m and f:
        live = [(0, m, 0.5), (1, f, 0.5)] + ([(2, o, leak)] if o else [])
    total = sum(mass for _, _, mass in live)
    out = [0.0, 0.0, 0.0]
    for k, grp, mass in live:
        out[k] = mass / total / grp
    return out[0], out[1], out[2]


def _parents(series: Sequence[SeriesId]) -> np.ndarray:
    """Index of each op's total (-1 for totals, and for ops whose total is absent)."""
    total_of: dict[Config, int] = {}
    for i, s in enumerate(series):
        if s.op is None:
            total_of.setdefault(_config(s), i)
    return np.array(
        [-1 if s.op is None else total_of.get(_config(s), -1) for s in series], dtype=np.int64
    )


def hierarchy(
    series: Sequence[SeriesId],
    *,
    op_share: float = DEFAULT_OP_SHARE,
    leak: float = DEFAULT_LEAK,
    boost: Collection[Config] = (),
    boost_factor: float = DEFAULT_BOOST,
) -> Hierarchy:
    """The totals-first graph over ``series`` (see the module docstring).

    Series without an op (workload totals, plain asv benchmarks) are totals; an op whose
    total is not among ``series`` is a total of its own. Totals of the configurations in
    ``boost`` (those whose exact work changed: fixed by the code, independent of the timing
    noise, so a valid prior weight) start with ``boost_factor`` times the alpha of the
    others. A rejected total passes half of what it passes on to the other totals of its
    workload (other shapes and dtypes of one change usually move together), half to its
    own ops. Built in O(n) time and memory.
    """
    if not 0.0 <= op_share < 1.0 or not 0.0 <= leak < 1.0:
        raise ValueError("op_share and leak must be in [0, 1)")
    n = len(series)
    parent = _parents(series)
    totals = np.flatnonzero(parent < 0)
    ops = np.flatnonzero(parent >= 0)
    cluster_of_total = np.full(n, -1, dtype=np.int64)
    cluster_of_total[totals] = np.arange(totals.size)
    node_cluster = np.where(parent < 0, cluster_of_total, cluster_of_total[parent])
    kids = np.bincount(node_cluster[ops], minlength=totals.size)
    by_workload: dict[str, list[int]] = {}
    for c, t in enumerate(totals):
        wl = series[int(t)].workload
        if wl is not None:
            by_workload.setdefault(wl, []).append(c)
    family = np.full(totals.size, -1, dtype=np.int64)
    size = np.ones(totals.size, dtype=np.int64)
    for gid, cs in enumerate(cs for cs in by_workload.values() if len(cs) > 1):
        family[cs] = gid
        size[cs] = len(cs)
    nt = int(totals.size)
    rows = [
        _total_row(int(m), int(f) - 1, nt - int(f), leak) for m, f in zip(kids, size, strict=True)
    ]
    keep = 1.0 - (leak if nt > 1 else 0.0)
    sib = np.where(kids > 1, keep / 2.0 / np.maximum(kids - 1, 1), 0.0)
    w = np.zeros(n)
    boosted = set(boost)
    tw = np.array([boost_factor if _config(series[int(t)]) in boosted else 1.0 for t in totals])
    if totals.size and ops.size:
        w[totals] = (1.0 - op_share) * tw / tw.sum()
        w[ops] = op_share / ops.size
    elif totals.size:
        w[totals] = tw / tw.sum()
    return Hierarchy(
        weights=w,
        totals=totals,
        node_cluster=node_cluster,
        is_total=parent < 0,
        c_kids=kids,
        c_family=family,
        c_kid=np.array([r[0] for r in rows]),
        c_fam=np.array([r[1] for r in rows]),
        c_oth=np.array([r[2] for r in rows]),
        c_par=np.where(kids > 1, keep / 2.0, keep),
        c_sib=sib,
        c_leak_op=np.full(totals.size, leak / (nt - 1) if nt > 1 else 0.0),
    )


class _Absorbed:
    """Weights after rejecting a set S of nodes of a :class:`Hierarchy`, in O(n).

    Rejecting S one node at a time with Bretz et al.'s update gives the weights of a
    Markov chain absorbed at the active nodes A: ``w'_A = w_A + w_S (I - G_SS)^-1 G_SA``
    (a rejected node passes on what it had and everything that reaches it later; the
    result does not depend on the order, Bretz et al. 2009, section 2.2). Our ``G`` is
    block-diagonal by cluster plus group-uniform edges into totals (all totals; the
    totals of one workload), so the inverse reduces to a 2 x 2 solve per cluster (its
    rejected ops are exchangeable) and one scalar per group: no ``n x n`` matrix, no
    per-rejection update of one.
    """

    def __init__(self, h: Hierarchy) -> None:
        self.h = h
        nc = h.totals.size
        self.t_rej = np.zeros(nc, dtype=bool)
        self.r = np.zeros(nc)  # rejected ops per cluster
        self.u = np.zeros(nc)  # their initial weights, summed
        t_oth = h.c_oth
        self.fam_extra = np.where(h.c_family >= 0, h.c_fam - t_oth, 0.0)
        self.delta = -(t_oth + self.fam_extra)  # a total's own share of its group edges
        self.beta = h.c_par - h.c_leak_op  # op -> total, less its share of the all-totals edge
        self.n_fam = int(h.c_family.max()) + 1 if nc else 0

    def reject(self, nodes: np.ndarray) -> None:
        h = self.h
        cl = h.node_cluster[nodes]
        tot = h.is_total[nodes]
        self.t_rej[cl[tot]] = True
        np.add.at(self.r, cl[~tot], 1.0)
        np.add.at(self.u, cl[~tot], h.weights[nodes[~tot]])

    def _cluster_terms(self) -> tuple[np.ndarray, ...]:
        """Per cluster, ``y_t = a + b x`` and ``Y = d + e x``: the mass through its rejected
        total and (summed) its rejected ops, given ``x`` injected into the total."""
        h, r, u = self.h, self.r, self.u
        d1 = 1.0 - h.c_sib * np.maximum(r - 1.0, 0.0)
        d2 = (1.0 - self.delta) - self.beta * r * h.c_kid / d1
        live = self.t_rej & (d2 > 1e-12)  # a closed loop (no way out) loses its mass
        safe = np.where(live, d2, 1.0)
        wt = h.weights[h.totals]
        a = np.where(live, (wt + self.beta * u / d1) / safe, 0.0)
        b = np.where(live, 1.0 / safe, 0.0)
        d = np.where(self.t_rej & ~live, 0.0, (u + r * h.c_kid * a) / d1)
        e = r * h.c_kid * b / d1
        return a, b, d, e

    def weights(self) -> np.ndarray:
        """Current weight of every node (meaningless for rejected nodes)."""
        h = self.h
        if h.totals.size == 0:
            return h.weights.copy()
        a, b, d, e = self._cluster_terms()
        fam = h.c_family
        in_fam = fam >= 0
        fam_i = np.where(in_fam, fam, 0)
        p_ = h.c_oth * a + h.c_leak_op * d
        q_ = h.c_oth * b + h.c_leak_op * e
        nf = max(self.n_fam, 1)
        rw = np.bincount(fam_i, weights=np.where(in_fam, self.fam_extra * a, 0.0), minlength=nf)
        vw = np.bincount(fam_i, weights=np.where(in_fam, self.fam_extra * b, 0.0), minlength=nf)
        qw = np.bincount(fam_i, weights=np.where(in_fam, q_, 0.0), minlength=nf)
        den_f = 1.0 - vw
        inv_f = np.where(den_f > 1e-12, 1.0 / np.where(den_f > 1e-12, den_f, 1.0), 0.0)
        den = 1.0 - q_.sum() - float(np.sum(qw * vw * inv_f))
        z_t = (p_.sum() + float(np.sum(qw * rw * inv_f))) / den if den > 1e-12 else 0.0
        z_f = (rw + vw * z_t) * inv_f
        x = z_t + np.where(in_fam, z_f[fam_i], 0.0)  # mass into each cluster's total
        y_t = a + b * x
        y_k = d + e * x
        c = h.node_cluster
        w = h.weights.copy()
        t = h.is_total
        w[t] += (x + self.beta * y_k)[c[t]]
        w[~t] += (h.c_kid * y_t + h.c_sib * y_k)[c[~t]]
        return w


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


class _Dense:
    """Bretz et al.'s update on an explicit matrix (any :class:`Graph`; O(n^2) per step)."""

    def __init__(self, graph: Graph) -> None:
        n = graph.weights.shape[0]
        self.w = graph.weights.astype(float).copy()
        self.g = graph.transitions.astype(float).copy()
        self.active = np.ones(n, dtype=bool)

    def reject(self, nodes: np.ndarray) -> None:
        for j in nodes:
            self.active[j] = False
            _reject(int(j), self.w, self.g, self.active)

    def weights(self) -> np.ndarray:
        return self.w


def adjusted_pvalues(
    pvalues: Sequence[float | None],
    graph: Graph | Hierarchy,
    *,
    rejected: Collection[int] = (),
) -> list[float | None]:
    """Graph-adjusted p-values (reject ``j`` at level ``a`` iff the result ``<= a``).

    Each step rejects every node whose ``p / w`` is at or below the running maximum at once
    (weights only grow, so those are exactly the nodes the one-at-a-time algorithm rejects
    next at that level, and the order does not change the weights). On a
    :class:`Hierarchy` a step costs O(n) (:class:`_Absorbed`); on a dense :class:`Graph`,
    O(n^2) per rejected node.

    Args:
        pvalues: one per node; None = not tested this time (never rejected here, but its
            node keeps its place in the graph).
        graph: from :func:`hierarchy` (or any :class:`Graph`).
        rejected: nodes already rejected at an earlier look: their alpha is passed on
            first, and their adjusted p-value is 0.

    Returns:
        Adjusted p-values (None where the p-value was None).
    """
    n = len(pvalues)
    if graph.weights.shape[0] != n:
        raise ValueError("one p-value per node")
    eng = _Absorbed(graph) if isinstance(graph, Hierarchy) else _Dense(graph)
    active = np.ones(n, dtype=bool)
    out: list[float | None] = [None] * n
    pre = np.array(sorted(set(rejected)), dtype=np.int64)
    if pre.size:
        active[pre] = False
        eng.reject(pre)
        for j in pre:
            out[int(j)] = 0.0
    p = np.array([math.inf if v is None else float(v) for v in pvalues])
    testable = np.isfinite(p)
    running = 0.0
    while True:
        cand = np.flatnonzero(active & testable)
        if cand.size == 0:
            break
        w = eng.weights()[cand]
        with np.errstate(divide="ignore", invalid="ignore"):
            q = np.where(w > 0.0, p[cand] / w, math.inf)
        running = max(running, float(q.min()))
        if running >= 1.0:
            break  # every node left has an adjusted p-value of 1 (set below)
        hit = cand[q <= running]
        active[hit] = False
        eng.reject(hit)
        for j in hit:
            out[int(j)] = running
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
