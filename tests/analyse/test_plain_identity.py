"""Plain asv results compare by what asv recorded (issue 22 item 7), and a damaged
sidecar is named as such (item 4).

Without a neuronasv fingerprint on either side, base and head are comparable when asv's
own record of the run agrees: the machine, the environment name, the python, the
requirements and the environment variables. Device-time series need a backend, which
plain asv does not record: they stay refused (exit 6). A sidecar that is there but cannot
be read is a results error naming it (exit 5), not "backend unknown".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from neuronasv.analyse.pairwise import compare
from neuronasv.cli import main
from neuronasv.errors import IncomparableError, ResultsError
from neuronasv.store.history import load_history
from neuronasv.store.layout import sidecar_path
from tests.analyse.analyse_asvdata import Bench, neuronasv_run, write_run
from tests.builders import verdict_of

A, B = "a" * 40, "b" * 40


def _samples(scale: float) -> list[float]:
    return [scale * (1 + 0.01 * i) for i in range(10)]


def _plain(
    rd: str, commit: str, date: int, scale: float, bench: str = "suite.time_x", **edit: object
) -> str:
    path = write_run(rd, "m", commit, date, [Bench(bench, [], [_samples(scale)])])
    if edit:
        data = json.loads(Path(path).read_text())
        data.update(edit)
        Path(path).write_text(json.dumps(data))
    return path


def test_equal_asv_identity_is_comparable(tmp_path: Path) -> None:
    rd = str(tmp_path / "r")
    _plain(rd, A, 1, 1e-3)
    _plain(rd, B, 2, 2e-3)
    doc = compare(load_history(rd), A, B)
    (f,) = doc.findings
    assert verdict_of(f) == "regression" and doc.forced == ()


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        ({"python": "3.12"}, "asv python '3.11' vs '3.12'"),
        ({"env_vars": {"OMP_NUM_THREADS": "1"}}, "asv env_vars"),
        ({"requirements": {"numpy": "2.0"}}, "asv requirements"),
    ],
)
def test_a_different_asv_identity_is_refused(tmp_path: Path, edit: dict, says: str) -> None:
    rd = str(tmp_path / "r")
    _plain(rd, A, 1, 1e-3)
    _plain(rd, B, 2, 2e-3, **edit)
    with pytest.raises(IncomparableError, match="not known to be comparable") as exc:
        compare(load_history(rd), A, B)
    assert says in exc.value.message
    forced = compare(load_history(rd), A, B, force=True)
    assert any(says in p for p in forced.forced)


def test_device_time_without_a_backend_stays_refused(tmp_path: Path) -> None:
    rd = str(tmp_path / "r")
    _plain(rd, A, 1, 1e-3, bench="devtime.W.devtime_total")
    _plain(rd, B, 2, 2e-3, bench="devtime.W.devtime_total")
    with pytest.raises(IncomparableError, match="backend unknown at base and head") as exc:
        compare(load_history(rd), A, B)
    assert exc.value.exit_code == 6 and "devtime.W.devtime_total" in exc.value.message


def test_an_unreadable_sidecar_is_named_exit_5_not_backend_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    rd = str(tmp_path / "r")
    wl = {("w", "4x4", "float32"): {"aten::mul": (1.0, _samples(10.0))}}
    fp = {"backend": "cpu", "device_model": "x"}
    neuronasv_run(rd, "m", A, 1, wl, fingerprint=fp)
    head = neuronasv_run(rd, "m", B, 2, wl, fingerprint=fp)
    sc = Path(sidecar_path(head))
    data = json.loads(sc.read_text())
    data["fingerprint"] = ["backend", "cpu"]  # wrong type: a list, not an object
    sc.write_text(json.dumps(data))
    with pytest.raises(ResultsError, match="fingerprint of bbbbbbbbbbbb on 'm' is unknown"):
        compare(load_history(rd), A, B)
    monkeypatch.chdir(tmp_path)
    assert main(["compare", A, B, "--results-dir", rd]) == 5
    err = capsys.readouterr().err
    assert sc.name in err and "Traceback" not in err and "backend unknown" not in err


@pytest.mark.slow  # real asv in subprocesses
def test_a_folder_written_by_plain_asv_compares_with_no_flag(tmp_path: Path) -> None:
    """Fresh repository, plain ``asv run --record-samples`` at two commits, ``time_``
    benchmarks, no sidecar: ``neuronasv compare`` needs no flag."""
    repo = tmp_path / "proj"
    (repo / "benchmarks").mkdir(parents=True)
    (repo / "benchmarks" / "__init__.py").write_text("")
    (repo / "benchmarks" / "bench.py").write_text(
        "class TimeSum:\n    repeat = 8\n    number = 1\n    rounds = 1\n"
        "    warmup_time = 0.0\n    min_run_count = 8\n\n"
        "    def time_sum(self):\n        sum(range(2000))\n"
    )
    (repo / "asv.conf.json").write_text(json.dumps({
        "version": 1, "project": "p", "repo": ".", "branches": ["HEAD"],
        "environment_type": "existing", "benchmark_dir": "benchmarks",
        "results_dir": "results", "html_dir": "html",
    }))  # fmt: skip
    home = tmp_path / "home"
    home.mkdir()
    env = {
        **os.environ,
        "HOME": str(home),
        "GIT_AUTHOR_NAME": "t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@e.invalid",
        "GIT_COMMITTER_EMAIL": "t@e.invalid",
    }
    bindir = Path(sys.executable).parent

    def sh(*cmd: str) -> str:
        r = subprocess.run(
            cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=300, check=False
        )
        assert r.returncode == 0, r.stdout + r.stderr
        return r.stdout.strip()

    commits = []
    sh("git", "init", "-q", ".")
    for i in range(2):
        (repo / "benchmarks" / "bench.py").open("a").write(f"# {i}\n")
        sh("git", "add", "-A")
        sh("git", "commit", "-qm", f"c{i}")
        commits.append(sh("git", "rev-parse", "HEAD"))
    sh(str(bindir / "asv"), "machine", "--yes", "--machine", "box")
    for c in commits:
        sh(
            str(bindir / "asv"),
            "run",
            "--record-samples",
            "-E",
            f"existing:{sys.executable}",
            "--set-commit-hash",
            c,
            "--machine",
            "box",
        )
    assert not list((repo / "results").rglob("*.neuronasv"))  # plain asv: no sidecar
    r = subprocess.run(
        [str(bindir / "neuronasv"), "compare", *commits, "--results-dir", "results"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "bench.TimeSum.time_sum" in r.stdout and "FORCED" not in r.stdout


def test_ack_takes_a_commit_of_the_repository_as_its_full_hash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 22 item 8: ``ack`` validates its commit (exists, or full hex with --force)."""
    from neuronasv.analyse.acks import load_acks

    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@e.invalid",
        "GIT_COMMITTER_EMAIL": "t@e.invalid",
    }
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(
        ["git", "-C", str(tmp_path), "commit", "-q", "--allow-empty", "-m", "x"], check=True
    )
    full = subprocess.run(
        ["git", "-C", str(tmp_path), "rev-parse", "HEAD"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    monkeypatch.chdir(tmp_path)
    assert main(["ack", "w*", "--commit", full[:8], "--reason", "expected"]) == 0
    assert [a.commit for a in load_acks(".neuronasv/acknowledgements.json")] == [full]
    assert main(["ack", "w*", "--commit", "0" * 40, "--reason", "r"]) == 2  # unknown here
    assert "--force" in capsys.readouterr().err
    assert main(["ack", "w*", "--commit", "0" * 40, "--reason", "r", "--force"]) == 0
    assert main(["ack", "w*", "--commit", "--help", "--reason", "r"]) == 2
    assert main(["ack", "v*", "--commit", "*", "--reason", "any commit"]) == 0
    # Issue 40: the field form is stored as such (the file becomes version 2); a bad one is
    # one line, exit 2, and nothing is written.
    assert main(["ack", "workload=w op=aten::mul", "--commit", "*", "--reason", "fields"]) == 0
    doc = json.loads(Path(".neuronasv/acknowledgements.json").read_text(encoding="utf-8"))
    assert doc["schema_version"] == 2
    assert doc["acknowledgements"][-1]["series"] == "workload=w op=aten::mul"
    assert [a.pattern.structured for a in load_acks(".neuronasv/acknowledgements.json")] == [
        False, False, False, True
    ]  # fmt: skip
    capsys.readouterr()
    assert main(["ack", "workload=w opp=x", "--commit", "*", "--reason", "r"]) == 2
    assert "did you mean op=?" in capsys.readouterr().err
    assert len(load_acks(".neuronasv/acknowledgements.json")) == 4
