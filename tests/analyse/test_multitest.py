"""Graphical gatekeeping and alpha spending (pure; seeded simulations, deterministic)."""

from __future__ import annotations

import numpy as np
import pytest

from neuronasv.analyse import stats
from neuronasv.analyse.multitest import Graph, adjusted_pvalues, hierarchy, spend
from neuronasv.model import SeriesId

from . import multitest_reference as reference


def total(shape: str) -> SeriesId:
    return SeriesId("b", (), "wl", shape, "bfloat16")


def op(shape: str, name: str) -> SeriesId:
    return SeriesId("b", (), "wl", shape, "bfloat16", name)


def family(configs: int, ops: int) -> list[SeriesId]:
    out = []
    for c in range(configs):
        out.append(total(f"s{c}"))
        out += [op(f"s{c}", f"op{o}") for o in range(ops)]
    return out


def test_equal_weights_and_uniform_edges_are_holm() -> None:
    n = 6
    g = Graph(np.full(n, 1 / n), (np.ones((n, n)) - np.eye(n)) / (n - 1))
    p = [0.001, 0.04, 0.012, 0.5, 0.009, 0.03]
    assert adjusted_pvalues(p, g) == pytest.approx(stats.holm(p))


def test_totals_hold_most_alpha_and_pass_it_to_their_ops() -> None:
    g = hierarchy(family(10, 20), op_share=0.1)
    totals = g.weights[[i * 21 for i in range(10)]]
    assert totals == pytest.approx(np.full(10, 0.09))  # 90 % of alpha over 10 totals
    assert g.weights.sum() == pytest.approx(1.0)
    # A total alone at p = 0.0008 is rejected at alpha 0.01 (0.0008 <= 0.0009) even though
    # 200 op series share the comparison: Holm over all 210 would need p <= 0.000048.
    p: list[float | None] = [0.5] * 210
    p[0] = 0.0008
    adj = adjusted_pvalues(p, g)
    assert adj[0] == pytest.approx(0.0008 / 0.09) and adj[0] <= 0.01
    assert stats.holm(p)[0] > 0.01
    # Once the total is rejected its ops are tested with its alpha (half of it; the other
    # half goes to the workload's other totals): an op at p = 2e-5 (its own start weight
    # is 0.1/200 = 0.0005: it needs 5e-6 alone) now passes.
    p[1] = 2e-5
    adj = adjusted_pvalues(p, g)
    assert adj[1] is not None and adj[1] <= 0.01
    p[0] = 0.5  # without its total the same op stays unrejected
    assert adjusted_pvalues(p, g)[1] > 0.01  # type: ignore[operator]


def test_work_changed_totals_start_with_more_alpha_and_pass_it_to_their_workload() -> None:
    fam = [total(f"s{c}") for c in range(3)] + [
        SeriesId("b", (), "other", f"s{c}", "bfloat16") for c in range(3)
    ]
    g = hierarchy(fam, boost={("wl", "s0", "bfloat16")})
    assert g.weights[0] == pytest.approx(4 * g.weights[1]) and g.weights.sum() == pytest.approx(1)
    # With no ops, all of a rejected total's alpha goes to its own workload's totals.
    dense = g.dense().transitions
    assert dense[0, 1] + dense[0, 2] > 0.98
    assert dense[0, 3] < 0.01
    # A boosted total at p = 0.015 is rejected at 0.05 (weight 4/9), not without the boost.
    p: list[float | None] = [0.015, 0.5, 0.5, 0.5, 0.5, 0.5]
    assert adjusted_pvalues(p, g)[0] <= 0.05  # type: ignore[operator]
    assert adjusted_pvalues(p, hierarchy(fam))[0] > 0.05  # type: ignore[operator]


def test_untested_nodes_and_pre_rejected_nodes() -> None:
    g = hierarchy(family(2, 2))
    p: list[float | None] = [None, 0.03, None, 0.5, 0.5, 0.5]
    adj = adjusted_pvalues(p, g)
    assert adj[0] is None and adj[2] is None and adj[1] is not None
    # The total rejected at an earlier look passes its alpha on: the op gets cheaper.
    again = adjusted_pvalues(p, g, rejected=[0])
    assert again[0] == 0.0 and again[1] < adj[1]  # type: ignore[operator]


