"""The columnar history (``store.columns``) holds what ``load_history`` holds, for change points.

One results folder with everything the loader has rules for: neuronasv runs with sidecars
(a ``track_`` benchmark the sidecars map: seconds), ops absent in some commits (NaN: no
point), a failed benchmark (null: a point with no value), a plain asv benchmark in two
environments, a series that gains its identity from a later sidecar, instruction counts
with a count the pass found not deterministic, a second machine, an unreadable results
file and an unreadable sidecar. The matrices must give the loader's series, units, values,
measured commits, fingerprints, commit order and errors, and ``column_series`` the very
points ``series_values`` keeps from the ``History``.

The same folder with odd canary readings (``build(..., odd=True)``): runs whose every
benchmark failed but whose sidecars hold canary readings, a readable sidecar beside a
results file that cannot be read (its canary says "fast"), and a sidecar whose op tables
are damaged (a canary with no reading). ``neuronasv regressions`` must give on both
folders exactly the document and the device-health decision of the ``History`` path.
"""

from __future__ import annotations

import dataclasses
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from neuronasv.analyse.changepoints import column_series, series_values
from neuronasv.errors import CorruptResultsError, ResultsError
from neuronasv.model import CanaryReading, History, RunSidecar, SeriesId, WorkloadProfile
from neuronasv.model.counts import PassCounts
from neuronasv.store.columns import Columns, load_columns, parse_columns
from neuronasv.store.filecolumns import decode_file, decode_head, encode_file
from neuronasv.store.history import load_history, sidecar_profiles
from neuronasv.store.layout import sidecar_path
from tests.analyse.analyse_asvdata import ENV, Bench, neuronasv_run, write_run
from tests.publish.conftest import load_synth

INSTR = "suite.Instr.instr_op"


def _commit(i: int) -> str:
    return f"{i:08x}" + "ab" * 16


def _instr_sidecar(
    machine: str,
    commit: str,
    unstable: tuple[str, ...] | None,
    fp: dict[str, str],
    canary: CanaryReading,
) -> RunSidecar:
    counts = PassCounts(total=1.0, deterministic=unstable is None, unstable=unstable or ())
    sid = [SeriesId(INSTR, (f"'{op}'",), "rms", "4x8", "float32", op)
           for op in ("aten::mul", "aten::add")]  # fmt: skip
    prof = WorkloadProfile("rms", "cpu", "4x8", "float32", (1.0,), (), counted=counts,
                           canary=canary)  # fmt: skip
    return RunSidecar(machine, commit, "py-instr", fp, (prof,), tuple(sid))


def build(root: Path, n: int = 24, *, odd: bool = False) -> Path:
    """The mixed results folder (see the module docstring); ``odd``: with odd canaries."""
    rd = root / "results"
    rng = np.random.default_rng(3)
    for i in range(n):
        c = _commit(i)
        table = {
            ("rms", "4x8", "float32"): {
                "aten::mul": (1.0, list(rng.normal(150.0 * (1.3 if i >= 12 else 1.0), 2.0, 5))),
                "aten::add": (1.0, list(rng.normal(30.0, 0.5, 5))),
            }
        }
        if i % 5 != 3:  # absent in some commits: the plugin's NaN
            table[("rms", "4x8", "float32")]["aten::div"] = (2.0, list(rng.normal(9.0, 0.1, 5)))
        fp = {"backend": "cpu", "device_model": "cpu", "torch": "2.13" if i >= 16 else "2.12"}
        level = 100.0 * (1.6 if i == n - 1 else 1.0) + float(rng.normal(0.0, 0.5))
        canary = CanaryReading("matmul", (level, level), (level, level))
        neuronasv_run(str(rd), "m", c, 1_000_000 + i, table, fingerprint=fp,
                      all_ops=["aten::add", "aten::div", "aten::mul"], canary=canary)  # fmt: skip
        # plain asv, two environments; a failure at commit 7; a series skipped at 9
        vals: list = [list(rng.normal(2e-3, 1e-5, 4)), list(rng.normal(1e-3, 1e-5, 4))]
        if i == 7:
            vals[0] = None
        if i == 9:
            vals[1] = math.nan
        write_run(str(rd), "m", c, 1_000_000 + i,
                  [Bench("plain.time_x", [["'a'", "'b'"]], vals)], env_name="py-a")  # fmt: skip
        if i % 2:
            write_run(str(rd), "m", c, 1_000_000 + i,
                      [Bench("plain.time_x", [["'a'", "'b'"]], vals)], env_name="py-b")  # fmt: skip
        # instruction counts: exact; the pass found aten::add unstable at 10 and 11, and
        # every target (none named) at 14; no sidecar before commit 4 (no identity yet)
        counts = [[12_102.0 + (24.0 if i >= 8 else 0.0)], [3_000.0 + (i == 10) * 5.0]]
        sc = None
        if i >= 4:
            unstable = ("aten::add",) if i in (10, 11) else (() if i == 14 else None)
            sc = _instr_sidecar("m", c, unstable, fp, canary)
        write_run(str(rd), "m", c, 1_000_000 + i,
                  [Bench(INSTR, [["'aten::mul'", "'aten::add'"]], counts)],
                  env_name="py-instr", record_samples=False, sidecar=sc)  # fmt: skip
    for i in range(5):  # a second machine
        table2 = {("rms", "4x8", "float32"): {"aten::mul": (1.0, [1.0, 1.1, 1.2])}}
        neuronasv_run(str(rd), "m2", _commit(100 + i), 2_000_000 + i, table2)
    (rd / "benchmarks.json").write_text(json.dumps({INSTR: {"unit": "instructions"}, "version": 2}))
    bad = rd / "m" / ("0badf00d-" + "py-a.json")
    bad.write_text('{"version": 2, "results": ')
    broken = sorted((rd / "m").glob(f"{_commit(20)[:8]}-py-a.json"))[0]
    Path(sidecar_path(str(broken))).write_text("{not json")
    if odd:
        _odd_canaries(rd, n)
    return rd


