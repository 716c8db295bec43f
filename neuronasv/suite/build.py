"""Builds ``devtime_`` benchmark classes from the measure workload registry.

This is what an asv suite module calls — this repository's ``benchmarks/`` and yours::

    from neuronasv.suite import build_suite
    globals().update(build_suite("mytag", module=__name__, cpu_shapes=["4x512"]))

A suite ``neuronasv init`` writes names the module that registers the workloads instead of
importing it (``build_suite(None, ..., workloads="mypkg.workloads")``): the suite imports it
when it must (:mod:`neuronasv.suite.usermodule`: the suite's file wins over a commit's own
package), and asv's processes under ``neuronasv run`` need not (below).

One class per workload (``rmsnorm.naive`` -> ``rmsnorm.Naive``), two benchmarks each:

* ``devtime_total(shape, dtype)`` — the workload's total self device time per iteration;
* ``devtime_op(shape, dtype, op)`` — one series per op (self device time per iteration),
  and one per module scope of the workload (:mod:`neuronasv.measure.modules`), its
  inclusive device time per iteration, as ``op`` = ``module:<path>`` (``module:block.mlp``).

One profiled run per (workload, shape, dtype) feeds the total and every op series: the
class's ``setup_cache`` profiles each (shape, dtype) once and asv hands that cache to every
parameter combination. Ops absent from a (shape, dtype) in this commit raise
``NotImplementedError`` in ``setup`` (asv: skipped, ``n/a``), never zeros.

**Op lists are fixed at import** (asv requires it): the union of the seed ``ops.json``
next to the suite module (keyed by backend then workload; optional) and the machine's op
catalogue named by ``NEURONASV_OPS_CATALOGUE`` (same layout). ``neuronasv run`` keeps that
catalogue itself (:mod:`neuronasv.suite.catalogue`): before each commit's asv run it
profiles the commit once (:mod:`neuronasv.run.prepass`) and adds every op found, so an op
gets its series from the commit it first appears in and never loses it afterwards. The
list is static for the whole asv run, so every benchmark process sees the same params, and
the import stays free of torch (asv imports the suite in every benchmark process).

**Profiled once per commit**: when ``NEURONASV_PREPASS_DIR`` holds the pre-pass payload of
a class, its ``setup_cache`` returns that payload (the same profile, taken in the pre-pass
process) and re-profiles only the (shape, dtype) entries the pre-pass did not deliver or
that failed there; without it (plain ``asv run``) ``setup_cache`` profiles everything
(:mod:`neuronasv.suite.feed`).

**Declared, not imported, in asv's processes**: the same folder holds the pre-pass's record
of the suite's classes (:mod:`neuronasv.suite.declare`); with it, ``build_suite`` makes the
same classes without importing the workloads module, so asv's discovery, its forkserver
and every ``setup_cache`` pay neither for the user's imports nor for torch. The import
stays light either way for neuronasv's own workloads (the registry loads them without
torch); torch, the backend and the profiler are imported only when a profile is taken.

Environment variables (all optional; ``neuronasv run`` sets the first ones):

``NEURONASV_BACKEND``      backend name (default ``auto``)
``NEURONASV_SHAPES``       comma list overriding the shapes (e.g. ``4x512``)
``NEURONASV_DTYPES``       comma list overriding the dtypes (e.g. ``float32``)
``NEURONASV_SAMPLES``      samples per profile (default ``repeat * rounds``)
``NEURONASV_QUICK``        ``1``: minimal profile (what ``neuronasv run --quick`` sets)
``NEURONASV_LARGE``        ``1``: add the accelerator shapes even on the CPU
                           (``0``: leave them out on accelerators too)
``NEURONASV_PROFILE_OUT``  folder for each profile's JSON (the run sidecar reads it)
``NEURONASV_TRACE_DIR``    folder for profiler traces (kept only when set)
``NEURONASV_OPS_CATALOGUE`` the machine's op catalogue (ops added to the seed ``ops.json``)
``NEURONASV_PREPASS_DIR``  the pre-pass payloads (``setup_cache`` reuses them) and its
                           record of the suite's classes
"""

