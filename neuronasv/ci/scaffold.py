"""What ``neuronasv init`` writes into a repository, from which values.

Files (never overwritten; an existing one is kept as it is):

- ``asv.conf.json`` — the project, the default branch, ``environment_type: existing``,
  ``benchmarks/``, results under ``.asv/``;
- ``benchmarks/__init__.py`` and ``benchmarks/devtime.py`` — the suite: it names the
  workloads module (which registers; ``build_suite`` imports it where a profile is taken)
  and builds one ``devtime_`` class per workload the repository registers
  (:func:`neuronasv.suite.build_suite` with ``tag=None``);
- the workloads module (``<repo>_workloads`` by default) — a commented example, written
  only when no such module exists and no module of a near name does;
- ``.github/workflows/neuronasv.yml`` and ``neuronasv-comment.yml`` — the callers of the
  reusable workflows, pinned to a repository and commit (:func:`workflows_source`) and
  triggered on the default branch (:mod:`neuronasv.ci.branches`);
- ``.gitignore`` — the output folders (:mod:`neuronasv.ci.gitignore`).

Every value goes through :func:`neuronasv.ci.quoting.fill`: each placeholder names the
format it is written in, so a hostile folder, branch or project name stays a string.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata, resources

from neuronasv import __version__, env
from neuronasv.ci import quoting
from neuronasv.errors import UsageError
from neuronasv.store.git import Git

__all__ = [
    "SUITE_FILES",
    "WORKFLOW_FILES",
    "Recorded",
    "Source",
    "default_workloads_module",
    "near_modules",
    "plan",
    "project_name",
    "recorded",
    "reusable_workflows",
    "workflows_source",
    "workloads_module",
    "workloads_module_path",
]

_GITHUB = re.compile(r"github\.com[:/]([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+?)(?:\.git)?/?$")
#: The caller workflows init writes, and the reusable workflow each job of theirs calls.
WORKFLOW_FILES = (".github/workflows/neuronasv.yml", ".github/workflows/neuronasv-comment.yml")
SUITE_FILES = ("benchmarks/__init__.py", "benchmarks/devtime.py")
_USES = re.compile(
    r"""^\s*uses:\s*["']?([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)/\.github/workflows/"""
    r"""(neuronasv-[a-z]+\.yml)@([0-9a-f]{40})["']?""",
    flags=re.M,
)


@dataclass(frozen=True)
class Source:
    """Where the reusable workflows live: ``OWNER/REPO`` at a full commit hash, and how
    that was learnt (said by ``init``: never a guess)."""

    repository: str
    commit: str
    how: str = ""

    @property
    def package(self) -> str:
        """The pip requirement of the same code (the workflows install it)."""
        return f"git+https://github.com/{self.repository}@{self.commit}"

    def workflow(self, name: str) -> str:
        """``uses:`` of the reusable workflow ``name`` at this commit."""
        return f"{self.repository}/.github/workflows/{name}@{self.commit}"

    @property
    def docs(self) -> str:
        """The adoption page of exactly this neuronasv."""
        return (
            f"https://github.com/{self.repository}/blob/{self.commit}/docs/getting-started.md"
            "#adopt-it-in-your-repository-one-page"
        )


@dataclass(frozen=True)
class Recorded:
    """What the files init wrote earlier say (``None`` where there is no such file)."""

    project: str | None = None
    branch: str | None = None
    module: str | None = None
    repository: str | None = None
    commit: str | None = None


def _repo_of(url: str | None) -> str | None:
    m = _GITHUB.search(url or "")
    return m.group(1) if m else None


def _from_metadata() -> tuple[str | None, str | None, str]:
    """(repository, commit, how) pip recorded for a ``git+`` install, or the build's record."""
    try:
        dist = metadata.distribution("neuronasv")
    except metadata.PackageNotFoundError:
        return None, None, ""
    try:
        direct = json.loads(dist.read_text("direct_url.json") or "{}")
    except ValueError:
        direct = {}
    commit = (direct.get("vcs_info") or {}).get("commit_id")
    if commit:
        return _repo_of(direct.get("url")), commit, "pip's record of this git install"
    try:
        built = json.loads(resources.files("neuronasv").joinpath("_build.json").read_text())
    except (OSError, ValueError):
        return None, None, ""
    if not isinstance(built, dict):
        return None, None, ""
    return built.get("repository"), built.get("commit"), "recorded in this wheel at build time"


