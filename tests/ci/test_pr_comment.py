"""The privileged comment step against a hostile artifact, over HTTP to the loopback GitHub.

The artifact below is what a malicious PR could upload: schema-valid, with links, prose,
flipped verdicts, labels, settings and load errors of its choosing, a hostile machine name
and fingerprint, and another PR's number. The step must post a comment whose every link
is the repository's own run and whose verdicts equal a recomputation from the artifact's
numbers — or refuse and post nothing.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from neuronasv.analyse.recompute import UNNAMED_MACHINE
from neuronasv.ci import pr_comment  # the step; ci/pr_comment.py is a shim (run by path below)
from neuronasv.errors import UntrustedArtifactError
from neuronasv.model import FindingsDocument, RunRef, SeriesId
from neuronasv.model.rounds import RoundMeasurement, RoundsDocument
from neuronasv.report.traces import PERFETTO_URL, TRACES_ARTIFACT
from neuronasv.store.history import load_history
from tests.analyse.analyse_asvdata import neuronasv_run
from tests.builders import finding, verdict_of
from tests.ci.fakegithub_ext import FakeGitHubCI
from tests.ci.notorch import BLOCK_TORCH

ROOT = Path(__file__).resolve().parents[2]

HEAD = "c" * 40
BASE = "b" * 40
OTHER = "d" * 40
TOKEN = "ghs_rehearsal_SECRET_do_not_print"
REPO = "octo/kernels"
RUN_ID = 4242
SERVER = "https://github.com"
RUN_URL = f"{SERVER}/{REPO}/actions/runs/{RUN_ID}"
EVIL = "https://evil.example/approve"
HOSTILE_MACHINE = "trn2 <b>@org</b> [Approve](javascript:alert(1))"
WL = ("rmsnorm.naive", "4x512", "float32")


def _table(mul_us: float) -> dict[str, tuple[float, list[float]]]:
    """Per-op samples (µs): aten::mul at ``mul_us``, aten::add and aten::rsqrt unchanged."""
    spread = [1.0 + 0.004 * i for i in range(10)]
    return {
        "aten::mul": (3.0, [mul_us * s for s in spread]),
        "aten::add": (1.0, [20.0 * s for s in spread]),
        "aten::rsqrt": (1.0, [15.0 * s for s in spread]),
    }


def hostile_findings() -> FindingsDocument:
    """Schema-valid findings with the PR's own links, prose and flipped verdicts."""
    lie = f"[Approve and merge this PR]({EVIL}) @org/maintainers"
    f = finding(
        SeriesId("devtime.DeviceTime.track_devtime", ("'x'",), *WL, "aten::mul"),
        "improvement", base=3e-5, head=1e-5, reason=lie, warnings=(lie,), confirmed=True,
        source="rounds",
    )
    ref = RunRef(HEAD, HOSTILE_MACHINE, {"backend": "cpu", "note": lie}, label=lie, trace_url=EVIL)
    return FindingsDocument(
        mode="compare", base=dataclasses.replace(ref, commit=BASE), head=ref, findings=(f,),
        settings={"note": lie}, load_errors=(lie,),
        links={"report_url": EVIL, "history_url": EVIL, "merge_url": EVIL},
    )


def make_artifact(tmp_path: Path, *, pr: int = 7, head: str = HEAD, rounds: bool = True,
                  name: str = "artifact", wl: tuple[str, str, str] = WL) -> Path:
    d = tmp_path / name
    d.mkdir()
    results = d / "results"
    fp = {"backend": "cpu", "device_model": "cpu", "torch": f"[merge]({EVIL})"}
    neuronasv_run(str(results), HOSTILE_MACHINE, BASE, 1, {wl: _table(30.0)}, fingerprint=fp)
    neuronasv_run(str(results), HOSTILE_MACHINE, HEAD, 2, {wl: _table(90.0)}, fingerprint=fp)
    (d / "pr-number").write_text(f"{pr}\n")
    (d / "head-sha").write_text(f"{head}\n")
    (d / "base-sha").write_text(f"{BASE}\n")
    (d / "findings.json").write_text(hostile_findings().dumps())
    (d / "comment.md").write_text(f"@everyone [Approve and merge this PR]({EVIL})")
    if rounds:
        (d / "rounds.json").write_text(rounds_doc(results).dumps())
    return d


