"""Instructions per iteration of a workload, of each op and of each module, under callgrind.

Runs *inside* a ``valgrind --tool=callgrind --collect-atstart=no --instr-atstart=no``
process (:mod:`neuronasv.run.instrpass` starts it; ``docs/instructions.md``), in a process
forked from it for each configuration, so every configuration starts from the same state
whatever else the suite counts. Nothing is counted until this module asks: instrumentation
is switched on in that process once its uncounted steps are done, and collection only
around the measured code, through callgrind's client requests
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

In order, uninstrumented: :data:`WARMUP` steps, the step the dispatch mode records; then,
instrumented, two *counts* from that one state, each in a process forked for it
(:data:`COUNTS`, at once): "a" counts the whole step (``n`` iterations; ``n`` = 1, as the
counts are exact) and each pair's calls replayed ``n`` times into a dump of their own; "b"
first shifts the heap (a block of every small size kept), then counts the whole step again.
Per iteration = the count / n. The step's two counts must agree exactly, or the step and
every op and module of the configuration are marked *not deterministic* and never judged:
every op call runs in the step, so an op whose count followed the heap moves the step's.
Both counts see the same values (a training step counted twice from one state is the same
step) and the same history (the recorded calls hold the recorded step's tensors, so the
first step after it frees fewer than later ones would: both counts are that step), so a
difference is the heap's addresses reaching the count — what would move it between commits
whose code under test did not change. A configuration marked so carries one line on where
its counts differed (:func:`explain`).

Compiled workloads (``torch.compile``) are not counted: compiling under valgrind costs
minutes per configuration, and the compiled kernel is one call the dispatch mode does not
see. They keep their device time.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from neuronasv.gcpause import no_cyclic_gc
from neuronasv.measure.callgrind import ClientRequests, Dump, read_functions
from neuronasv.model.counts import PassCounts
from neuronasv.model.profile import module_series_name
from neuronasv.proc import fork_each

__all__ = [
    "DEFAULT_ITERATIONS",
    "Pending",
    "count_config",
    "counts_from_dumps",
    "explain",
    "prime",
]

#: Iterations per counted repetition (``n``). Counts are exact, so one is enough: a
#: repetition / n is the step, and two repetitions agreeing is the check.
DEFAULT_ITERATIONS = 1
#: Uncounted, uninstrumented steps before the one the dispatch mode records: the first call
#: of every op initialises what it keeps (oneDNN's primitives, AdamW's state, ...).
WARMUP = 1


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
    reaches the mode is a recorded call issued again by a count (:func:`_count_a`,
    :func:`_count_b`); collection is switched on just before it and off just after it.
    Nothing is dumped per call — one dump per pair holds all its calls (a dump walks every
    cost centre callgrind holds and writes a file).
    """
    global _MODE_CLASS
    if _MODE_CLASS is not None:
        return _MODE_CLASS
    from torch.utils._python_dispatch import TorchDispatchMode

    from neuronasv.measure.modules import current_path

    class _RecordReplay(TorchDispatchMode):
        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            """Keep ``__torch_dispatch__`` as written: torch otherwise wraps it in
            ``torch._disable_dynamo``, whose first call imports ``torch._dynamo`` — 7.5 s
            of every pass under valgrind here, for a guard against compiling inside the
            mode that the pass never needs (compiled workloads are not counted)."""
            return False

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


def prime(requests: ClientRequests) -> None:
    """Ready the pass's process to be forked per configuration, uninstrumented.

    First it drops every translation valgrind made so far: they are torch's import, never
    run again, and switching instrumentation on discards every translation the process
    holds, which with them took ~1 s in each configuration's process (rmsnorm.naive's
    4x512: 1.02 s of its 1.55 s), and 0.05 s without. Then the dispatch mode's one-time
    set-up: recording and replaying under a
    :class:`~torch.utils._python_dispatch.TorchDispatchMode` for the first time costs
    Python set-up that instrumented took seconds. The mode is not wrapped in
    ``torch._disable_dynamo`` (:func:`_mode_class`), so priming no longer imports
    ``torch._dynamo`` (7.5 s under valgrind here): the pass imports it before this only
    where a counted workload needs it (:func:`neuronasv.run.instrpass.parent_imports`).
    """
    import torch

    requests.discard_translations()

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


def _loop(step: Callable[[], object], count: int) -> None:
    for _ in range(count):
        step()