def _odd_canaries(rd: Path, n: int) -> None:
    fp = {"backend": "cpu", "device_model": "cpu", "torch": "2.13"}
    bench = [Bench(INSTR, [["'aten::mul'", "'aten::add'"]], [None, None])]
    for k in range(3):  # every benchmark failed; the sidecar's canary was read (slow)
        c = _commit(40 + k)
        slow = CanaryReading("matmul", (300.0, 310.0), (305.0,))
        write_run(str(rd), "m", c, 1_000_000 + 6 + k, bench, env_name="py-instr",
                  record_samples=False, sidecar=_instr_sidecar("m", c, None, fp, slow))  # fmt: skip
    for i in range(4, n):  # results that cannot be read; their sidecars can (fast canary)
        c = _commit(i)
        path = rd / "m" / f"{c[:8]}-py-z.json"  # sorts after the commit's readable files
        path.write_text('{"version": 2, "results": ')
        fast = CanaryReading("matmul", (20.0,), (20.0,))
        sc = _instr_sidecar("m", c, None, fp, fast)
        Path(sidecar_path(str(path))).write_text(sc.dumps())
    # op tables the loader refuses (a canary with no reading): the sidecar is ignored
    path = sorted((rd / "m").glob(f"{_commit(6)[:8]}-py-instr.json"))[0]
    damaged = _instr_sidecar("m", _commit(6), None, fp, CanaryReading("matmul", (), ()))
    Path(sidecar_path(str(path))).write_text(json.dumps(damaged.to_json()))


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("cols"))


@pytest.fixture(scope="module")
def odd_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("odd"), odd=True)


@pytest.fixture(params=["mixed", "odd canaries"])
def either(request: pytest.FixtureRequest, folder: Path, odd_folder: Path) -> Path:
    return folder if request.param == "mixed" else odd_folder


def assert_same(h: History, c: Columns) -> None:
    assert list(h.commits) == c.commits
    assert dict(h.fingerprints) == c.fingerprints
    assert list(h.load_errors) == c.load_errors
    rows = [(mc, i) for mc in c.machines for i in range(len(mc.series))]
    assert len(h.series) == len(rows)
    for s, (mc, i) in zip(h.series, rows, strict=True):
        cs = mc.series[i]
        assert (s.machine, s.env_name, s.series, s.unit) == (
            mc.name, cs.env_name, cs.series, cs.unit
        )  # fmt: skip
        col = {commit: j for j, commit in enumerate(mc.commits)}
        want = np.full(len(mc.commits), np.nan)
        measured = np.zeros(len(mc.commits), dtype=bool)
        for p in s.points:
            if p.value is not None:
                want[col[p.commit]] = p.value
                measured[col[p.commit]] = True
        assert np.array_equal(want, mc.values[i], equal_nan=True), s.series.label
        assert np.array_equal(measured, mc.measured[i]), s.series.label
    # the change-point inputs, exactly: the same kept points (exact rule included)
    old = series_values(h)
    new = [r for mc in c.machines for r in column_series(mc)]
    assert [(r.key, list(r.commits), r.values.tolist()) for r in old] == [
        (r.key, list(r.commits), r.values.tolist()) for r in new
    ]


