"""``neuronasv bisect`` end to end: real git, real asv, the real profiler, valgrind.

A synthetic repository of 16 commits (``tests/run/bisect_repo.py``): commit 11 adds an op
(``aten::add``) to ``synth.gate``; commits 3, 7 and 13 change ``synth.other`` only, nothing
``synth.gate`` runs. Only the range's ends are measured first (``neuronasv run``), as a
change point over skipped commits leaves them. The bisection of the workload's instruction
count must name commit 11 having measured at most 5 commits (4 = ceil(log2 15) here), explain
it with the exact work, and store its record; on a range with no change (which still holds
two of the commits that change ``synth.other``) it must say "no change" (exit 12). An
interrupted bisection leaves no worktree and no scratch folder.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from neuronasv.store.bisections import load_bisections
from tests.run.bisect_repo import GATE, build_repo, git

pytestmark = pytest.mark.slow

NEURONASV = str(Path(sys.executable).parent / "neuronasv")
MACHINE = "bisectbox"


def _ctrl_c_as_at_a_terminal() -> None:
    """SIGINT at its default in the child, as at a terminal: a suite started in the
    background of a shell without job control (``cmd &``) inherits SIGINT ignored, and
    Python then never turns it into KeyboardInterrupt (the command rightly keeps it so)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _env(tmp: Path) -> dict[str, str]:
    scratch = tmp / "tmpdir"
    scratch.mkdir(exist_ok=True)
    return dict(os.environ, TMPDIR=str(scratch), NEURONASV_BACKEND="cpu", OMP_NUM_THREADS="1",
                NEURONASV_SAMPLES="5")  # fmt: skip