from __future__ import annotations

import json
import logging
import os
import sys
import types
from collections.abc import Iterable, Sequence
from typing import Any

from neuronasv import env
from neuronasv.keys import results_key
from neuronasv.measure.backends import detected_backend_name, is_accelerator
from neuronasv.metrics import CALLGRIND_PASS, counted_by
from neuronasv.suite import feed
from neuronasv.suite.declare import Declared, declared_classes, suite_call
from neuronasv.suite.names import class_name

__all__ = [
    "DEFAULT_DTYPES",
    "build_suite",
    "class_name",
    "import_backend_name",
    "load_ops",
    "ops_file_for",
    "suite_classes",
]

log = logging.getLogger(__name__)

DEFAULT_DTYPES: tuple[str, ...] = ("bfloat16", "float32")
OPS_FILE_NAME = "ops.json"


def _module_file(module: str) -> str | None:
    path = getattr(sys.modules.get(module), "__file__", None)
    return os.path.abspath(path) if path else None


def ops_file_for(module: str) -> str:
    """``ops.json`` beside the suite module ``module`` (by its ``__file__``)."""
    path = _module_file(module)
    if not path:
        raise ValueError(f"suite module {module!r} is not imported from a file")
    return os.path.join(os.path.dirname(path), OPS_FILE_NAME)


#: Samples per (workload, shape, dtype) profile, per round. Budget: on the 2-core CPU CI
#: machine the whole default suite (3 variants x 3 shapes x 2 dtypes) must stay within a
#: few minutes per commit; see docs/asv.md for the measured wall time.
DEFAULT_REPEAT = 10
#: Profiled iterations averaged into one sample (several per profiler cycle: each cycle's
#: start/stop costs tens of ms on the CPU).
DEFAULT_ACTIVE = 3
#: torch.compile of every (shape, dtype) runs inside setup_cache.
SETUP_CACHE_TIMEOUT = 1800.0


def import_backend_name() -> str:
    """The backend this process will profile on, guessed without importing torch.

    ``NEURONASV_BACKEND`` wins (``neuronasv run`` resolves ``auto`` itself and sets it);
    otherwise the preferred backend that looks installed, each judged by its own class
    (:func:`neuronasv.measure.backends.detected_backend_name`: Neuron when
    ``torch_neuronx`` is installed, CUDA when an NVIDIA device node exists, else the CPU).
    Only the op lists and default shapes depend on this guess; ``setup_cache`` resolves
    the real backend.
    """
    name = env.BACKEND.read().lower()
    if name != "auto":
        return name
    return detected_backend_name()


def load_ops(path: str) -> dict[str, dict[str, list[str]]]:
    """``ops.json`` -> ``{backend: {workload: [op, ...]}}`` (empty when missing).

    A broken file must not break the whole suite's import: it is reported on stderr and
    the suite falls back to totals only.
    """
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        backends = data["backends"]
        return {
            str(b): {str(w): [str(o) for o in ops] for w, ops in table.items()}
            for b, table in backends.items()
        }
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        log.warning(f"neuronasv suite: ignoring unreadable {path}: {exc}")
        return {}


