"""Instructions per iteration of a workload, of each op and of each module, under callgrind.

Runs *inside* a ``valgrind --tool=callgrind --collect-atstart=no --instr-atstart=no``
process (:mod:`neuronasv.run.instrpass` starts it; ``docs/instructions.md``). Nothing is
counted until this module asks: instrumentation is switched on per configuration and
collection only around the measured code, through callgrind's client requests
(:mod:`neuronasv.measure.callgrind`).

For one configuration (workload, shape, dtype), with the same seeded inputs as the timing
run (:meth:`Workload.build`, seed 0), one intra-op thread, after the same warm-up:

* **total** — collection on around whole steps, as the workload runs them;
* **ops** — one step runs under a :class:`~torch.utils._python_dispatch.TorchDispatchMode`
  that records every op call (its name, module scope and arguments). Then, for one
  (op, innermost module scope) *pair* at a time, the pair's recorded calls are issued again
  on their recorded arguments under the same mode, which switches collection on just
  before each call and off just after it; one dump per pair holds all of its calls. An
  op's count is the sum of its pairs, a module scope's (``module:block.mlp``) the sum of
  the pairs in it and below. An op's instructions are counted at its dispatch boundaries
  (the kernel and every op it calls internally), never guessed from C++ symbol names.
  Replaying the step's calls once, instead of whole steps with one target's window open,
  costs about one step in all rather than one step per target (the transformer block's
  backward, 28 targets: 29 s → 7.5 s under callgrind here). Dumps scale with the pairs,
  not with the calls: a dump makes callgrind walk every cost centre it holds and write a
  file that is then parsed.

  What a replay does not reproduce: the values its arguments hold after the step (an op
  whose instruction count depends on values, such as ``nonzero``, is counted on them) and
  the autograd state around the call (replays run under ``torch.no_grad()``: an
  ``aten::detach`` of the block's backward counts 23,352 replayed, 27,258 in the step).
  Both are the same at every commit, so the counts compare exactly.

An op's count is its native code (bindings, dispatcher, kernel): the Python harness around
the call and the allocators are left out (:class:`neuronasv.measure.callgrind.Dump`).
The whole step is counted in repetitions of ``n`` and ``n`` iterations (after an unused
first one; ``n`` = 1, as the counts are exact): per iteration = the first / n, and the two
must agree exactly, or the step is marked *not deterministic* and its count is never judged.
Each (op, module scope) pair's calls are replayed ``n`` times into a dump of their own,
then all pairs' calls again into one check dump (:data:`CHECK`): per iteration = the
pair's count / n, and the pairs must sum to the check, or every op and module of the
configuration is marked so.

Compiled workloads (``torch.compile``) are not counted: compiling under valgrind costs
minutes per configuration, and the compiled kernel is one call the dispatch mode does not
see. They keep their device time.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from neuronasv.gcpause import no_cyclic_gc
from neuronasv.measure.callgrind import ClientRequests, Dump
from neuronasv.model.instructions import InstructionCounts
from neuronasv.model.profile import module_series_name

__all__ = [
    "DEFAULT_ITERATIONS",
    "Pending",
    "count_config",
    "counts_from_dumps",
    "instrumented",
]

#: Iterations per counted repetition (``n``). Counts are exact, so one is enough: a
#: repetition / n is the step, and two repetitions agreeing is the check.
DEFAULT_ITERATIONS = 1
#: Warm-up steps before the dispatch mode's two (first-call initialisation, allocator
#: pools, callgrind's translation of the code: the whole pass runs instrumented).
WARMUP = 2
#: Two more uncounted steps just before the whole step is counted (after the mode's);
#: the repetitions' unused first one ("w") absorbs what is left. With one, the totals of
#: ``transformer.attention`` and ``.block`` differed between their two counts in the first
#: pass of every process (21 A/A repetitions: never in the later ones).
PASS_WARMUP = 2


def _op_name(func: Any) -> str:
    """``aten::mul`` for ``aten.mul.Tensor`` — the profiler's row name of the op."""
    return str(func._schema.name)


_MODE_CLASS: Any = None


@dataclass(frozen=True)
class _Call:
    """One op call of the recorded step: its name, module scope, and what it was called with."""

    name: str
    path: str
    func: Any
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


