"""What ``neuronasv init`` writes into a repository, and how ``--check`` compares it.

Files (never overwritten; an existing one is kept as it is):

- ``asv.conf.json`` — the project, ``environment_type: existing``, ``benchmarks/``,
  results under ``.asv/``;
- ``benchmarks/__init__.py`` and ``benchmarks/devtime.py`` — the suite: it imports the
  workloads module (which registers) and builds one ``devtime_`` class per workload the
  repository registers (:func:`neuronasv.suite.build.build_suite` with ``tag=None``);
- the workloads module (``<repo>_workloads`` by default) — a commented example, written
  only when no such module exists;
- ``.github/workflows/neuronasv.yml`` and ``neuronasv-comment.yml`` — the callers of the
  reusable workflows, pinned to the neuronasv commit this package was built from
  (:func:`workflows_source`);
- ``.gitignore`` — ``.asv/`` added.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from importlib import metadata, resources

from neuronasv import __version__
from neuronasv.errors import UsageError
from neuronasv.store.git import Git

__all__ = [
    "Source",
    "module_in_suite",
    "plan",
    "project_name",
    "workflows_source",
    "workloads_module_path",
]

DEFAULT_REPOSITORY = "neuronasv/neuronasv"
_SHA = re.compile(r"[0-9a-f]{40}")
_GITHUB = re.compile(r"github\.com[:/]([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+?)(?:\.git)?/?$")
GITIGNORE_LINES = (".asv/",)


@dataclass(frozen=True)
class Source:
    """Where the reusable workflows live: ``OWNER/REPO`` at a full commit hash."""

    repository: str
    commit: str

    @property
    def package(self) -> str:
        """The pip requirement of the same code (the workflows install it)."""
        return f"git+https://github.com/{self.repository}@{self.commit}"


def _repo_of(url: str | None) -> str | None:
    m = _GITHUB.search(url or "")
    return m.group(1) if m else None


def _from_metadata() -> tuple[str | None, str | None]:
    """(repository, commit) pip recorded for a ``git+`` install, or the build's record."""
    try:
        dist = metadata.distribution("neuronasv")
    except metadata.PackageNotFoundError:
        return None, None
    try:
        direct = json.loads(dist.read_text("direct_url.json") or "{}")
    except ValueError:
        direct = {}
    commit = (direct.get("vcs_info") or {}).get("commit_id")
    if commit:
        return _repo_of(direct.get("url")), commit
    try:
        built = json.loads(resources.files("neuronasv").joinpath("_build.json").read_text())
    except (OSError, ValueError):
        return None, None
    return built.get("repository"), built.get("commit")


def workflows_source(repository: str | None = None, ref: str | None = None) -> Source:
    """The reusable workflows' repository and commit: the options, else this package's origin.

    The origin is what pip recorded for a ``git+`` install, else the commit the wheel was
    built from (``neuronasv/_build.json``, written by the build), else the checkout this
    package is imported from.
    """
    repo, commit = _from_metadata()
    if not commit:
        checkout = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        git = Git(checkout)
        if os.path.exists(os.path.join(checkout, ".git")) and git.is_repo():
            commit = git.resolve("HEAD")
            repo = repo or _repo_of(git.remote_url())
    commit = ref or commit
    if not commit or not _SHA.fullmatch(commit):
        raise UsageError(
            f"cannot tell which neuronasv commit to pin the workflows to (got {commit!r})",
            hint="pass --ref with the full 40-hex commit of the neuronasv repository",
        )
    return Source(repository or repo or DEFAULT_REPOSITORY, commit)


def project_name(root: str, git: Git) -> str:
    """The repository's name: its GitHub origin's, else its folder's."""
    repo = _repo_of(git.remote_url())
    return repo.split("/", 1)[1] if repo else os.path.basename(os.path.abspath(root))


def _identifier(name: str) -> str:
    ident = re.sub(r"[^0-9a-zA-Z_]+", "_", name).strip("_").lower() or "project"
    return ident if not ident[0].isdigit() else f"p{ident}"


def default_workloads_module(project: str) -> str:
    """``<repo>_workloads`` as a module name."""
    return f"{_identifier(project)}_workloads"


def module_in_suite(root: str) -> str | None:
    """The workloads module the suite init wrote imports (``--check`` without ``--workloads``)."""
    path = os.path.join(root, "benchmarks", "devtime.py")
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    # ``WORKLOADS = "mypkg.workloads"``; suites an earlier init wrote: ``import mypkg.workloads``.
    m = re.search(r'^(?:WORKLOADS = "([A-Za-z_][\w.]*)"|import ([A-Za-z_][\w.]*)  # noqa)', text,
                  flags=re.M)  # fmt: skip
    return (m.group(1) or m.group(2)) if m else None


def workloads_module_path(root: str, module: str) -> str | None:
    """The file of ``module`` under ``root`` (module or package), None when there is none."""
    base = os.path.join(root, *module.split("."))
    for path in (base + ".py", os.path.join(base, "__init__.py")):
        if os.path.isfile(path):
            return path
    return None


def _text(name: str) -> str:
    return resources.files("neuronasv.ci").joinpath("templates").joinpath(name).read_text("utf-8")


def _fill(text: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        text = text.replace("{{" + key + "}}", value)
    return text


def plan(
    root: str, *, project: str, module: str, branch: str, source: Source
) -> dict[str, str]:  # fmt: skip
    """``{relative path: content}`` of everything init writes (before the never-overwrite
    rule; ``.gitignore`` holds only the lines to add)."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*", module):
        raise UsageError(f"--workloads {module!r} is not a module name (PKG.MODULE)")
    values = {
        "project": project,
        "module": module,
        "branch": branch,
        "repository": source.repository,
        "commit": source.commit,
        "package": source.package,
        "version": __version__,
        "ident": _identifier(project),
    }
    files = {
        "asv.conf.json": _fill(_text("asv.conf.json.tmpl"), values),
        "benchmarks/__init__.py": _fill(_text("benchmarks_init.py.tmpl"), values),
        "benchmarks/devtime.py": _fill(_text("devtime.py.tmpl"), values),
        ".github/workflows/neuronasv.yml": _fill(_text("neuronasv.yml.tmpl"), values),
        ".github/workflows/neuronasv-comment.yml": _fill(
            _text("neuronasv-comment.yml.tmpl"), values
        ),
        ".gitignore": "".join(f"{line}\n" for line in GITIGNORE_LINES),
    }
    if workloads_module_path(root, module) is None:
        rel = "/".join(module.split(".")) + ".py"
        files[rel] = _fill(_text("workloads.py.tmpl"), values)
    return files


def missing_gitignore_lines(root: str) -> list[str]:
    """The entries of :data:`GITIGNORE_LINES` that ``.gitignore`` lacks."""
    path = os.path.join(root, ".gitignore")
    have = set()
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as fh:
            have = {line.strip() for line in fh}
    return [line for line in GITIGNORE_LINES if line not in have and line.rstrip("/") not in have]