def _from_checkout() -> tuple[str | None, str | None]:
    """(GitHub origin, HEAD) of the checkout this package is imported from, if it is one."""
    checkout = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if not os.path.exists(os.path.join(checkout, ".git")):
        return None, None
    git = Git(checkout)
    if not git.is_repo():
        return None, None
    return _repo_of(git.remote_url()), git.resolve("HEAD")


def workflows_source(
    repository: str | None = None,
    ref: str | None = None,
    *,
    recorded: Recorded | None = None,
    origin: tuple[str | None, str | None, str] | None = None,
) -> Source:
    """The reusable workflows' repository and commit: never guessed.

    The repository: ``--from``, else what this package records (pip's ``direct_url.json``
    of a ``git+`` install, ``neuronasv/_build.json`` written into the wheel at build time,
    or the GitHub origin of the checkout it runs from), else the one the existing caller
    workflows pin; none of them is a UsageError asking for ``--from``. The commit: ``--ref``,
    else the package's, else the callers'. ``origin`` is injected by tests.
    """
    repo, commit, how = origin if origin is not None else _from_metadata()
    if not commit and origin is None:
        repo_c, commit = _from_checkout()
        repo, how = repo or repo_c, "the checkout this neuronasv runs from"
    rec = recorded or Recorded()
    if repository:
        repo, how = quoting.github_repository(repository), "--from"
    elif repo:
        repo = quoting.github_repository(repo, what=f"the repository {how}")
    elif rec.repository:
        repo, how = rec.repository, "the caller workflows already here"
    else:
        raise UsageError(
            "cannot tell which repository holds the reusable workflows: this neuronasv"
            " records none (built from a clone without a GitHub origin)",
            hint="pass --from OWNER/REPO (the GitHub repository of this neuronasv), or build"
            f" the wheel with {env.REPOSITORY.name}=OWNER/REPO",
        )
    if ref:
        commit = quoting.sha(ref)
    elif not commit and rec.commit:
        commit = rec.commit
    if not commit:
        raise UsageError(
            "cannot tell which neuronasv commit to pin the workflows to",
            hint="pass --ref with the full 40-hex commit of the neuronasv repository",
        )
    return Source(repo, quoting.sha(commit, what="the recorded commit"), how)


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


def _read(root: str, rel: str) -> str | None:
    path = os.path.join(root, rel)
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8", errors="replace") as fh:
        return fh.read()


def recorded(root: str) -> Recorded:
    """The project, branch, module and pin the files init wrote earlier hold."""
    import json5

    project = branch = None
    conf = _read(root, "asv.conf.json")
    if conf is not None:
        try:
            data = json5.loads(conf)
        except ValueError:
            data = None
        if isinstance(data, dict):
            project = data.get("project") if isinstance(data.get("project"), str) else None
            branches = data.get("branches")
            if isinstance(branches, list) and branches and isinstance(branches[0], str):
                branch = branches[0]
    module = None
    suite = _read(root, "benchmarks/devtime.py")
    if suite is not None:
        # ``WORKLOADS = "mypkg.workloads"``; a suite an earlier init wrote: ``import ...``.
        m = re.search(r'^(?:WORKLOADS = "([A-Za-z_][\w.]*)"|import ([A-Za-z_][\w.]*)  # noqa)',
                      suite, flags=re.M)  # fmt: skip
        module = (m.group(1) or m.group(2)) if m else None
    repository = commit = None
    for rel in WORKFLOW_FILES:
        m = _USES.search(_read(root, rel) or "")
        if m:
            repository, commit = m.group(1), m.group(3)
            break
    return Recorded(project, branch, module, repository, commit)


def workloads_module_path(root: str, module: str) -> str | None:
    """The file of ``module`` under ``root`` (module or package), None when there is none."""
    base = os.path.join(root, *module.split("."))
    for path in (base + ".py", os.path.join(base, "__init__.py")):
        if os.path.isfile(path):
            return path
    return None


_SKIP_DIRS = {".git", ".asv", ".venv", "venv", "node_modules", "__pycache__", "build", "dist",
              "site", "out", ".tox", ".mypy_cache", ".ruff_cache", ".pytest_cache"}  # fmt: skip


