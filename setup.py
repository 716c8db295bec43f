"""Build hook: record the commit a wheel or sdist is built from.

``neuronasv init`` pins the caller workflows it writes (``uses: OWNER/REPO/...@<sha>``) to
the commit of the neuronasv it runs from; a wheel built from a checkout carries that commit
in ``neuronasv/_build.json`` (an sdist keeps the file, so a wheel built from it does too).
Everything else is in pyproject.toml.
"""

from __future__ import annotations

import json
import os
import re
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = os.path.dirname(os.path.abspath(__file__))


def _git(*args: str) -> str:
    try:
        out = subprocess.run(["git", *args], cwd=HERE, capture_output=True, text=True,
                             check=False, timeout=30)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def _info() -> dict[str, str] | None:
    if not os.path.exists(os.path.join(HERE, ".git")):
        return None  # an sdist: its _build.json ships as package data
    commit = _git("rev-parse", "HEAD")
    if not re.fullmatch(r"[0-9a-f]{40}", commit):
        return None
    origin = _git("remote", "get-url", "origin")
    m = re.search(r"github\.com[:/]([\w.-]+/[\w.-]+?)(?:\.git)?/?$", origin)
    return {"commit": commit, **({"repository": m.group(1)} if m else {})}


def _write(folder: str) -> None:
    info = _info()
    if info:
        path = os.path.join(folder, "neuronasv", "_build.json")
        if os.path.isdir(os.path.dirname(path)):
            with open(path, "w", encoding="utf-8") as fh:
                json.dump(info, fh)


class BuildPy(build_py):
    def run(self) -> None:
        super().run()
        _write(self.build_lib)


class Sdist(sdist):
    def make_release_tree(self, base_dir: str, files: list[str]) -> None:
        super().make_release_tree(base_dir, files)
        _write(base_dir)


setup(cmdclass={"build_py": BuildPy, "sdist": Sdist})