class _DevtimeSuite:
    """Base of the generated classes (underscore: asv must not collect it; ``Devtime*``
    class names are benchmarks of the plugin's type)."""

    workload = ""
    shapes: Sequence[str] = ()
    dtypes: Sequence[str] = ()
    # asv attributes. repeat = samples per round; rounds split the cached samples.
    repeat = DEFAULT_REPEAT
    rounds = 1
    active = DEFAULT_ACTIVE
    timeout = 120.0
    # Explicit version: the series stay comparable across commits unless the meaning of
    # the numbers changes (bump it then), independent of edits to this file.
    version = "devtime-1"
    #: Op series of the ``instr_`` benchmarks; None: the class has none (no callgrind pass).
    instr_ops: Sequence[str] | None = None
    #: The ``build_suite`` call that made the class: its tag ("" for None), the workloads
    #: module it names (imported when a profile is taken) and the suite module's file.
    suite_tag = ""
    workloads_module: str | None = None
    suite_file: str | None = None
    #: The digest of that call (:func:`neuronasv.suite.declare.suite_call`): the pre-pass
    #: records it, and a process declares the classes from a record of the same call only.
    suite_call = ""

    def setup(self, cache: dict[str, Any], shape: str, dtype: str, op: str | None = None) -> None:
        # asv calls one setup for every benchmark of the class: an instr_ op counted by
        # the callgrind pass is not skipped because the profiler saw no self time for it.
        if op is not None and self.instr_ops is not None:
            from neuronasv.suite.instr import known_op

            if known_op(cache, shape, dtype, op):
                return
        entry = cache["results"].get(results_key(shape, dtype))
        if entry is None:
            raise NotImplementedError(f"{self.workload} {shape} {dtype} was not profiled")
        if "skip" in entry:
            raise NotImplementedError(entry["skip"])
        if op is not None and "ops" in entry and op not in entry["ops"]:
            raise NotImplementedError(f"{op} does not run in {self.workload} {shape} {dtype}")

    @staticmethod
    def _entry(cache: dict[str, Any], shape: str, dtype: str) -> dict[str, Any]:
        entry: dict[str, Any] = cache["results"][results_key(shape, dtype)]
        if "error" in entry:
            raise RuntimeError(f"profiling failed: {entry['error']}")
        return entry


def _alloc_methods(
    workload: str, shapes: Sequence[str], dtypes: Sequence[str], ops: Sequence[str]
) -> dict[str, Any]:
    """``alloc_total`` / ``alloc_op``: the memory metric's samples (``--metrics ...,memory``:
    :mod:`neuronasv.measure.memory`), the same op list as the device-time series; None
    (skipped) where the profile took none (a backend without memory events)."""

    def alloc_total(
        self: _DevtimeSuite, cache: dict[str, Any], shape: str, dtype: str
    ) -> list[float] | None:
        mem = self._entry(cache, shape, dtype).get("memory")
        return None if mem is None else list(mem["total"])

    methods: dict[str, Any] = {"alloc_total": alloc_total}
    if ops:

        def alloc_op(
            self: _DevtimeSuite, cache: dict[str, Any], shape: str, dtype: str, op: str
        ) -> list[float] | None:
            mem = self._entry(cache, shape, dtype).get("memory")
            samples = None if mem is None else mem["ops"].get(op)
            return None if samples is None else list(samples)

        methods["alloc_op"] = alloc_op
    for name, fn in methods.items():
        fn.params = [list(shapes), list(dtypes), *([list(ops)] if name == "alloc_op" else [])]
        fn.param_names = ["shape", "dtype", *(["op"] if name == "alloc_op" else [])]
        fn.neuronasv_workload = workload
        fn.neuronasv_series = "op" if name == "alloc_op" else "total"
    return methods


