"""``neuronasv regressions --cache-dir``: a new commit costs one parsed file and the search
windows it touches; a stale or damaged cache costs time, never an answer.

Every case compares the cached run's document with a run without a cache on the same
folder (the same answer, byte for byte but for the timestamp), and reads the command's
line on what it searched.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from neuronasv.cli import main
from neuronasv.store.cachekey import CacheKey
from neuronasv.store.histcache import WindowCache
from tests.publish.conftest import load_synth

WINDOW = "20"  # several windows per series in a short history
KEY = CacheKey(b"k" * 32)


def regressions(
    hist: Path, capsys: pytest.CaptureFixture[str], cache: Path | None, out: Path
) -> tuple[dict[str, Any], str]:
    argv = ["regressions", "--results-dir", str(hist / "results"), "--repo", str(hist / "repo"),
            "--format", "json", "--window", WINDOW, "--out", str(out)]  # fmt: skip
    if cache is not None:
        argv += ["--cache-dir", str(cache)]
    capsys.readouterr()
    assert main(argv) == 0
    doc = json.loads(out.read_text())
    doc.pop("created")
    return doc, capsys.readouterr().err


def explained(err: str) -> tuple[int, int]:
    """(comparisons made, one-commit pairs) of the command's line on culprits."""
    m = re.search(r"culprits: (\d+) of (\d+) one-commit comparisons made", err)
    assert m, err
    return int(m.group(1)), int(m.group(2))


def searched(err: str) -> tuple[int, int]:
    m = re.search(r"change points: (\d+) of (\d+) search windows searched", err)
    assert m, err
    return int(m.group(1)), int(m.group(2))


@pytest.fixture()
def hist(tmp_path: Path) -> Path:
    dest = tmp_path / "h"
    load_synth().generate(dest, commits=70, workloads=2, ops=4)
    return dest


