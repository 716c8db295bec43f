"""The workflows as GitHub would run them: act on the real YAML (``tests/ci/actlane.py``).

One adopter, ``neuronasv init``'d from the built wheel; three act runs on this host with no
network: ``push`` (plan → bench → bisect → store → analyse), ``pull_request`` (the
``pr-benchmark`` artifact) and ``workflow_run`` (the comment and status posted to the
loopback GitHub). Every job green, the results branch on the bare origin, the artifact, one
comment naming the op the PR added, and a commit status on the PR's head.
"""

from __future__ import annotations

import json
import re
import subprocess
import tarfile
from pathlib import Path

import pytest

from tests.ci.actlane import MACHINE, RUNS, Lane, Run, failed_tail

pytestmark = [pytest.mark.slow, pytest.mark.act]


def _green(run: Run, jobs: set[str]) -> None:
    assert run.returncode == 0, failed_tail(run)
    got = {name.rsplit("/", 1)[-1].strip(): result for name, result in run.jobs.items()}
    assert got == dict.fromkeys(jobs, "success"), (got, failed_tail(run))


def test_push_pr_and_comment_flows_run_green_under_act(
    tmp_path: Path, built_wheel: tuple[Path, Path]
) -> None:
    lane = Lane(tmp_path, *built_wheel)
    lane.prepare()
    with lane.github():
        push = lane.act("push")
        _green(push, {"plan", "bench (all)", "bisect (skipped commits)", "store", "analyse"})
        stored = subprocess.run(["git", "--git-dir", str(lane.origin), "ls-tree", "-r",
                                 "--name-only", "benchmark-results"], capture_output=True,
                                text=True, check=True).stdout.split()  # fmt: skip
        base = lane.base_sha[:8]
        assert any(re.fullmatch(rf"{MACHINE}/{base}-.*\.json", p) for p in stored), stored
        assert any(re.fullmatch(rf"{MACHINE}/{base}-.*\.neuronasv", p) for p in stored), stored
        run101 = lane.artifacts / str(RUNS["push"])
        assert (run101 / "regressions" / f"regressions-{MACHINE}.json").is_file()
        assert (run101 / "site" / "index.html").is_file()
        # The analyse job's history cache, saved in the default branch's scope (item 5).
        saved = list((tmp_path / "cache" / "refs_heads_main").glob("neuronasv-analyse-*.tar"))
        assert saved
        # Both paths in the one entry: the folder and the key beside it (a restore without the
        # key would make a new one and miss every entry).
        with tarfile.open(saved[0]) as entry:
            names = entry.getnames()
        assert any(n.endswith("/neuronasv-cache.neuronasv-key") for n in names), names
        assert any("/neuronasv-cache/" in n for n in names), names

        pr = lane.act("pull_request")
        _green(pr, {"bench"})
        artifact = lane.artifacts / str(RUNS["pull_request"]) / "pr-benchmark"
        assert (artifact / "pr-number").read_text().strip() == "1"
        assert (artifact / "head-sha").read_text().strip() == lane.head_sha
        assert any((artifact / "results").rglob("*.json"))

        comment = lane.act("workflow_run")
        _green(comment, {"comment"})
        state = lane.state()
    ours = [c for c in state["comments"].get("1", [])
            if c["body"].startswith("<!-- neuronasv:comment -->")]  # fmt: skip
    assert len(ours) == 1, json.dumps(state["comments"])[:2000]
    assert "`aten::mul` 1 → 2 calls" in ours[0]["body"], ours[0]["body"][:3000]
    statuses = state["statuses"].get(lane.head_sha, [])
    assert statuses and statuses[-1]["context"] == "neuronasv", state["statuses"]
    assert statuses[-1]["state"] in ("success", "failure"), statuses
    # Where the time went (pytest -s, or the report of a failure).
    print("act lane: " + "; ".join(r.line() for r in lane.runs))
    print("setup: " + ", ".join(f"{k} {v:.0f} s" for k, v in lane.timings.items()))