def _make_class(
    decl: Declared,
    module: str,
    ops: Sequence[str],
    instr_ops: Sequence[str] | None,
    attrs: dict[str, Any],
) -> type:
    workload, cls_name, shapes, dtypes = decl.workload, decl.name, decl.shapes, decl.dtypes

    def setup_cache(self: _DevtimeSuite) -> dict[str, Any]:
        return feed.setup_cache(self)

    # asv keys setup_cache by "<module>:<line>", so every generated class would share one
    # cache (one profile for all workloads). A per-class module name gives each its own
    # key ("rmsnorm.Naive:<line>") while the source stays inspectable.
    cache_module = f"{module}.{cls_name}"
    sys.modules.setdefault(cache_module, types.ModuleType(cache_module))
    setup_cache.__module__ = cache_module
    setup_cache.timeout = SETUP_CACHE_TIMEOUT  # type: ignore[attr-defined]

    def devtime_total(
        self: _DevtimeSuite, cache: dict[str, Any], shape: str, dtype: str
    ) -> list[float]:
        return list(self._entry(cache, shape, dtype)["total"])

    devtime_total.params = [list(shapes), list(dtypes)]  # type: ignore[attr-defined]
    devtime_total.param_names = ["shape", "dtype"]  # type: ignore[attr-defined]
    # Collected by asv_runner into benchmarks.json: how `neuronasv run` maps series.
    devtime_total.neuronasv_workload = workload  # type: ignore[attr-defined]
    devtime_total.neuronasv_series = "total"  # type: ignore[attr-defined]
    body: dict[str, Any] = {
        **attrs,
        "workload": workload,
        "shapes": tuple(shapes),
        "dtypes": tuple(dtypes),
        "setup_cache": setup_cache,
        "devtime_total": devtime_total,
        "__module__": module,
        "__doc__": f"Device time of {workload} (total and per op).",
    }
    if ops:

        def devtime_op(
            self: _DevtimeSuite, cache: dict[str, Any], shape: str, dtype: str, op: str
        ) -> list[float] | None:
            samples = self._entry(cache, shape, dtype)["ops"].get(op)
            # None (skipped): an op only the callgrind pass counted (its setup let it by).
            return None if samples is None else list(samples)

        devtime_op.params = [list(shapes), list(dtypes), list(ops)]  # type: ignore[attr-defined]
        devtime_op.param_names = ["shape", "dtype", "op"]  # type: ignore[attr-defined]
        devtime_op.neuronasv_workload = workload  # type: ignore[attr-defined]
        devtime_op.neuronasv_series = "op"  # type: ignore[attr-defined]
        body["devtime_op"] = devtime_op
    if env.MEMORY.read():
        body.update(_alloc_methods(workload, shapes, dtypes, ops))
    if instr_ops is not None:
        from neuronasv.suite.instr import instr_methods

        body["instr_ops"] = tuple(instr_ops)
        body.update(instr_methods(workload, shapes, dtypes, instr_ops))
    return type(cls_name, (_DevtimeSuite,), body)


def _shapes(
    backend: str, cpu_shapes: Sequence[str], accelerator_shapes: Sequence[str]
) -> list[str]:
    override = env.SHAPES.read()
    if override:
        return list(override)
    large = env.LARGE.read()
    want_large = large if large is not None else is_accelerator(backend)
    return list(cpu_shapes) + (list(accelerator_shapes) if want_large else [])


def _selected(workload: Any, tag: str | None) -> bool:
    """Tagged ``tag``; with ``None``, every workload that is not neuronasv's own."""
    if tag is None:
        return not str(getattr(workload.build_fn, "__module__", "")).startswith("neuronasv.")
    return tag in workload.tags


def _from_registry(
    tag: str | None, shapes: Sequence[str], dtypes: Sequence[str]
) -> list[Declared]:
    """The classes of ``tag``'s workloads, from the registry (what the pre-pass records)."""
    from neuronasv.measure import workloads as registry

    out: dict[str, Declared] = {}
    for w in registry.all_workloads():
        if not _selected(w, tag):
            continue
        name = class_name(w.name, tag or "")
        if name in out:
            name = class_name(w.name, "")
        out[name] = Declared(
            name, w.name, tuple(shapes or [w.default_shape]), tuple(dtypes or [w.default_dtype])
        )
    return list(out.values())


def _pass_ops(catalogue: str, backend: str) -> dict[str, list[str]]:
    """The ops the callgrind pass counted on ``backend``, per workload: the catalogue's
    entries of its metrics (``Metric.catalogue_key``), merged."""
    table = load_ops(catalogue)
    out: dict[str, dict[str, None]] = {}
    for metric in counted_by(CALLGRIND_PASS):
        for workload, ops in table.get(metric.catalogue_key(backend), {}).items():
            out.setdefault(workload, {}).update(dict.fromkeys(ops))
    return {w: list(ops) for w, ops in out.items()}