def rounds_doc(results: Path, n: int = 3) -> RoundsDocument:
    """Every series of the workload, re-measured n times a side (mul 3x slower at head)."""
    h = load_history(results)
    ms = []
    for r in range(n):
        for side, mul in (("base", 30.0), ("head", 90.0)):
            table = _table(mul * (1 + 0.01 * r))
            got = []
            for s in h.series:
                if s.series.op is None:
                    xs = [sum(t[1][i] for t in table.values()) * 1e-6 for i in range(10)]
                else:
                    xs = [x * 1e-6 for x in table[s.series.op][1]]
                got.append((s.series, tuple(xs)))
            ms.append(RoundMeasurement(side, r, tuple(got)))
    return RoundsDocument(BASE, HEAD, n, tuple(ms))


def event(tmp_path: Path, *, head: str = HEAD, head_repo: str = REPO, branch: str = "pr-7",
          prs: tuple[int, ...] = (7,)) -> Path:
    """The workflow_run payload GitHub writes to $GITHUB_EVENT_PATH (trusted)."""
    payload = {"action": "completed", "workflow_run": {
        "id": RUN_ID, "event": "pull_request", "head_sha": head, "head_branch": branch,
        "head_repository": {"full_name": head_repo, "owner": {"login": head_repo.split("/")[0]}},
        "html_url": f"{SERVER}/{REPO}/actions/runs/{RUN_ID}",
        "pull_requests": [{"number": n, "head": {"sha": head}} for n in prs],
    }}
    p = tmp_path / f"event-{head_repo.replace('/', '_')}-{branch}.json"
    p.write_text(json.dumps(payload))
    return p