@pytest.mark.parametrize("workers", [1, 2])
def test_matrices_hold_what_the_loader_holds(folder: Path, workers: int) -> None:
    h = load_history(folder)
    c = load_columns(folder, workers=workers)
    assert any("0badf00d" in e for e in c.load_errors)
    assert any("sidecar ignored" in e for e in c.load_errors)
    units = {s.series.benchmark: s.unit for mc in c.machines for s in mc.series}
    assert units["devtime.DeviceTime.track_devtime"] == "seconds"  # mapped by the sidecars
    assert units[INSTR] == "instructions"
    assert_same(h, c)
    # the exact rule left points out: aten::add at 10, 11 (named) and 14 (none named)
    (add,) = [r for r in column_series(c.machines[0])
              if r.series.op == "aten::add" and r.series.benchmark == INSTR]  # fmt: skip
    assert {_commit(i) for i in (10, 11, 14)}.isdisjoint(add.commits)


def test_the_odd_folder_s_matrices(odd_folder: Path) -> None:
    assert_same(load_history(odd_folder), load_columns(odd_folder, workers=1))


def test_one_machine(folder: Path) -> None:
    assert_same(load_history(folder, machine="m2"), load_columns(folder, machine="m2"))


def test_git_order_and_the_synthetic_history(tmp_path: Path) -> None:
    dest = tmp_path / "h"
    load_synth().generate(dest, commits=30, workloads=2, ops=4, samples=3)
    h = load_history(dest / "results", repo=dest / "repo")
    c = load_columns(dest / "results", repo=dest / "repo", workers=1)
    assert not h.load_errors and len(c.commits) == 30
    assert_same(h, c)


def test_cached_files_give_the_same_matrices(folder: Path, tmp_path: Path) -> None:
    from neuronasv.store.cachekey import CacheKey
    from neuronasv.store.histcache import ColumnsDiskCache

    key = CacheKey(b"k" * 32)
    cache = ColumnsDiskCache(str(tmp_path / "cache"), key)
    lay = str(tmp_path / "cache" / "layouts")
    first = load_columns(folder, cache=cache, layouts_dir=lay, workers=1)
    assert cache.writes > 40 and cache.hits == 0
    again = ColumnsDiskCache(str(tmp_path / "cache"), key)
    second = load_columns(folder, cache=again, layouts_dir=lay, workers=1)
    # every readable file from the cache (hashed: written just now, "racy"); the
    # unreadable one is parsed again, and fails again
    assert again.hits == cache.writes and again.misses == 1
    assert_same(load_history(folder), second)
    assert first.commits == second.commits


def test_codec_round_trip_and_damage(folder: Path) -> None:
    path = str(sorted((folder / "m").glob("*-py-a.json"))[0])
    fc, _layout = parse_columns(path)
    raw = encode_file(fc)
    back = decode_file(raw)
    assert np.array_equal(back.values, fc.values, equal_nan=True)
    assert (back.failed == fc.failed).all() and back.digest == fc.digest
    for cut in (raw[:-1], raw[:40], raw[:-40] + raw[-39:], bytes([raw[0] ^ 1]) + raw[1:]):
        with pytest.raises(ValueError):
            decode_file(cut)
    # the arrays are views of the bytes, not copies
    assert not back.values.flags.writeable and not back.q25.flags.writeable
    # a path no codec can spell (a lone surrogate of an undecodable byte): the stdlib
    # decodes what msgspec refuses, the same value
    odd = dataclasses.replace(fc, path=fc.path + "\udc80")
    assert decode_file(encode_file(odd)).path == odd.path


def test_decode_head_is_json_loads() -> None:
    for text in ('{"a": [1, "x", null, 2.5]}', '{"p": "\\udc80"}', '{"d": NaN}',
                 '{"n": 123456789012345678901234567890}', '"\\u00e9"'):  # fmt: skip
        got, want = decode_head(text.encode()), json.loads(text)
        assert json.dumps(got) == json.dumps(want), text
    with pytest.raises(ValueError):
        decode_head(b'{"a": ')


