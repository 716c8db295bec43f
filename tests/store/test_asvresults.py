"""The one asv results reader: the loader and the site's scan decide the format alike."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from neuronasv.errors import SchemaVersionError
from neuronasv.publish.scan import scan_results
from neuronasv.store.asvresults import AsvResultsReader, default_unit, unit_for, unquote
from neuronasv.store.columns import ColumnsParser
from neuronasv.store.history import load_history, parse_result_file
from tests.analyse.analyse_asvdata import Bench, neuronasv_run, write_run

PKG = Path(__file__).resolve().parents[2] / "neuronasv"
A, B = "a" * 40, "b" * 40


def _units_of_both(rd: Path) -> tuple[dict[str, str], dict[str, str]]:
    h = load_history(rd)
    loader = {s.series.label: s.unit for s in h.series}
    (m,) = scan_results(rd, workers=1).machines
    scan = {i.series.label: i.unit for i in m.series}
    return loader, scan


def test_one_unit_decision(tmp_path: Path) -> None:
    """A benchmark a sidecar maps is device time in seconds, whatever its prefix: the loader
    said so, the scan used asv's prefix rule (``track_`` -> ``unit``) — the wrong copy."""
    rd = tmp_path / "results"
    wl = {("rmsnorm.naive", "4x512", "fp32"): {"aten::mul": (1.0, [10.0, 11.0, 12.0])}}
    neuronasv_run(str(rd), "m", A, 1_000, wl)  # benchmark devtime.DeviceTime.track_devtime
    write_run(str(rd), "m", A, 1_000, [Bench("plain.track_x", [], [[1.0, 2.0]])], env_name="e2")
    loader, scan = _units_of_both(rd)
    assert loader == scan
    assert {u for label, u in loader.items() if "rmsnorm" in label} == {"seconds"}
    assert [u for label, u in loader.items() if "track_x" in label] == ["unit"]
    # the rule itself: benchmarks.json first, then a sidecar's mapping, then the prefix
    assert unit_for("s.track_x", {"s.track_x": "bytes"}, True) == "bytes"
    assert unit_for("s.track_x", {}, True) == "seconds"
    assert unit_for("s.track_x", {}, False) == default_unit("s.track_x") == "unit"


def _write(path: Path, doc: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc), encoding="utf-8")


def _doc(**over: object) -> dict:
    doc = {
        "version": 2, "commit_hash": A, "env_name": "e", "date": 5.0e12,
        "params": {"machine": "m"}, "result_columns": ["result", "params"],
        "results": {"s.time_x": [[1.0, 2.0], [["'a'", "'b'"]]]},
    }  # fmt: skip
    doc.update(over)
    return doc


@pytest.mark.parametrize(
    ("over", "why"),
    [
        ({"version": 1}, "api_version 1 is not supported (reads 2; run `asv update`"),
        ({"version": None}, "no asv 'version' field"),
        ({"commit_hash": ""}, "commit_hash must be a non-empty string"),
        ({"results": {"s.time_x": [["oops", 2.0], [["'a'", "'b'"]]]}}, "is not a number"),
        ({"results": {"s.time_x": [[True, 2.0], [["'a'", "'b'"]]]}}, "is not a number"),
        ({"results": {"s.time_x": [[1.0], [["'a'", "'b'"]]]}}, "1 results for 2 parameter"),
        ({"results": {"s.time_x": [[1.0, 2.0], ["a"]]}}, "params must be a list of lists"),
    ],
)
def test_one_error_for_a_bad_file_in_both_readers(tmp_path: Path, over: dict, why: str) -> None:
    rd = tmp_path / "results"
    bad = rd / "m" / f"{A[:8]}-e.json"
    _write(bad, _doc(**over))
    _write(rd / "m" / f"{B[:8]}-e.json", _doc(commit_hash=B))  # a good one beside it
    h = load_history(rd)
    site = scan_results(rd, workers=1)
    assert h.commits == (B,) and site.machines[0].commits == [B]
    (loader_err,) = h.load_errors
    (scan_err,) = site.load_errors
    assert loader_err == scan_err and why in loader_err and str(bad) in loader_err


def test_one_date_parse_and_env_fallback(tmp_path: Path) -> None:
    rd = tmp_path / "results"
    doc = _doc(date=float("nan"))
    del doc["env_name"]
    _write(rd / "m" / f"{A[:8]}-py3.json", doc)
    _write(rd / "m" / f"{B[:8]}-py3.json", _doc(commit_hash=B, env_name="py3", date="soon"))
    h = load_history(rd)
    (m,) = scan_results(rd, workers=1).machines
    assert {s.env_name for s in h.series} == {m.series[0].env_name} == {"py3"}
    assert all(p.date is None for s in h.series for p in s.points)
    assert list(m.dates) == [0, 0]  # no date: 0 in the site's column, None in the loader


def test_reader_owns_its_memos() -> None:
    one, two = AsvResultsReader(), AsvResultsReader()
    c1, k1 = one.combos("s.x", [["'a'", "'b'"]])
    assert one.combos("s.x", [["'a'", "'b'"]]) == (c1, k1)  # memo hit, same key
    c2, _k2 = two.combos("s.x", [["'a'", "'b'"]])
    assert c2 == c1 and c2 is not c1  # nothing shared between readers
    assert one.combos("s.x", [[1, True]])[0] == (("1",), ("True",))  # not memoised
    assert unquote("'a'") == "a" and unquote('"b"') == "b" and unquote("'") == "'"


def test_version_check_is_one_check(tmp_path: Path) -> None:
    p = tmp_path / "m" / "x-e.json"
    _write(p, _doc(version=3))
    msgs = []
    with pytest.raises(SchemaVersionError) as a:
        parse_result_file(str(p))
    msgs.append(str(a.value))
    with pytest.raises(SchemaVersionError) as b:
        ColumnsParser().parse(str(p))
    msgs.append(str(b.value))
    assert msgs[0] == msgs[1] and "written by a newer asv" in msgs[0]


# store/asvjson.py is the reader's JSON decode, split from store/asvresults.py: one home.
_READERS = ("store/asvresults.py", "store/asvjson.py", "store/history.py", "store/columns.py")


@pytest.mark.parametrize("rel", _READERS)
def test_no_module_level_memo_and_no_id_keys(rel: str) -> None:
    """Caches live in reader objects: no empty dict/list/set at module level, no id().

    (The scan's pool workers hold their parser in one module global, ``_worker``, set by
    the pool's initializer in the worker process only.)"""
    tree = ast.parse((PKG / rel).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            v = node.value
            # an empty container at module level is an accumulator (constants are not empty)
            empty = (isinstance(v, (ast.Dict, ast.Set)) and not v.keys if isinstance(v, ast.Dict)
                     else isinstance(v, (ast.List, ast.Set)) and not v.elts) or (
                isinstance(v, ast.Call) and isinstance(v.func, ast.Name)
                and v.func.id in {"dict", "list", "set", "OrderedDict", "defaultdict"}
            )  # fmt: skip
            assert not empty, f"{rel}:{node.lineno}: module-level mutable state"
    calls = [
        n for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "id"
    ]  # fmt: skip
    assert calls == [], f"{rel}: id() used as a key"