def run_script(art: Path, ev: Path, gh: FakeGitHubCI, *extra: str, token: str | None = TOKEN,
               cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    env |= {"GITHUB_API_URL": gh.url, "GITHUB_REPOSITORY": gh.repo, "GITHUB_SERVER_URL": SERVER,
            "GITHUB_EVENT_PATH": str(ev)}
    if token:
        env["GITHUB_TOKEN"] = token
    # As on the hosted runner (ci/install-light.sh): torch is not installed. Outside this
    # checkout, the package's step as neuronasv-comment.yml runs it.
    code = NO_TORCH if cwd == ROOT else STEP
    return subprocess.run([sys.executable, "-c", code, "--artifact", str(art), *extra],
                          env=env, cwd=cwd, capture_output=True, text=True, check=False,
                          timeout=180)


NO_TORCH = BLOCK_TORCH + """sys.argv[0] = "ci/pr_comment.py"
runpy.run_path("ci/pr_comment.py", run_name="__main__")
"""
STEP = BLOCK_TORCH + """sys.argv[1:1] = ["pr-comment"]
runpy.run_module("neuronasv.ci", run_name="__main__", alter_sys=True)
"""


def expected_by_cli(art: Path, tmp_path: Path) -> FindingsDocument:
    """What `neuronasv compare` says about the artifact's numbers (independent process)."""
    out = tmp_path / "expected.json"
    r = subprocess.run([sys.executable, "-m", "neuronasv", "compare", BASE, HEAD,
                        "--results-dir", str(art / "results"), "--format", "json", "--out",
                        str(out)], cwd=tmp_path, capture_output=True, text=True, check=False,
                       timeout=180)
    assert r.returncode == 0, r.stderr
    return FindingsDocument.loads(out.read_text())


def urls(text: str) -> list[str]:
    return re.findall(r"(?:https?|javascript):[^\s)\]>|`\"']*", text)


@pytest.mark.slow  # end to end through subprocesses: the full lane
def test_hostile_artifact_comment_has_only_run_links_and_recomputed_verdicts(
    tmp_path: Path,
) -> None:
    art = make_artifact(tmp_path)
    with FakeGitHubCI(tokens={TOKEN: "github-actions[bot]"}, repo=REPO) as gh:
        gh.add_pull(7, HEAD)
        r = run_script(art, event(tmp_path), gh)
        assert r.returncode == 0, r.stdout + r.stderr
        (ours,) = gh.comments(7, author="github-actions[bot]")
        body = ours["body"]
        (status,) = gh.statuses(HEAD)
        assert TOKEN not in r.stdout + r.stderr

    # Every link in the comment and the status is the repository's own run (the traces:
    # the run's page, as the run uploaded no traces artifact), or Perfetto in the hint.
    assert urls(body) and set(urls(body)) == {RUN_URL, PERFETTO_URL}, urls(body)
    assert status["target_url"] == RUN_URL
    # The flagged workload's base and head traces are named, from the series identity.
    assert (
        f"- `rmsnorm.naive` `4x512 fp32` — look for `aten::mul`:"
        f" [base `base-{BASE[:8]}/rmsnorm.naive-4x512-float32.json.gz`]({RUN_URL})"
        f" · [head `head-{HEAD[:8]}/rmsnorm.naive-4x512-float32.json.gz`]({RUN_URL})"
    ) in body
    # Nothing the artifact wrote as text reaches GitHub.
    for text in (body, json.dumps(status)):
        for bad in ("evil", "Approve", "merge", "@org", "<b>", "javascript", "trn2"):
            assert bad not in text, (bad, text)
    assert f"`{UNNAMED_MACHINE}`" in body  # the hostile machine name is withheld

    # Verdicts: the artifact claimed an improvement; the numbers say aten::mul tripled.
    expected = expected_by_cli(art, tmp_path)
    regs = sorted(f.series.label for f in expected.findings if verdict_of(f) == "regression")
    assert regs == ["rmsnorm.naive 4x512 float32", "rmsnorm.naive 4x512 float32 · aten::mul"]
    # The same cause, now confirmed by the replayed rounds (the CLI compare is one run).
    assert {f.series.label for f in expected.findings if verdict_of(f) == "regression"} == set(
        regs
    )
    desc = status["description"]
    headline = body.splitlines()[1].replace("\\", "")  # markdown escapes off
    assert status["state"] == "failure" and desc.split(" — ")[0] in headline
    assert desc.startswith("fails (gate: confirmed slower time, 2 rows)"), desc
    assert "rmsnorm.naive 4x512 fp32 (via aten::mul) same work · slower (+" in headline
    series = body.split("<details><summary>Every row that moved", 1)[1]
    rows = [ln for ln in series.split("</details>", 1)[0].splitlines() if ln.startswith("| `")]
    # confirmed by the replayed rounds
    assert len(rows) == 2 and all(ln.endswith(" slower, confirmed |") for ln in rows), rows
    assert "aten::mul" in rows[1] and "_total_" in rows[0]


@pytest.mark.slow  # end to end through subprocesses: the full lane
def test_hostile_series_identity_posts_only_inert_text(tmp_path: Path) -> None:
    """Issue 22: a schema-valid artifact whose series identity (shape, dtype, workload)
    carries markdown posts no live link, mention, heading, HTML or foreign marker."""
    from tests.report.test_inert_strings import assert_inert_markdown

    evil = "[Approve](https://evil.example/a) @org/team <b>x</b> <!-- neuronasv:comment:k -->"
    wl = (f"rmsnorm.naive{evil}", f"4x512\n## Injected heading {evil}", f"float32 {evil}")
    art = make_artifact(tmp_path, wl=wl)
    with FakeGitHubCI(tokens={TOKEN: "github-actions[bot]"}, repo=REPO) as gh:
        gh.add_pull(7, HEAD)
        r = run_script(art, event(tmp_path), gh)
        assert r.returncode == 0, r.stdout + r.stderr
        (ours,) = gh.comments(7, author="github-actions[bot]")
        (status,) = gh.statuses(HEAD)
    body = ours["body"]
    assert "Injected heading" in body and "4x512" in body  # shown, inert
    assert_inert_markdown(body)
    assert "\n" not in status["description"]  # plain text on GitHub: one line is the rule


@pytest.mark.slow  # end to end through subprocesses: the full lane
def test_refusals_post_nothing(tmp_path: Path) -> None:
    art = make_artifact(tmp_path)
    with FakeGitHubCI(tokens={TOKEN: "github-actions[bot]"}, repo=REPO) as gh:
        gh.add_pull(7, HEAD)
        # A fork PR #8 pushed the very same commit; its run's artifact names PR #7.
        gh.add_pull(8, HEAD, head_repo="mallory/kernels", head_ref="same-code")
        r = run_script(art, event(tmp_path, head_repo="mallory/kernels", branch="same-code",
                                  prs=()), gh)
        assert r.returncode == 9 and "names PR #7" in r.stderr and "#8" in r.stderr, r.stderr

        # Two open PRs from one branch: the run cannot say which it was for.
        gh.add_pull(9, HEAD, head_ref="pr-7")
        r = run_script(art, event(tmp_path, prs=(7, 9)), gh)
        assert r.returncode == 9 and "#7, #9" in r.stderr, r.stderr
        gh.add_pull(9, HEAD, head_ref="pr-7", state="closed")

        # The artifact's head is another commit than the run's.
        other = make_artifact(tmp_path, head=OTHER, name="other")
        r = run_script(other, event(tmp_path), gh)
        assert r.returncode == 9 and "not the commit the benchmark run was for" in r.stderr

        # No token in the privileged job: a failure, not a silent dry run.
        r = run_script(art, event(tmp_path), gh, token=None)
        assert r.returncode == 2 and "GITHUB_TOKEN is not set" in r.stderr

        # The PR moved on after the run: the stale artifact must not post.
        gh.add_pull(7, OTHER)
        r = run_script(art, event(tmp_path), gh)
        assert r.returncode == 9 and "the head of no open PR" in r.stderr, r.stderr
        assert gh.writes() == [] and gh.comments(7) == [] and gh.statuses(HEAD) == []


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"pr-number": "7; rm -rf /\n"}, "not a positive integer"),
        ({"pr-number": "0\n"}, "not a positive integer"),
        ({"pr-number": "7\n8\n"}, "more than one line"),
        ({"pr-number": "7" * 300}, "single short line"),
        ({"head-sha": "C" * 40}, "40 lowercase hex"),
        ({"head-sha": HEAD[:39]}, "40 lowercase hex"),
        ({"head-sha": BASE}, "not the commit the benchmark run was for"),
        ({"base-sha": "main\n"}, "base-sha is not 40"),
    ],
)
def test_claims_are_format_checked(tmp_path: Path, files: dict[str, str], message: str) -> None:
    art = make_artifact(tmp_path, rounds=False)
    for name, text in files.items():
        (art / name).write_text(text)
    with pytest.raises(UntrustedArtifactError, match=message):
        pr_comment.read_claims(art, HEAD)


