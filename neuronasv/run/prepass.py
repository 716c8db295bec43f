"""Profile a commit's ``devtime_`` suite once, in one process, before asv runs it.

``neuronasv run`` calls this for each commit (``python -m neuronasv.run.prepass``, with the
commit's worktree first on the import path, so the commit's own workloads and measure code
run) before ``asv run``. It does two jobs at once:

1. **Op discovery.** asv fixes the ``op`` param of every ``devtime_op`` benchmark at import.
   The profiles taken here name every op the commit runs, so the runner can add new ops to
   the machine's op catalogue (:mod:`neuronasv.suite.catalogue`) *before* asv imports the
   suite: an op gets its series from the commit it first appears in.
2. **One process for the whole suite.** Without it, every class's ``setup_cache`` runs in
   its own asv process and pays the torch import, device initialisation and first-call
   warm-up again (twelve times for the default suite). Here each generated class's profile
   (the exact body of its ``setup_cache``: same shapes, dtypes, samples, iterations) runs
   once, and its payload is written to ``<out>/<workload>.json``; the suite's
   ``setup_cache`` returns that payload when ``NEURONASV_PREPASS_DIR`` points here, and
   profiles by itself otherwise (plain ``asv run``, or a workload this pass did not reach).

Before profiling, it records the suite's classes in the same folder
(:mod:`neuronasv.suite.declare`): asv's processes declare them from that record instead of
importing the user's workloads module (and torch) again in each of them.

Each payload is written as soon as its workload is done, so a crash loses only the rest,
which asv's ``setup_cache`` then profiles in fresh processes as before. Each workload prints
one line (``prepass <workload>: ...``) so the runner can watch for a hang.

Which classes run: those whose asv benchmark names (``rmsnorm.Naive.devtime_total`` and
``name('shape', 'dtype')``, as asv matches ``--bench``) match any ``--bench`` regex.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import json
import logging
import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from neuronasv.fileio import write_atomic
from neuronasv.log import InertArgumentParser, cli_output
from neuronasv.suite.names import DYNAMO_KEY, DYNAMO_MODULE, payload_path

__all__ = ["PhaseClock", "discover_classes", "main", "payload_path", "run_prepass", "selected"]

log = logging.getLogger("neuronasv.run.prepass")  # not __name__: also run as __main__
#: Whose records the :class:`PhaseClock` reads (not imported: it imports torch's helpers).
PROFILING_LOGGER = "neuronasv.measure.profiling"


def discover_classes(benchmark_dir: str) -> list[tuple[str, type]]:
    """``(asv name prefix, class)`` of every generated devtime class in the suite.

    Imports the suite the way asv does (``asv_runner``'s importer and module walk), so the
    names are asv's (``rmsnorm.Naive``) and the import errors are the ones asv would hit.
    """
    from neuronasv.run.usersuite import import_suite_modules
    from neuronasv.suite.build import suite_classes

    return suite_classes(import_suite_modules(benchmark_dir))


def _names(prefix: str, cls: type) -> Iterable[str]:
    for method in ("devtime_total", "devtime_op"):
        name = f"{prefix}.{method}"
        yield name
        func = getattr(cls, method, None)
        params = getattr(func, "params", None)
        if params:
            for combo in itertools.product(*params):
                yield f"{name}({', '.join(repr(p) for p in combo)})"


def selected(classes: Sequence[tuple[str, type]], regexes: Sequence[str]) -> list[type]:
    """The classes asv would run at least one benchmark of under ``--bench regexes``."""
    if not regexes:
        return [cls for _, cls in classes]
    pats = [re.compile(r) for r in regexes]
    return [
        cls
        for prefix, cls in classes
        if any(p.search(n) for n in _names(prefix, cls) for p in pats)
    ]


def run_prepass(
    benchmark_dir: str,
    out_dir: str,
    regexes: Sequence[str] = (),
) -> int:
    """Profile every selected class once; write one payload per workload. Returns the count.

    One INFO line per workload (with where its time went, :class:`PhaseClock`); the
    profiles' own per-sample lines are the clock's, not shown.
    """
    from neuronasv.suite.declare import record_classes
    from neuronasv.suite.feed import profile_class, sample_count

    found = discover_classes(benchmark_dir)
    record_classes(out_dir, [cls for _, cls in found])  # all: asv declares the whole suite
    classes = selected(found, regexes)
    log.info(f"prepass: {len(classes)} workload(s) in one process")
    if classes:
        started = time.monotonic()
        _freeze_imports()
        log.info(f"prepass: torch imported in {time.monotonic() - started:.1f} s")
    for i, cls in enumerate(classes):
        suite: Any = cls()
        started = time.monotonic()
        phases = PhaseClock()
        had_dynamo = DYNAMO_MODULE in sys.modules
        with phases.listening():
            payload = profile_class(suite)
        phases.close()
        payload[DYNAMO_KEY] = (
            "present" if had_dynamo else "imported" if DYNAMO_MODULE in sys.modules else "absent"
        )
        payload["shapes"] = list(suite.shapes)
        payload["dtypes"] = list(suite.dtypes)
        payload["samples"] = sample_count(suite.repeat, suite.rounds)
        payload["active"] = suite.active
        path = payload_path(out_dir, suite.workload)
        write_atomic(path, json.dumps(payload, allow_nan=False))
        results = payload["results"].values()
        bad = sum("error" in r for r in results)
        skipped = sum("skip" in r for r in results)
        note = "".join(
            [f", {bad} failed" if bad else "", f", {skipped} skipped" if skipped else ""]
        )
        log.info(
            f"prepass {suite.workload}: {len(payload['results'])} (shape, dtype)"
            f" in {time.monotonic() - started:.1f} s{note}{phases.describe()}"
        )
        if i < len(classes) - 1:  # after the last one the process exits: nothing to give back
            _release_memory()
    return len(classes)


class PhaseClock:
    """Where a workload's pre-pass time goes, from ``profile_workload``'s progress records.

    Each (shape, dtype) reports ``<label>: warming up (...)`` before its warm-up and
    ``<label>: sample k/n`` after each profiler cycle. Summed over the workload's (shape,
    dtype):

    * **warm-up**: up to the first sample line: building the inputs, the warm-up
      iterations (``torch.compile``'s compilation happens here) and the first cycle;
    * **samples**: from the first sample line to the last (the other cycles);
    * **after**: from the last sample line to the next (shape, dtype)'s warm-up or the
      end: the untimed work-evidence / roofline pass, the summary, the trace export, and
      the next (shape, dtype)'s input build.

    A pure accumulator with an injected clock, so the split is tested without timing.
    """

    _SAMPLE = re.compile(r": sample \d+/\d+$")

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.totals = {"warm-up": 0.0, "samples": 0.0, "after": 0.0}
        self._phase: str | None = None
        self._since = clock()
        self._last_sample = self._since

    def _end(self, now: float) -> None:
        if self._phase == "warm-up":
            self.totals["warm-up"] += now - self._since
        elif self._phase == "samples":
            self.totals["samples"] += self._last_sample - self._since
            self.totals["after"] += now - self._last_sample
        self._since = now

    def mark(self, line: str) -> None:
        """Take one progress line (others are ignored)."""
        if ": warming up (" in line:
            if self._phase is not None:  # the first one keeps the clock's start
                self._end(self.clock())
            self._phase = "warm-up"
        elif self._SAMPLE.search(line) and self._phase is not None:
            now = self.clock()
            if self._phase == "warm-up":
                self.totals["warm-up"] += now - self._since
                self._since, self._phase = now, "samples"
            self._last_sample = now

    @contextlib.contextmanager
    def listening(self) -> Iterator[None]:
        """Inside: :mod:`neuronasv.measure.profiling`'s INFO records go to :meth:`mark`,
        and only there (one line per sample would bury the pre-pass's own lines)."""
        clock = self

        class Marks(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                clock.mark(record.getMessage())

        logger = logging.getLogger(PROFILING_LOGGER)
        handler, level, propagate = Marks(logging.INFO), logger.level, logger.propagate
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False
        try:
            yield
        finally:
            logger.removeHandler(handler)
            logger.setLevel(level)
            logger.propagate = propagate

    def close(self) -> None:
        """End the last phase (the workload returned)."""
        self._end(self.clock())
        self._phase = None

    def describe(self) -> str:
        """`` (warm-up 5.1 s, samples 2.0 s, after 3.2 s)``, or "" when no line was seen."""
        if not any(self.totals.values()):
            return ""
        return " (" + ", ".join(f"{k} {v:.1f} s" for k, v in self.totals.items()) + ")"


def _freeze_imports() -> None:
    """Import torch now and move everything imported so far out of the collector's sight.

    Every workload imports torch anyway (the first one did it lazily, inside its warm-up,
    which is where its second went before); its modules, classes and functions live as
    long as the process. ``gc.freeze()`` puts them in the permanent generation, so the
    full collection between workloads (and the automatic ones) walks only what the
    workloads created: each full one took ~0.15 s with torch's objects in it. Nothing
    measured changes: the profiles run the same code after it.
    """
    import torch  # noqa: F401 - imported for its objects, to freeze them

    gc.freeze()


def _release_memory() -> None:
    """Between workloads: give back what the last one held, as its own process exit would.

    The caching allocator keeps the previous workload's blocks; on an accelerator the next
    (larger) shape should start from an empty pool, not fail or fragment because of them.
    """
    gc.collect()
    torch = sys.modules.get("torch")
    if torch is None:
        return
    cuda = getattr(torch, "cuda", None)
    if cuda is not None and cuda.is_initialized():
        cuda.empty_cache()


def main(argv: Sequence[str] | None = None) -> int:
    parser = InertArgumentParser(
        prog="python -m neuronasv.run.prepass", description=__doc__.splitlines()[0]
    )
    parser.add_argument("benchmark_dir")
    parser.add_argument("--out", required=True, help="folder for the payloads")
    parser.add_argument("--bench", action="append", default=[], help="asv --bench regex")
    args = parser.parse_args(argv)
    with cli_output():
        run_prepass(args.benchmark_dir, args.out, args.bench)
    return 0


if __name__ == "__main__":
    sys.exit(main())
