"""The instructions pass: one callgrind process counts every configuration of the suite.

``neuronasv run --metrics devtime,instructions`` starts this once per commit, under
``valgrind --tool=callgrind`` (:mod:`neuronasv.run.instrrun` builds the command), with the
commit's worktree first on the import path, like the pre-pass
(:mod:`neuronasv.run.prepass`): torch is imported once (~10 s under valgrind on this
machine, quiet) and the dispatch mode set up, then every selected class's (shape, dtype) is
counted by :func:`neuronasv.measure.instructions.count_config` in a process forked from
that state (``--jobs`` at once, :func:`neuronasv.proc.fork_each`): each configuration's
counts are the same whatever else the suite counts, before it or beside it, and the
configurations share the runner's cores. Each workload's payload is written to
``<out>/<workload>.json`` as soon as its configurations are done, its entries *pending*
(the dumps are written, not read: reading them inside valgrind was half the pass for small
configurations); a configuration whose process died is an error entry, the others stand.
After valgrind exits, :func:`finish_payloads` reads the dumps at native speed and turns each
entry into its counts::

    {"workload": "rmsnorm.naive", "results": {"4x512|float32": {"total": 12102.0,
      "ops": {"aten::mul": ...}, "modules": {...}, "calls": {...}, "deterministic": true}}}

plus ``<out>/_meta.json`` (valgrind's and torch's versions, the iterations, the matrix
libraries' instruction sets). The suite's ``instr_total`` / ``instr_op`` benchmarks read
these payloads (``NEURONASV_INSTR_DIR``); the runner merges them into the sidecar's profiles.

Outside valgrind this refuses to run (exit 3): counts are only meaningful inside it.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import importlib
import json
import logging
import os
import shutil
import sys
import time
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from neuronasv import env
from neuronasv.fileio import write_atomic
from neuronasv.keys import results_key
from neuronasv.log import InertArgumentParser, cli_output
from neuronasv.proc import fork_each
from neuronasv.run.prepass import discover_classes, selected
from neuronasv.suite.names import payload_path

__all__ = ["META_FILE", "finish_payloads", "main", "parent_imports", "run_instrpass"]

if TYPE_CHECKING:
    from neuronasv.measure.callgrind import Dump
    from neuronasv.measure.workloads import Workload

log = logging.getLogger("neuronasv.run.instrpass")  # not __name__: also run as __main__

META_FILE = "_meta.json"
#: The folder (in the pass's output) where each configuration's child leaves its entry.
ENTRIES = "_configs"


@dataclass
class _Config:
    """One (shape, dtype) of a class to count, and where its child writes its entry."""

    workload: Workload
    name: str
    shape: str
    dtype: str
    key: str
    label: str
    entry_file: str


@dataclass
class _Class:
    """One class's payload as its configurations end."""

    workload: str
    out_dir: str
    results: dict[str, Any]
    waiting: set[str] = field(default_factory=set)
    started: float | None = None


def _plan(suite: Any, tag: str, entries: str, n0: int) -> tuple[dict[str, Any], list[_Config]]:
    """A class's skipped entries, and its configurations to count (numbered from ``n0``)."""
    from neuronasv.measure import backends
    from neuronasv.suite.feed import workload_of

    workload = workload_of(suite)  # imports the workloads module of a declared class
    skip = workload.skip_reason(backends.get_backend("cpu"))
    if workload.compiled:
        skip = "compiled workloads are not counted under valgrind (compiling there takes minutes)"
    results: dict[str, Any] = {}
    todo: list[_Config] = []
    for shape in suite.shapes:
        for dtype in suite.dtypes:
            key = results_key(shape, dtype)
            if skip:
                results[key] = {"skip": skip}
                continue
            todo.append(_Config(workload, suite.workload, shape, dtype, key,
                                f"{tag}{suite.workload}|{shape}|{dtype}",
                                os.path.join(entries, f"{n0 + len(todo)}.json")))  # fmt: skip
    return results, todo