def test_symlinks_and_missing_results_are_refused(tmp_path: Path) -> None:
    art = make_artifact(tmp_path, rounds=False)
    (art / "findings.json").unlink()
    (art / "findings.json").symlink_to("/etc/passwd")
    with pytest.raises(UntrustedArtifactError, match="symbolic link"):
        pr_comment.read_claims(art, HEAD)
    (art / "findings.json").unlink()
    import shutil

    shutil.rmtree(art / "results")
    with pytest.raises(UntrustedArtifactError, match="results/ is missing"):
        pr_comment.read_claims(art, HEAD)


def _recompute(art: Path) -> FindingsDocument:
    claims = pr_comment.read_claims(art, HEAD)
    return pr_comment.recompute_findings(art, claims, acks_path=str(art / "no-acks"),
                                         history_dir=None, created="")


def test_missing_or_partial_rounds_leave_single_run_verdicts_and_say_why(tmp_path: Path) -> None:
    art = make_artifact(tmp_path, rounds=False)
    doc = _recompute(art)
    assert sum(verdict_of(f) == "regression" for f in doc.findings) == 2
    assert not any(f.remeasured for f in doc.findings)
    assert doc.settings["confirm"].startswith("not run: the artifact holds no rounds document")
    full = rounds_doc(art / "results")
    partial = dataclasses.replace(full, measurements=full.measurements[:-1])
    (art / "rounds.json").write_text(partial.dumps())
    doc = _recompute(art)
    assert doc.settings["confirm"].startswith("not replayed: the artifact's rounds lack")
    (art / "rounds.json").write_text(dataclasses.replace(full, head=OTHER).dumps())
    with pytest.raises(Exception, match="rounds document is about other commits"):
        _recompute(art)
    (art / "rounds.json").write_text('{"kind": "neuronasv.rounds", "schema_version": 1,'
                                     ' "rounds": 3, "measurements": [{"side": "evil"}]}')
    with pytest.raises(UntrustedArtifactError, match=r"rounds\.json failed schema validation"):
        _recompute(art)