def test_the_loader_errors_are_the_columns_errors(folder: Path, tmp_path: Path) -> None:
    # a value <= 0 in a series the sidecar maps (seconds): both refuse, the same words
    rd = tmp_path / "neg"
    shutil.copytree(folder, rd)
    f = rd / "m" / f"{_commit(5)[:8]}-{ENV}.json"
    data = json.loads(f.read_text())
    row = data["results"]["devtime.DeviceTime.track_devtime"]
    row[0] = [-1.0 if isinstance(v, float) and v == v else v for v in row[0]]
    f.write_text(json.dumps(data))
    with pytest.raises(CorruptResultsError) as old:
        load_history(rd)
    with pytest.raises(CorruptResultsError) as new:
        load_columns(rd, workers=1)
    assert str(old.value) == str(new.value)
    # two different files for one run: both refuse, naming both
    rd2 = tmp_path / "dup"
    shutil.copytree(folder, rd2)
    src = sorted((rd2 / "m").glob(f"{_commit(3)[:8]}-py-a.json"))[0]
    text = src.read_text().replace('"date":', '"date": 1, "x":', 1)
    (rd2 / "m" / "copy.json").write_text(text)
    with pytest.raises(ResultsError) as old_dup:
        load_history(rd2)
    with pytest.raises(ResultsError) as new_dup:
        load_columns(rd2, workers=1)
    assert str(old_dup.value) == str(new_dup.value)


def test_sidecar_profiles_are_the_loaders(odd_folder: Path) -> None:
    h = load_history(odd_folder, machine="m")
    (mc,) = load_columns(odd_folder, machine="m", workers=1).machines
    # the loader keeps, per commit, the last readable sidecar of a file it could read
    assert {c for _m, c in h.profiles} == set(mc.sidecars)
    assert list(mc.sidecars) == [c for c in mc.commits if c in mc.sidecars]  # history order
    assert sidecar_profiles("m", mc.sidecars) == h.profiles
    assert _commit(6) in mc.sidecars and _commit(40) in mc.sidecars
    assert all(not p.endswith("-py-z.json") for p in mc.sidecars.values())


def _doc(argv: list[str], out: Path) -> dict:
    from neuronasv.cli import main

    assert main([*argv, "--format", "json", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    doc.pop("created")
    return doc


@pytest.mark.parametrize("window", ["50", "8"])
@pytest.mark.parametrize("machine", ["m", None])
def test_regressions_is_the_history_path_s_document(
    either: Path, tmp_path: Path, window: str, machine: str | None
) -> None:
    """``neuronasv regressions`` (matrices, cached search, the newest check on a history of
    the two commits and the last sidecars) against ``regressions_document`` on the whole
    ``History`` (what ``publish --detect`` and the API still use, and what the command
    was): the same document, with and without its cache, on one machine (the newest
    commit compared) and on both (change points only)."""
    from neuronasv.analyse.changepoints import CPSettings
    from neuronasv.analyse.newest import newest_for, regressions_document

    argv = ["regressions", "--results-dir", str(either), "--window", window]
    argv += ["--machine", machine] if machine else []
    cold = _doc(argv, tmp_path / "cold.json")
    new = _doc([*argv, "--cache-dir", str(tmp_path / "c")], tmp_path / "a.json")
    again = _doc([*argv, "--cache-dir", str(tmp_path / "c")], tmp_path / "b.json")
    h = load_history(either, machine=machine)
    newest = newest_for(h, machine, None) if machine else None
    old = regressions_document(
        h, machine=machine, settings=CPSettings(window=int(window)), newest=newest
    ).to_json()
    old.pop("created")
    assert new["change_points"] and (new["findings"] or not machine)
    assert new == old
    assert cold == old and again == old


def test_the_newest_check_is_the_history_path_s_device_health_included(either: Path) -> None:
    """The newest check (its compare document carries device health, which the
    regressions document leaves out) against ``newest_for`` on the whole ``History``:
    the same canary readings judged, so the same decision and the same history count."""
    from neuronasv.analyse.newest import newest_for, newest_for_columns
    from neuronasv.steps.regressions import newest_loader

    h = load_history(either, machine="m")
    old = newest_for(h, "m", None, created="t")
    columns = load_columns(either, machine="m", workers=1)
    new = newest_for_columns(columns, "m", None, newest_loader(str(either), "m", None),
                             created="t")  # fmt: skip
    assert old is not None and new is not None and old.doc is not None
    assert old.doc.health is not None and old.doc.health.status == "withheld"  # 60 % slow
    # the failed runs' canaries count too (22 runs in the mixed folder, 25 with them)
    odd = (either / "m" / f"{_commit(40)[:8]}-py-instr.json").exists()
    assert {c.history_n for c in old.doc.health.checks} == {25 if odd else 22}
    # the same comparison; its load errors are those of the files it read (the document
    # of `regressions` takes the whole folder's, as before)
    assert new.doc is not None and new.source == old.source
    assert dataclasses.replace(new.doc, load_errors=old.doc.load_errors) == old.doc
