"""Instructions per iteration of a workload, of each op and of each module, under callgrind.

Runs *inside* a ``valgrind --tool=callgrind --collect-atstart=no --instr-atstart=no``
process (:mod:`neuronasv.run.instrpass` starts it; ``docs/instructions.md``). Nothing is
counted until this module asks: instrumentation is switched on per configuration and
collection only around the measured code, through callgrind's client requests
(:mod:`neuronasv.measure.callgrind`).

For one configuration (workload, shape, dtype), with the same seeded inputs as the timing
run (:meth:`Workload.build`, seed 0), one intra-op thread, after the same warm-up:

* **total** — collection on around whole steps, as the workload runs them;
* **ops** — the steps run under a :class:`~torch.utils._python_dispatch.TorchDispatchMode`
  that, for one *target* at a time, switches collection on just before every call of that
  op (or every call inside that module scope, ``module:block.mlp``: the ops in that module
  and below) and off just after it; one dump per target and repetition holds all of its
  calls. An op's instructions are counted at its dispatch boundaries (the kernel and every
  op it calls internally), never guessed from C++ symbol names. The targets are the ops and
  module scopes (:func:`neuronasv.measure.modules.current_path`) the mode saw in its
  uninstrumented warm-up steps. Dumps scale with the distinct ops and modules, not with the
  calls: a dump makes callgrind walk every cost centre it holds and write a file that is
  then parsed, which, per call, cost minutes per transformer configuration.

An op's count is its native code (bindings, dispatcher, kernel): the Python harness around
the call and the allocators are left out (:class:`neuronasv.measure.callgrind.Dump`).
The whole step is counted in repetitions of ``n``, ``n`` and ``2n`` iterations (after an
unused first one; ``n`` = 1, as the counts are exact): per iteration = (third - first) / n,
and the first two must agree exactly, or the configuration is marked *not deterministic*
and its counts are never judged. An op or module target is counted twice over ``n``
iterations (:data:`TARGET_REPETITIONS`): per iteration = first / n, the two must agree.

Compiled workloads (``torch.compile``) are not counted: compiling under valgrind costs
minutes per configuration, and the compiled kernel is one call the dispatch mode does not
see. They keep their device time.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from neuronasv.measure.callgrind import ClientRequests, Dump, per_iteration
from neuronasv.model.profile import module_series_name

__all__ = ["DEFAULT_ITERATIONS", "ConfigCounts", "count_config"]

#: Iterations per counted repetition (``n``; the third repetition runs ``2n``). Counts
#: are exact, so one iteration is enough: (2n - n) / n is the step, n == n is the check.
DEFAULT_ITERATIONS = 1
#: Warm-up steps before anything is counted (first-call initialisation, allocator pools).
WARMUP = 5
#: Uninstrumented steps under the dispatch mode before counting (its one-time set-up;
#: they also list the ops and module scopes to count, and the calls per step).
MODE_WARMUP = 2
#: Uncounted steps at the start of each measured target, with its collection code.
PASS_WARMUP = 3


@dataclass(frozen=True)
class ConfigCounts:
    """Instructions per iteration of one (workload, shape, dtype).

    Attributes:
        total: the whole step.
        ops: op name (``aten::mul``) -> its calls' instructions per iteration.
        modules: ``module:<path>`` -> the instructions of the ops in that module and below.
        calls: op name -> calls per iteration (seen by the dispatch mode).
        deterministic: every target counted the same twice in a row.
        unstable: the targets whose two counts differed.
    """

    total: float
    ops: dict[str, float] = field(default_factory=dict)
    modules: dict[str, float] = field(default_factory=dict)
    calls: dict[str, float] = field(default_factory=dict)
    deterministic: bool = True
    unstable: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "ops": dict(self.ops),
            "modules": dict(self.modules),
            "calls": dict(self.calls),
            "deterministic": self.deterministic,
            "unstable": list(self.unstable),
        }


def _op_name(func: Any) -> str:
    """``aten::mul`` for ``aten.mul.Tensor`` — the profiler's row name of the op."""
    return str(func._schema.name)


def _module_match(path: str, target: str) -> bool:
    return path == target or path.startswith(target + ".")


_MODE_CLASS: Any = None


def _mode_class() -> Any:
    """The per-target dispatch mode, defined once: a class made per configuration would give
    the interpreter new types to specialise on in every measurement.

    It records every op call (name and module path) and, when a *target* is set, switches
    collection on just before each call that belongs to the target and off just after it:
    ``("op", "aten::mul")`` is every call of that op, ``("module", "block.mlp")`` every
    call in that module scope and below. Nothing is dumped per call — one dump per target
    and repetition holds all its calls (a dump walks every cost centre callgrind holds
    and writes a file, so dumps per call cost minutes per configuration).
    """
    global _MODE_CLASS
    if _MODE_CLASS is not None:
        return _MODE_CLASS
    from torch.utils._python_dispatch import TorchDispatchMode

    from neuronasv.measure.modules import current_path

    class _CollectTarget(TorchDispatchMode):
        def __init__(self, requests: ClientRequests) -> None:
            super().__init__()
            self.toggle = requests.toggle
            self.kind = ""
            self.target = ""
            self.calls: dict[str, int] = {}
            self.paths: set[str] = set()

        def __torch_dispatch__(
            self, func: Any, types: Any, args: Any = (), kwargs: Any = None
        ) -> Any:
            name = _op_name(func)
            path = current_path()
            self.calls[name] = self.calls.get(name, 0) + 1
            self.paths.add(path)
            hit = (self.kind == "op" and name == self.target) or (
                self.kind == "module" and _module_match(path, self.target)
            )
            if not hit:
                return func(*args, **(kwargs or {}))
            self.toggle()
            try:
                return func(*args, **(kwargs or {}))
            finally:
                self.toggle()

    _MODE_CLASS = _CollectTarget
    return _CollectTarget


