"""End to end on a simulated Neuron backend: real asv, real git, the real profiler and the
real ``neuronasv run`` → ``compare`` → ``comment`` path, with only the Neuron parts stood
in — TorchNeuron (tests/neuron/site: device ``neuron`` on a simulated NeuronCore, no device
time in ``key_averages()``, a session NTFF per profiler cycle) and ``neuron-explorer``
(tests/neuron/bin).

A temporary repository holds this package and suite; its second commit adds one more
multiplication to the naive RMSNorm. The per-op device-time series must come from the
NTFFs through neuron-explorer (each op naming its source), ``compare`` must find
``aten::mul`` slower, and the PR comment must name it. A capture the run kept is then
replayed offline (``profile --from-capture``) and must give the run's own numbers.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from neuronasv.model import ProfileDocument, RunSidecar
from tests.neuron.standin import standin_env

ROOT = Path(__file__).resolve().parents[2]
NEURONASV = str(Path(sys.executable).parent / "neuronasv")
MACHINE = "trnbox"
KEY = "rmsnorm.naive[32x1024,float32]"

pytestmark = [pytest.mark.slow, pytest.mark.standin]


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, check=True, capture_output=True, text=True
    ).stdout.strip()


def _cli(repo: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [NEURONASV, *args], cwd=repo, env=env, capture_output=True, text=True, timeout=600
    )


@pytest.fixture(scope="module")
def neuron_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    tmp = tmp_path_factory.mktemp("neuron-e2e")
    repo = tmp / "repo"
    repo.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "neuronasv", repo / "neuronasv", ignore=ignore)
    shutil.copytree(ROOT / "benchmarks", repo / "benchmarks", ignore=ignore)
    shutil.copy(ROOT / "asv.conf.json", repo / "asv.conf.json")
    (repo / ".gitignore").write_text(".asv/\n__pycache__/\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "base")
    naive = repo / "neuronasv" / "measure" / "workloads" / "rmsnorm.py"
    anchor = "    sq = x * x  # aten::mul (1)\n"
    assert anchor in naive.read_text(), "rmsnorm_naive changed: update this test's anchor"
    naive.write_text(naive.read_text().replace(anchor, anchor + "    sq = sq * weight\n"))
    _git(repo, "commit", "-q", "-am", "one more multiplication")
    base, head = _git(repo, "rev-parse", "HEAD~1"), _git(repo, "rev-parse", "HEAD")
    env = standin_env()
    env.update(
        NEURONASV_SHAPES="32x1024",
        NEURONASV_DTYPES="float32",
        NEURONASV_SAMPLES="8",  # Mann-Whitney can reach p < 0.002 from 7 a side
        OMP_NUM_THREADS="1",
        NEURONASV_HOST_ID="trn-standin",
    )
    env.pop("GITHUB_TOKEN", None)
    run = _cli(repo, env, "run", "HEAD~1", "HEAD", "--machine", MACHINE, "--backend", "neuron",
               "--bench", r"rmsnorm\.Naive\.", "--compile-cache", str(tmp / "cc"))  # fmt: skip
    out = tmp / "out"
    out.mkdir()
    compare = _cli(repo, env, "compare", base, head, "--machine", MACHINE, "--format", "json",
                   "--out", str(out / "findings.json"))  # fmt: skip
    comment = _cli(repo, env, "comment", "--pr", "1", "--report", str(out / "findings.json"),
                   "--dry-run", "--out", str(out / "requests.json"), "--body-out",
                   str(out / "comment.md"), "--github-repo", "example/neuronasv")  # fmt: skip
    return {"repo": repo, "env": env, "base": base, "head": head, "run": run,
            "compare": compare, "comment": comment, "out": out, "tmp": tmp}  # fmt: skip


def _sidecar(run: dict[str, object], sha: str) -> RunSidecar:
    machine_dir = Path(str(run["repo"])) / ".asv" / "results" / MACHINE
    (path,) = machine_dir.glob(f"{sha[:8]}-*.neuronasv")
    return RunSidecar.loads(path.read_text(), str(path))


def test_the_run_measures_per_op_device_time_from_the_ntffs(neuron_run: dict[str, object]) -> None:
    run = neuron_run["run"]
    assert isinstance(run, subprocess.CompletedProcess)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    base, head = str(neuron_run["base"]), str(neuron_run["head"])
    before, after = _sidecar(neuron_run, base), _sidecar(neuron_run, head)
    assert after.fingerprint["backend"] == "neuron"
    assert after.fingerprint["torch_neuronx_flavour"] == "native"
    assert after.fingerprint["neuron_explorer"] == "neuron-explorer 2.33.0.0-standin"
    p0 = {p.key: p for p in before.profiles}[KEY]
    p1 = {p.key: p for p in after.profiles}[KEY]
    assert p1.device_time_source == p0.device_time_source
    assert (p1.device_time_source or "").startswith("device-profile instruction rows (")
    mul0, mul1 = p0.op("aten::mul"), p1.op("aten::mul")
    assert mul0 is not None and mul1 is not None
    assert mul0.calls_per_iter == 3 and mul1.calls_per_iter == 4
    # The simulated core is deterministic: one more 32x1024 multiply, 8.492 µs more.
    assert len(mul0.self_device_time_us) == 8
    assert mul0.self_device_time_us == pytest.approx((3 * 8.492,) * 8)
    assert mul1.self_device_time_us == pytest.approx((4 * 8.492,) * 8)
    assert {o.op for o in p1.ops} >= {"aten::mean", "aten::add", "aten::rsqrt"}
    # The canary's end state carries the device profile's throttle fields and versions.
    assert p1.canary is not None
    assert p1.canary.device_state["end.neuron.ntff_version"] == "5"
    assert "end.neuron.throttle_active_nc0_time_ns" in p1.canary.device_state
    series = {(s.benchmark, s.op) for s in after.series}
    assert ("rmsnorm.Naive.devtime_op", "aten::mul") in series


def test_compare_finds_the_op_and_the_comment_names_it(neuron_run: dict[str, object]) -> None:
    compare, comment = neuron_run["compare"], neuron_run["comment"]
    assert isinstance(compare, subprocess.CompletedProcess)
    assert isinstance(comment, subprocess.CompletedProcess)
    assert compare.returncode in (0, 1), compare.stderr[-3000:]
    out = Path(str(neuron_run["out"]))
    findings = json.loads((out / "findings.json").read_text())
    text = json.dumps(findings)
    assert "aten::mul" in text
    assert comment.returncode == 0, comment.stderr[-3000:]
    body = (out / "comment.md").read_text()
    assert "aten::mul" in body, body
    assert "rmsnorm.naive" in body


def test_a_kept_capture_replays_offline_to_the_same_numbers(neuron_run: dict[str, object]) -> None:
    repo, head = Path(str(neuron_run["repo"])), str(neuron_run["head"])
    after = _sidecar(neuron_run, head)
    traces = repo / ".asv" / "traces" / MACHINE / head[:8]
    (folder,) = [p for p in traces.iterdir() if p.is_dir() and p.name.startswith("rmsnorm.naive")]
    env = dict(neuron_run["env"])  # type: ignore[arg-type]
    env["PYTHONPATH"] = str(ROOT)  # no stand-in TorchNeuron: offline needs none
    out = Path(str(neuron_run["tmp"])) / "replay.json"
    r = _cli(repo, env, "profile", "--backend", "neuron", "--from-capture", str(folder),
             "--json", str(out))  # fmt: skip
    assert r.returncode == 0, r.stderr
    doc = ProfileDocument.loads(out.read_text(), str(out))
    (replayed,) = doc.workloads
    live = {p.key: p for p in after.profiles}[KEY]
    assert replayed.key == KEY
    mul = replayed.op("aten::mul")
    assert mul is not None
    assert mul.self_device_time_us == pytest.approx((4 * 8.492,) * len(mul.self_device_time_us))
    assert mul.calls_per_iter == live.op("aten::mul").calls_per_iter  # type: ignore[union-attr]
    assert os.path.basename(str(folder)) == "rmsnorm.naive-32x1024-float32"
