"""Every package names its public surface in ``__all__``, and every name there exists."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import neuronasv


def _packages() -> list[str]:
    names = ["neuronasv"]
    for info in pkgutil.walk_packages(neuronasv.__path__, "neuronasv."):
        if info.ispkg:
            names.append(info.name)
    return sorted(names)


@pytest.mark.parametrize("name", _packages())
def test_package_all_is_honest(name: str) -> None:
    module = importlib.import_module(name)
    if name == "neuronasv.commands":
        return  # command modules are found by name by the CLI, not exported
    exported = getattr(module, "__all__", None)
    assert exported is not None, f"{name}/__init__.py has no __all__"
    missing = [n for n in exported if not hasattr(module, n)]
    assert not missing, f"{name}.__all__ names missing members: {missing}"
    assert len(set(exported)) == len(exported), f"{name}.__all__ has duplicates"


def test_import_needs_no_torch_neuronx() -> None:
    import sys

    importlib.import_module("neuronasv")
    assert "torch_neuronx" not in sys.modules
