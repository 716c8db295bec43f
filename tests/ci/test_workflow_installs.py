"""The reusable workflows' install steps, run as they are written, on the built wheel.

Two defects the act run of issue 37 found (../shared/research/act-2026-12.md, D1 and D2):

- **hosted jobs** install with ``pip install --no-deps`` and then ask ``python -m
  neuronasv.ci requirements`` what else to install; that step imported msgspec (through the
  parser of every other step), so every hosted job failed on a fresh Python. Here: a fresh
  venv, the wheel with ``--no-deps``, the step;
- **self-hosted jobs** make a venv that sees the runner's packages and ``pip install`` the
  pinned neuronasv into it; when the runner's Python already had *a* neuronasv, pip said
  "already satisfied" and installed nothing: the bench step found no ``nx/bin/neuronasv``
  (exit 127) and pr-bench and bisect ran the runner's copy. Here: a base Python with
  another neuronasv 0.1.0, the step's own script, offline.
"""

from __future__ import annotations

import os
import subprocess
import venv
from pathlib import Path

import pytest

from neuronasv.ci.requirements import requirements
from tests.ci.test_workflows import REUSABLE, jobs, steps
from tests.wheelenv import clean_venv

HOSTED = "Install neuronasv (no torch)"
SELF_HOSTED = "Install neuronasv beside the runner's torch"


def install_scripts(name: str) -> list[str]:
    """The ``run:`` of every step called ``name`` in the reusable workflows."""
    return [str(st["run"]) for wf in REUSABLE for job in jobs(wf).values()
            for st in steps(job) if st.get("name") == name]  # fmt: skip


def _clean_env(**extra: str) -> dict[str, str]:
    keep = ("PATH", "HOME", "LANG", "PIP_CACHE_DIR", "TMPDIR", "RUSTUP_HOME", "CARGO_HOME",
            "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME")
    return {**{k: os.environ[k] for k in keep if k in os.environ}, **extra}


def test_every_job_installs_the_same_way() -> None:
    """One hosted install and one self-hosted install, each written the same in every job
    (the two tests below run one copy of each)."""
    hosted, selfhosted = install_scripts(HOSTED), install_scripts(SELF_HOSTED)
    # plan, store, analyse, site-branch, issues, comment
    assert len(hosted) == 6 and len(set(hosted)) == 1, hosted
    assert len(selfhosted) == 3 and len(set(selfhosted)) == 1, selfhosted  # bench bisect pr
    # What a hosted job runs before its dependencies are installed: the package alone.
    before = [ln.strip() for ln in hosted[0].splitlines() if ln.strip()][:3]
    assert before[0].startswith("case ") and before[1:] == [
        'pip install -q --no-deps "$PACKAGE"',
        'python -m neuronasv.ci requirements > "$RUNNER_TEMP/req.txt"',
    ], before


@pytest.mark.slow
def test_requirements_runs_where_only_the_package_is_installed(
    tmp_path: Path, built_wheel: tuple[Path, Path]
) -> None:
    """``pip install --no-deps <wheel> && python -m neuronasv.ci requirements`` in a fresh
    venv: exit 0 and the dependencies without torch (D1: ModuleNotFoundError msgspec)."""
    wheel, _ = built_wheel
    venv.EnvBuilder(with_pip=True, symlinks=True).create(tmp_path / "fresh")
    py = tmp_path / "fresh" / "bin" / "python"
    env = _clean_env(PIP_NO_INDEX="1")
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", str(wheel)],
                   cwd=tmp_path, env=env, check=True, capture_output=True)  # fmt: skip
    r = subprocess.run([str(py), "-m", "neuronasv.ci", "requirements"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, check=False)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == requirements(torch=False), r.stdout
    listed = subprocess.run([str(py), "-m", "pip", "list", "--format=freeze"], cwd=tmp_path,
                            env=env, capture_output=True, text=True, check=True).stdout
    assert "msgspec" not in listed and "numpy" not in listed  # the package alone


def _another_neuronasv(site: Path) -> None:
    """A distribution ``neuronasv 0.1.0`` that is not this one (a runner's older copy)."""
    (site / "neuronasv").mkdir()
    (site / "neuronasv" / "__init__.py").write_text('__version__ = "0.1.0"\nOTHER = True\n')
    info = site / "neuronasv-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: neuronasv\nVersion: 0.1.0\n")
    (info / "INSTALLER").write_text("pip\n")
    (info / "RECORD").write_text("neuronasv/__init__.py,,\nneuronasv-0.1.0.dist-info/METADATA,,\n")


@pytest.mark.slow
def test_the_self_hosted_install_takes_the_pinned_package_over_the_runners(
    tmp_path: Path, built_wheel: tuple[Path, Path]
) -> None:
    """The runner's Python has torch and another neuronasv 0.1.0: the step installs the
    pinned one into its venv all the same, offline (D2: "already satisfied", no
    ``nx/bin/neuronasv``), and the venv imports it, not the runner's."""
    wheel, _ = built_wheel
    base = clean_venv(tmp_path / "runner")  # torch and the rest, no neuronasv of ours
    site = Path(subprocess.run([str(base), "-c", "import sysconfig; print(sysconfig.get_paths()"
                                "['purelib'])"], capture_output=True, text=True,
                               check=True).stdout.strip())  # fmt: skip
    _another_neuronasv(site)
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    script = install_scripts(SELF_HOSTED)[0]
    env = _clean_env(PACKAGE=str(wheel), BASE_PYTHON=str(base), RUNNER_TEMP=str(temp),
                     PIP_NO_INDEX="1")  # fmt: skip
    r = subprocess.run(["bash", "-e", "-c", script], cwd=tmp_path, env=env, capture_output=True,
                       text=True, check=False, timeout=600)  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    nx = temp / "nx" / "bin"
    assert (nx / "neuronasv").is_file(), r.stdout + r.stderr
    where = subprocess.run([str(nx / "python"), "-c", "import neuronasv, torch; "
                            "print(neuronasv.__file__); print(hasattr(neuronasv, 'OTHER'))"],
                           cwd=tmp_path, env=_clean_env(), capture_output=True, text=True,
                           check=True).stdout.split()  # fmt: skip
    assert where[0].startswith(str(temp / "nx")) and where[1] == "False", where
    assert (site / "neuronasv" / "__init__.py").is_file()  # the runner's copy left alone
    ran = subprocess.run([str(nx / "neuronasv"), "--version"], cwd=tmp_path, env=_clean_env(),
                         capture_output=True, text=True, check=False)  # fmt: skip
    assert ran.returncode == 0, ran.stderr