def _longest_first(todo: list[tuple[_Class, _Config]], suites: dict[str, Any]) -> None:
    """Sort ``todo`` by each configuration's step time in the commit's pre-pass, longest
    first (where the pre-pass ran; otherwise the suite's order stays).

    The counts do not depend on the order (each configuration starts from the same state);
    the pass's length does: the configuration that takes longest, counted last, leaves the
    other cores idle while it finishes (a ViT training step in bfloat16 is 70 s of CPU of
    the bench's 250, and its class comes last).
    """
    from statistics import median

    from neuronasv.suite.feed import prepass_payload

    seconds: dict[tuple[str, str], float] = {}
    for name, suite in suites.items():
        payload = prepass_payload(suite) or {}
        for key, entry in (payload.get("results") or {}).items():
            total = entry.get("total") if isinstance(entry, dict) else None
            if isinstance(total, list) and total:
                with contextlib.suppress(TypeError, ValueError):
                    seconds[(name, key)] = float(median(total))
    todo.sort(key=lambda t: -seconds.get((t[1].name, t[1].key), 0.0))


class _PhaseClock:
    """Logs each phase's wall and CPU seconds as it ends, in the process it ends in (a count
    forked from the configuration's process times its own count from the fork on)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.pid = os.getpid()
        self.wall, self.cpu = time.monotonic(), _own_cpu()

    def __call__(self, phase: str) -> None:
        wall, cpu = time.monotonic(), _own_cpu()
        if os.getpid() != self.pid:  # a forked count: its CPU seconds start at 0
            self.pid, self.cpu = os.getpid(), 0.0
        log.info(f"  phase {self.name} {phase}: {wall - self.wall:.2f} s wall,"
                 f" {cpu - self.cpu:.2f} s CPU")  # fmt: skip
        self.wall, self.cpu = wall, cpu


def _own_cpu() -> float:
    t = os.times()
    return t.user + t.system


def _count_one(config: _Config, requests: Any, iterations: int) -> None:
    """In the configuration's own child: build it, count it, write its entry (pending, or
    the error that stopped it: one failing configuration must not lose the others)."""
    import torch

    from neuronasv.measure import instructions
    from neuronasv.measure.workloads import parse_dtype, parse_shape

    started, cpu = time.monotonic(), _cpu()
    clock = (
        _PhaseClock(f"{config.name} [{config.shape},{config.dtype}]")
        if env.INSTR_PHASES.read()
        else None
    )
    try:
        step = config.workload.build(parse_shape(config.shape), parse_dtype(config.dtype), "cpu", 0)
        if clock is not None:
            clock("build")
        with torch.no_grad():
            pending = instructions.count_config(
                step, requests, label=config.label, iterations=iterations, clock=clock
            )
        entry: dict[str, Any] = {"pending": pending.to_json()}
        log.info(
            f"instructions {config.name} [{config.shape},{config.dtype}] counted in"
            f" {time.monotonic() - started:.1f} s ({_cpu() - cpu:.1f} s CPU)"
        )
    except Exception as exc:
        tb = traceback.format_exc(limit=3)
        entry = {"error": f"{type(exc).__name__}: {exc}\n{tb}"}
    write_atomic(config.entry_file, json.dumps(entry, allow_nan=False))


def _cpu() -> float:
    """CPU seconds of this process and of the children it waited for (the two counts)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _entry(config: _Config, status: int) -> dict[str, Any]:
    """What a configuration's child left: its entry, or why there is none."""
    try:
        with open(config.entry_file, encoding="utf-8") as fh:
            entry: dict[str, Any] = json.load(fh)
        os.unlink(config.entry_file)
        return entry
    except (OSError, ValueError):
        how = f"killed by signal {-status}" if status < 0 else f"exit {status}"
        return {"error": f"the process counting {config.label} ended ({how}) before it wrote"
                         " its counts"}  # fmt: skip


def _write_class(group: _Class) -> None:
    payload = {"workload": group.workload, "results": group.results}
    write_atomic(payload_path(group.out_dir, group.workload), json.dumps(payload, allow_nan=False))
    bad = sum("error" in r for r in group.results.values())
    note = f", {bad} failed" if bad else ""
    took = f" in {time.monotonic() - group.started:.1f} s" if group.started is not None else ""
    log.info(f"instructions {group.workload}: {len(group.results)} (shape, dtype){took}{note}")


