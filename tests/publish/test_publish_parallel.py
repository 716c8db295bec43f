"""The cold publish's speed paths write what the plain paths write (issue 40, publish at
1,000 × 1,000): workload pages and data files rendered in forked processes are the bytes one
process renders; a parse's cache entry written from the stat taken at the cache's miss
(before the parse) is stored only while the files still stat the same, and is then read
back as a hit; a file changed after the miss is hashed, found changed and not stored."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from neuronasv.publish import PublishOptions, publish_site, scan_results, site
from neuronasv.store import histcache
from neuronasv.store.cachekey import CacheKey
from neuronasv.store.columns import parse_columns
from neuronasv.store.histcache import ColumnsDiskCache

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
KEY = CacheKey(b"k" * 32)


@pytest.fixture(scope="module")
def wide_history(tmp_path_factory: pytest.TempPathFactory, synth: ModuleType) -> Path:
    """70 commits × 9 workloads: enough files for the parser pool (64) and workloads for
    the rendering pool (8)."""
    dest = tmp_path_factory.mktemp("wide")
    synth.generate(dest, commits=70, workloads=9, ops=3)
    return dest


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".neuronasv-cache" not in p.parts and not p.name.endswith("-key")
    }


def test_forked_rendering_and_pooled_parsing_write_the_one_process_site(
    wide_history: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pools: list[int] = []
    real = site.ProcessPoolExecutor

    def spy(*args: object, **kw: object) -> object:
        pools.append(int(kw["max_workers"]))  # type: ignore[call-overload]
        return real(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(site, "ProcessPoolExecutor", spy)
    results, repo = wide_history / "results", wide_history / "repo"
    cache = ColumnsDiskCache(str(tmp_path / "cache"), KEY)
    pooled = scan_results(results, repo=repo, cache=cache, workers=2)
    assert cache.misses == 70 and cache.writes == 70 and cache.missed == {}
    alone = scan_results(results, repo=repo, workers=1)
    a, b = pooled.machines[0], alone.machines[0]
    assert a.commits == b.commits and [s.series for s in a.series] == [s.series for s in b.series]
    np.testing.assert_array_equal(a.value, b.value)
    publish_site(alone, tmp_path / "one", options=PublishOptions(now=NOW), workers=1)
    assert pools == []
    report = publish_site(pooled, tmp_path / "two", options=PublishOptions(now=NOW), workers=2)
    assert pools == [2]  # the nine workloads were rendered in two forked processes
    assert report.pages == 9
    one, two = _files(tmp_path / "one"), _files(tmp_path / "two")
    assert len(one) > 20 and one.keys() == two.keys()
    assert [k for k in one if one[k] != two[k]] == []
    again = ColumnsDiskCache(str(tmp_path / "cache"), KEY)
    scan_results(results, repo=repo, cache=again, workers=2)
    assert again.hits == 70 and again.misses == 0  # the entries written from a stat are read


def _one_file(history: Path, tmp_path: Path) -> Path:
    src = sorted((history / "results").rglob("*-existing-py_venv.json"))[0]
    dest = tmp_path / "results" / src.parent.name
    dest.mkdir(parents=True)
    for p in src.parent.glob(src.name.split("-")[0] + "-*"):
        (dest / p.name).write_bytes(p.read_bytes())
    return dest / src.name


def test_an_entry_from_the_stat_taken_at_the_miss_skips_the_second_hash_only_while_it_holds(
    wide_history: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _one_file(wide_history, tmp_path)
    cache = ColumnsDiskCache(str(tmp_path / "cache"), KEY)
    assert cache.get(str(path)) is None  # the miss stats the files, before the parse
    fc, _layout = parse_columns(str(path))

    def no_hash(p: str) -> str:
        raise AssertionError("hashed although the files stat as they did before the parse")

    with monkeypatch.context() as m:
        m.setattr(histcache, "file_digest", no_hash)
        cache.put(str(path), fc)
    assert cache.writes == 1 and cache.missed == {}
    assert ColumnsDiskCache(str(tmp_path / "cache"), KEY).get(str(path)) is None
    cache.flush()  # found by another run once the index names it
    got = ColumnsDiskCache(str(tmp_path / "cache"), KEY).get(str(path))
    assert got is not None and got.digest == fc.digest
    np.testing.assert_array_equal(got.values, fc.values)

    # changed after the miss: the stat differs, the files are hashed, nothing is stored
    changed = ColumnsDiskCache(str(tmp_path / "cache2"), KEY)
    assert changed.get(str(path)) is None
    path.write_bytes(path.read_bytes() + b" ")
    changed.put(str(path), fc)
    assert changed.writes == 0
    # and with no miss recorded (a parse the cache never saw): hashed, stored when same
    fresh = ColumnsDiskCache(str(tmp_path / "cache3"), KEY)
    fc2, _ = parse_columns(str(path))
    fresh.put(str(path), fc2)
    assert fresh.writes == 1


def test_writes_behind_are_all_done_and_their_errors_raised_when_the_block_ends(
    wide_history: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = sorted((wide_history / "results").rglob("*-existing-py_venv.json"))[:5]
    cache = ColumnsDiskCache(str(tmp_path / "cache"), KEY)
    with cache.writing_behind(threads=2):
        for p in src:
            assert cache.get(str(p)) is None
            cache.put(str(p), parse_columns(str(p))[0])
    assert cache.writes == 5 and cache.failed_writes == 0
    again = ColumnsDiskCache(str(tmp_path / "cache"), KEY)
    assert all(again.get(str(p)) is not None for p in src) and again.hits == 5

    def broken(fc: object) -> bytes:
        raise RuntimeError("a bug in a writer thread")

    monkeypatch.setattr(histcache, "encode_file", broken)
    other = ColumnsDiskCache(str(tmp_path / "cache2"), KEY)
    with pytest.raises(RuntimeError, match="writer thread"), other.writing_behind():
        assert other.get(str(src[0])) is None
        other.put(str(src[0]), parse_columns(str(src[0]))[0])
