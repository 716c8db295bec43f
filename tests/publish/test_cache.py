from __future__ import annotations

import os
from pathlib import Path

from neuronasv.publish.cache import ParseCache
from neuronasv.store.asvresults import stat_key
from neuronasv.store.history import load_history, parse_result_file


def _first_result(hist: Path) -> str:
    return str(sorted((hist / "results" / "synth-runner").glob("*-existing-py_venv.json"))[0])


def test_history_codec_round_trip_and_hit(history_copy: Path, tmp_path: Path) -> None:
    path = _first_result(history_copy)
    cache = ParseCache(tmp_path / "c")
    assert cache.get(path, stat_key(path)) is None
    parsed = parse_result_file(path)
    cache.put(path, stat_key(path), parsed)
    again = ParseCache(tmp_path / "c")  # a new process would start like this
    assert again.get(path, stat_key(path)) == parsed
    assert again.stats.hits == 1


def test_touched_file_with_same_content_is_a_digest_hit(history_copy: Path, tmp_path: Path) -> None:
    path = _first_result(history_copy)
    cache = ParseCache(tmp_path / "c")
    cache.put(path, stat_key(path), parse_result_file(path))
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # a fresh git checkout
    assert cache.get(path, stat_key(path)) is not None
    assert cache.stats.digest_hits == 1
    assert cache.get(path, stat_key(path)) is not None  # header refreshed: plain hit now
    assert cache.stats.hits == 1


def test_changed_content_is_a_miss(history_copy: Path, tmp_path: Path) -> None:
    path = _first_result(history_copy)
    cache = ParseCache(tmp_path / "c")
    cache.put(path, stat_key(path), parse_result_file(path))
    text = Path(path).read_text()
    Path(path).write_text(text.replace('"python":"3.11"', '"python":"3.12"', 1))
    assert cache.get(path, stat_key(path)) is None
    assert cache.stats.misses == 1


def test_corrupt_entry_is_a_miss_not_an_error(history_copy: Path, tmp_path: Path) -> None:
    path = _first_result(history_copy)
    cache = ParseCache(tmp_path / "c")
    cache.put(path, stat_key(path), parse_result_file(path))
    entry = cache._entry(path)
    data = Path(entry).read_bytes()
    Path(entry).write_bytes(data[: len(data) // 2])  # crash mid-write of an old version
    assert cache.get(path, stat_key(path)) is None


def test_load_history_with_cache_equals_without(history_copy: Path, tmp_path: Path) -> None:
    rdir = history_copy / "results"
    plain = load_history(rdir)
    cache = ParseCache(tmp_path / "c")
    first = load_history(rdir, cache=cache)
    second = load_history(rdir, cache=cache)
    assert cache.stats.misses == 40 and cache.stats.hits == 40
    assert first.series == plain.series == second.series
    assert first.fingerprints == plain.fingerprints == second.fingerprints
