"""The change-point search spread over chunks (``detect_many(mapper=...)``): the answers of
one batch, bit for bit — in this process and in a process pool."""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor

import numpy as np

from neuronasv.analyse.changepoints import CHUNKS, CPSettings, detect_many


def _series(n: int, seed: int = 7) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        x = 100.0 + rng.normal(0.0, 1.0 + (i % 5), 90)
        if i % 3 == 0:
            x[int(rng.integers(20, 70)) :] *= 1.0 + rng.uniform(0.05, 0.4)
        if i % 11 == 0:
            x[:] = 5.0  # a constant series
        out.append(x)
    return out


def test_a_spread_search_answers_as_one_batch() -> None:
    xs = _series(300)  # above the split threshold: CHUNKS chunks
    settings = [CPSettings(window=30, min_magnitude=0.02 if i % 2 else 0.1) for i in range(300)]
    seen: dict[int, dict[int, tuple[int, ...]]] = {}
    one = detect_many(xs, settings, searched=lambda i, per: seen.__setitem__(i, per))
    jobs: list[int] = []

    def here(fn, chunks):
        jobs.append(len(chunks))
        return map(fn, chunks)

    spread_seen: dict[int, dict[int, tuple[int, ...]]] = {}
    spread = detect_many(xs, settings, mapper=here,
                         searched=lambda i, per: spread_seen.__setitem__(i, per))  # fmt: skip
    assert jobs == [CHUNKS, CHUNKS]  # the window pass and the pruning, each in chunks
    assert spread == one and spread_seen == seen
    assert sum(bool(c) for c in one) > 50  # the steps are found
    known = [{s: c for s, c in seen[i].items() if s < 30} for i in range(300)]
    with ProcessPoolExecutor(max_workers=2) as pool:
        pooled = detect_many(xs, settings, known=known,
                             mapper=lambda fn, chunks: list(pool.map(fn, chunks)))  # fmt: skip
    assert pooled == detect_many(xs, settings, known=known) == one


def test_few_series_are_one_batch_even_with_a_mapper() -> None:
    xs = _series(20)
    calls: list[int] = []

    def here(fn, chunks):
        calls.append(len(chunks))
        return map(fn, chunks)

    assert detect_many(xs, CPSettings(window=30), mapper=here) == detect_many(xs, CPSettings(30))
    assert calls == []
