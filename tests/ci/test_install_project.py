"""ci/install_project.py on a host with torch preinstalled and no package index.

The "host" is a real interpreter: a venv whose only packages are this test environment's
(torch, numpy, asv, ...) seen through a site folder of symlinks, minus whatever a test
hides; "no network" is pip's own ``PIP_NO_INDEX=1`` (every download attempt fails, as on an
offline host). Everything is written under tmp_path: the project is copied there first,
because an editable install writes build metadata beside the project.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "ci"))
import install_project  # noqa: E402

# --- the decision pieces ----------------------------------------------------------------


def test_requirements_are_read_from_both_pyprojects() -> None:
    reqs = install_project.requirements(str(ROOT))
    assert "setuptools>=68" in reqs  # the build backend: --no-build-isolation needs it here
    assert any(r.startswith("torch") for r in reqs) and "msgspec>=0.18" in reqs
    assert "asv_runner>=0.2" in reqs
    assert not any("pytest" in r for r in reqs)  # dev extras are not runner dependencies


@pytest.mark.parametrize(
    ("installed", "spec", "ok"),
    [
        ("2.13.0+cpu", ">=2.1", True),
        ("1.9.3", ">=1.10", False),
        ("0.6.4", ">=0.6.4,<1", True),
        ("1.0", ">=0.6.4,<1", False),
        ("2.11.0+cu130", "==2.11.*", True),
        ("13.9.4", "", True),
    ],
)
def test_version_specifiers(installed: str, spec: str, ok: bool) -> None:
    assert install_project.satisfies(installed, spec) is ok


def test_missing_names_absent_and_too_old_packages() -> None:
    # pip's version from its metadata: importing pip in the test process would import the
    # stdlib distutils, and torch.compile in a later test then trips setuptools' distutils
    # shim (AssertionError naming distutils/core.py).
    pip_version = importlib.metadata.version("pip")
    assert install_project.missing(["pip>=1", "no-such-package-xyz>=1", "pip>=999"]) == [
        "no-such-package-xyz>=1",
        f"pip>=999 (installed {pip_version})",
    ]


# --- a real offline host ------------------------------------------------------------------


def _host(tmp: Path, hide: tuple[str, ...] = ()) -> Path:
    """A python that has this environment's packages preinstalled, minus ``hide``."""
    src = Path(sysconfig.get_paths()["purelib"])
    pre = tmp / "pre" / "site-packages"
    pre.mkdir(parents=True)
    for entry in src.iterdir():
        name = entry.name.lower()
        if name.endswith(".pth") or "neuronasv" in name or name.startswith("__editable__"):
            continue
        if any(name == h or name.startswith((h + "-", h + ".")) for h in hide):
            continue
        (pre / entry.name).symlink_to(entry)
    host = tmp / "host"
    base = os.path.realpath(sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(host)], check=True)
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    purelib = subprocess.run(
        [str(host / "bin" / "python"), "-c", code],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    Path(purelib, "_pre.pth").write_text(f"import site; site.addsitedir({str(pre)!r})\n")
    return host / "bin" / "python"


def _copy_sources(dest: Path) -> Path:
    """The two projects' sources and metadata (no build leftovers) copied to ``dest``."""
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "build")
    for name in ("neuronasv", "asv_bench_neuronasv"):
        shutil.copytree(ROOT / name, dest / name, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, dest / name)
    return dest


def _project(tmp: Path) -> Path:
    proj = _copy_sources(tmp / "proj")
    (proj / "ci").mkdir()
    shutil.copy(ROOT / "ci" / "install_project.py", proj / "ci" / "install_project.py")
    return proj


def _offline_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "PYTHON"))}
    env["PIP_NO_INDEX"] = "1"  # every download fails, as on a host without network
    return env


def _install(py: Path, proj: Path, venv: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(py), str(proj / "ci" / "install_project.py"), "--venv", str(venv)],
        cwd=proj, env=_offline_env(), capture_output=True, text=True, timeout=600,
    )  # fmt: skip


@pytest.mark.slow
def test_offline_host_with_everything_installs_without_download(tmp_path: Path) -> None:
    py, proj, venv = _host(tmp_path), _project(tmp_path), tmp_path / "device-venv"
    proc = _install(py, proj, venv)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "--no-deps --no-build-isolation" in proc.stdout and "ready" in proc.stdout
    check = subprocess.run(
        [str(venv / "bin" / "python"), "-c",
         "import neuronasv, asv_bench_neuronasv, torch; print(neuronasv.__file__)"],
        cwd="/", env=_offline_env(), capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert check.stdout.strip().startswith(str(proj))  # the checkout, torch from the host
    assert (venv / "bin" / "neuronasv").exists()
    again = _install(py, proj, venv)
    assert again.returncode == 0 and "reuse" in again.stdout, again.stdout + again.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    ("hide", "says"),
    [
        (("msgspec",), "cannot install msgspec>=0.18"),
        (("torch",), "missing: torch>=2.1"),
    ],
)
def test_offline_host_missing_a_dependency_says_what(
    tmp_path: Path, hide: tuple[str, ...], says: str
) -> None:
    py, proj, venv = _host(tmp_path, hide), _project(tmp_path), tmp_path / "device-venv"
    proc = _install(py, proj, venv)
    assert proc.returncode == install_project.EXIT_MISSING, proc.stdout + proc.stderr
    assert says in proc.stdout, proc.stdout
    assert "PYTHON=" in proc.stdout  # the way out is named
    assert not (venv / "bin" / "neuronasv").exists()  # nothing half-installed