def _mode_class() -> Any:
    """The recording and replaying dispatch mode, defined once: a class made per
    configuration would give the interpreter new types to specialise on in every measurement.

    Recording (``record`` is a list): every op call is appended with its module scope and
    its arguments, and runs as usual. Replaying (``replay`` is True): every call that
    reaches the mode is a recorded call issued again by :func:`_measure_ops`; collection
    is switched on just before it and off just after it. Nothing is dumped per call — one
    dump per pair holds all its calls (a dump walks every cost centre callgrind holds and
    writes a file).
    """
    global _MODE_CLASS
    if _MODE_CLASS is not None:
        return _MODE_CLASS
    from torch.utils._python_dispatch import TorchDispatchMode

    from neuronasv.measure.modules import current_path

    class _RecordReplay(TorchDispatchMode):
        def __init__(self, requests: ClientRequests) -> None:
            super().__init__()
            self.toggle = requests.toggle
            self.record: list[_Call] | None = None
            self.replay = False

        def __torch_dispatch__(
            self, func: Any, types: Any, args: Any = (), kwargs: Any = None
        ) -> Any:
            kwargs = kwargs or {}
            if self.replay:
                self.toggle()
                try:
                    return func(*args, **kwargs)
                finally:
                    self.toggle()
            if self.record is not None:
                self.record.append(_Call(_op_name(func), current_path(), func, args, kwargs))
            return func(*args, **kwargs)

    _MODE_CLASS = _RecordReplay
    return _RecordReplay


def _prime(requests: ClientRequests) -> None:
    """The dispatch mode's one-time set-up, paid uninstrumented: recording and replaying
    under a :class:`~torch.utils._python_dispatch.TorchDispatchMode` for the first time
    costs seconds of Python set-up, which instrumented took 19 s of the pass here."""
    import torch

    mode = _mode_class()(requests)
    x = torch.ones(8)
    with torch.no_grad(), mode:
        mode.record = []
        (x * 2 + 1).sum()
        recorded, mode.record = mode.record, None
    mode.toggle = lambda: None  # no collection while priming
    mode.replay = True
    try:
        with mode:
            for c in recorded:
                c.func(*c.args, **c.kwargs)
    finally:
        mode.replay = False


@contextlib.contextmanager
def instrumented(requests: ClientRequests) -> Iterator[None]:
    """Instrumentation on for every configuration counted inside (the pass's whole run).

    Switching callgrind's instrumentation on or off discards every translated block, so
    switching per configuration made each one translate its code again: on for the whole
    pass, the small configurations cost a third (``rmsnorm.naive``'s six: 2.8 s -> 0.8 s),
    the block's backward 5.9 s -> 4.5 s. The warm-up steps then run instrumented too; the
    dispatch mode's one-time set-up is paid before, uninstrumented (:func:`_prime`).
    """
    _prime(requests)
    requests.start()
    try:
        yield
    finally:
        requests.stop()


def _loop(step: Callable[[], object], count: int) -> None:
    for _ in range(count):
        step()


#: The repetitions of the whole step: an unused first one ("w": the first measurement
#: after a reset counts some thousands of instructions more than the next ones, measured),
#: then ``n`` and ``n`` iterations: per iteration = a / n, and a == b is the check.
REPETITIONS: tuple[tuple[str, int], ...] = (("w", 1), ("a", 1), ("b", 1))
#: A target's repetitions: each pair's recorded calls replayed ``n`` times, one dump per
#: pair ("a"); then every pair's calls replayed again ``n`` times into one dump ("b").
#: A window is open only inside the op calls, so nothing is paid once per measurement
#: (measured: for every op of rmsnorm and attention, w == a == b exactly): per iteration
#: = a / n, and the sum of the pairs' a == b is the check. One check dump per
#: configuration instead of one per pair halves the dumps (each ~10 ms to write under
#: valgrind and ~80 KB to read); a configuration that fails it has every op and module
#: marked, as which pair moved is not known.
CHECK = "b"


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


def _pairs(calls: Sequence[_Call]) -> list[tuple[str, str]]:
    """The targets: every (op, innermost module scope) the step called, sorted.

    Each call belongs to exactly one pair, so replaying the pairs replays the step's calls
    once; an op's count is the sum of its pairs, a module's the sum of the pairs in its
    scope and below (:func:`counts_from_dumps`). Counting ops and modules as targets of
    their own replayed the block's calls three times over (its ops, the block, its
    attention and MLP).
    """
    return sorted({(c.name, c.path) for c in calls})


def _measure_ops(
    requests: ClientRequests,
    label: str,
    calls: Sequence[_Call],
    pairs: Sequence[tuple[str, str]],
    n: int,
    mode: Any,
) -> None:
    """Each pair's recorded calls replayed, collection on inside each call: one dump per
    pair (labelled by its index), then one of all pairs again (:data:`CHECK`)."""
    mode.replay = True
    groups = [[c for c in calls if (c.name, c.path) == pair] for pair in pairs]
    try:
        with mode:
            # A dump zeroes the counters and collection is off between windows, so one
            # zero before the first pair is all.
            requests.zero()
            for i, mine in enumerate(groups):
                for _ in range(n):
                    for c in mine:
                        c.func(*c.args, **c.kwargs)
                requests.dump(f"{label}|pair|a|{i}")
            for _ in range(n):
                for mine in groups:
                    for c in mine:
                        c.func(*c.args, **c.kwargs)
            requests.dump(f"{label}|pairs|{CHECK}")
    finally:
        mode.replay = False


