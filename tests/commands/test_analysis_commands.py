"""Whole-output checks of the analysis commands, run as a user runs them (subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from neuronasv.analyse.confirm import confirm
from neuronasv.model import FindingsDocument, OpProfile, ProfileDocument, WorkloadProfile
from neuronasv.run.worktree import WorktreeProfileRunner
from neuronasv.store.git import Git
from tests.analyse.conftest import DATA
from tests.builders import verdict_of
from tests.fakegit import FakeGit

PR = os.path.join(DATA, "pr")


def cli(*args: str, cwd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "neuronasv", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.slow  # end to end through subprocesses: the full lane
def test_compare_text_whole_output_and_fail_on(tmp_path):
    r = cli("compare", "1a2b", "5e6f", "--results-dir", PR, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "compare 1a2b (1a2b3c4d, ci-cpu-1) -> 5e6f (5e6f7a8b, ci-cpu-1)"
    assert lines[1] == (
        "rules: median:5%; Mann-Whitney U, two-sided (scipy); gatekeeping at alpha 0.01"
    )
    assert lines[2].startswith("legend: Work is exact")
    states = [ln.split("  ")[0] for ln in lines[4:13]]
    assert states == ["state"] + ["same work · slower, single run, a suspect to re-measure"] * 2 + [
        "same work · time not decided"
    ] + ["same work · time within the noise"] * 5
    assert lines[14] == (
        "same work · slower, single run, a suspect to re-measure: rmsnorm.naive 4x512 bf16 ·"
        " aten::mul: +19 % (CI 17–22 %)"
    )
    assert lines[-1] == "summary: 2 slower, no gate rule fired"
    # the default gate: a slower time only once confirmed, so a single run does not fail
    r = cli(
        "compare", "1a2b", "5e6f", "--results-dir", PR, "--fail-on", "median:10%", cwd=str(tmp_path)
    )
    assert r.returncode == 0, r.stderr
    slower = ["--fail-on-time", "slower"]
    r = cli("compare", "1a2b", "5e6f", "--results-dir", PR, "--fail-on", "median:10%", *slower,
            cwd=str(tmp_path))  # fmt: skip
    assert r.returncode == 1
    assert r.stderr == (
        "error: 2 row(s) fire the gate: slower time, 2 rows (beyond --fail-on median:10%):"
        " rmsnorm.naive 4x512 bfloat16 · aten::mul, rmsnorm.naive 4x512 bfloat16\n"
    )
    r = cli("compare", "1a2b", "5e6f", "--results-dir", PR, "--fail-on", "median:25%", *slower,
            cwd=str(tmp_path))  # fmt: skip
    assert r.returncode == 0


@pytest.mark.slow  # end to end through subprocesses: the full lane
def test_compare_json_ack_and_errors(tmp_path):
    head = "5e6f7a8b" + "1" * 32  # the PR data's head, not a commit of any repository here
    r = cli("ack", "rmsnorm.naive*", "--commit", head, "--reason", "expected", "--force",
            cwd=str(tmp_path))  # fmt: skip
    assert r.returncode == 0 and f"acknowledged rmsnorm.naive* at {head}" in r.stdout
    out = tmp_path / "f.json"
    r = cli(
        "compare",
        "1a2b",
        "5e6f",
        "--results-dir",
        PR,
        "--format",
        "json",
        "--out",
        str(out),
        "--fail-on",
        "median:5%",
        "--fail-on-time",
        "slower",
        cwd=str(tmp_path),
    )
    assert r.returncode == 0 and r.stdout == ""  # acknowledged: never fails
    doc = FindingsDocument.loads(out.read_text())
    assert doc.mode == "compare" and doc.settings["correction"] == "gatekeeping"
    assert {f.acknowledged for f in doc.findings if verdict_of(f) == "regression"} == {"expected"}
    r = cli("compare", "ffff", "5e6f", "--results-dir", PR, cwd=str(tmp_path))
    assert r.returncode == 2 and r.stderr.startswith("error: no results for 'ffff'")
    r = cli(
        "compare",
        "1a2b",
        "5e6f",
        "--results-dir",
        PR,
        "--head-machine",
        "x",
        "--machine",
        "ci-cpu-1",
        cwd=str(tmp_path),
    )
    assert r.returncode == 6 and "machine 'ci-cpu-1' vs 'x'" in r.stderr


@pytest.mark.slow  # end to end through subprocesses: the full lane
def test_regressions_json_and_text(tmp_path):
    r = cli("regressions", "--results-dir", PR, "--format", "json", cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    doc = FindingsDocument.loads(r.stdout)
    assert doc.mode == "history" and doc.change_points == ()  # two commits: no history yet
    r = cli("regressions", "--results-dir", str(tmp_path / "none"), cwd=str(tmp_path))
    assert r.returncode == 5 and "none does not exist" in r.stderr


@pytest.mark.slow  # end to end through subprocesses: the full lane
def test_confirm_abab_keeps_only_survivors(tmp_path):
    r = cli("compare", "1a2b", "5e6f", "--results-dir", PR, "--format", "json", cwd=str(tmp_path))
    doc = FindingsDocument.loads(r.stdout)
    calls = []
    rng = np.random.default_rng(3)

    def runner(side, series, rnd):
        calls.append(side)
        offset = rng.normal(1.0, 0.01)  # each call is a separate run: its own shift
        out = {}
        for s in series:
            # The op really regressed; the total's shift does not reproduce.
            k = 1.2 if side == "head" and s.op == "aten::mul" else 1.0
            base = 140e-6 if s.op else 245e-6
            out[s] = [base * k * offset * (1 + 0.01 * i) for i in range(10)]
        return out

    suspects = [f for f in doc.findings if verdict_of(f) in ("regression", "noisy")]
    # One workload and no history: no other process lends a prior variance, so the test
    # rests on the rounds' own R-1 df and needs more than 3 rounds: added while undecided.
    got = confirm(doc, runner, rounds=3, max_rounds=8)
    r = got.settings["rounds"]
    assert 3 < r <= 8 and calls == ["base", "head"] * r
    regs = {f.series.op: f for f in got.findings if verdict_of(f) == "regression"}
    mul = regs["aten::mul"]
    assert mul.state.confirmed and f"confirmed by {r} interleaved rounds" in mul.reason
    assert f"moderated t over {r} rounds" in mul.reason and mul.ci_low is not None
    # The total's single-run regression did not reproduce: it is no verdict any more.
    assert None not in regs
    total = next(f for f in got.findings if f.series.op is None and f.remeasured)
    # Not reproduced: undecided, or noise when the rounds' CI lies within the minimum effect.
    assert verdict_of(total) in ("noisy", "unchanged") and not total.state.confirmed
    assert f"not confirmed by {r} interleaved rounds" in total.reason
    # Noisy findings are re-measured too (rounds decide what one run could not); this
    # one does not reproduce. Unchanged ones are left alone.
    refuted = [f for f in got.findings if f.remeasured and not f.state.confirmed]
    assert len(refuted) >= 2 and all(verdict_of(f) in ("noisy", "unchanged") for f in refuted)
    assert len(suspects) == 3
    # Series that were unchanged in the single run are left alone.
    before = {f.series: verdict_of(f) for f in doc.findings}
    assert all(not f.remeasured for f in got.findings if before[f.series] == "unchanged")


def test_worktree_runner_commands(tmp_path):
    seen = []

    def run_cmd(cmd, cwd, env):
        seen.append((list(cmd), cwd))
        if "profile" in cmd:
            target = cmd[cmd.index("--json") + 1]
            w = WorkloadProfile(
                "rmsnorm.naive",
                "cpu",
                "4x512",
                "bfloat16",
                (100.0, 110.0),
                (OpProfile("aten::mul", 3.0, (50.0, 60.0), (50.0, 60.0)),),
            )
            with open(target, "w") as fh:
                fh.write(ProfileDocument("cpu", (w,)).dumps())
        return 0

    from neuronasv.model import SeriesId

    sid = SeriesId("b", (), "rmsnorm.naive", "4x512", "bfloat16", "aten::mul")
    fake = FakeGit(strict=True, replies={("worktree",): ""})
    r = WorktreeProfileRunner(
        "/repo", "a" * 40, "b" * 40, samples=7, active=3, workdir=str(tmp_path), run_cmd=run_cmd,
        git=Git("/repo", transport=fake),
    )  # fmt: skip
    got = r("head", [sid], 0)
    assert got[sid] == pytest.approx([50e-6, 60e-6])
    head_tree = str(tmp_path / "head")
    assert fake.calls == [["worktree", "add", "--detach", "--force", head_tree, "b" * 40]]
    assert fake.cwds == ["/repo"]
    prof = seen[0][0]
    assert prof[1:4] == ["-m", "neuronasv", "profile"] and "--workload" in prof
    assert prof[prof.index("--samples") + 1] == "7" and seen[0][1] == head_tree
    assert prof[prof.index("--active") + 1] == "3"
    r.close()
    assert fake.calls[1][:3] == ["worktree", "remove", "--force"]
    json.dumps(got[sid])


@pytest.mark.slow  # end to end through subprocesses: the full lane
def test_compare_judges_rounds_from_profile_documents(tmp_path):
    """--round-base/--round-head: paired profile JSONs; those series get the rounds test."""
    rng = np.random.default_rng(0)
    files: dict[str, list[str]] = {"base": [], "head": []}
    for r in range(3):
        for side in ("base", "head"):
            k = 1.3 if side == "head" else 1.0
            off = rng.normal(1.0, 0.01)
            mul = tuple(140.0 * k * off * rng.normal(1.0, 0.01, 10))
            other = tuple(100.0 * off * rng.normal(1.0, 0.01, 10))
            w = WorkloadProfile(
                "rmsnorm.naive",
                "cpu",
                "4x512",
                "bfloat16",
                tuple(a + b for a, b in zip(mul, other, strict=True)),
                (OpProfile("aten::mul", 3.0, mul, mul), OpProfile("aten::add", 1.0, other, other)),
            )
            path = tmp_path / f"{side}{r}.json"
            path.write_text(ProfileDocument("cpu", (w,)).dumps())
            files[side].append(str(path))
    args = ["compare", "1a2b", "5e6f", "--results-dir", PR, "--format", "json"]
    for b, h in zip(files["base"], files["head"], strict=True):
        args += ["--round-base", b, "--round-head", h]
    r = cli(*args, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    doc = FindingsDocument.loads(r.stdout)
    assert doc.settings["rounds"] == 3
    by = {f.series.label: f for f in doc.findings}
    mul = by["rmsnorm.naive 4x512 bfloat16 · aten::mul"]
    assert verdict_of(mul) == "regression" and "moderated t over 3 rounds" in mul.reason
    assert mul.n_base == 30 and mul.ratio is not None and 1.25 < mul.ratio < 1.35
    # Series without rounds keep the single-run test.
    fused = by["rmsnorm.fused 4x512 bfloat16"]
    assert "moderated" not in fused.reason and fused.p_value is not None
    r = cli(*args[:7], "--round-base", files["base"][0], cwd=str(tmp_path))
    assert r.returncode == 2 and "rounds pair in order" in r.stderr


def _cross_device(tmp_path):
    """cuda/H100 base vs cpu/Xeon head, both under machine 'ci', 8 ops 20x faster at head."""
    from tests.analyse.analyse_asvdata import neuronasv_run

    rd = str(tmp_path / "results")
    ops = [f"aten::op{i}" for i in range(8)]
    wl = lambda us: {("w", "4x4", "float32"): {o: (1.0, [us * (1 + 0.01 * i) for i in range(8)])  # noqa: E731
                                               for o in ops}}
    neuronasv_run(rd, "ci", "a" * 40, 1, wl(100.0),
                  fingerprint={"backend": "cuda", "device_model": "H100"})
    head = neuronasv_run(rd, "ci", "b" * 40, 2, wl(5.0),
                         fingerprint={"backend": "cpu", "device_model": "Xeon"})
    return rd, head


@pytest.mark.slow  # end to end through subprocesses: the full lane
def test_missing_fingerprint_is_unknown_not_equal_refused_unless_forced(tmp_path):
    """Issue 13 #2: with the head sidecar deleted, cuda vs cpu must not compare as -95 %."""
    from neuronasv.store.layout import sidecar_path

    rd, head = _cross_device(tmp_path)
    r = cli("compare", "a" * 40, "b" * 40, "--results-dir", rd, cwd=str(tmp_path))
    assert r.returncode == 6 and "backend 'cuda' vs 'cpu'" in r.stderr, r.stderr
    os.remove(sidecar_path(head))
    r = cli("compare", "a" * 40, "b" * 40, "--results-dir", rd, cwd=str(tmp_path))
    assert r.returncode == 6, r.stdout + r.stderr
    assert "backend unknown at head (no fingerprint)" in r.stderr
    assert "device_model unknown at head" in r.stderr and "neuronasv run" in r.stderr
    assert r.stdout == ""
    forced = "FORCED comparison"
    for fmt in ("text", "markdown", "json"):
        r = cli("compare", "a" * 40, "b" * 40, "--results-dir", rd, "--force", "--format", fmt,
                cwd=str(tmp_path))
        assert r.returncode == 0, r.stderr
        first = r.stdout.lstrip("*").splitlines()[0]
        if fmt == "json":
            doc = FindingsDocument.loads(r.stdout)
            assert doc.forced == ("backend unknown at head (no fingerprint)",
                                  "device_model unknown at head (no fingerprint)")
            from neuronasv.report.digest import digest
            assert digest(doc).headline.startswith(f"{forced} (backend unknown at head")
        else:
            assert first.startswith(forced) and "backend unknown at head" in first, first