#: The two counts of a configuration, each in a process forked from the same state: "a"
#: counts the whole step once and each (op, module scope) pair's recorded calls, one dump
#: per pair; "b" shifts the heap first (:data:`SHIFT`), then counts the whole step again.
#: Per iteration = a / n; the step's a == b is the check, of the ops too: every op call
#: runs in the step, so an op whose count followed the heap's addresses moves the step's.
#: Replaying every pair's calls once more into a check dump (the design before) cost one
#: more step: a bfloat16 ConvNeXt step is 3.5 s of CPU under callgrind.
COUNTS = ("a", "b")
#: Python objects of these sizes (bytes) made and kept before count "b", beside the native
#: blocks :meth:`~neuronasv.measure.callgrind.ClientRequests.shift_heap` keeps: every later
#: allocation of those sizes lands elsewhere than in count "a".
SHIFT = tuple(range(1, 1024, 24))


def _count_a(
    requests: ClientRequests,
    label: str,
    step: Callable[[], object],
    groups: Sequence[Sequence[_Call]],
    n: int,
    mode: Any,
) -> None:
    """Count "a": the whole step, then each pair's recorded calls into a dump of its own."""
    requests.zero()
    _window(requests, lambda: _loop(step, n))
    requests.dump(f"{label}|total|a")
    with _replaying(mode):
        # A dump zeroes the counters and collection is off between windows.
        for i, mine in enumerate(groups):
            for _ in range(n):
                _replay(mine)
            requests.dump(f"{label}|pair|a|{i}")


def _count_b(
    requests: ClientRequests,
    label: str,
    step: Callable[[], object],
    groups: Sequence[Sequence[_Call]],
    n: int,
    mode: Any,
) -> None:
    """Count "b", the check: the heap shifted, the whole step again."""
    del groups, mode  # the ops are checked through the step
    kept = [bytearray(size) for size in SHIFT]
    requests.shift_heap()
    requests.zero()
    _window(requests, lambda: _loop(step, n))
    requests.dump(f"{label}|total|b")
    del kept


def _timed(count: Callable[..., None], name: str, tick: Callable[[str], None], *args: Any) -> None:
    count(*args)
    tick(f"count {name}")


def _window(requests: ClientRequests, body: Callable[[], None]) -> None:
    """Collection on around ``body``."""
    requests.toggle()
    body()
    requests.toggle()


@contextlib.contextmanager
def _replaying(mode: Any) -> Iterator[None]:
    """The mode in replay: every call that reaches it is counted (collection on inside)."""
    mode.replay = True
    try:
        with mode:
            yield
    finally:
        mode.replay = False


def _replay(calls: Sequence[_Call]) -> None:
    for c in calls:
        c.func(*c.args, **c.kwargs)


def _pairs(calls: Sequence[_Call]) -> list[tuple[str, str]]:
    """The targets: every (op, innermost module scope) the step called, sorted.

    Each call belongs to exactly one pair, so replaying the pairs replays the step's calls
    once; an op's count is the sum of its pairs, a module's the sum of the pairs in its
    scope and below (:func:`counts_from_dumps`). Counting ops and modules as targets of
    their own replayed the block's calls three times over (its ops, the block, its
    attention and MLP).
    """
    return sorted({(c.name, c.path) for c in calls})


def _sum_pairs(
    pending: Pending, dumps: Mapping[str, Dump]
) -> tuple[dict[str, float], dict[str, float]]:
    """Ops and module scopes (``module:<path>``) per iteration, summed over their pairs
    (``KeyError``: a dump is missing)."""
    from neuronasv.measure.modules import ancestors

    ops: dict[str, float] = {}
    mods: dict[str, float] = {}
    for i, (name, path) in enumerate(pending.pairs):
        per = dumps[f"{pending.label}|pair|a|{i}"].native / pending.iterations
        ops[name] = ops.get(name, 0.0) + per
        for m in (module_series_name(m) for m in ancestors(path) if m):
            mods[m] = mods.get(m, 0.0) + per
    return ops, mods


#: Where two counts of the same work have been seen to differ here, and why: each pattern
#: that a function that moved matches names its cause in the row. The tables seen so far
#: are left out of the counts (:data:`neuronasv.measure.callgrind.EXCLUDED_FUNCTIONS`);
#: another one keyed by addresses reads so.
KNOWN_CAUSES: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"^torch::autograd::Engine::|^std::_Hashtable<torch::autograd::Node\*"),
        "the autograd engine's hash tables are keyed by node addresses (the heap's history)",
    ),
    (
        re.compile(r"^std::(_Hashtable|unordered_\w+)<[^,<>]*\*"),
        "a hash table keyed by addresses (the heap's history)",
    ),
)
#: The functions named in a not-deterministic target's reason.
NAMED_FUNCTIONS = 2