def parent_imports(counted: set[str], suites: Mapping[str, Any]) -> tuple[str, ...]:
    """What the pass imports before it forks: ``torch._dynamo`` unless the commit's
    pre-pass saw no counted workload need it (every payload says ``"absent"``).

    An optimizer imports it (``Optimizer.add_param_group`` is wrapped in
    ``torch._disable_dynamo``): 7.5 s under valgrind here, paid once in the pass's process
    rather than in each training configuration's; a suite that never imports it (no pre-pass
    to say so, or one that did not run the class, counts as "needs it") saves those seconds
    in every commit's pass. Whether it is imported before the fork leaves the counts as they
    are: rmsnorm.naive's op and step counts are the same either way (docs/instructions.md).
    """
    from neuronasv.suite.feed import prepass_payload
    from neuronasv.suite.names import DYNAMO_KEY, DYNAMO_MODULE

    for name in sorted(counted):
        payload = prepass_payload(suites[name])
        if payload is None or payload.get(DYNAMO_KEY) != "absent":
            return (DYNAMO_MODULE,)
    return ()


def run_instrpass(
    benchmark_dir: str,
    out_dir: str,
    *,
    helper: str,
    regexes: Sequence[str] = (),
    iterations: int = 1,
    repeat: int = 1,
    jobs: int = 1,
) -> int:
    """Count every selected class; one payload per workload. Returns the count.

    The payloads' entries are *pending* (:class:`neuronasv.measure.instructions.Pending`)
    until :func:`finish_payloads` reads the dumps, outside valgrind.

    Args:
        benchmark_dir: the commit's suite.
        out_dir: where the payloads go.
        helper: the compiled client-request library.
        regexes: asv ``--bench`` filters, as the pre-pass applies them.
        iterations: ``n`` of the n/n/2n repetitions.
        repeat: count everything this many times in the same process, into
            ``<out>/rep<k>/`` for k > 0 (the A/A experiment of
            ``bench/bench_instructions.py``: identical code counted again must give
            identical numbers).
        jobs: configurations counted at once, each in its own forked child.
    """
    import torch

    from neuronasv.measure import instructions
    from neuronasv.measure.callgrind import MATRIX_ISA, ClientRequests, valgrind_version

    requests = ClientRequests(helper)
    if not requests.on_valgrind():
        raise SystemExit("neuronasv instrpass: not running under valgrind; nothing counted")
    torch.set_num_threads(1)
    # torch's objects are not garbage: the collections between configurations skip them
    # (a full collection walks every object, 0.14 s under valgrind).
    gc.collect()
    gc.freeze()
    classes = selected(discover_classes(benchmark_dir), regexes)
    os.makedirs(out_dir, exist_ok=True)
    meta = {
        "valgrind": valgrind_version() or "",
        "torch": torch.__version__,
        "iterations": iterations,
        "threads": 1,
        # the matrix libraries' instruction sets the counts are of
        **{k: os.environ[k] for k in MATRIX_ISA if k in os.environ},
    }
    write_atomic(os.path.join(out_dir, META_FILE), json.dumps(meta))
    entries = os.path.join(out_dir, ENTRIES)
    os.makedirs(entries, exist_ok=True)
    groups: list[_Class] = []
    todo: list[tuple[_Class, _Config]] = []
    suites: dict[str, Any] = {}
    for rep in range(max(1, repeat)):
        rep_dir = out_dir if rep == 0 else os.path.join(out_dir, f"rep{rep}")
        os.makedirs(rep_dir, exist_ok=True)
        for cls in classes:
            suite = cls()
            suites.setdefault(suite.workload, suite)
            results, configs = _plan(suite, f"rep{rep}|" if rep else "", entries, len(todo))
            group = _Class(suite.workload, rep_dir, results, {c.key for c in configs})
            groups.append(group)
            todo += [(group, c) for c in configs]
    _longest_first(todo, suites)
    log.info(
        f"instructions: {len(classes)} workload(s), {len(todo)} configuration(s), each counted"
        f" in a process forked from one callgrind process, {jobs} at a time"
    )

    def started(i: int) -> None:
        group = todo[i][0]
        if group.started is None:
            group.started = time.monotonic()

    def done(i: int, status: int) -> None:
        group, config = todo[i]
        group.results[config.key] = _entry(config, status)
        group.waiting.discard(config.key)
        if not group.waiting:
            _write_class(group)

    for group in groups:  # nothing to count (skipped): written now
        if not group.waiting:
            _write_class(group)
    for name in parent_imports({c.name for _, c in todo}, suites):
        importlib.import_module(name)  # once here, not in every configuration's process
    instructions.prime(requests)
    if env.INSTR_PHASES.read():
        log.info(f"  phase pass primed: {_own_cpu():.2f} s CPU since valgrind started")
    # Every configuration starts from this state, whatever was counted before it.
    fork_each([functools.partial(_count_one, c, requests, iterations) for _, c in todo],
              jobs=jobs, on_start=started, on_done=done)  # fmt: skip
    shutil.rmtree(entries, ignore_errors=True)
    return len(classes)


