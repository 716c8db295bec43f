"""Build hook: record the repository and commit a wheel or sdist is built from.

``neuronasv init`` pins the caller workflows it writes (``uses: OWNER/REPO/...@<sha>``) to
the commit of the neuronasv it runs from; a wheel built from a checkout carries that commit
and the GitHub repository in ``neuronasv/_build.json`` (an sdist keeps the file, so a wheel
built from it does too). The repository is ``NEURONASV_REPOSITORY=OWNER/REPO`` when set, else
the checkout's GitHub ``origin``; with neither, none is recorded and ``init`` asks for
``--from``: it is never guessed. The same record gives the package metadata its
``Project-URL``s (the docs at that commit); a build that records none says so in one line.
The reusable workflows of the commit ship beside it (``neuronasv/ci/reusable/``), so that
``init --check`` holds the callers to exactly the workflows they pin. Everything else is in
pyproject.toml.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

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


#: GitHub's owner/repository grammar (neuronasv/ci/quoting.py holds the same).
REPOSITORY = re.compile(
    r"[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}/(?!\.\.?$)[A-Za-z0-9._-]{1,100}"
)


def _info(env: dict[str, str] | None = None) -> dict[str, str] | None:
    env = dict(os.environ) if env is None else env
    if not os.path.exists(os.path.join(HERE, ".git")):
        return _shipped()  # an sdist: its _build.json ships as package data
    commit = _git("rev-parse", "HEAD")
    if not re.fullmatch(r"[0-9a-f]{40}", commit):
        return None
    repo = env.get("NEURONASV_REPOSITORY", "").strip()
    if repo and not REPOSITORY.fullmatch(repo):
        raise SystemExit(f"NEURONASV_REPOSITORY={repo!r} is not a GitHub OWNER/REPO")
    if not repo:
        origin = _git("remote", "get-url", "origin")
        m = re.search(r"github\.com[:/]([\w.-]+/[\w.-]+?)(?:\.git)?/?$", origin)
        repo = m.group(1) if m and REPOSITORY.fullmatch(m.group(1)) else ""
    return {"commit": commit, **({"repository": repo} if repo else {})}


def _shipped() -> dict[str, str] | None:
    try:
        with open(os.path.join(HERE, "neuronasv", "_build.json"), encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def project_urls(info: dict[str, str] | None) -> dict[str, str]:
    """The metadata's ``Project-URL``s: the docs and source at the recorded commit."""
    if not info or "repository" not in info:
        return {}
    base = f"https://github.com/{info['repository']}"
    return {
        "Documentation": f"{base}/blob/{info['commit']}/docs/getting-started.md",
        "Source": f"{base}/tree/{info['commit']}",
        "Issues": f"{base}/issues",
        "Security": f"{base}/blob/{info['commit']}/SECURITY.md",
    }


def _write(folder: str) -> None:
    info = _info()
    if info and os.path.exists(os.path.join(HERE, ".git")):
        path = os.path.join(folder, "neuronasv", "_build.json")
        if os.path.isdir(os.path.dirname(path)):
            with open(path, "w", encoding="utf-8") as fh:
                json.dump(info, fh)
            _ship_workflows(os.path.join(folder, "neuronasv", "ci", "reusable"))
            if "repository" not in info:
                print(no_repository_line(info["commit"]), file=sys.stderr, flush=True)


def _ship_workflows(dest: str) -> None:
    """The reusable workflows of this commit, for ``init --check`` (GitHub's start-up rules
    against exactly the workflows the callers pin: neuronasv/ci/scaffold.py)."""
    src = os.path.join(HERE, ".github", "workflows")
    names = sorted(n for n in os.listdir(src) if n.startswith("neuronasv-") and n.endswith(".yml"))
    os.makedirs(dest, exist_ok=True)
    for name in names:
        with open(os.path.join(src, name), "rb") as fh, open(os.path.join(dest, name), "wb") as out:
            out.write(fh.read())


def no_repository_line(commit: str) -> str:
    """What a build that records no repository says (once, in the build's output)."""
    return (
        f"neuronasv build: no GitHub repository recorded (commit {commit[:12]}; this checkout"
        " has no GitHub origin and NEURONASV_REPOSITORY is unset): `neuronasv init` will ask"
        " for --from OWNER/REPO; set NEURONASV_REPOSITORY=OWNER/REPO to record it"
    )


class BuildPy(build_py):
    def run(self) -> None:
        super().run()
        _write(self.build_lib)


class Sdist(sdist):
    def make_release_tree(self, base_dir: str, files: list[str]) -> None:
        super().make_release_tree(base_dir, files)
        _write(base_dir)


if __name__ == "__main__":  # setuptools runs this file as __main__; tests import it
    setup(cmdclass={"build_py": BuildPy, "sdist": Sdist}, project_urls=project_urls(_info()))