def test_a_warm_run_searches_nothing_and_answers_the_same(
    hist: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "cache"
    plain, _ = regressions(hist, capsys, None, tmp_path / "a.json")
    cold, err = regressions(hist, capsys, cache, tmp_path / "b.json")
    done, total = searched(err)
    assert done == total > 8 * 3
    made, pairs = explained(err)
    assert made == pairs > 0
    warm, err = regressions(hist, capsys, cache, tmp_path / "c.json")
    assert searched(err) == (0, total)
    assert explained(err) == (0, pairs)  # every explanation from the cache
    assert plain == cold == warm
    assert plain["change_points"]  # the synthetic steps are found
    named = [cp["culprit"] for cp in plain["change_points"] if cp.get("culprit")]
    assert named and all(c["explanation"]["findings"] for c in named)


def test_an_explanation_is_made_again_when_a_file_it_read_changed(
    hist: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A sidecar of a culprit's commit rewritten (the same content, other bytes): the
    comparisons that read it are made again, the others come from the cache, and the
    entries no longer asked for are removed (the folder holds one run's explanations)."""
    cache = tmp_path / "cache"
    cold, _ = regressions(hist, capsys, cache, tmp_path / "a.json")
    pairs = {(cp["commit_before"], cp["commit_after"]) for cp in cold["change_points"]
             if cp.get("culprit", {}).get("measured") == 0}  # fmt: skip
    commit = sorted(pairs)[0][1]
    (sidecar,) = (hist / "results" / "synth-runner").glob(f"{commit[:8]}-*.neuronasv")
    sidecar.write_text(sidecar.read_text() + "\n")
    stale = len(list((cache / "explanations").iterdir()))
    foreign = cache / "explanations" / "notes.txt"
    foreign.write_text("mine")
    warm, err = regressions(hist, capsys, cache, tmp_path / "b.json")
    assert explained(err) == (sum(commit in p for p in pairs), len(pairs))
    assert warm == cold
    left = sorted(p.name for p in (cache / "explanations").iterdir())
    assert "notes.txt" in left and foreign.read_text() == "mine"  # not the cache's: kept
    assert len(left) - 1 == stale  # the stale entries went, the new ones came


def test_explanations_spread_over_processes_answer_as_made_here(hist: Path) -> None:
    """The comparisons made in worker processes (4 pairs or more) are the ones made here."""
    from neuronasv.steps import regressions as cmd
    from neuronasv.store.asvresults import result_paths
    from neuronasv.store.git import Git
    from neuronasv.store.history import FilesByCommit, load_history

    git = Git(hist / "repo")
    commits = git.ancestors(git.rev_parse("HEAD"), 6)[::-1]  # oldest first
    rdir = str(hist / "results")
    h = load_history(rdir, machine="synth-runner", git=git, commits=commits[:2])
    series = tuple(s.series for s in h.series[:3])
    listing = FilesByCommit(result_paths(rdir, "synth-runner"))
    jobs = [(("synth-runner", a, b), series, tuple(listing.of((a, b))))
            for a, b in itertools.pairwise(commits)]  # fmt: skip
    assert all(len(j[2]) == 2 for j in jobs)  # each pair's two results files, looked up
    assert len(jobs) >= 4  # the pool's threshold
    here = cmd._explain_jobs(jobs, rdir, git, 1)
    spread = cmd._explain_jobs(jobs, rdir, git, 2)
    assert spread == here and all(len(w) == 3 and w[0]["findings"] for w in here)


def test_one_more_commit_searches_only_the_windows_it_touches(
    hist: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "cache"
    regressions(hist, capsys, cache, tmp_path / "a.json")
    load_synth().generate(hist, commits=1, append=True)
    warm, err = regressions(hist, capsys, cache, tmp_path / "b.json")
    done, _total = searched(err)
    assert 0 < done <= 2 * 8  # at most the last two windows of each of the 8 series
    plain, _ = regressions(hist, capsys, None, tmp_path / "c.json")
    assert warm == plain


def _results(hist: Path) -> list[Path]:
    return sorted((hist / "results" / "synth-runner").glob("*-existing-py_venv.json"))


def test_a_value_changed_in_the_middle_is_searched_again(
    hist: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A results file rewritten in place, same size and the same mtime: its inode's ctime
    moves, so it is hashed, parsed again, and every window from that commit on (whose
    values moved) is searched again."""
    cache = tmp_path / "cache"
    regressions(hist, capsys, cache, tmp_path / "a.json")
    f = _results(hist)[5]
    st = os.stat(f)
    text = f.read_text()
    data = json.loads(text)
    row = next(iter(data["results"].values()))
    row[0] = [v * 1.9 if isinstance(v, float) else v for v in row[0]]  # a spike
    new = json.dumps(data, separators=(",", ":"))
    new = new[: len(text)].ljust(len(text)) if len(new) >= len(text) else new.ljust(len(text))
    json.loads(new)  # still JSON, same size
    f.write_text(new)
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    warm, err = regressions(hist, capsys, cache, tmp_path / "b.json")
    assert searched(err)[0] > 0
    plain, _ = regressions(hist, capsys, None, tmp_path / "c.json")
    assert warm == plain


def test_another_history_at_the_same_path_is_not_taken_for_the_cached_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The stalest cache there is: every file replaced (other values, other commits)."""
    hist = tmp_path / "h"
    cache = tmp_path / "cache"
    load_synth().generate(hist, commits=60, workloads=2, ops=4, seed=1)
    regressions(hist, capsys, cache, tmp_path / "a.json")
    shutil.rmtree(hist)
    load_synth().generate(hist, commits=60, workloads=2, ops=4, seed=2)
    warm, _ = regressions(hist, capsys, cache, tmp_path / "b.json")
    plain, _ = regressions(hist, capsys, None, tmp_path / "c.json")
    assert warm == plain


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "swap", "empty"])
def test_a_damaged_cache_costs_time_never_an_answer(
    hist: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: str
) -> None:
    cache = tmp_path / "cache"
    regressions(hist, capsys, cache, tmp_path / "a.json")
    files = sorted(p for p in cache.rglob("*") if p.is_file())
    assert any(p.suffix == ".cpcache" for p in files) and any(p.suffix == ".pack" for p in files)
    rng = np.random.default_rng(0)
    blobs = [p.read_bytes() for p in files]
    for i, p in enumerate(files):
        raw = blobs[i]
        if damage == "truncate":
            p.write_bytes(raw[: len(raw) // 2])
        elif damage == "flip":
            at = int(rng.integers(0, len(raw)))
            p.write_bytes(raw[:at] + bytes([raw[at] ^ 0x10]) + raw[at + 1 :])
        elif damage == "garbage":
            p.write_bytes(rng.integers(0, 256, len(raw), dtype=np.uint8).tobytes())
        elif damage == "swap":  # another entry's bytes under this name
            p.write_bytes(blobs[(i + 1) % len(blobs)])
        else:
            p.write_bytes(b"")
    warm, _ = regressions(hist, capsys, cache, tmp_path / "b.json")
    plain, _ = regressions(hist, capsys, None, tmp_path / "c.json")
    assert warm == plain


def test_window_cache_offers_only_windows_with_the_same_values(tmp_path: Path) -> None:
    key = ("m", "env", "b", ("'x'",))
    values = np.arange(100, dtype=float) + 1.0
    found = {s: (s + 3,) for s in range(0, 90, 10)}  # window 20, stride 10
    wc = WindowCache(str(tmp_path), "m", 20, 0.001, KEY)
    wc.record(key, values, found)
    assert wc.save() is None
    back = WindowCache(str(tmp_path), "m", 20, 0.001, KEY).load()
    assert back.known(key, values) == found
    # one more point: the windows that reached the end are not the same search now
    grown = back.known(key, np.append(values, 7.0))
    assert grown == {s: c for s, c in found.items() if s + 20 <= 100}
    # a value changed at 45: windows ending after it are searched again
    changed = values.copy()
    changed[45] = 0.5
    assert back.known(key, changed) == {s: c for s, c in found.items() if s + 20 <= 45}
    # -0.0 and 0.0 are different bits: not the same values
    z = values.copy()
    z[0] = 0.0
    wc.record(key, z, found)
    wc.save()
    z[0] = -0.0
    assert WindowCache(str(tmp_path), "m", 20, 0.001, KEY).load().known(key, z) == {}
    # other settings, another machine, another key: nothing
    assert WindowCache(str(tmp_path), "m", 20, 0.01, KEY).load().known(key, values) == {}
    assert WindowCache(str(tmp_path), "m", 21, 0.001, KEY).load().known(key, values) == {}
    assert WindowCache(str(tmp_path), "m2", 20, 0.001, KEY).load().known(key, values) == {}
    other = CacheKey(b"o" * 32)
    assert WindowCache(str(tmp_path), "m", 20, 0.001, other).load().known(key, z) == {}