@pytest.mark.parametrize("shape", [(10, 8), (3, 30), (1, 1), (20, 0)])
def test_fwer_under_the_global_null_is_at_most_alpha(shape) -> None:
    """3,000 seeded comparisons with independent uniform p-values: any false rejection."""
    g = hierarchy(family(*shape))
    rng = np.random.default_rng(sum(shape))
    n, trials = g.weights.size, 3000
    hits = 0
    for _ in range(trials):
        adj = adjusted_pvalues(list(rng.uniform(size=n)), g)
        hits += min(a for a in adj if a is not None) <= 0.01
    # Binomial(3000, 0.01): mean 30, P(X > 45) < 0.5 %; deterministic under the seed.
    assert hits <= 45


def test_spending_adds_up_to_alpha() -> None:
    for rho in (0.5, 1.0, 3.0):
        parts = [spend(0.01, k, 4, rho) for k in range(1, 5)]
        assert sum(parts) == pytest.approx(0.01) and all(x > 0 for x in parts)
    assert spend(0.01, 1, 1) == pytest.approx(0.01)
    with pytest.raises(ValueError):
        spend(0.01, 5, 4)


def test_graph_validates_its_shape() -> None:
    with pytest.raises(ValueError):
        Graph(np.array([0.7, 0.7]), np.zeros((2, 2)))
    with pytest.raises(ValueError):
        Graph(np.array([0.5, 0.5]), np.ones((2, 2)))
    with pytest.raises(ValueError):
        hierarchy([total("a")], op_share=1.0)


def _random_family(rng: np.random.Generator) -> list[SeriesId]:
    """Workloads x configurations, some totals missing (their ops become totals), some
    plain asv benchmarks, shuffled."""
    out = []
    for w in range(int(rng.integers(1, 6))):
        for c in range(int(rng.integers(1, 4))):
            if rng.random() < 0.85:
                out.append(SeriesId("b", (), f"w{w}", f"s{c}", "bf16"))
            for o in range(int(rng.integers(0, 6))):
                out.append(SeriesId("b", (), f"w{w}", f"s{c}", "bf16", f"op{o}"))
    out += [SeriesId(f"plain{k}") for k in range(int(rng.integers(0, 4)))]
    rng.shuffle(out)  # type: ignore[arg-type]
    return out


@pytest.mark.parametrize("leak", [0.01, 0.0, 0.2])
def test_compact_graph_gives_the_old_dense_rejections(leak: float) -> None:
    """The O(n) graph and absorbed-weights procedure against the former O(n^2)-memory
    graph and its one-rejection-at-a-time update (kept verbatim in
    ``multitest_reference``): same graph, same adjusted p-values, same rejections."""
    compared = 0
    for seed in range(150):
        rng = np.random.default_rng(seed)
        series = _random_family(rng)
        boost = {("w0", "s0", "bf16")} if seed % 2 else set()
        try:
            old = reference.hierarchy(series, leak=leak, boost=boost)
        except ZeroDivisionError:  # leak 0 and a lone total: the old builder divides by 0
            continue
        new = hierarchy(series, leak=leak, boost=boost)
        assert np.allclose(new.dense().transitions, old.transitions, rtol=0, atol=1e-15)
        assert np.array_equal(new.weights, old.weights)
        n = len(series)
        shifted = rng.random(n) < 0.4
        p = np.where(shifted, rng.uniform(size=n) * 1e-5, rng.uniform(size=n))
        pv: list[float | None] = [None if rng.random() < 0.1 else float(x) for x in p]
        pre = [int(j) for j in rng.choice(n, size=int(rng.integers(0, 3)), replace=False)]
        pre = pre if seed % 4 == 0 else []
        want = reference.adjusted_pvalues(pv, old, rejected=pre)
        got = adjusted_pvalues(pv, new, rejected=pre)
        assert [a is None for a in got] == [a is None for a in want]
        assert [a for a in got if a is not None] == pytest.approx(
            [a for a in want if a is not None], rel=1e-9, abs=1e-300
        )
        for alpha in (0.001, 0.01, 0.05):
            assert [a is not None and a <= alpha for a in got] == [
                a is not None and a <= alpha for a in want
            ]
        compared += 1
    assert compared >= (25 if leak == 0.0 else 90)