def _modules_under(root: str, *, limit: int = 5000) -> list[str]:
    """Dotted names of the Python modules in the repository (up to ``limit`` files)."""
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.startswith("."))
        rel = os.path.relpath(dirpath, root)
        parts = [] if rel == "." else rel.split(os.sep)
        for name in sorted(filenames):
            if name.endswith(".py"):
                stem = name[:-3]
                found.append(".".join(parts if stem == "__init__" else [*parts, stem]))
        if len(found) > limit:
            break
    return [m for m in found if m]


def near_modules(root: str, module: str) -> list[str]:
    """Modules of the repository whose names are close to ``module`` (a typo's target)."""
    return difflib.get_close_matches(module, _modules_under(root), n=3, cutoff=0.8)


def workloads_module(root: str, module: str) -> str | None:
    """``None`` when ``module`` exists (used as it is); else the path of the example module
    to write, or a UsageError naming the near module the user likely meant."""
    quoting.module_name(module)
    if workloads_module_path(root, module) is not None:
        return None
    near = near_modules(root, module)
    if near:
        raise UsageError(
            f"--workloads {module}: no such module here; did you mean {' or '.join(near)}?",
            hint="init writes an example module only for a name nothing here is close to;"
            " to start a new module of that name, create its file first",
        )
    return "/".join(module.split(".")) + ".py"


def _text(name: str) -> str:
    return resources.files("neuronasv.ci").joinpath("templates").joinpath(name).read_text("utf-8")


#: Where a wheel keeps the reusable workflows of its commit (setup.py copies them there).
SHIPPED_WORKFLOWS = "reusable"


def reusable_workflows() -> dict[str, str]:
    """``{file name: text}`` of this neuronasv's reusable workflows (``neuronasv-*.yml``):
    the copies a wheel ships (``neuronasv/ci/reusable/``, written at build time), else the
    ``.github/workflows`` of the checkout it runs from; empty when neither is there."""
    shipped = resources.files("neuronasv.ci").joinpath(SHIPPED_WORKFLOWS)
    if shipped.is_dir():
        return {p.name: p.read_text("utf-8") for p in shipped.iterdir()
                if p.name.startswith("neuronasv-") and p.name.endswith(".yml")}  # fmt: skip
    checkout = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    folder = os.path.join(checkout, ".github", "workflows")
    out = {}
    if os.path.isdir(folder):
        for name in sorted(os.listdir(folder)):
            if name.startswith("neuronasv-") and name.endswith(".yml"):
                with open(os.path.join(folder, name), encoding="utf-8") as fh:
                    out[name] = fh.read()
    return out


def plan(
    root: str, *, project: str, module: str, branch: str, source: Source, example: bool = True
) -> dict[str, str]:  # fmt: skip
    """``{relative path: content}`` of every file init writes (before the never-overwrite
    rule); ``.gitignore`` is edited apart (:mod:`neuronasv.ci.gitignore`). ``example=False``
    (``--check``) leaves the example workloads module out."""
    quoting.module_name(module)
    quoting.project_name(project)
    values: Mapping[str, str] = {
        "project": project,
        "module": module,
        "branch": branch,
        "package": source.package,
        "commit_workflow": source.workflow("neuronasv-commit.yml"),
        "pr_workflow": source.workflow("neuronasv-pr.yml"),
        "comment_workflow": source.workflow("neuronasv-comment.yml"),
        "version": __version__,
        "docs": source.docs,
        "ident": _identifier(project),
        "example": f"{_identifier(project)}.gelu_gate",
    }
    files = {
        "asv.conf.json": quoting.fill(_text("asv.conf.json.tmpl"), values),
        "benchmarks/__init__.py": quoting.fill(_text("benchmarks_init.py.tmpl"), values),
        "benchmarks/devtime.py": quoting.fill(_text("devtime.py.tmpl"), values),
        WORKFLOW_FILES[0]: quoting.fill(_text("neuronasv.yml.tmpl"), values),
        WORKFLOW_FILES[1]: quoting.fill(_text("neuronasv-comment.yml.tmpl"), values),
    }
    path = workloads_module(root, module) if example else None
    if path is not None:
        files[path] = quoting.fill(_text("workloads.py.tmpl"), values)
    return files