@contextlib.contextmanager
def _instrumented(requests: ClientRequests) -> Iterator[None]:
    requests.start()
    try:
        yield
    finally:
        requests.stop()


def _loop(step: Callable[[], object], count: int) -> None:
    for _ in range(count):
        step()


#: The repetitions of a target: an unused first one ("w": the first measurement after a
#: reset counts some thousands of instructions more than the next ones, measured), then
#: ``n``, ``n`` and ``2n`` iterations.
REPETITIONS: tuple[tuple[str, int], ...] = (("w", 1), ("a", 1), ("b", 1), ("c", 2))
#: The repetitions of an op or module target: ``n`` and ``n``. Its window is open only
#: inside the op calls, so nothing is paid once per measurement and nothing more the first
#: time (measured: for every op of rmsnorm and attention, w == a == b and c == 2a exactly),
#: so per iteration = a / n, and a == b is the check.
TARGET_REPETITIONS: tuple[tuple[str, int], ...] = (("a", 1), ("b", 1))


def _measure_total(
    requests: ClientRequests, label: str, step: Callable[[], object], n: int
) -> None:
    """Collection on around whole steps: one dump per repetition."""
    _loop(step, PASS_WARMUP)
    requests.zero()
    for key, k in REPETITIONS:
        requests.toggle()
        _loop(step, k * n)
        requests.toggle()
        requests.dump(f"{label}|total|{key}")


def _targets(mode: Any) -> list[tuple[str, str]]:
    """Every op seen, then every module scope (with its parents) seen, in sorted order."""
    from neuronasv.measure.modules import ancestors

    modules = sorted({p for path in mode.paths for p in ancestors(path) if p})
    return [("op", op) for op in sorted(mode.calls)] + [("module", m) for m in modules]


def _measure_ops(
    requests: ClientRequests, label: str, step: Callable[[], object], n: int, mode: Any
) -> None:
    """One collection window per op and per module: one dump per target and repetition."""
    requests.zero()
    with mode:
        for kind, target in _targets(mode):
            mode.kind, mode.target = kind, target
            requests.zero()
            for key, k in TARGET_REPETITIONS:
                _loop(step, k * n)
                requests.dump(f"{label}|{kind}|{key}|{target}")
        mode.kind = mode.target = ""


def _reps(dumps: Mapping[str, Dump], label: str, kind: str) -> dict[str, dict[str, int]]:
    """``{repetition: {target: native instructions}}`` of one kind of target."""
    out: dict[str, dict[str, int]] = {}
    head = f"{label}|{kind}|"
    for name, dump in dumps.items():
        if name.startswith(head):
            key, target = name[len(head) :].split("|", 1)
            out.setdefault(key, {})[target] = dump.native
    return out


def _per_iteration(
    reps: Mapping[str, Mapping[str, int]], n: int
) -> tuple[dict[str, float], list[str]]:
    """a / n per name (:data:`TARGET_REPETITIONS`), and the names whose a and b differ."""
    names = sorted(set().union(*(r.keys() for r in reps.values())) if reps else set())
    out: dict[str, float] = {}
    unstable: list[str] = []
    for name in names:
        a, b = (reps.get(k, {}).get(name, 0) for k in "ab")
        out[name] = a / n
        if a != b:
            unstable.append(name)
    return out, unstable


def count_config(
    step: Callable[[], object],
    requests: ClientRequests,
    read: Callable[[], Mapping[str, Dump]],
    *,
    label: str,
    iterations: int = DEFAULT_ITERATIONS,
) -> ConfigCounts:
    """Count one built workload step (module doc). ``read`` returns the dumps so far.

    The caller builds the step (seeded inputs), fixes the threads and wraps this in
    ``torch.no_grad()`` as the timing run does.
    """
    _loop(step, WARMUP)
    mode = _mode_class()(requests)
    with mode:
        # Uninstrumented: the dispatch mode's first call pays one-time set-up that costs
        # tens of seconds when instrumented. Its calls give the targets and calls per step.
        _loop(step, MODE_WARMUP)
    calls = {op: c / MODE_WARMUP for op, c in mode.calls.items()}
    with _instrumented(requests):
        # One more warm-up with instrumentation on: the first instrumented run translates
        # code; its count is not used.
        step()
        _measure_total(requests, label, step, iterations)
        _measure_ops(requests, label, step, iterations, mode)
    dumps = read()
    total, ok = per_iteration(dumps, f"{label}|total", iterations, native=True)
    unstable = [] if ok else ["total"]
    ops, bad_ops = _per_iteration(_reps(dumps, label, "op"), iterations)
    mods, bad_mods = _per_iteration(_reps(dumps, label, "module"), iterations)
    return ConfigCounts(
        total=total,
        ops=ops,
        modules={module_series_name(p): v for p, v in mods.items()},
        calls=calls,
        deterministic=not (unstable or bad_ops or bad_mods),
        unstable=tuple(unstable + bad_ops + [module_series_name(p) for p in bad_mods]),
    )
