"""The user's workloads module, imported the suite's way: the suite's file wins.

A suite that ``neuronasv init`` wrote names the module that registers the workloads
(``build_suite(..., workloads="mypkg.workloads")``). Usually a plain import finds it. Not
always: a commit made before the suite existed is measured with today's suite
(:func:`neuronasv.run.usersuite.suite_root`, asv's way) and that commit's worktree comes
first on the import path, so its own ``mypkg`` (without ``workloads.py``, or with another
one) would hide today's ``mypkg/workloads.py``.

The rule: **the workloads module is the file beside the suite.** From the suite module's
folder upwards, up to the repository's top (a folder holding ``.git`` or
``asv.conf.json``), the first folder holding the module's file (``mypkg/workloads.py`` or
``mypkg/workloads/__init__.py``) is the suite's. When an ordinary import would give that
same file, it is imported as usual. Otherwise that file is loaded under the module's name,
inside the package the commit has (so ``from mypkg.rope import apply_rope`` in it measures
the commit's code), and one line on stderr says so (the pre-pass's output is the run log).
A module with no file beside the suite (an installed package) is imported as usual.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os
import sys
from types import ModuleType

__all__ = ["import_workloads_module", "suite_copy_of"]

log = logging.getLogger(__name__)

#: A folder holding one of these is a repository's top: the search stops there.
_TOP_MARKERS = (".git", "asv.conf.json")


def suite_copy_of(module: str, suite_file: str) -> str | None:
    """The file of ``module`` beside the suite module at ``suite_file`` (None: none there)."""
    parts = module.split(".")
    here = os.path.dirname(os.path.abspath(suite_file))
    while True:
        base = os.path.join(here, *parts)
        for path in (base + ".py", os.path.join(base, "__init__.py")):
            if os.path.isfile(path):
                return path
        if any(os.path.exists(os.path.join(here, m)) for m in _TOP_MARKERS):
            return None
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def _same_file(a: str | None, b: str) -> bool:
    if not a:
        return False
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def import_workloads_module(
    module: str, suite_file: str | None
) -> ModuleType:
    """Import ``module`` by the rule of the module docstring; the module.

    Loading the suite's copy over the commit's is said in one warning.

    Raises what the import raises (a user's module: its errors are theirs to see).
    """
    ours = suite_copy_of(module, suite_file) if suite_file else None
    if ours is None:
        return importlib.import_module(module)
    loaded = sys.modules.get(module)
    if loaded is not None and _same_file(getattr(loaded, "__file__", None), ours):
        return loaded
    parent, _, leaf = module.rpartition(".")
    try:
        spec = importlib.util.find_spec(module)  # imports the parents: the commit's packages
    except ModuleNotFoundError:
        spec = None
    origin = spec.origin if spec is not None else None
    if _same_file(origin, ours) or (parent and parent not in sys.modules):
        return importlib.import_module(module)  # the same file, or no package to load it in
    package = os.path.basename(ours) == "__init__.py"
    new = importlib.util.spec_from_file_location(
        module,
        ours,
        submodule_search_locations=[os.path.dirname(ours)] if package else None,
    )
    if new is None or new.loader is None:  # pragma: no cover - a .py file always has one
        return importlib.import_module(module)
    log.warning(
        f"neuronasv suite: {module} from the suite's {ours}"
        f" (this commit's {'is ' + origin if origin else 'has none'}): the suite's workloads win"
    )
    mod = importlib.util.module_from_spec(new)
    sys.modules[module] = mod
    try:
        new.loader.exec_module(mod)
    except BaseException:
        sys.modules.pop(module, None)
        raise
    if parent:
        setattr(sys.modules[parent], leaf, mod)
    return mod
