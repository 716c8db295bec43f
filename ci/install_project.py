"""Install this checkout's neuronasv (and its asv plugin) on a host that may have no network.

Runner hosts come with torch preinstalled (an NGC image, a Neuron DLAMI venv) and often with
no route to PyPI. This script, run by the interpreter that has that torch, decides:

1. **reuse** — ``neuronasv`` and ``asv_bench_neuronasv`` already import from this checkout
   and every dependency is satisfied: nothing to do;
2. **install offline** — every dependency is present (torch included): install the two
   projects with ``pip install --no-deps --no-build-isolation -e`` (no download: pip
   neither resolves dependencies nor builds in an isolated env that it would have to fill
   from PyPI);
3. **missing** — some dependency is absent or too old: ask pip for exactly those (this needs
   a package index); when that fails, print what is missing and how to provide it, and
   exit 3. torch is only downloaded with ``--allow-torch-download`` (a multi-GB wheel, and
   on Linux x86_64 PyPI's default is a CUDA build — the wrong one for a Neuron host).

``--venv DIR`` first makes DIR a virtual environment that sees everything the running
interpreter sees (a ``site.addsitedir`` line per site folder, so a base that is itself a
venv — the DLAMI's — works, which ``venv --system-site-packages`` does not do: that option
exposes the *base installation's* packages, not the venv's), then installs into DIR. The
base interpreter is never written to.

Standard library only (it runs before anything is installed). Exit codes: 0 ready, 3 a
dependency is missing and could not be installed, 4 pip failed to install the project.

    python3 ci/install_project.py                      # into this interpreter
    python3 ci/install_project.py --venv ~/.cache/neuronasv/device-venv
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import os
import re
import site
import subprocess
import sys
import venv
from collections.abc import Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLUGIN = "asv_bench_neuronasv"
EXIT_MISSING = 3
EXIT_PIP = 4
_REQ = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*([^;]*)")


def _say(text: str) -> None:
    print(f"install_project: {text}", flush=True)


def requirements(root: str) -> list[str]:
    """Dependencies of the project and its plugin, plus the build backend (no isolation)."""
    out: list[str] = []
    for path in (
        os.path.join(root, "pyproject.toml"),
        os.path.join(root, PLUGIN, "pyproject.toml"),
    ):
        if not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8") as fh:
            text = re.sub(r"(?m)(^|\s)#[^\n]*$", "", fh.read())  # comments
        for key in ("requires", "dependencies"):
            # The arrays of [build-system] requires and [project] dependencies; tomllib is
            # 3.11+, and these two flat string arrays are all that is needed.
            for block in re.findall(rf"(?m)^{key}\s*=\s*\[(.*?)\]", text, flags=re.S):
                for item in re.findall(r'"([^"]+)"', block):
                    if item not in out:
                        out.append(item)
    return out


def _release(version: str) -> tuple[int, ...]:
    nums = re.match(r"^\s*v?(\d+(?:\.\d+)*)", version)
    return tuple(int(p) for p in nums.group(1).split(".")) if nums else ()


def _pad(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    n = max(len(a), len(b))
    return a + (0,) * (n - len(a)), b + (0,) * (n - len(b))


def satisfies(installed: str, spec: str) -> bool:
    """``installed`` against a specifier like ``>=1.24`` or ``>=2.1,<3`` (release numbers only)."""
    have = _release(installed)
    for clause in (c.strip() for c in spec.split(",") if c.strip()):
        m = re.match(r"^(>=|<=|==|!=|~=|>|<)\s*(.+)$", clause)
        if not m:
            continue
        op, want_text = m.groups()
        if want_text.endswith(".*"):
            want = _release(want_text[:-2])
            if (have[: len(want)] == want) != (op == "=="):
                return False
            continue
        a, b = _pad(have, _release(want_text))
        ok = {
            ">=": a >= b,
            "<=": a <= b,
            "==": a == b,
            "!=": a != b,
            ">": a > b,
            "<": a < b,
            "~=": a >= b,  # the upper bound of ~= is not checked (none is used here)
        }[op]
        if not ok:
            return False
    return True


def missing(reqs: Sequence[str]) -> list[str]:
    """The requirements this interpreter does not satisfy (as written, e.g. ``scipy>=1.10``)."""
    out = []
    for req in reqs:
        m = _REQ.match(req)
        if not m:
            continue
        name, spec = m.group(1), m.group(2).strip()
        try:
            version = md.version(name)
        except md.PackageNotFoundError:
            out.append(req)
            continue
        if spec and not satisfies(version, spec):
            out.append(f"{req} (installed {version})")
    return out


def _imports_from_checkout(python: str, root: str) -> bool:
    """Do ``neuronasv`` and the plugin import from ``root`` (checked from a neutral cwd)?"""
    code = (
        "import neuronasv, asv_bench_neuronasv, os;"
        "print(os.path.realpath(neuronasv.__file__));"
        "print(os.path.realpath(asv_bench_neuronasv.__file__))"
    )
    proc = subprocess.run(
        [python, "-c", code], cwd="/", capture_output=True, text=True, check=False,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )  # fmt: skip
    if proc.returncode != 0:
        return False
    real = os.path.realpath(root) + os.sep
    paths = proc.stdout.split()
    plugin_needed = os.path.isdir(os.path.join(root, PLUGIN))
    return (
        bool(paths)
        and paths[0].startswith(real)
        and (not plugin_needed or (len(paths) > 1 and paths[1].startswith(real)))
    )


def _pip(args: Sequence[str]) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, check=False)


def _tail(proc: subprocess.CompletedProcess[str], n: int = 6) -> str:
    lines = (proc.stderr or proc.stdout).strip().splitlines()
    return "\n    ".join(lines[-n:])


def make_venv(path: str) -> str:
    """A venv at ``path`` that sees this interpreter's packages; its python."""
    py = os.path.join(path, "bin", "python")
    if not os.path.exists(py):
        venv.EnvBuilder(with_pip=False, symlinks=True).create(path)
    dirs = [d for d in [*site.getsitepackages(), site.getusersitepackages()] if os.path.isdir(d)]
    dirs += [
        p for p in sys.path if p.endswith(("site-packages", "dist-packages")) and p not in dirs
    ]
    purelib = subprocess.run(
        [py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    lines = [f"import site; site.addsitedir({d!r})" for d in dirs if os.path.isdir(d)]
    with open(os.path.join(purelib, "_neuronasv_base.pth"), "w", encoding="utf-8") as fh:
        fh.write("# written by ci/install_project.py: the base interpreter's packages\n")
        fh.write("\n".join(lines) + "\n")
    has_pip = subprocess.run([py, "-c", "import pip"], capture_output=True, check=False)
    if has_pip.returncode != 0:  # the base has no pip: the bundled wheel (no download)
        subprocess.run([py, "-m", "ensurepip", "-q"], capture_output=True, check=False)
    return py


def install(root: str, *, allow_torch_download: bool) -> int:
    """The decision of the module docstring, for the running interpreter."""
    reqs = requirements(root)
    lacking = missing(reqs)
    if not lacking and _imports_from_checkout(sys.executable, root):
        _say(f"reuse: neuronasv and its asv plugin already import from {root}")
        return 0
    torch_missing = [r for r in lacking if re.match(r"^\s*torch\b(?![._-])", r)]
    others = [r for r in lacking if r not in torch_missing]
    if others:
        _say("missing: " + ", ".join(others) + " — asking pip (needs a package index)")
        proc = _pip(["--retries", "1", "--timeout", "20", *[r.split(" (")[0] for r in others]])
        if proc.returncode != 0:
            _say(
                f"cannot install {', '.join(others)} into {sys.executable}"
                f" (no network or no index?):\n    {_tail(proc)}\n"
                "  Provide them: on a connected machine `pip download -d wheels "
                + " ".join(r.split(" (")[0] for r in others)
                + "`, copy wheels/ here, then `python -m pip install --no-index --find-links"
                " wheels ...`; or run this with an interpreter that has them (PYTHON=...)."
            )
            return EXIT_MISSING
    if torch_missing:
        if not allow_torch_download:
            _say(
                f"missing: {torch_missing[0]} in {sys.executable}. Use the interpreter that has"
                " your accelerator's torch (PYTHON=/path/to/python: the NGC image's python,"
                " the Neuron DLAMI venv's), or install torch there first; this script"
                " downloads torch only with --allow-torch-download."
            )
            return EXIT_MISSING
        _say("torch missing: downloading it (PyPI's default build)")
        proc = _pip(["--retries", "1", "--timeout", "60", "torch"])
        if proc.returncode != 0:
            _say(f"cannot download torch (no network?):\n    {_tail(proc)}")
            return EXIT_MISSING
    targets = ["-e", root]
    if os.path.isdir(os.path.join(root, PLUGIN)):
        targets += ["-e", os.path.join(root, PLUGIN)]
    _say("installing neuronasv and its asv plugin (--no-deps --no-build-isolation: no download)")
    proc = _pip(["--no-deps", "--no-build-isolation", "--no-index", *targets])
    if proc.returncode != 0:
        _say(f"pip could not install the project:\n    {_tail(proc, 12)}")
        return EXIT_PIP
    if not _imports_from_checkout(sys.executable, root):
        # A copy installed in the base interpreter (seen through --system-site-packages)
        # wins over a default editable install, whose import hook comes after the path
        # finder. The "compat" editable mode puts the checkout itself on sys.path, ahead
        # of the base's site-packages.
        _say(
            f"another neuronasv shadows this checkout ({_where(sys.executable)}): reinstalling"
            " in editable compat mode (the checkout on sys.path, ahead of the base's packages)"
        )
        proc = _pip(
            ["--no-deps", "--no-build-isolation", "--no-index", "--force-reinstall",
             "--config-settings", "editable_mode=compat", *targets]
        )  # fmt: skip
        if proc.returncode != 0 or not _imports_from_checkout(sys.executable, root):
            _say(
                "installed, but neuronasv still does not import from this checkout: it"
                f" imports from {_where(sys.executable)}; uninstall that copy from the base"
                " interpreter (pip uninstall neuronasv asv_bench_neuronasv) or use a venv"
                " without --system-site-packages"
            )
            return EXIT_PIP
    _say(f"ready: {sys.executable}")
    return 0


def _where(python: str) -> str:
    """Where ``neuronasv`` imports from for ``python`` (or why it does not)."""
    proc = subprocess.run(
        [python, "-c", "import neuronasv, os; print(os.path.dirname(neuronasv.__file__))"],
        cwd="/", capture_output=True, text=True, check=False,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )  # fmt: skip
    return proc.stdout.strip() or (proc.stderr.strip().splitlines() or ["no import"])[-1]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=ROOT, help="the checkout (default: this script's)")
    parser.add_argument("--venv", help="make this venv (seeing this interpreter's packages) first")
    parser.add_argument("--allow-torch-download", action="store_true")
    args = parser.parse_args(argv)
    root = os.path.abspath(args.root)
    if args.venv:
        py = make_venv(os.path.abspath(args.venv))
        cmd = [py, os.path.abspath(__file__), "--root", root]
        if args.allow_torch_download:
            cmd.append("--allow-torch-download")
        return subprocess.run(cmd, check=False).returncode
    return install(root, allow_torch_download=args.allow_torch_download)


if __name__ == "__main__":
    sys.exit(main())
