"""The privileged step is the same pipeline (issue 28 item 4): for one artifact, the comment
``python -m neuronasv.ci pr-comment`` posts and the one ``neuronasv comment`` renders of
the run's own findings are the same bytes.

The artifact (``tests/ci/pr_artifact.py``) has what a CPU PR run uploads: device-time op,
module and total series, instruction counts (whole step, ops, modules; an op counted at
base only that still runs nested at head), a plain second workload, and the rounds
``neuronasv confirm`` recorded. The unprivileged side is the run's commands on it
(``compare``, ``confirm``, ``comment``); the privileged side recomputes from the numbers
alone. The one thing the privileged step adds — the run's links, from trusted sources — is
applied to the run's findings by the same function before they are rendered.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from neuronasv.ci import pr_comment
from neuronasv.cli import main
from neuronasv.model import FindingsDocument
from tests.ci.fakegithub_ext import FakeGitHubCI
from tests.ci.pr_artifact import BASE, HEAD, write_artifact

TOKEN = "ghs_same_comment"
REPO = "octo/kernels"
RUN_ID = 4242
SERVER = "https://github.com"
RUN_URL = f"{SERVER}/{REPO}/actions/runs/{RUN_ID}"
TITLE = "kernels"


def _event(tmp_path: Path) -> Path:
    payload = {"action": "completed", "workflow_run": {
        "id": RUN_ID, "event": "pull_request", "head_sha": HEAD, "head_branch": "pr-7",
        "head_repository": {"full_name": REPO, "owner": {"login": "octo"}},
        "html_url": RUN_URL, "pull_requests": [{"number": 7, "head": {"sha": HEAD}}],
    }}  # fmt: skip
    p = tmp_path / "event.json"
    p.write_text(json.dumps(payload))
    return p


def _privileged(art: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    out = tmp_path / "requests.json"
    with FakeGitHubCI(tokens={TOKEN: "github-actions[bot]"}, repo=REPO) as gh:
        gh.add_pull(7, HEAD)
        for k, v in {"GITHUB_API_URL": gh.url, "GITHUB_REPOSITORY": REPO,
                     "GITHUB_SERVER_URL": SERVER, "GITHUB_TOKEN": TOKEN}.items():  # fmt: skip
            monkeypatch.setenv(k, v)
        rc = pr_comment.main(["--artifact", str(art), "--event", str(_event(tmp_path)),
                              "--title", TITLE, "--acks", str(tmp_path / "no-acks"),
                              "--dry-run", "--out", str(out)])  # fmt: skip
    assert rc == 0
    (post, _status) = json.loads(out.read_text())
    return str(post["json"]["body"])


def _unprivileged(art: Path, tmp_path: Path) -> str:
    run = FindingsDocument.loads((art / "findings.json").read_text())
    linked = tmp_path / "linked.json"
    linked.write_text(pr_comment.with_run_links(run, RUN_URL).dumps())
    body = tmp_path / "comment.md"
    rc = main(["comment", "--pr", "7", "--report", str(linked), "--dry-run", "--out",
               str(tmp_path / "dry.txt"), "--body-out", str(body), "--report-url", RUN_URL,
               "--title", TITLE, "--github-repo", REPO])  # fmt: skip
    assert rc == 0
    return body.read_text()


def test_the_privileged_comment_is_the_comment_of_the_same_artifact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no acknowledgements file of a checkout here
    art, run = write_artifact(tmp_path / "artifact")
    # the artifact has every kind of row the comment shows
    units = {f.unit for f in run.findings}
    assert units == {"seconds", "instructions"}
    assert any(f.series.op and f.series.op.startswith("module:") for f in run.findings)
    assert any(f.state.exact == "uncounted" for f in run.findings)
    assert any(f.remeasured and f.state.confirmed for f in run.findings)
    assert run.base is not None and run.base.commit == BASE

    mine = _unprivileged(art, tmp_path)
    posted = _privileged(art, tmp_path, monkeypatch)
    assert posted == mine
    # and it says what the numbers say: the matmul's time, confirmed; its count, exact
    assert "slower" in posted and "confirmed" in posted
    assert "more instructions (+40,000 per iteration, +40 %), exact" in posted
    assert "1.21e+04" not in posted and "unit" not in posted.split("<details>")[0]


def _edit_result(results: Path, commit: str, bench: str, value: object) -> None:
    """Set the first value of ``bench`` in ``commit``'s results file (asv's JSON)."""
    (path,) = [p for p in results.rglob(f"{commit[:8]}-*.json")]
    data = json.loads(path.read_text())
    cols = data["result_columns"]
    row = data["results"][bench]
    row[cols.index("result")][0] = value
    if "samples" in cols and row[cols.index("samples")][0] is not None:
        row[cols.index("samples")][0] = [value]
    path.write_text(json.dumps(data))


@pytest.mark.parametrize("value", [-5.0, 140_000.5, 1e16])
def test_an_instruction_count_out_of_range_is_refused_never_posted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: float
) -> None:
    """Issue 28: a negative count in an artifact was posted ("more work"). A count is a whole
    number in range in every reader, the privileged one included: exit 9, nothing sent."""
    monkeypatch.chdir(tmp_path)
    art, _ = write_artifact(tmp_path / "artifact")
    _edit_result(art / "results", HEAD, "toy.Suite.instr_total", value)
    out = tmp_path / "requests.json"
    with FakeGitHubCI(tokens={TOKEN: "github-actions[bot]"}, repo=REPO) as gh:
        gh.add_pull(7, HEAD)
        for k, v in {"GITHUB_API_URL": gh.url, "GITHUB_REPOSITORY": REPO,
                     "GITHUB_SERVER_URL": SERVER, "GITHUB_TOKEN": TOKEN}.items():  # fmt: skip
            monkeypatch.setenv(k, v)
        rc = pr_comment.main(["--artifact", str(art), "--event", str(_event(tmp_path)),
                              "--dry-run", "--out", str(out)])  # fmt: skip
        assert gh.comments(7) == []
    assert rc == 9 and not out.exists()
