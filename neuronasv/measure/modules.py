"""Module scopes: name the parts of a model in the profile, and roll op time up to them.

A workload marks its parts with :func:`scope` (or, for an ``nn.Module``, :func:`instrument`,
which does the same for every named submodule through forward hooks). Each opens a
``torch.profiler.record_function`` range named ``neuronasv.module::<dotted path>``; nested
scopes compose the path (``scope("block")`` around ``scope("mlp")`` is ``block.mlp``).

:func:`rollup_events` is pure: given one profiler cycle's events (``FunctionEvent``: anything
with ``name``, ``cpu_parent``, ``device_type``, ``self_cpu_time_total``,
``self_device_time_total``), it gives every op's self time to the nearest enclosing module
range (walking ``cpu_parent``), or to the workload root (path ``""``) when none encloses it.
Per path it keeps the *self* time (ops directly in that module) and per (path, op) the op's
share; :func:`inclusive` sums a path and everything below it.

The time read is the one the op rows use (:mod:`neuronasv.measure.profiling`): self CPU
time on the CPU backend (there is no device clock), otherwise the launching op's
``self_device_time_total`` (the kernels it launched: CUDA, Neuron). Device time no kept op
launched (the op table's ``[unattributed device time]`` row) goes to the root, so the
module times add up to the workload total.

Limits (say so where it matters): the profiler links parents per thread, so ops that run on
another thread than the one that opened the range (the autograd engine's device threads on
CUDA: the backward pass) land at the root; under ``torch.compile`` the ranges inside the
compiled function are dropped by dynamo and fused kernels span modules anyway, so a compiled
workload's time sits at the root.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from neuronasv.measure.opnames import MODULE_RANGE_PREFIX, ModuleCycle, is_host_event

__all__ = [
    "MODULE_RANGE_PREFIX",
    "ROOT",
    "ModuleCycle",
    "ancestors",
    "current_path",
    "inclusive",
    "instrument",
    "module_of",
    "rollup_events",
    "scope",
]

#: ``record_function`` name prefix of a module range.
#: Path of the workload root: time no module range encloses.
ROOT = ""

_current: contextvars.ContextVar[str] = contextvars.ContextVar("neuronasv_module", default="")


def current_path() -> str:
    """The dotted path of the innermost open scope (``""`` outside any)."""
    return _current.get()


def _join(parent: str, name: str) -> str:
    name = name.strip(".")
    if not name:
        return parent
    return f"{parent}.{name}" if parent else name


@contextlib.contextmanager
def _range(path: str) -> Iterator[str]:
    import torch
    from torch.profiler import record_function

    token = _current.set(path)
    try:
        # Only while the profiler records: a range costs a dispatcher call each way, and
        # the warm-up and unprofiled runs have no use for it (the path is kept either way).
        if torch.autograd._profiler_enabled():
            with record_function(MODULE_RANGE_PREFIX + path):
                yield path
        else:
            yield path
    finally:
        _current.reset(token)


def _compiling() -> bool:
    import torch

    return bool(torch.compiler.is_compiling())


@contextlib.contextmanager
def scope(name: str) -> Iterator[str]:
    """Mark the work inside as module ``name`` (below any enclosing scope); yields the path.

    Inside a function being traced by ``torch.compile`` it does nothing (yields ``name``):
    dynamo cannot trace the range, and the compiled kernels fuse across modules anyway.
    """
    if _compiling():
        yield name
        return
    with _range(_join(_current.get(), name)) as path:
        yield path


@contextlib.contextmanager
def instrument(module: Any, prefix: str = "") -> Iterator[Any]:
    """Open a module range around every forward of ``module``'s named submodules.

    Paths are ``<enclosing scope>.<prefix>.<qualified name>`` (the root module itself is
    ``<enclosing scope>.<prefix>``, or has no range of its own without a prefix). The
    hooks are removed on exit, also when the body raises::

        with instrument(model, "model"):
            model(x)          # ranges model, model.layers.0, model.layers.0.mlp, ...
    """
    base = _join(_current.get(), prefix)
    handles = []
    for qualname, sub in module.named_modules():
        path = _join(base, qualname)
        if not path:
            continue
        stack: list[contextlib.ExitStack] = []

        def pre(_mod: Any, _args: Any, *, _path: str = path, _stack: list[Any] = stack) -> None:
            es = contextlib.ExitStack()
            es.enter_context(_range(_path))
            _stack.append(es)

        def post(_mod: Any, _args: Any, _out: Any, *, _stack: list[Any] = stack) -> None:
            if _stack:
                _stack.pop().close()

        handles.append(sub.register_forward_pre_hook(pre))
        handles.append(sub.register_forward_hook(post, always_call=True))
    try:
        yield module
    finally:
        for h in handles:
            h.remove()


def module_of(event: Any) -> str:
    """The path of the nearest module range enclosing ``event`` (``ROOT`` when none)."""
    parent = getattr(event, "cpu_parent", None)
    while parent is not None:
        name = str(getattr(parent, "name", ""))
        if name.startswith(MODULE_RANGE_PREFIX):
            return name[len(MODULE_RANGE_PREFIX) :]
        parent = getattr(parent, "cpu_parent", None)
    return ROOT


def ancestors(path: str) -> list[str]:
    """``block.mlp`` -> ``["block.mlp", "block", ""]`` (the path, its parents, the root)."""
    out = []
    p = path
    while p:
        out.append(p)
        p = p.rpartition(".")[0]
    out.append(ROOT)
    return out


def rollup_events(
    events: Iterable[Any],
    *,
    device_time_is_cpu: bool,
    total_us: float | None = None,
    unattributed_op: str = "[unattributed device time]",
) -> ModuleCycle:
    """Roll each op's self time of one cycle up to its module (see the module docstring).

    Args:
        events: the cycle's ``FunctionEvent`` list (``prof.events()``), not averages.
        device_time_is_cpu: read self CPU time (CPU backend) instead of self device time.
        total_us: the cycle's workload total; what the ops leave of it goes to the root
            as ``unattributed_op`` (device time no kept op launched).
    """
    from neuronasv.measure.opnames import is_bookkeeping, normalize_op_name

    self_us: dict[str, float] = {}
    op_us: dict[tuple[str, str], float] = {}
    for ev in events:
        if not is_host_event(ev) or getattr(ev, "is_async", False):
            continue
        name = str(getattr(ev, "key", None) or ev.name)
        if is_bookkeeping(name):  # module ranges included: a scope is not an op
            continue
        t = float(
            (ev.self_cpu_time_total if device_time_is_cpu else ev.self_device_time_total) or 0.0
        )
        if t == 0.0:
            continue
        path = module_of(ev)
        self_us[path] = self_us.get(path, 0.0) + t
        key = (path, normalize_op_name(name))
        op_us[key] = op_us.get(key, 0.0) + t
    if total_us is not None:
        rest = total_us - sum(self_us.values())
        if rest > 1e-3:
            self_us[ROOT] = self_us.get(ROOT, 0.0) + rest
            op_us[(ROOT, unattributed_op)] = op_us.get((ROOT, unattributed_op), 0.0) + rest
    return ModuleCycle(self_us=self_us, op_us=op_us)


def inclusive(self_us: Mapping[str, float]) -> dict[str, float]:
    """Path -> its self time plus that of every path below it (the root holds all)."""
    out: dict[str, float] = {}
    for path, t in self_us.items():
        for p in ancestors(path):
            out[p] = out.get(p, 0.0) + t
    return out