def build_suite(
    tag: str | None,
    *,
    module: str,
    cpu_shapes: Sequence[str],
    accelerator_shapes: Sequence[str] = (),
    dtypes: Iterable[str] = DEFAULT_DTYPES,
    ops_file: str | None = None,
    workloads: str | None = None,
) -> dict[str, type]:
    """Benchmark classes for every registered workload tagged ``tag``.

    Use from a suite module (adding a workload family is this one line)::

        globals().update(build_suite("rmsnorm", module=__name__, cpu_shapes=["4x512"]))

    Args:
        tag: workload tag to select from the registry (``rmsnorm``, ``transformer``);
            ``None``: every workload the repository registers (all but neuronasv's own),
            what the suite ``neuronasv init`` writes uses.
        module: the calling module's ``__name__`` (asv names benchmarks after it).
        cpu_shapes: shapes for every backend (keep them quick on a CPU); empty: each
            workload's own ``default_shape``.
        accelerator_shapes: extra shapes on CUDA / Neuron (or with ``NEURONASV_LARGE=1``).
        dtypes: dtype labels (``NEURONASV_DTYPES`` overrides); empty: each workload's
            own ``default_dtype``.
        ops_file: the seed op lists (default: ``ops.json`` beside ``module``; may be
            missing). ``NEURONASV_OPS_CATALOGUE`` adds the machine's catalogue to them.
        workloads: the module that registers the workloads (``mypkg.workloads``), imported
            here unless the pre-pass's record declares the classes, and before any profile
            (:mod:`neuronasv.suite.usermodule`: the suite's file wins).

    Returns:
        ``{class name: class}`` for the module's globals.
    """
    from asv_bench_neuronasv import ensure_registered

    ensure_registered()  # the devtime_ type, also when installed from the neuronasv wheel
    dtypes = list(dtypes)
    backend = import_backend_name()
    ops_table = load_ops(ops_file or ops_file_for(module)).get(backend, {})
    catalogue = env.OPS_CATALOGUE.read()
    if catalogue:
        for workload, ops in load_ops(catalogue).get(backend, {}).items():
            ops_table[workload] = sorted(set(ops_table.get(workload, ())) | set(ops))
    # The callgrind pass ran (``--metrics`` named a metric it counts): instr_ series too,
    # their ops from the catalogue's entries of those metrics (``Metric.catalogue_key``).
    instr_table: dict[str, list[str]] | None = None
    if env.INSTR_DIR.read():
        instr_table = _pass_ops(catalogue, backend) if catalogue else {}
    suite_file = _module_file(module)
    call = suite_call(module, tag, suite_file, backend,
                      [list(cpu_shapes), list(accelerator_shapes), dtypes, workloads])  # fmt: skip
    decls = declared_classes(module, tag, call, vars(sys.modules[module]) if module in
                             sys.modules else ())  # fmt: skip
    if decls is None:
        if workloads:
            from neuronasv.suite.usermodule import import_workloads_module

            import_workloads_module(workloads, suite_file)
        shapes = _shapes(backend, cpu_shapes, accelerator_shapes)
        decls = _from_registry(tag, shapes, list(env.DTYPES.read()) or dtypes)
    attrs = {"suite_tag": tag or "", "workloads_module": workloads, "suite_file": suite_file,
             "suite_call": call}  # fmt: skip
    return {
        d.name: _make_class(
            d,
            module,
            ops_table.get(d.workload, []),
            None if instr_table is None else instr_table.get(d.workload, []),
            attrs,
        )
        for d in decls
    }


def suite_classes(modules: Iterable[Any]) -> list[tuple[str, type]]:
    """``(asv name prefix, class)`` of every generated class in imported suite ``modules``
    (``rmsnorm.Naive``: the module's name past asv's root package, then the class's)."""
    found: dict[str, type] = {}
    for mod in modules:
        prefix = mod.__name__.split(".", 1)[1:]
        for attr, value in vars(mod).items():
            if attr.startswith("_") or not isinstance(value, type):
                continue
            if issubclass(value, _DevtimeSuite) and value is not _DevtimeSuite:
                found.setdefault(".".join([*prefix, value.__name__]), value)
    return sorted(found.items())