def test_replayed_rounds_equal_confirm_on_the_recorded_runner(tmp_path: Path) -> None:
    """The replay gives what confirm gave on the live runner whose samples were recorded."""
    from neuronasv.analyse.confirm import confirm
    from neuronasv.analyse.pairwise import compare
    from neuronasv.analyse.replay import RecordingRunner, ReplayRunner

    art = make_artifact(tmp_path, rounds=False)
    doc = compare(load_history(art / "results"), BASE, HEAD)
    recorded = rounds_doc(art / "results")

    def live(side: str, series: Any, r: int) -> dict[SeriesId, tuple[float, ...]]:
        got = recorded.samples(side, r)
        return {s: got[s] for s in series if s in got}

    rec = RecordingRunner(live)
    a = confirm(doc, rec, rounds=3)
    b = confirm(doc, ReplayRunner(rec.document(BASE, HEAD, 3)), rounds=3)
    assert a == b and any(f.state.confirmed for f in a.findings)
    back = RoundsDocument.loads(rec.document(BASE, HEAD, 3).dumps())
    assert back == rec.document(BASE, HEAD, 3)


def _set_roofline(art: Path, commit: str, fraction: float, bound: str) -> None:
    """Give aten::mul of ``commit``'s sidecar a fraction of peak and its label."""
    from neuronasv.model import RunSidecar

    # Not a glob: the hostile machine folder's name holds "[...]".
    (path,) = [
        Path(d) / n
        for d, _, names in os.walk(art / "results")
        for n in names
        if n.startswith(commit[:8]) and n.endswith(".neuronasv")
    ]
    sc = RunSidecar.loads(path.read_text())
    profiles = tuple(
        dataclasses.replace(w, ops=tuple(
            dataclasses.replace(o, roofline_fraction=fraction, roofline_bound=bound)
            if o.op == "aten::mul" else o
            for o in w.ops
        ))
        for w in sc.profiles
    )  # fmt: skip
    path.write_text(dataclasses.replace(sc, profiles=profiles).dumps())


@pytest.mark.slow  # end to end through subprocesses: the full lane
def test_comment_links_the_traces_artifact_and_shows_the_flagged_ops_fraction_of_peak(
    tmp_path: Path,
) -> None:
    """Issue 14 items 4-5: per flagged workload, base and head traces at the run's traces
    artifact (its id from the API), the op named, how to open them; the moved op's
    fraction of peak in the cause table and the series table. A label the roofline never
    writes (the run chose it) is withheld; the numbers stay."""
    art = make_artifact(tmp_path)
    _set_roofline(art, BASE, 0.62, "memory")
    _set_roofline(art, HEAD, 0.21, f"memory [Approve]({EVIL})")
    with FakeGitHubCI(tokens={TOKEN: "github-actions[bot]"}, repo=REPO) as gh:
        gh.add_pull(7, HEAD)
        gh.add_artifact(RUN_ID, "pr-benchmark", 900)
        gh.add_artifact(RUN_ID, TRACES_ARTIFACT, 901)
        gh.add_artifact(RUN_ID + 1, TRACES_ARTIFACT, 999)  # another run's: never linked
        r = run_script(art, event(tmp_path), gh)
        assert r.returncode == 0, r.stdout + r.stderr
        (ours,) = gh.comments(7, author="github-actions[bot]")
        body = ours["body"]
        asked = [q for q in gh.requests if "/artifacts" in q.path]
    art_url = f"{RUN_URL}/artifacts/901"
    assert asked and all(f"/actions/runs/{RUN_ID}/artifacts" in q.path for q in asked)
    assert set(urls(body)) == {RUN_URL, art_url, PERFETTO_URL}, urls(body)
    traces = body.split("### Traces", 1)[1]
    assert traces.splitlines()[2].startswith("Open a trace in [Perfetto](https://ui.perfetto.dev)")
    assert (
        f"- `rmsnorm.naive` `4x512 fp32` — look for `aten::mul`:"
        f" [base `base-{BASE[:8]}/rmsnorm.naive-4x512-float32.json.gz`]({art_url})"
        f" · [head `head-{HEAD[:8]}/rmsnorm.naive-4x512-float32.json.gz`]({art_url})"
    ) in traces
    assert f"[Traces]({art_url})" in body  # the footer: one link for both sides
    # Of peak: the cause table's column names the op; the series table shows base → head.
    cause = body.split("### 1.", 1)[1].split("\n\n###", 1)[0]
    header = next(ln for ln in cause.splitlines() if ln.startswith("| Shape"))
    assert header.endswith("| Where the time went (rounds) | Of peak |")  # one measurement
    row = next(ln for ln in cause.splitlines() if ln.startswith("| `4x512 fp32`"))
    assert row.endswith("| `aten::mul` 62 % → 21 % of peak (memory) |"), row
    series = body.split("<details><summary>Every row that moved", 1)[1]
    mul = next(ln for ln in series.splitlines() if "`aten::mul`" in ln)
    assert "| 62 % → 21 % of peak (memory) |" in mul, mul
    for bad in ("evil", "Approve"):
        assert bad not in body