def _payloads(out_dir: str) -> list[str]:
    """The payload files of the pass in ``out_dir`` and its ``rep<k>`` folders."""
    reps = sorted(os.path.join(out_dir, d) for d in os.listdir(out_dir) if d.startswith("rep"))
    found: list[str] = []
    for folder in [out_dir, *reps]:
        if os.path.isdir(folder):
            found += [os.path.join(folder, n) for n in sorted(os.listdir(folder))
                      if n.endswith(".json") and n != META_FILE]  # fmt: skip
    return found


def finish_payloads(out_dir: str, dumps: str) -> int:
    """Read the pass's dumps (callgrind's ``--callgrind-out-file`` prefix ``dumps``) into
    its payloads' pending entries, outside valgrind; the dumps are deleted once read.

    A configuration whose dumps are missing (the pass stopped before it finished) becomes
    an error entry. Returns the configurations counted.
    """
    from neuronasv.measure.callgrind import read_dumps

    if not os.path.isdir(out_dir):
        return 0
    folder, prefix = os.path.split(os.path.abspath(dumps))
    # kept until the end: a target counted to two numbers is read again, function by
    # function, to say where they differ
    found = read_dumps(folder, prefix, remove=False) if os.path.isdir(folder) else {}
    try:
        return _finish(out_dir, found)
    finally:
        for name in os.listdir(folder) if os.path.isdir(folder) else ():
            if name.startswith(prefix):
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(folder, name))


def _finish(out_dir: str, found: Mapping[str, Dump]) -> int:
    from neuronasv.measure.instructions import Pending, counts_from_dumps

    done = 0
    for path in _payloads(out_dir):
        try:
            with open(path, encoding="utf-8") as fh:
                doc = json.load(fh)
        except (OSError, ValueError):
            continue
        results = doc.get("results") or {}
        if not any(isinstance(e, dict) and "pending" in e for e in results.values()):
            continue
        for key, entry in results.items():
            if not (isinstance(entry, dict) and "pending" in entry):
                continue
            pending = Pending.from_json(entry["pending"])
            try:
                results[key] = counts_from_dumps(pending, found).to_json()
                done += 1
            except KeyError as exc:
                results[key] = {
                    "error": f"callgrind wrote no dump {exc} for {pending.label}:"
                    " the pass stopped before this configuration was counted"
                }
        write_atomic(path, json.dumps(doc, allow_nan=False))
    return done


def main(argv: Sequence[str] | None = None) -> int:
    parser = InertArgumentParser(
        prog="python -m neuronasv.run.instrpass", description=__doc__.splitlines()[0]
    )
    parser.add_argument("benchmark_dir")
    parser.add_argument("--out", required=True, help="folder for the payloads")
    parser.add_argument("--helper", required=True, help="the compiled client-request library")
    parser.add_argument("--bench", action="append", default=[], help="asv --bench regex")
    parser.add_argument("--iterations", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=1, help="count everything N times")
    parser.add_argument("--jobs", type=int, default=1, help="configurations counted at once")
    args = parser.parse_args(argv)
    with cli_output():
        run_instrpass(
            args.benchmark_dir,
            args.out,
            helper=args.helper,
            regexes=args.bench,
            iterations=args.iterations,
            repeat=args.repeat,
            jobs=args.jobs,
        )
    return 0


if __name__ == "__main__":
    code = main()
    # Every payload is written and closed: skip the interpreter's teardown of torch, which
    # under valgrind costs seconds of the pass for nothing.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