@pytest.mark.slow  # end to end through subprocesses: the full lane
def test_regressions_says_too_few_commits_and_takes_the_confirm_report(tmp_path):
    """Two commits: no "0 change points, 0 open regressions" — the detector could not run;
    the newest commit is compared with its parent, and ``--report`` (the document the PR
    comment renders) brings its confirmations: text, JSON and the site agree."""
    r = cli("regressions", "--results-dir", PR, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "0 open regressions" not in r.stdout
    assert r.stdout.splitlines()[1] == (
        "ci-cpu-1: too few commits for change points (have 2, need 4)"
    )
    assert r.stdout.splitlines()[-1].endswith(
        "0 confirmed slower, 2 suspect slower (single run, suspects to re-measure)"
    )
    assert "compared here, not re-measured" in r.stdout
    rep = cli("compare", "1a2b", "5e6f", "--results-dir", PR, "--format", "json", cwd=str(tmp_path))
    doc = FindingsDocument.loads(rep.stdout)
    from dataclasses import replace

    from neuronasv.analyse.states import with_states

    # what confirm writes: confirmations, its settings, and the states decided from them
    confirmed = with_states(
        replace(
            doc,
            findings=tuple(
                replace(
                    f,
                    state=replace(f.state, confirmed=True),
                    estimate=replace(f.estimate, source="rounds"),
                )
                if f.state.time == "slower"
                else f
                for f in doc.findings
            ),
            settings={**doc.settings, "confirm": "ABAB, 3 rounds"},
        )
    )
    (tmp_path / "confirmed.json").write_text(confirmed.dumps())
    out = tmp_path / "reg.json"
    r = cli(
        "regressions", "--results-dir", PR, "--report", "confirmed.json", "--format", "json",
        "--out", str(out), cwd=str(tmp_path),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    reg = FindingsDocument.loads(out.read_text())
    assert reg.settings["coverage"][0]["note"] == (
        "too few commits for change points (have 2, need 4)"
    )
    assert reg.settings["newest"]["source"] == "report"
    assert reg.findings == confirmed.findings
    site = tmp_path / "site"
    r = cli(
        "publish", "--results-dir", PR, "--out", str(site), "--findings", str(out),
        "--no-cache", cwd=str(tmp_path),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    idx = (site / "index.html").read_text()
    assert idx.count('data-state="confirmed"') == 2  # the total and aten::mul, as in the report
    assert "too few commits for change points (have 2, need 4)" in idx
    regs = (site / "regressions.html").read_text()
    assert "too few commits for change points (have 2, need 4)" in regs
    assert "0 change points" not in regs
    # a report of another pair is refused, not silently shown
    swapped = cli("compare", "5e6f", "1a2b", "--results-dir", PR, "--format", "json",
                  cwd=str(tmp_path))  # fmt: skip
    (tmp_path / "swapped.json").write_text(swapped.stdout)
    r = cli("regressions", "--results-dir", PR, "--report", "swapped.json", cwd=str(tmp_path))
    assert r.returncode == 2 and "but the newest commit on 'ci-cpu-1' is 5e6f7a8b" in r.stderr
    r = cli("regressions", "--results-dir", PR, "--report", "missing.json", cwd=str(tmp_path))
    # the check every input file gets, before any work (the same as comment's --report)
    assert r.returncode == 2 and r.stderr.endswith(
        "error: argument --report: missing.json: no such file\n"
    )
    (tmp_path / "truncated.json").write_text(confirmed.dumps()[:100])
    r = cli("regressions", "--results-dir", PR, "--report", "truncated.json", cwd=str(tmp_path))
    assert r.returncode == 5 and r.stderr.startswith("error: truncated.json"), r.stderr


def test_confirm_noisy_options_are_one_setting(tmp_path) -> None:
    """--include-noisy (default) and --regressions-only set the one value confirm reads."""
    from neuronasv.cli import build_parser

    (tmp_path / "f.json").write_text("{}")
    base = ["confirm", "--findings", str(tmp_path / "f.json")]
    parse = build_parser("confirm").parse_args
    assert parse(base).include_noisy is True
    assert parse([*base, "--include-noisy"]).include_noisy is True
    assert parse([*base, "--regressions-only"]).include_noisy is False
    with pytest.raises(SystemExit) as info:
        parse([*base, "--include-noisy", "--regressions-only"])
    assert info.value.code == 2