@pytest.mark.slow  # end to end through subprocesses: the full lane
def test_traces_artifact_lookup_failure_links_the_run_page(tmp_path: Path) -> None:
    """The API cannot list the run's artifacts (403): the comment still posts, and the
    traces link is the run's page."""
    art = make_artifact(tmp_path)
    with FakeGitHubCI(tokens={TOKEN: "github-actions[bot]"}, repo=REPO) as gh:
        gh.add_pull(7, HEAD)
        gh.add_artifact(RUN_ID, TRACES_ARTIFACT, 901)
        gh.add_fault("GET", r"/actions/runs/\d+/artifacts$", "forbidden", times=10)
        r = run_script(art, event(tmp_path), gh)
        assert r.returncode == 0, r.stdout + r.stderr
        (ours,) = gh.comments(7, author="github-actions[bot]")
    assert f"[Traces]({RUN_URL})" in ours["body"] and "/artifacts/" not in ours["body"]


@pytest.mark.slow  # end to end through subprocesses: the full lane
def test_the_comment_is_titled_by_the_trusted_checkouts_project_never_the_artifacts(
    tmp_path: Path,
) -> None:
    """The privileged step titles the comment as `neuronasv comment` does (the one helper,
    neuronasv.store.asvconf.comment_title): the project of the checkout it runs in — the
    default branch's, found from a subdirectory too — escaped; `--title` (the workflow's
    input) wins; the artifact has no say (its own comment.md and findings name another)."""
    checkout = tmp_path / "default-branch"
    (checkout / "docs").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(checkout)], check=True)
    (checkout / "asv.conf.json").write_text(
        '{"version": 1, "project": "kernels @org/team <b>x</b>"}'
    )
    art = make_artifact(tmp_path)
    (art / "comment.md").write_text("## :green_circle: artifact-project: all good")
    with FakeGitHubCI(tokens={TOKEN: "github-actions[bot]"}, repo=REPO) as gh:
        gh.add_pull(7, HEAD)
        r = run_script(art, event(tmp_path), gh, cwd=checkout / "docs")
        assert r.returncode == 0, r.stdout + r.stderr
        (ours,) = gh.comments(7, author="github-actions[bot]")
        title = ours["body"].splitlines()[1]
        assert title.startswith("## :red_circle: kernels @\u200dorg/team "), title
        assert "<b>" not in title and "artifact-project" not in ours["body"]

        r = run_script(art, event(tmp_path), gh, "--title", "Kernels CI", cwd=checkout)
        assert r.returncode == 0, r.stdout + r.stderr
        (ours,) = gh.comments(7, author="github-actions[bot]")  # the same sticky comment
        assert ours["body"].splitlines()[1].startswith("## :red_circle: Kernels CI: ")