@pytest.mark.parametrize(("cuda", "found"), [(True, True), (False, False)])
def test_host_accelerator_python_picks_a_python_whose_torch_sees_a_device(
    tmp_path: Path, cuda: bool, found: bool
) -> None:
    """ci/lib.sh's choice for demo.sh / env-full.sh: stand-in torch, real shell function."""
    stub = tmp_path / "stub"
    (stub / "torch").mkdir(parents=True)
    (stub / "torch" / "__init__.py").write_text(
        f"class cuda:\n    @staticmethod\n    def is_available():\n        return {cuda}\n"
    )
    wrapper = tmp_path / "host-python"
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH={stub} exec {sys.executable} "$@"\n')
    wrapper.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHON"] = str(wrapper)
    # python3 on PATH must not be an accelerator python either: a PATH without one.
    env["PATH"] = f"{tmp_path / 'nobin'}:/usr/bin:/bin"
    proc = subprocess.run(
        ["bash", "-c", f"source {ROOT}/ci/lib.sh; host_accelerator_python"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    if found:
        assert proc.returncode == 0 and proc.stdout.strip() == str(wrapper), proc.stderr
    else:
        assert proc.returncode == 1 and proc.stdout == "", proc.stdout


@pytest.mark.slow
def test_device_check_stops_at_setup_naming_what_is_missing(tmp_path: Path) -> None:
    """bench/device_check.sh on an offline host without msgspec: FAIL at setup, clearly."""
    py = _host(tmp_path, ("msgspec",))
    env = dict(_offline_env(), PYTHON=str(py), DEVICE_VENV=str(tmp_path / "dv"))
    env.update(OUT=str(tmp_path / "out"), HOME=str(tmp_path / "home"))
    proc = subprocess.run(
        ["bash", str(ROOT / "bench" / "device_check.sh"), "cpu"],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "cannot install msgspec>=0.18" in proc.stdout
    assert "FAIL: setup" in proc.stdout and "==> neuronasv doctor" not in proc.stdout
    assert not (tmp_path / "dv" / "bin" / "neuronasv").exists()


def _shadow(tmp: Path, host_python: Path) -> Path:
    """Install a second copy of the project, non-editable, into the host's own packages.

    What ``bench/h200_session.sh`` did on the H200 before running ``device_check.sh``: the
    host python then has a neuronasv of its own, which the check's venv sees too.
    """
    old = _copy_sources(tmp / "old")
    pre = tmp / "pre" / "site-packages"
    for project in (old, old / "asv_bench_neuronasv"):
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
             "--no-index", "--target", str(pre), str(project)],
            env=_offline_env(), check=True, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    where = subprocess.run(
        [str(host_python), "-c", "import neuronasv; print(neuronasv.__file__)"],
        cwd="/", env=_offline_env(), capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    assert where.startswith(str(pre)), where  # the host really has its own copy
    return pre


@pytest.mark.slow
def test_device_check_passes_when_the_host_python_has_its_own_neuronasv(
    tmp_path: Path,
) -> None:
    """The H200 session's failure, reproduced offline: a neuronasv installed in the host
    python shadowed the checkout's default editable install in the check's venv (the base's
    site folder is on sys.path; the editable import hook comes after the path finder).
    install_project retries in editable compat mode, and the whole check then passes on
    the checkout's code."""
    py, proj = _host(tmp_path), _project(tmp_path)
    _shadow(tmp_path, py)
    (proj / "bench").mkdir()
    shutil.copy(ROOT / "bench" / "device_check.sh", proj / "bench" / "device_check.sh")
    env = dict(_offline_env(), PYTHON=str(py), DEVICE_VENV=str(tmp_path / "dv"))
    env.update(OUT=str(tmp_path / "out"), HOME=str(tmp_path / "home"))
    proc = subprocess.run(
        ["bash", str(proj / "bench" / "device_check.sh"), "cpu"],
        cwd=proj, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "shadows this checkout" in proc.stdout and "editable compat mode" in proc.stdout
    assert "PASS: accelerator path end to end" in proc.stdout
    check = subprocess.run(
        [str(tmp_path / "dv" / "bin" / "python"), "-c",
         "import neuronasv, asv_bench_neuronasv; print(neuronasv.__file__);"
         " print(asv_bench_neuronasv.__file__)"],
        cwd="/", env=_offline_env(), capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert all(p.startswith(str(proj)) for p in check.stdout.split()), check.stdout


@pytest.mark.slow
def test_device_check_passes_when_the_base_already_imports_this_checkout(
    tmp_path: Path,
) -> None:
    """A runner's venv where the checkout is installed already (install_project: "reuse"):
    the check's venv then has no `neuronasv` script of its own, and the check calls the
    package (`python -m neuronasv`), not a script path it assumed."""
    env = dict(os.environ, PYTHON=sys.executable, DEVICE_VENV=str(tmp_path / "dv"))
    env.update(OUT=str(tmp_path / "out"), HOME=str(tmp_path / "home"))
    proc = subprocess.run(
        ["bash", str(ROOT / "bench" / "device_check.sh"), "cpu"],
        env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert "reuse: neuronasv and its asv plugin already import from" in proc.stdout, out
    assert not (tmp_path / "dv" / "bin" / "neuronasv").exists()
    assert proc.returncode == 0 and "PASS: accelerator path end to end" in proc.stdout, out
