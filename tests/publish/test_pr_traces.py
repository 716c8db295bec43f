"""Picking the flagged workloads' traces for the PR artifact (issue 14 item 4)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from neuronasv.errors import UsageError
from neuronasv.model import Cause, FindingsDocument, OpContribution, RunRef, SeriesId
from neuronasv.publish.traces import pick_flagged_traces
from neuronasv.report.traces import flagged_workloads, trace_path
from tests.builders import finding

BASE, HEAD = "b" * 40, "c" * 40
M = "runner-1"
HOSTILE = "rms/../../norm <b>@x</b>"  # a workload name nobody should trust as a path


def _doc(workload: str = "rmsnorm.naive") -> FindingsDocument:
    total = SeriesId("b.devtime", ("'total'",), workload, "4x512", "bfloat16")
    quiet = SeriesId("b.devtime", ("'total'",), "rmsnorm.fused", "4x512", "bfloat16")
    f = finding(total, "regression", base=1e-5, head=2e-5,
                attribution=(OpContribution("aten::add", 1e-6, 0.5e-6, -0.5e-6, -0.05),
                             OpContribution("aten::mul", 5e-6, 15e-6, 1e-5, 1.0)))  # fmt: skip
    ok = finding(quiet, "unchanged", base=1e-5, head=1e-5)
    return FindingsDocument(
        mode="compare", base=RunRef(BASE, M), head=RunRef(HEAD, M), findings=(f, ok),
        causes=(Cause("timing", workload, "regression", configs=(("4x512", "bfloat16"),),
                      totals=(total,)),),
    )  # fmt: skip


def _store(root: Path, workload: str, neuron: bool = False) -> None:
    from neuronasv.measure.profiling import trace_file_stem

    for sha in (BASE, HEAD):
        stem = trace_file_stem(workload, "4x512", "bfloat16")
        d = root / M / sha[:8]
        d.mkdir(parents=True, exist_ok=True)
        (d / f"{stem}.json.gz").write_bytes(gzip.compress(json.dumps({"sha": sha}).encode()))
        (d / f"{trace_file_stem('rmsnorm.fused', '4x512', 'bfloat16')}.json.gz").write_bytes(b"x")
        if neuron:
            (d / stem / "i-0_pid_1").mkdir(parents=True)
            (d / stem / "i-0_pid_1" / "graph.ntff").write_bytes(b"ntff")


def test_only_the_flagged_workloads_traces_are_picked_with_the_op_to_look_for(
    tmp_path: Path,
) -> None:
    doc = _doc()
    (fw,) = flagged_workloads(doc)
    assert (fw.key, fw.op) == ("rmsnorm.naive[4x512,bfloat16]", "aten::mul")
    _store(tmp_path / "store", "rmsnorm.naive", neuron=True)
    out = tmp_path / "out"
    picked = pick_flagged_traces(doc, str(tmp_path / "store"), M, str(out))
    base_rel = trace_path("base", BASE, "rmsnorm.naive", "4x512", "bfloat16")
    assert base_rel == f"base-{BASE[:8]}/rmsnorm.naive-4x512-bfloat16.json.gz"
    head_rel = trace_path("head", HEAD, "rmsnorm.naive", "4x512", "bfloat16")
    assert picked.copied == (base_rel, base_rel[:-8] + "/", head_rel, head_rel[:-8] + "/")
    assert picked.missing == ()
    for rel, sha in ((base_rel, BASE), (head_rel, HEAD)):
        assert json.loads(gzip.decompress((out / rel).read_bytes())) == {"sha": sha}
        # Neuron: the NTFF folder travels beside the chrome trace.
        assert (out / rel[:-8] / "i-0_pid_1" / "graph.ntff").read_bytes() == b"ntff"
    assert not list(out.rglob("rmsnorm.fused*"))  # not flagged: not uploaded


def test_hostile_workload_names_stay_inside_the_output(tmp_path: Path) -> None:
    doc = _doc(HOSTILE)
    _store(tmp_path / "store", HOSTILE)
    out = tmp_path / "out"
    picked = pick_flagged_traces(doc, str(tmp_path / "store"), M, str(out))
    assert len(picked.copied) == 2
    for rel in picked.copied:
        assert "/" in rel and ".." not in rel.split("/") and "<" not in rel and " " not in rel
        assert (out / rel).resolve().is_relative_to(out.resolve())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "store"]


def test_missing_traces_are_reported_not_fatal_and_bad_input_is_a_usage_error(
    tmp_path: Path,
) -> None:
    picked = pick_flagged_traces(_doc(), str(tmp_path / "empty"), M, str(tmp_path / "out"))
    assert picked.copied == () and len(picked.missing) == 2
    with pytest.raises(UsageError):
        pick_flagged_traces(_doc(), str(tmp_path), "../up", str(tmp_path / "out"))
    history = FindingsDocument(mode="history", base=None, head=None)
    with pytest.raises(UsageError):
        pick_flagged_traces(history, str(tmp_path), M, str(tmp_path / "out"))


def test_module_command(tmp_path: Path) -> None:
    _store(tmp_path / "store", "rmsnorm.naive")
    (tmp_path / "f.json").write_text(_doc().dumps())
    cmd = [
        sys.executable,
        "-m",
        "neuronasv.ci",
        "traces",
        "--findings",
        str(tmp_path / "f.json"),
        "--traces-dir",
        str(tmp_path / "store"),
        "--machine",
        M,
        "--out",
        str(tmp_path / "o"),
    ]
    r = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "2 trace(s) of flagged workloads copied" in r.stdout
    (tmp_path / "bad.json").write_text("{")
    cmd[cmd.index(str(tmp_path / "f.json"))] = str(tmp_path / "bad.json")
    r = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=120)
    assert r.returncode == 5 and r.stderr.startswith("error:"), (r.returncode, r.stderr)


@pytest.mark.parametrize("name", [
    "rmsnorm.naive", "..", ".hidden", "-rf", "a/b\\c", "x" * 400, "名前\u202e", "a\x00b",
])  # fmt: skip
def test_trace_file_names_are_plain_whatever_the_workload_name(name: str) -> None:
    from neuronasv.measure.profiling import trace_file_stem

    stem = trace_file_stem(name, "4x512", "bfloat16")
    assert stem == trace_file_stem(name, "4x512", "bfloat16")  # stable
    assert 0 < len(stem) <= 120 and stem[0] not in ".-"
    assert all(c.isascii() and (c.isalnum() or c in "_.-") for c in stem)
    if name == "rmsnorm.naive":
        assert stem == "rmsnorm.naive-4x512-bfloat16"
    assert trace_file_stem("x" * 400, "4x512", "bfloat16") != trace_file_stem(
        "x" * 399 + "y", "4x512", "bfloat16"
    )


# --- issue 22 item 5: the trace store is confined ----------------------------------------


@pytest.mark.parametrize("commit", ["../../" + "a" * 34, "/../../" + "a" * 33, "../" * 13 + "a"])
def test_a_findings_commit_that_climbs_is_refused(tmp_path: Path, commit: str) -> None:
    from dataclasses import replace

    from neuronasv.errors import CorruptResultsError

    _store(tmp_path / "store", "rmsnorm.naive")
    doc = _doc()
    doc = replace(doc, head=RunRef(commit, M))
    with pytest.raises(CorruptResultsError, match="not a hex hash"):
        pick_flagged_traces(doc, str(tmp_path / "store"), M, str(tmp_path / "out"))
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").rglob("*.gz"))


def test_a_symlinked_machine_or_commit_folder_is_not_followed(tmp_path: Path) -> None:
    _store(tmp_path / "elsewhere", "rmsnorm.naive")  # a secret tree outside the store
    store = tmp_path / "store"
    (store / M).mkdir(parents=True)
    (store / M / BASE[:8]).symlink_to(tmp_path / "elsewhere" / M / BASE[:8])
    (store / "other").symlink_to(tmp_path / "elsewhere" / M)
    out = tmp_path / "out"
    picked = pick_flagged_traces(_doc(), str(store), M, str(out))
    assert picked.copied == () and len(picked.missing) == 2
    picked = pick_flagged_traces(_doc(), str(store), "other", str(out))
    assert picked.copied == () and not list(out.rglob("*.gz"))


def test_links_fifos_inside_a_neuron_trace_folder_are_not_copied(tmp_path: Path) -> None:
    import os

    from neuronasv.measure.profiling import trace_file_stem

    _store(tmp_path / "store", "rmsnorm.naive", neuron=True)
    secret = tmp_path / "secret"
    (secret / "deep").mkdir(parents=True)
    (secret / "key").write_text("private")
    (secret / "deep" / "more").write_text("private")
    stem = trace_file_stem("rmsnorm.naive", "4x512", "bfloat16")
    for sha in (BASE, HEAD):
        folder = tmp_path / "store" / M / sha[:8] / stem / "i-0_pid_1"
        (folder / "key.ntff").symlink_to(secret / "key")
        (folder / "dir").symlink_to(secret / "deep")
        os.mkfifo(folder / "pipe")  # copying a FIFO would block forever
    out = tmp_path / "out"
    pick_flagged_traces(_doc(), str(tmp_path / "store"), M, str(out))
    names = sorted(p.name for p in out.rglob("*"))
    assert "graph.ntff" in names
    assert not {"key.ntff", "dir", "more", "pipe"} & set(names)
    assert not [p for p in out.rglob("*") if p.is_symlink()]
    assert "private" not in "".join(p.read_text(errors="replace") for p in out.rglob("*")
                                    if p.is_file())  # fmt: skip


def test_a_planted_link_in_the_output_is_not_written_through(tmp_path: Path) -> None:
    _store(tmp_path / "store", "rmsnorm.naive")
    out = tmp_path / "out"
    out.mkdir()
    (tmp_path / "victim").mkdir()
    (out / f"base-{BASE[:8]}").symlink_to(tmp_path / "victim")
    picked = pick_flagged_traces(_doc(), str(tmp_path / "store"), M, str(out))
    assert list((tmp_path / "victim").iterdir()) == []
    assert all(not r.startswith("base-") for r in picked.copied)
