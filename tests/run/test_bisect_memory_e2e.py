"""Memory is bisectable, end to end (issue 40 item 2): real git, real asv, the real profiler.

A synthetic repository of 12 commits (``tests/run/bisect_repo.py``, ``change="alloc"``):
commit 7 makes ``synth.gate``'s ``aten::mul`` allocate a second temporary of ``x``'s size
per iteration (``y = y * x``, as ``examples/alloc-rmsnorm-temp.patch`` does to the naive
RMSNorm); commit 3 changes ``synth.other`` only. The ends are measured with ``--metrics
devtime,memory``. ``--axis auto`` on the op (its time and memory series both match) must
choose memory — the ends' stored bytes differ — and name commit 7; ``--axis memory`` on the
memory series alone names it too, from the readings stored by then. The memory values live
only in the asv results (the sidecar carries no counts of them): the readings are the
metric's own series (``neuronasv.analyse.readings``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from neuronasv.store.bisections import load_bisections
from tests.run.bisect_repo import build_repo
from tests.run.test_bisect_e2e import MACHINE, _env, _nx

pytestmark = pytest.mark.slow

OP = "workload=synth.gate op=aten::mul"


@pytest.fixture(scope="module")
def searched(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    tmp = tmp_path_factory.mktemp("bisect-memory")
    repo = tmp / "repo"
    shas = build_repo(repo, commits=12, culprit=7, others=(3,), change="alloc")
    env = _env(tmp)
    ends = _nx(repo, env, "run", shas[0], shas[-1], "--machine", MACHINE, "--backend", "cpu",
               "--metrics", "devtime,memory", "--bench", r"SynthGate")  # fmt: skip
    assert ends.returncode == 0, ends.stdout[-2000:] + ends.stderr[-2000:]
    common = ("--machine", MACHINE, "--backend", "cpu", "--no-github")
    auto = _nx(repo, env, "bisect", shas[0], shas[-1], "--series", OP, *common)
    records_after_auto = load_bisections(str(repo / ".asv" / "results"))
    memory = _nx(repo, env, "bisect", shas[0], shas[-1], "--axis", "memory", "--series",
                 f"metric=memory {OP}", "--format", "json", *common)  # fmt: skip
    return {"repo": repo, "shas": shas, "auto": auto, "memory": memory,
            "auto_records": records_after_auto}  # fmt: skip


def test_auto_chooses_memory_and_names_the_commit_of_the_second_temporary(searched) -> None:
    auto, shas = searched["auto"], searched["shas"]
    assert auto.returncode == 0, auto.stdout[-3000:] + auto.stderr[-3000:]
    assert "axis auto: memory differs at the ends (8,192 self allocated bytes per iteration" \
        " -> 16,384 self allocated bytes per iteration)" in auto.stderr, auto.stderr[-3000:]
    first = auto.stdout.splitlines()[0]
    assert first.endswith(f": culprit {shas[7][:12]} “change synth.gate”"), auto.stdout
    assert f"8,192 self allocated bytes per iteration at {shas[6][:12]}" in auto.stdout
    assert "exact (allocated bytes)" in auto.stdout
    records, errors = searched["auto_records"]
    assert errors == [] and len(records) == 1
    (rec,) = records
    assert rec.result.axis == "memory" and rec.result.commit == shas[7]
    assert rec.result.lo == shas[6] and rec.result.alpha is None
    assert rec.series.metric == "memory" and rec.series.op == "aten::mul"
    assert [p.source for p in rec.probes[:2]] == ["stored", "stored"]  # the ends: no rerun
    assert 1 <= rec.result.measured <= 4  # ceil(log2 11)


def test_the_memory_axis_names_the_same_commit_from_the_stored_readings(searched) -> None:
    got, shas = searched["memory"], searched["shas"]
    assert got.returncode == 0, got.stdout[-3000:] + got.stderr[-3000:]
    doc = json.loads(got.stdout)
    assert doc["settings"]["axis"] == "memory" and doc["result"]["axis"] == "memory"
    assert doc["result"]["commit"] == shas[7] and doc["result"]["lo"] == shas[6]
    assert doc["result"]["outcome"] == "culprit" and doc["result"]["measured"] == 0
    assert doc["series"]["benchmark"] == "devtime.SynthGate.alloc_op"
    assert doc["unit"] == "bytes allocated"
    repo = searched["repo"]
    assert isinstance(repo, Path)
    records, _ = load_bisections(str(repo / ".asv" / "results"))
    assert {(r.result.axis, r.result.commit) for r in records} == {("memory", shas[7])}
