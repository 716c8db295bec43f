from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
from analyse_asvdata import Bench, neuronasv_run, write_run

from neuronasv.errors import CorruptResultsError, ResultsError, SchemaVersionError
from neuronasv.store.history import load_history, parse_result_file, resolve_commit
from tests.analyse.conftest import DATA


def test_plain_asv_results_load_with_errors_named(tmp_path):
    h = load_history(os.path.join(DATA, "plain"))
    by = {s.series.label: s for s in h.series}
    assert sorted(by) == [
        "suite.TimeIO.time_read('a')",
        "suite.TimeSort.time_sort(10)",
        "suite.TimeSort.time_sort(100)",
        "suite.time_broken",
    ]
    # NaN (skipped) combination has no points; failed benchmark has value None points.
    assert all(p.value is None and p.samples == () for p in by["suite.time_broken"].points)
    assert by["suite.TimeSort.time_sort(10)"].unit == "seconds"
    assert len(by["suite.TimeSort.time_sort(10)"].points[0].samples) == 10
    assert [c[:8] for c in h.commits] == ["aaaa1111", "bbbb2222"]
    errs = sorted(h.load_errors)
    assert len(errs) == 2
    assert "cccc3333-conda-py3.11.json: not valid JSON" in errs[0]
    assert "truncated" in errs[0]
    assert "dddd4444-conda-py3.11.json: asv results api_version 3 is not supported" in errs[1]


def test_parse_errors_raise_with_file_and_field(tmp_path):
    p = tmp_path / "m" / "x.json"
    p.parent.mkdir()
    p.write_text('{"version": 1, "commit_hash": "a"}')
    with pytest.raises(SchemaVersionError, match="asv update"):
        parse_result_file(p)
    p.write_text('{"version": 2, "commit_hash": "a", "result_columns": ["result"]}')
    with pytest.raises(CorruptResultsError, match="'results' is missing"):
        parse_result_file(p)
    p.write_text(
        '{"version": 2, "commit_hash": "a", "result_columns": ["result"],'
        ' "results": {"b": [["x"]]}}'
    )
    with pytest.raises(CorruptResultsError, match=r"benchmark 'b' result\[0\] is not a number"):
        parse_result_file(p)
    p.write_text("")
    with pytest.raises(CorruptResultsError, match="empty file"):
        parse_result_file(p)


def test_nan_samples_dropped_and_nan_result_skipped(tmp_path):
    path = write_run(
        str(tmp_path),
        "m",
        "c" * 40,
        1,
        [Bench("b.time_x", [["1", "2"]], [[1.0, 2.0, 3.0], float("nan")])],
    )
    with open(path) as fh:
        data = json.loads(fh.read())
    row = data["results"]["b.time_x"]
    row[data["result_columns"].index("samples")][0].append(float("nan"))
    with open(path, "w") as fh:
        fh.write(json.dumps(data))  # bare NaN, as asv writes
    pf = parse_result_file(path)
    assert [(e.params, e.samples) for e in pf.entries] == [(("1",), (1.0, 2.0, 3.0))]


def test_sidecar_maps_series_and_fingerprints(tmp_path):
    h = load_history(os.path.join(DATA, "pr"))
    labels = sorted(s.series.label for s in h.series)
    assert "rmsnorm.naive 4x512 bfloat16 · aten::mul" in labels
    assert "rmsnorm.naive 4x512 bfloat16" in labels
    assert all(s.unit == "seconds" for s in h.series)
    (fp,) = {tuple(sorted(v.items())) for v in h.fingerprints.values()}
    assert dict(fp)["device_model"] == "cpu"
    assert len(h.profiles) == 2 and h.load_errors == ()


def test_corrupt_sidecar_is_reported_results_still_load(tmp_path):
    shutil.copytree(os.path.join(DATA, "pr"), tmp_path / "pr")
    sc = next((tmp_path / "pr" / "ci-cpu-1").glob("1a2b*.neuronasv"))
    sc.write_text(sc.read_text()[:100])
    h = load_history(tmp_path / "pr")
    assert len(h.load_errors) == 1 and "sidecar ignored" in h.load_errors[0]
    assert str(sc) in h.load_errors[0]
    assert len(h.commits) == 2


def test_git_order_wins_over_dates_and_prefix_resolution(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@e",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@e",
    }
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    commits = []
    for i in range(3):
        subprocess.run(
            ["git", "-C", str(repo), "commit", "-q", "--allow-empty", "-m", f"c{i}"],
            check=True,
            env=env,
        )
        commits.append(
            subprocess.run(
                ["git", "-C", str(repo), "rev-parse", "HEAD"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
        )
    rd = str(tmp_path / "results")
    for i, c in enumerate(commits):  # asv dates deliberately reversed
        write_run(rd, "m", c, 10_000 - i, [Bench("b.time_x", [], [[1.0, 1.1, 1.2]])])
    assert load_history(rd).commits == tuple(reversed(commits))
    h = load_history(rd, repo=str(repo))
    assert h.commits == tuple(commits)
    assert [p.order for p in h.series[0].points] == [0, 1, 2]
    from neuronasv.store.git import git_for

    assert resolve_commit("HEAD~1", h, git_for(str(repo))) == commits[1]
    assert resolve_commit(commits[2][:7], h, None) == commits[2]


def test_machine_filter(tmp_path):
    rd = str(tmp_path)
    wl = {("w", "1", "float32"): {"op": (1.0, [1.0, 2.0, 3.0])}}
    neuronasv_run(rd, "m1", "a" * 40, 1, wl)
    neuronasv_run(rd, "m2", "a" * 40, 1, wl)
    assert load_history(rd).machines == ("m1", "m2")
    assert load_history(rd, machine="m2").machines == ("m2",)


def _wl(us: float) -> dict:
    return {("rmsnorm.naive", "4x512", "float32"): {"aten::mul": (1.0, [us] * 5)}}


def test_two_different_files_for_one_run_are_an_error_naming_both(tmp_path):
    """Issue 13 #4, issue 22: a stale copy under another name is never used, not even
    with a warning: the load fails and names both files (exit 5)."""
    rd = str(tmp_path / "r")
    path = neuronasv_run(rd, "m", "a" * 40, 1, _wl(10.0))
    neuronasv_run(rd, "m", "b" * 40, 2, _wl(10.0))
    stale = os.path.join(os.path.dirname(path), "old-copy.json")
    fresh = neuronasv_run(str(tmp_path / "other"), "m", "a" * 40, 1, _wl(30.0))
    shutil.copy(fresh, stale)  # same machine/commit/env, stale values, another file name
    with pytest.raises(ResultsError, match="different results files for one run") as exc:
        load_history(rd)
    assert path in exc.value.message and stale in exc.value.message
    assert exc.value.exit_code == 5


def test_a_byte_identical_copy_of_a_run_is_used_once_without_error(tmp_path):
    rd = str(tmp_path / "r")
    path = neuronasv_run(rd, "m", "a" * 40, 1, _wl(10.0))
    neuronasv_run(rd, "m", "b" * 40, 2, _wl(10.0))
    for n in ("x-1.json", "x-2.json"):
        shutil.copy(path, os.path.join(os.path.dirname(path), n))
    h = load_history(rd)
    assert h.load_errors == ()
    mul = next(s for s in h.series if s.series.op == "aten::mul")
    assert [p.commit for p in mul.points] == ["a" * 40, "b" * 40]