def _short(function: str) -> str:
    """A C++ function's name without its arguments or template arguments, at most 48
    characters (``std::_Hashtable<…>::erase``)."""
    name = re.sub(r" \[clone [^]]*\]$", "", function)
    out, depth = [], 0
    for ch in name:  # drop what is inside <...> and (...), nested
        if ch in "<(":
            if depth == 0:
                out.append("<…>" if ch == "<" else "")
            depth += 1
        elif ch in ">)" and depth:
            depth -= 1
        elif depth == 0:
            out.append(ch)
    short = "".join(out).removesuffix(" const").strip()
    return short if len(short) <= 48 else short[:47] + "…"


def explain(
    before: Mapping[tuple[str, str], int],
    after: Mapping[tuple[str, str], int],
) -> str:
    """One line on two counts of the same work that differ, from their counts per
    (object, function) (:attr:`Dump.functions`): the cause where :data:`KNOWN_CAUSES`
    knows it, and the functions that moved most."""
    moved = [(after.get(k, 0) - before.get(k, 0), k) for k in set(before) | set(after)]
    moved = sorted((m for m in moved if m[0]), key=lambda m: (-abs(m[0]), m[1]))
    total = sum(d for d, _ in moved)
    named = ", ".join(f"{_short(fn)} {d:+,}" for d, (_, fn) in moved[:NAMED_FUNCTIONS])
    names = [fn for _, (_, fn) in moved]
    cause = next((c for p, c in KNOWN_CAUSES if any(p.search(fn) for fn in names)), "")
    if cause:
        return f"{cause} ({named})"
    return f"two counts differed by {total:+,} instructions, most in {named}" if moved else ""


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
    clock: Callable[[str], None] | None = None,
) -> Pending:
    """Count one built workload step (module doc): the dumps are written, not read.

    Runs in a process of the configuration's own, forked from the pass's after
    :func:`prime` (:mod:`neuronasv.run.instrpass`): it switches callgrind's instrumentation
    on and never off. The caller builds the step (seeded inputs), fixes the threads and
    wraps this in ``torch.no_grad()`` as the timing run does. In order, uninstrumented:
    :data:`WARMUP` steps, one step under the dispatch mode that records the op calls; then
    instrumented: the whole step's repetitions, the calls replayed per pair.

    ``clock``: called with each phase's name as it ends (``warm-up``, ``record``, then
    ``count a`` and ``count b`` in their own processes), for the pass's phase lines.
    """
    tick = clock or (lambda _: None)
    _loop(step, WARMUP)
    tick("warm-up")
    mode = _mode_class()(requests)
    with mode:
        # The recorded step: its op calls are the targets, their number per step and
        # what each replays.
        mode.record = []
        step()
        recorded, mode.record = mode.record, None
    tick("record")
    calls: dict[str, float] = {}
    for c in recorded:
        calls[c.name] = calls.get(c.name, 0) + 1
    pairs = _pairs(recorded)
    groups = [[c for c in recorded if (c.name, c.path) == pair] for pair in pairs]
    # Instrumented from here on (module doc): never switched off, the process ends with the
    # configuration.
    requests.start()
    failed: dict[int, int] = {}
    with no_cyclic_gc():  # a collection inside a window counts its destructors
        # The two counts from this same state, at once, each in a process of its own.
        fork_each(
            [functools.partial(_timed, count, name, tick, requests, label, step, groups,
                               iterations, mode)
             for name, count in zip(COUNTS, (_count_a, _count_b), strict=True)],
            jobs=len(COUNTS),
            on_done=lambda i, status: failed.update({i: status} if status else {}),
        )  # fmt: skip
    if failed:
        raise RuntimeError(
            "counting "
            + ", ".join(f"{COUNTS[i]} ended with status {st}" for i, st in sorted(failed.items()))
        )
    return Pending(label=label, iterations=iterations, calls=calls, pairs=tuple(pairs))


def counts_from_dumps(pending: Pending, dumps: Mapping[str, Dump]) -> PassCounts:
    """The counts of one configuration from its dumps (``KeyError``: a dump is missing).

    When the step's two counts differ, every target is marked: the step's, and every op's
    and module's, as the ops are checked through it and which moved is not known. The
    configuration then carries one line on where (:func:`explain`), read from the two dumps
    function by function (:func:`~neuronasv.measure.callgrind.read_functions`).
    """
    label, iterations = pending.label, pending.iterations
    a, b = (dumps[f"{label}|total|{k}"] for k in COUNTS)
    ops, mods = _sum_pairs(pending, dumps)
    unstable: list[str] = []
    why: dict[str, str] = {}
    if a.native != b.native:
        unstable = ["total", *sorted(ops), *sorted(mods)]
        line = explain(read_functions(a), read_functions(b))
        why = {"total": line, "ops": f"the whole step's two counts differed: {line}"}
    return PassCounts(
        total=a.native / iterations,
        ops=ops,
        modules=mods,
        calls=dict(pending.calls),
        deterministic=not unstable,
        unstable=tuple(unstable),
        why=why,
    )
