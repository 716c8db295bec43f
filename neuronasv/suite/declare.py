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
A missing record: the suite imports the workloads module, as without a pre-pass.

**The record is checked before it is believed** (every asv process would otherwise take
what a planted or stale file says, and its names become the suite module's globals):

- a regular file of at most :data:`MAX_RECORD_BYTES` (a FIFO never hangs an import);
- made by the same ``build_suite`` call: each (module, tag) entry carries
  :func:`suite_call` — the suite file's bytes, the call's arguments, the backend and the
  ``NEURONASV_SHAPES``/``DTYPES``/``LARGE`` overrides — and a different one is refused;
- each class name is an identifier, not one of the module's names (``__name__``,
  ``build_suite``) and the name ``build_suite`` gives its workload (``rmsnorm.fused`` is
  never ``Naive``); each workload is a registry name (one of the tag's, for a tag; none of
  neuronasv's own, for a repository's workloads module, which is not imported here); each
  shape is ``parse_shape``'s and each dtype a known one, as written.

A refused record is one warning line (why, and ``run `neuronasv run` again``) and the suite
imports the workloads module, as without a pre-pass: the classes are then the registry's.

Schema history (``VERSION``): 1 — first version; 2 — per (module, tag) the call's digest
(``call``) beside its classes (a version-1 record is refused).
"""

from __future__ import annotations

import hashlib
import json
import keyword
import logging
import os
import re
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from neuronasv import env
from neuronasv.fileio import read_regular, write_atomic
from neuronasv.suite.names import class_name, declaration_path

__all__ = [
    "MAX_RECORD_BYTES",
    "VERSION",
    "Declared",
    "declared_classes",
    "record_classes",
    "suite_call",
]

log = logging.getLogger(__name__)

VERSION = 2
_KIND = "neuronasv.suite-classes"
#: A suite's record is a few KB; anything near this is no record of ours.
MAX_RECORD_BYTES = 4 << 20
_WORKLOAD = re.compile(r"[A-Za-z0-9_.\-]+")
_KEYS = {"class", "workload", "shapes", "dtypes"}


class Declared(NamedTuple):
    """One generated class as the pre-pass saw it."""

    name: str
    workload: str
    shapes: tuple[str, ...]
    dtypes: tuple[str, ...]


def suite_call(
    module: str, tag: str | None, suite_file: str | None, backend: str,
    arguments: Sequence[Any],
) -> str:  # fmt: skip
    """The digest of one ``build_suite`` call: what decides its classes besides the
    registry — the suite file's bytes, the call's ``arguments`` (shapes, dtypes, workloads
    module), the backend and the shape/dtype overrides of the environment."""
    content = b""
    if suite_file:
        try:
            content = read_regular(suite_file, MAX_RECORD_BYTES)
        except OSError:
            content = b"?"
    ident = [module, tag, hashlib.sha256(content).hexdigest(), backend, list(arguments),
             list(env.SHAPES.read()), list(env.DTYPES.read()), env.LARGE.read()]  # fmt: skip
    return hashlib.sha256(json.dumps(ident, sort_keys=True, default=str).encode()).hexdigest()


def record_classes(folder: str, classes: Iterable[Any]) -> str:
    """Write the record of ``classes`` (generated suite classes) into ``folder``; its path."""
    modules: dict[str, dict[str, dict[str, Any]]] = {}
    for cls in classes:
        entry = {
            "class": cls.__name__,
            "workload": str(cls.workload),
            "shapes": [str(s) for s in cls.shapes],
            "dtypes": [str(d) for d in cls.dtypes],
        }
        tag = str(getattr(cls, "suite_tag", ""))
        call = str(getattr(cls, "suite_call", ""))
        slot = modules.setdefault(cls.__module__, {}).setdefault(tag, {"call": call, "classes": []})
        slot["classes"].append(entry)
    os.makedirs(folder, exist_ok=True)
    path = declaration_path(folder)
    doc = {"kind": _KIND, "version": VERSION, "modules": modules}
    write_atomic(path, json.dumps(doc, indent=1, sort_keys=True))
    return path


def _strings(value: Any, what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or len(value) > 1000:
        raise ValueError(f"{what} must be a non-empty list")
    if not all(isinstance(v, str) for v in value):
        raise ValueError(f"{what} must be strings")
    return tuple(value)


def _check_class(decl: Declared, tag: str | None, namespace: Iterable[str]) -> None:
    """Why ``decl`` is not a class ``build_suite(tag)`` makes (ValueError), or nothing."""
    from neuronasv.measure import workloads as registry

    name, workload = decl.name, decl.workload
    if not _WORKLOAD.fullmatch(workload):
        raise ValueError(f"workload {workload!r} is no registry name")
    if name not in (class_name(workload, tag or ""), class_name(workload, "")):
        raise ValueError(f"class {name!r} is not the class of workload {workload!r}")
    if not name.isidentifier() or keyword.iskeyword(name) or name in namespace:
        raise ValueError(f"class {name!r} would replace the suite module's own {name!r}")
    own = {w.name: w for w in registry.all_workloads()}
    if tag is not None and (workload not in own or tag not in own[workload].tags):
        raise ValueError(f"workload {workload!r} is not registered with tag {tag!r}")
    if tag is None and workload in own and own[workload].build_fn.__module__.startswith(
        "neuronasv."
    ):
        raise ValueError(f"workload {workload!r} is neuronasv's own, not the repository's")
    _check_values(decl)


def _check_values(decl: Declared) -> None:
    """Why ``decl``'s shapes or dtypes are not as written by ``build_suite`` (ValueError)."""
    from neuronasv import dtypes
    from neuronasv.errors import UsageError
    from neuronasv.measure import workloads as registry

    name = decl.name
    for shape in decl.shapes:
        try:
            ok = shape.strip() == shape and shape.isprintable() and registry.parse_shape(shape)
        except UsageError:
            ok = False
        if not ok:
            raise ValueError(f"shape {shape!r} of {name} is no shape")
    for dtype in decl.dtypes:
        if dtype.strip() != dtype or dtypes.workload_dtype(dtype) is None:
            raise ValueError(f"dtype {dtype!r} of {name} is no dtype")


