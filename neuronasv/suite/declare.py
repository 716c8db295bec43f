"""The suite's classes as the pre-pass found them: asv's processes declare them from this.

asv imports the suite in every process it starts: the discovery, the forkserver, each
class's ``setup_cache`` (and, with asv's ``spawn`` launch method, every benchmark
parameter). A suite written by ``neuronasv init`` names the user's workloads module, which
imports the user's model and torch (1.4 s here, measured by ``bench/bench_adopter_suite.py``);
asv's processes need none of it: they read the payloads.

The pre-pass imports the suite anyway (it profiles it). It records every generated class
(suite module, ``build_suite`` tag, class name, workload, shapes, dtypes) in its folder
(:func:`record_classes`), and :func:`neuronasv.suite.build.build_suite`, in a process whose
``NEURONASV_PREPASS_DIR`` names that folder, declares the same classes from the record
(:func:`declared_classes`) without importing the workloads module. The ``op`` params are
still read at import (the catalogue grows after the pre-pass). The record belongs to one
commit of one run: the folder is made for it, and the pre-pass and asv get the same
environment (shapes, dtypes and backend overrides), so the record is what an import gives.
A missing or unreadable record: the suite imports the workloads module, as without a
pre-pass.

Schema history (``VERSION``): 1 — first version.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable
from typing import Any, NamedTuple

from neuronasv import env
from neuronasv.fileio import write_atomic
from neuronasv.suite.names import declaration_path

__all__ = ["VERSION", "Declared", "declared_classes", "record_classes"]

log = logging.getLogger(__name__)

VERSION = 1
_KIND = "neuronasv.suite-classes"


class Declared(NamedTuple):
    """One generated class as the pre-pass saw it."""

    name: str
    workload: str
    shapes: tuple[str, ...]
    dtypes: tuple[str, ...]


def record_classes(folder: str, classes: Iterable[Any]) -> str:
    """Write the record of ``classes`` (generated suite classes) into ``folder``; its path."""
    modules: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for cls in classes:
        entry = {
            "class": cls.__name__,
            "workload": str(cls.workload),
            "shapes": [str(s) for s in cls.shapes],
            "dtypes": [str(d) for d in cls.dtypes],
        }
        tag = str(getattr(cls, "suite_tag", ""))
        modules.setdefault(cls.__module__, {}).setdefault(tag, []).append(entry)
    os.makedirs(folder, exist_ok=True)
    path = declaration_path(folder)
    doc = {"kind": _KIND, "version": VERSION, "modules": modules}
    write_atomic(path, json.dumps(doc, indent=1, sort_keys=True))
    return path


def _parse(doc: Any, module: str, tag: str) -> list[Declared] | None:
    if not isinstance(doc, dict) or doc.get("kind") != _KIND:
        raise ValueError("not a record of suite classes")
    if doc.get("version") != VERSION:
        raise ValueError(f"version {doc.get('version')!r} (this neuronasv reads {VERSION})")
    entries = doc["modules"].get(module, {}).get(tag)
    if entries is None:
        return None
    return [
        Declared(
            str(e["class"]),
            str(e["workload"]),
            tuple(str(s) for s in e["shapes"]),
            tuple(str(d) for d in e["dtypes"]),
        )
        for e in entries
    ]


def declared_classes(module: str, tag: str | None) -> list[Declared] | None:
    """The classes the pre-pass recorded for ``build_suite(tag, module=module)``.

    None when there is no record to use (no pre-pass folder, no record in it, the module
    and tag not in it, or an unreadable record: said on stderr): the caller imports.
    """
    folder = env.PREPASS_DIR.read()
    if not folder:
        return None
    path = declaration_path(folder)
    try:
        with open(path, encoding="utf-8") as fh:
            return _parse(json.load(fh), module, tag or "")
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        log.warning(f"neuronasv suite: ignoring the unreadable record {path}: {exc}")
        return None
