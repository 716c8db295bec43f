"""How every command finds a repository's own workloads: one way, written once.

A workload registers itself when its module is imported (``register(Workload(...))``).
``run`` (inside asv), its pre-pass, ``confirm`` (its re-measuring ``profile`` processes)
and ``profile`` all import the same modules, in the same order:

1. **the repository root on the import path** — asv's worktree on ``ASV_PYTHONPATH``,
   a child process's ``PYTHONPATH`` with the root *prepended* (:func:`with_root_on_path`;
   the caller's own entries are kept, never replaced), ``sys.path`` here;
2. **the asv suite** — every module of ``benchmark_dir`` (``asv.conf.json``'s, default
   ``benchmarks``), imported the way asv imports it (:func:`import_suite_modules`); a
   suite module imports the workloads module (``neuronasv init`` writes one that does);
3. **``NEURONASV_WORKLOADS``** — a comma list of extra module names, imported by the
   registry after the built-ins (for workloads no suite module imports).

So a repository adopted with ``neuronasv init`` needs no environment variable: asv,
the pre-pass and ``profile`` (started by ``confirm`` in each commit's worktree) import
``benchmarks/``, which imports the workloads module from the repository root.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from types import ModuleType

from neuronasv.store.asvconf import CONFIG_NAME, repo_config

__all__ = [
    "benchmark_dir_of",
    "find_repo_root",
    "import_repo_workloads",
    "import_suite_modules",
    "suite_root",
    "with_root_on_path",
]

DEFAULT_BENCHMARK_DIR = "benchmarks"


def find_repo_root(start: str) -> str | None:
    """The nearest folder at or above ``start`` holding ``asv.conf.json`` (None: none)."""
    here = os.path.abspath(start)
    while True:
        if os.path.isfile(os.path.join(here, CONFIG_NAME)):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def benchmark_dir_of(root: str) -> str:
    """The asv ``benchmark_dir`` of the repository at ``root`` (absolute)."""
    value = repo_config(root).get("benchmark_dir")
    chosen = value if isinstance(value, str) and value else DEFAULT_BENCHMARK_DIR
    return chosen if os.path.isabs(chosen) else os.path.join(root, chosen)


def import_suite_modules(benchmark_dir: str) -> list[ModuleType]:
    """Import every module of the suite at ``benchmark_dir`` as asv does; the modules.

    asv_runner's importer maps the folder's name to the folder and walks its package, so
    the module names and the import errors are asv's own.
    """
    from asv_runner._aux import update_sys_path
    from asv_runner.discovery import disc_modules

    root = os.path.abspath(benchmark_dir)
    update_sys_path(root)
    return list(disc_modules(os.path.basename(root)))


def import_repo_workloads(start: str) -> list[str]:
    """Steps 1 and 2 of the module doc for the repository around ``start``.

    Returns the problems met (a suite module that failed to import, one line each),
    for the caller to name when a workload is then not found; a folder outside any asv
    repository imports nothing.
    """
    root = find_repo_root(start)
    if root is None:
        return []
    if root not in sys.path:
        sys.path.append(root)  # after PYTHONPATH: a worktree's own code there wins
    bench = benchmark_dir_of(root)
    if not os.path.isdir(bench):
        return []
    try:
        import_suite_modules(bench)
    except Exception as exc:  # a user's suite: any error is theirs to see, in one line
        return [f"{os.path.relpath(bench, root)}: {type(exc).__name__}: {exc}"]
    return []


def suite_root(tree: str, checkout: str) -> str:
    """The repository whose suite measures ``tree``: itself when it holds one, else the
    checkout's (asv's way for commits that predate the benchmarks: today's suite, old code).
    """
    has_suite = os.path.isfile(os.path.join(tree, CONFIG_NAME)) and os.path.isdir(
        benchmark_dir_of(tree)
    )
    return tree if has_suite else checkout


def with_root_on_path(
    root: str, environ: Mapping[str, str], var: str = "PYTHONPATH"
) -> dict[str, str]:
    """``environ`` with ``root`` first on ``var`` (the existing entries kept after it)."""
    rest = [p for p in environ.get(var, "").split(os.pathsep) if p and p != root]
    return {**environ, var: os.pathsep.join([root, *rest])}