def _parse(
    doc: Any, module: str, tag: str | None, call: str, namespace: Iterable[str]
) -> list[Declared] | None:
    """The record's classes for ``build_suite(tag, module=module)`` (None: it has none),
    each checked (module doc); ValueError says why the record is refused."""
    if not isinstance(doc, dict) or doc.get("kind") != _KIND:
        raise ValueError("not a record of suite classes")
    if doc.get("version") != VERSION:
        raise ValueError(f"version {doc.get('version')!r} (this neuronasv reads {VERSION})")
    modules = doc.get("modules")
    if not isinstance(modules, dict) or not isinstance(modules.get(module, {}), dict):
        raise ValueError("its modules are not a mapping")
    slot = modules.get(module, {}).get(tag or "")
    if slot is None:
        return None
    if not isinstance(slot, dict) or not isinstance(slot.get("classes"), list):
        raise ValueError(f"the entry of {module} is not a list of classes")
    if slot.get("call") != call:
        raise ValueError("it was made for another build_suite call (the suite file, its"
                         " arguments or the environment differ)")  # fmt: skip
    out: list[Declared] = []
    names = set(namespace)
    for e in slot["classes"]:
        if not isinstance(e, dict) or set(e) != _KEYS:
            raise ValueError(f"a class entry must have exactly {sorted(_KEYS)}")
        if not isinstance(e["class"], str) or not isinstance(e["workload"], str):
            raise ValueError("a class and its workload must be strings")
        decl = Declared(e["class"], e["workload"], _strings(e["shapes"], "shapes"),
                        _strings(e["dtypes"], "dtypes"))  # fmt: skip
        _check_class(decl, tag, names)
        names.add(decl.name)  # no two classes of one name
        out.append(decl)
    return out


def declared_classes(
    module: str, tag: str | None, call: str, namespace: Iterable[str] = ()
) -> list[Declared] | None:
    """The classes the pre-pass recorded for ``build_suite(tag, module=module)``.

    Args:
        module, tag: the call's.
        call: its :func:`suite_call` digest (a record made for another call is refused).
        namespace: the names the suite module already has (no class may replace one).

    Returns:
        None when there is no record to use — no pre-pass folder, no record in it, the
        module and tag not in it, or a record refused (one warning line): the caller
        imports.
    """
    folder = env.PREPASS_DIR.read()
    if not folder:
        return None
    path = declaration_path(folder)
    try:
        raw = read_regular(path, MAX_RECORD_BYTES)
    except FileNotFoundError:
        return None
    except OSError as exc:
        log.warning(f"neuronasv suite: refused the pre-pass record {path}: {exc.strerror or exc};"
                    " run `neuronasv run` again")  # fmt: skip
        return None
    try:
        return _parse(json.loads(raw), module, tag, call, namespace)
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        log.warning(f"neuronasv suite: refused the pre-pass record {path}: {exc};"
                    " run `neuronasv run` again")  # fmt: skip
        return None
