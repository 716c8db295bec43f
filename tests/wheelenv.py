"""neuronasv as a user gets it: the wheel built from this checkout, in a clean venv.

Shared by the adoption tests (``tests/ci/test_adopt_wheel.py``,
``tests/ci/test_getting_started.py``), the install-step tests and the act lane
(``tests/ci/test_workflow_installs.py``, ``tests/ci/actlane.py``) and
``bench/bench_adopter_suite.py``. The venv sees
the third-party packages of this interpreter (torch included) through a folder of links that
leaves out neuronasv, its asv plugin and their editable hooks, so ``pip install
--no-index`` needs no network and the installed wheel is the only neuronasv.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OURS = ("neuronasv", "asv_bench_neuronasv", "__editable__", "_neuronasv")

__all__ = ["OURS", "ROOT", "build_wheel", "clean_venv", "git", "install_wheel", "run",
           "source_copy"]


def run(cmd: list[str], cwd: Path, env: dict[str, str], ok: tuple[int, ...] = (0,)) -> str:
    """``cmd``'s stdout; fails (assert) on another exit status, with both streams."""
    return run_both(cmd, cwd, env, ok)[0]


def run_both(
    cmd: list[str], cwd: Path, env: dict[str, str], ok: tuple[int, ...] = (0,)
) -> tuple[str, str]:
    """``cmd``'s (stdout, stderr): its result and its progress; fails (assert) on another
    exit status, with both streams."""
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False,
                          timeout=900)  # fmt: skip
    assert proc.returncode in ok, f"{cmd} -> {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout, proc.stderr


def git(repo: Path, env: dict[str, str], *args: str) -> str:
    ident = ["-c", "user.name=adopter", "-c", "user.email=adopter@example.invalid"]
    return run(["git", *ident, *args], repo, env).strip()


def source_copy(dest: Path, env: dict[str, str]) -> None:
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
    git(dest, env, "init", "-q", "-b", "main")
    git(dest, env, "add", "-A")
    git(dest, env, "commit", "-qm", "build source")


def clean_venv(where: Path) -> Path:
    """A venv seeing this interpreter's third-party packages, none of ours; its python."""
    import venv

    # Named like a site folder: a venv made from this one by the self-hosted jobs' install
    # step (its .pth lists the base's folders named *-packages) sees these packages too.
    links = where / "third-party" / "site-packages"
    links.mkdir(parents=True)
    site = Path(sysconfig.get_paths()["purelib"])
    for entry in site.iterdir():
        if entry.name.startswith(OURS) or entry.suffix == ".pth":
            continue
        (links / entry.name).symlink_to(entry)
    venv.EnvBuilder(with_pip=False, symlinks=True).create(where / "venv")
    py = where / "venv" / "bin" / "python"
    purelib = run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                  where, dict(os.environ)).strip()  # fmt: skip
    # A plain path line: the folder joins sys.path, its own .pth files are not run.
    (Path(purelib) / "third_party.pth").write_text(f"{links}\n", encoding="utf-8")
    return py


def build_wheel(where: Path, env: dict[str, str]) -> tuple[Path, Path]:
    """The wheel (built from the sdist) of this checkout, built under ``where``; (the wheel,
    the source copy it was built from: a git repository of one commit, the recorded one).
    What the build printed is kept in ``where/build.log``."""
    src, dist = where / "src", where / "dist"
    src.mkdir()
    source_copy(src, env)
    out, err = run_both([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist),
                         str(src)], where, env)  # fmt: skip
    (where / "build.log").write_text(out + err, encoding="utf-8")  # what the build said
    return next(dist.glob("neuronasv-*.whl")), src


def install_wheel(
    where: Path, env: dict[str, str], built: tuple[Path, Path] | None = None
) -> tuple[Path, Path, Path]:
    """Build the wheel of this checkout (or take ``built``: :func:`build_wheel`'s) and
    install it into a clean venv under ``where``; (the venv's python, the wheel, the source
    copy it was built from)."""
    wheel, src = built or build_wheel(where, env)
    py = clean_venv(where)
    run([str(py), "-m", "pip", "install", "-q", "--no-index", "--no-build-isolation",
         str(wheel)], where, env)  # fmt: skip
    return py, wheel, src
