from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from neuronasv.publish import from_history, scan_results
from neuronasv.store.cachekey import CacheKey
from neuronasv.store.histcache import ColumnsDiskCache
from neuronasv.store.history import load_history


def test_scan_matches_the_history_loader(tiny_history: Path) -> None:
    rdir, repo = tiny_history / "results", tiny_history / "repo"
    fast = scan_results(rdir, repo=repo, workers=1)
    ref = from_history(load_history(rdir, repo=repo))
    (a,), (b,) = fast.machines, ref.machines
    assert a.commits == b.commits
    assert sorted(a.series, key=lambda s: s.key) == sorted(b.series, key=lambda s: s.key)
    order = {s.key: i for i, s in enumerate(b.series)}
    perm = [order[s.key] for s in a.series]
    np.testing.assert_array_equal(a.value, b.value[perm])  # NaN where the op was absent
    assert np.isnan(a.value).any()
    assert a.fingerprints == b.fingerprints
    assert a.env_changes() and a.env_changes()[0][1] == [("torch", "2.12.0", "2.13.0")]


def test_quartiles_come_from_asv_stats(tiny_history: Path) -> None:
    (m,) = scan_results(tiny_history / "results", workers=1).machines
    fin = np.isfinite(m.value)
    assert (m.q25[fin] <= m.value[fin]).all() and (m.value[fin] <= m.q75[fin]).all()


def test_commit_order_without_repo_uses_asv_dates(tiny_history: Path) -> None:
    with_git = scan_results(tiny_history / "results", repo=tiny_history / "repo", workers=1)
    by_date = scan_results(tiny_history / "results", workers=1)
    assert with_git.machines[0].commits == by_date.machines[0].commits
    assert (np.diff(by_date.machines[0].dates) > 0).all()


def test_incremental_parses_only_the_new_file(
    history_copy: Path, synth: ModuleType, tmp_path: Path
) -> None:
    key = CacheKey(b"k" * 32)
    cache = ColumnsDiskCache(str(tmp_path / "cache"), key)
    first = scan_results(history_copy / "results", repo=history_copy / "repo", cache=cache)
    synth.generate(history_copy, commits=1, append=True)
    cache2 = ColumnsDiskCache(str(tmp_path / "cache"), key)
    second = scan_results(history_copy / "results", repo=history_copy / "repo", cache=cache2)
    assert cache2.misses == 1 and cache2.hits == 40
    a, b = first.machines[0], second.machines[0]
    assert b.commits[:-1] == a.commits and len(b.commits) == 41
    np.testing.assert_array_equal(b.value[:, :-1], a.value)


def test_corrupt_and_truncated_files_are_named_and_others_still_load(history_copy: Path) -> None:
    files = sorted((history_copy / "results" / "synth-runner").glob("*-existing-py_venv.json"))
    files[0].write_text(files[0].read_text()[:100])  # truncated
    doc = json.loads(files[1].read_text())
    doc["version"] = 99
    files[1].write_text(json.dumps(doc))
    side = files[2].with_suffix(".neuronasv")
    side.write_text("{not json")
    data = scan_results(history_copy / "results", workers=1)
    errs = "\n".join(data.load_errors)
    assert str(files[0]) in errs and "truncated" in errs
    assert str(files[1]) in errs and "99" in errs
    assert str(side) in errs
    assert len(data.machines[0].commits) == 38


def test_missing_results_dir_is_the_same_clear_error_in_both_readers(tmp_path: Path) -> None:
    """One rule (store/asvresults.result_paths): a missing folder is exit 5 naming it, for
    the site and the loader alike; a machine without results yet is simply empty."""
    from neuronasv.errors import ResultsError

    msgs = []
    for read in (scan_results, load_history):
        with pytest.raises(ResultsError, match="does not exist") as info:
            read(tmp_path / "nope")
        assert info.value.exit_code == 5
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1] and str(tmp_path / "nope") in msgs[0]
    (tmp_path / "res").mkdir()
    assert scan_results(tmp_path / "res", machine="m", workers=1).machines == []
    assert load_history(tmp_path / "res", machine="m").series == ()
