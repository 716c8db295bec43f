"""The privileged comment step on out-of-range numbers and on the largest series the size
caps allow (issue 22): refused as an untrusted artifact (exit 9), or run within 1 GiB."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from neuronasv.errors import UntrustedArtifactError
from tests.ci.fakegithub_ext import FakeGitHubCI
from tests.ci.test_pr_comment import (
    HEAD,
    NO_TORCH,
    REPO,
    ROOT,
    TOKEN,
    _recompute,
    event,
    make_artifact,
)

BENCH = "devtime.DeviceTime.track_devtime"


def _results_file(art: Path, commit: str) -> Path:
    (path,) = [p for p in (art / "results").rglob(f"{commit[:8]}-*.json")]
    return path


def _set_total_samples(art: Path, commit: str, samples: list[float]) -> None:
    """The workload total's samples (and its result, their median) at ``commit``."""
    path = _results_file(art, commit)
    data = json.loads(path.read_text())
    row, cols = data["results"][BENCH], data["result_columns"]
    row[cols.index("samples")][0] = samples
    row[cols.index("result")][0] = float(np.median(samples))
    path.write_text(json.dumps(data))


def test_out_of_range_samples_in_the_artifact_are_exit_9(tmp_path: Path) -> None:
    art = make_artifact(tmp_path, rounds=False)
    _set_total_samples(art, HEAD, [1.2e-4, -2.9e-4, 1.3e-4])
    with pytest.raises(UntrustedArtifactError, match="results are unusable") as exc:
        _recompute(art)
    assert exc.value.exit_code == 9
    art = make_artifact(tmp_path, name="rounds")
    doc = json.loads((art / "rounds.json").read_text())
    doc["measurements"][1]["series"][0]["samples"][0] = 1e308
    (art / "rounds.json").write_text(json.dumps(doc))
    with pytest.raises(UntrustedArtifactError, match=r"rounds.json .*samples\[0\] must be"):
        _recompute(art)


LIMITED = (
    "import resource, sys\n"
    "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
    "sys.argv[1:] = {argv!r}\n"
)


@pytest.mark.slow  # a subprocess reading ~30 MB of results: the full lane
def test_a_million_sample_series_is_judged_within_one_gib(tmp_path: Path) -> None:
    """One series with 10^6 samples a side (14 MB a file, under the size caps) once
    needed ~20 GB in the bootstrap; the whole privileged step now runs under a 1 GiB
    address-space limit (``RLIMIT_AS``) and still finds the change."""
    art = make_artifact(tmp_path, rounds=False)
    rng = np.random.default_rng(3)
    _set_total_samples(art, "b" * 40, list(rng.lognormal(np.log(1.2e-4), 0.02, 1_000_000)))
    _set_total_samples(art, HEAD, list(rng.lognormal(np.log(2.5e-4), 0.02, 1_000_000)))
    out = tmp_path / "requests.json"
    argv = ["--artifact", str(art), "--dry-run", "--out", str(out)]
    script = LIMITED.format(argv=argv) + NO_TORCH
    with FakeGitHubCI(tokens={TOKEN: "github-actions[bot]"}, repo=REPO) as gh:
        gh.add_pull(7, HEAD)
        r = subprocess.run(
            [sys.executable, "-c", script],
            env=_env(gh, event(tmp_path)),
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
    assert r.returncode == 0, r.stderr[-2000:]
    body = out.read_text()
    assert "MemoryError" not in r.stderr and "1000000/1000000 samples" in body


def _env(gh: FakeGitHubCI, ev: Path) -> dict[str, str]:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    env |= {
        "GITHUB_API_URL": gh.url,
        "GITHUB_REPOSITORY": gh.repo,
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_EVENT_PATH": str(ev),
        "GITHUB_TOKEN": TOKEN,
        "OPENBLAS_NUM_THREADS": "1",
    }
    return env