def _sum_pairs(
    pending: Pending, dumps: Mapping[str, Dump]
) -> tuple[dict[str, float], dict[str, float], list[str]]:
    """Ops and module scopes (``module:<path>``) per iteration, summed over their pairs,
    and, when the pairs counted again did not sum the same (:data:`CHECK`), all of them
    (``KeyError``: a dump is missing)."""
    from neuronasv.measure.modules import ancestors

    ops: dict[str, float] = {}
    mods: dict[str, float] = {}
    first = 0
    for i, (name, path) in enumerate(pending.pairs):
        a = dumps[f"{pending.label}|pair|a|{i}"].native
        first += a
        per = a / pending.iterations
        ops[name] = ops.get(name, 0.0) + per
        for m in (module_series_name(m) for m in ancestors(path) if m):
            mods[m] = mods.get(m, 0.0) + per
    if not pending.pairs:
        return ops, mods, []
    again = dumps[f"{pending.label}|pairs|{CHECK}"].native
    return ops, mods, [] if again == first else sorted(ops) + sorted(mods)


@dataclass(frozen=True)
class Pending:
    """A configuration counted, its dumps not read yet (:func:`counts_from_dumps`).

    Reading a dump is parsing a file of every cost centre that ran; inside valgrind that
    costs ~0.03 s per dump here, half the pass for a small configuration. So the pass only
    writes the dumps and this record, and the runner reads them after valgrind exits, at
    native speed (:func:`neuronasv.run.instrpass.finish_payloads`).

    Attributes:
        label: the dumps' label prefix (``rmsnorm.naive|4x512|float32``).
        iterations: ``n`` of the repetitions.
        calls: op name -> calls per iteration (seen by the dispatch mode).
        pairs: the (op, module scope) targets, in the order of their dumps' indices.
    """

    label: str
    iterations: int
    calls: dict[str, float] = field(default_factory=dict)
    pairs: tuple[tuple[str, str], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "iterations": self.iterations,
            "calls": dict(self.calls),
            "pairs": [list(p) for p in self.pairs],
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Pending:
        return cls(
            label=str(doc["label"]),
            iterations=int(doc["iterations"]),
            calls={str(k): float(v) for k, v in (doc.get("calls") or {}).items()},
            pairs=tuple((str(p[0]), str(p[1])) for p in doc.get("pairs") or ()),
        )


def count_config(
    step: Callable[[], object],
    requests: ClientRequests,
    *,
    label: str,
    iterations: int = DEFAULT_ITERATIONS,
) -> Pending:
    """Count one built workload step (module doc): the dumps are written, not read.

    The caller builds the step (seeded inputs), fixes the threads, wraps this in
    ``torch.no_grad()`` as the timing run does, and counts inside :func:`instrumented`.
    """
    _loop(step, WARMUP)
    mode = _mode_class()(requests)
    with mode:
        # The first step under the mode warms its per-op paths; the second is recorded:
        # its op calls are the targets, their number per step and what each replays.
        step()
        mode.record = []
        step()
        recorded, mode.record = mode.record, None
    calls: dict[str, float] = {}
    for c in recorded:
        calls[c.name] = calls.get(c.name, 0) + 1
    pairs = _pairs(recorded)
    with no_cyclic_gc():  # a collection inside a window counts its destructors
        _measure_total(requests, label, step, iterations)
        _measure_ops(requests, label, recorded, pairs, iterations, mode)
    del recorded
    return Pending(label=label, iterations=iterations, calls=calls, pairs=tuple(pairs))


def counts_from_dumps(pending: Pending, dumps: Mapping[str, Dump]) -> InstructionCounts:
    """The counts of one configuration from its dumps (``KeyError``: a dump is missing)."""
    label, iterations = pending.label, pending.iterations
    a, b = (dumps[f"{label}|total|{k}"].native for k in "ab")
    ops, mods, unstable = _sum_pairs(pending, dumps)
    if a != b:
        unstable.insert(0, "total")
    return InstructionCounts(
        total=a / iterations,
        ops=ops,
        modules=mods,
        calls=dict(pending.calls),
        deterministic=not unstable,
        unstable=tuple(unstable),
    )