def _nx(repo: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([NEURONASV, *args], cwd=repo, env=env, capture_output=True, text=True,
                          check=False, timeout=3000)  # fmt: skip


@pytest.fixture(scope="module")
def searched(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    tmp = tmp_path_factory.mktemp("bisect")
    repo = tmp / "repo"
    shas = build_repo(repo, commits=16, culprit=11, others=(3, 7, 13))
    env = _env(tmp)
    ends = _nx(repo, env, "run", shas[0], shas[-1], "--machine", MACHINE, "--backend", "cpu",
               "--metrics", "devtime,instructions", "--bench", r"SynthGate")  # fmt: skip
    assert ends.returncode == 0, ends.stdout[-2000:] + ends.stderr[-2000:]
    t0 = time.monotonic()
    found = _nx(repo, env, "bisect", shas[0], shas[-1], "--series", GATE.format(shape="4x512"),
                "--machine", MACHINE, "--backend", "cpu", "--no-github")  # fmt: skip
    wall = time.monotonic() - t0
    aa = _nx(repo, env, "bisect", shas[0], shas[10], "--series", GATE.format(shape="4x512"),
             "--machine", MACHINE, "--backend", "cpu", "--no-github")  # fmt: skip
    return {"repo": repo, "shas": shas, "found": found, "aa": aa, "wall": wall, "tmp": tmp}


def test_instructions_bisection_names_the_commit_that_added_the_op(searched) -> None:
    found = searched["found"]
    shas = searched["shas"]
    assert isinstance(found, subprocess.CompletedProcess) and isinstance(shas, list)
    assert found.returncode == 0, found.stdout[-3000:] + found.stderr[-3000:]
    lines = found.stdout.splitlines()
    assert lines[0] == (
        f"{GATE.format(shape='4x512')} on {MACHINE}: culprit {shas[11][:12]} “change synth.gate”"
    ), found.stdout
    assert "new op aten::add" in found.stdout  # the cause, as the PR comment words it
    assert "new aten::add: calls – → 1" in found.stdout  # the exact work
    repo = searched["repo"]
    assert isinstance(repo, Path)
    records, errors = load_bisections(str(repo / ".asv" / "results"))
    assert errors == [] and len(records) == 2  # this search and the A/A's
    (rec,) = [r for r in records if r.bad == shas[-1]]
    assert rec.result.commit == shas[11] and rec.result.lo == shas[10]
    assert rec.result.axis == "instructions" and rec.result.alpha is None
    assert rec.result.measured <= 5, rec.probes  # the ends were stored: they cost nothing
    assert [p.source for p in rec.probes[:2]] == ["stored", "stored"]
    print(f"measured {rec.result.measured} commits in {searched['wall']:.0f} s"
          f" (load {os.getloadavg()[0]:.1f})")  # fmt: skip


def test_a_range_with_no_change_says_no_change(searched) -> None:
    aa = searched["aa"]
    assert isinstance(aa, subprocess.CompletedProcess)
    assert aa.returncode == 12, aa.stdout[-2000:] + aa.stderr[-2000:]
    assert " no change between " in aa.stdout.splitlines()[0]
    assert "from results already stored" in aa.stdout  # commit 10 was a probe before
    err = [ln for ln in aa.stderr.splitlines() if ln.startswith("error:")]
    assert len(err) == 1 and "no change between" in err[0]


def test_the_searches_leave_no_worktree_and_no_scratch_folder(searched) -> None:
    repo, tmp = searched["repo"], searched["tmp"]
    assert isinstance(repo, Path) and isinstance(tmp, Path)
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert os.listdir(tmp / "tmpdir") == []


def test_an_interrupt_leaves_no_worktree(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shas = build_repo(repo, commits=6, culprit=3, others=())
    env = _env(tmp_path)
    proc = subprocess.Popen(
        [NEURONASV, "bisect", shas[0], shas[-1], "--series", "synth.gate 4x512 float32",
         "--axis", "time", "--machine", MACHINE, "--backend", "cpu", "--no-github",
         "--samples", "2", "--max-rounds", "3"],
        cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True, preexec_fn=_ctrl_c_as_at_a_terminal,
    )  # fmt: skip
    deadline = time.monotonic() + 900
    seen = False
    while time.monotonic() < deadline and proc.poll() is None:
        trees = git(repo, "worktree", "list", "--porcelain").count("worktree ")
        if trees > 1:
            seen = True
            time.sleep(1.0)  # inside a measurement, with its worktree checked out
            os.kill(proc.pid, signal.SIGINT)
            break
        time.sleep(0.2)
    out, _ = proc.communicate(timeout=300)
    assert seen, out[-3000:]
    assert proc.returncode == 130, out[-3000:]
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert os.listdir(tmp_path / "tmpdir") == [], out[-2000:]


def test_a_time_search_says_its_budget_after_the_pilot_before_its_rounds(tmp_path: Path) -> None:
    """Device time, real processes: the noise pilot of GOOD, then one line with the rounds
    the noise needs (held at the cap here, to stay short) and what they cost, then the
    rounds; the record keeps the sizing."""
    repo = tmp_path / "repo"
    shas = build_repo(repo, commits=4, culprit=2, others=(), change="slow")
    env = _env(tmp_path)
    got = _nx(repo, env, "bisect", shas[0], shas[-1], "--series", "synth.gate 4x512 float32 ·"
              " aten::mul", "--axis", "time", "--machine", MACHINE, "--backend", "cpu",
              "--no-github", "--samples", "2", "--pilot", "2", "--rounds", "2",
              "--max-rounds", "2", "--step", "5", "--format", "json")  # fmt: skip
    assert got.returncode == 0, got.stdout[-2000:] + got.stderr[-3000:]
    err = got.stderr.splitlines()
    pilot = next(i for i, ln in enumerate(err) if ln.strip().startswith("pilot: 2 processes"))
    said = next(i for i, ln in enumerate(err) if ln.startswith("noise "))
    rounds = [i for i, ln in enumerate(err) if ln.strip().startswith("round ")]
    assert [i for i in rounds if pilot < i < said] == rounds[:2]  # the pilot's two processes
    assert len([i for i in rounds if i > said]) >= 4  # the ends' two rounds after the line
    assert "rounds a test for a 95 % chance to find +5.0 % (3 tests" in err[said], err[said]
    assert "2 pilot processes of GOOD" in err[said] and "a process" in err[said]
    doc = json.loads(got.stdout)
    sizing = doc["settings"]["sizing"]
    assert sizing["max_rounds"] == 2 and sizing["source"] == "2 pilot processes of GOOD"
    needed = sizing["rounds_needed"]
    assert (sizing["capped_by"] == "--max-rounds") == (needed is None or needed > 2)
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
