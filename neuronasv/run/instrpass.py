"""The instructions pass: one callgrind process counts every configuration of the suite.

``neuronasv run --metrics devtime,instructions`` starts this once per commit, under
``valgrind --tool=callgrind`` (:mod:`neuronasv.run.instrrun` builds the command), with the
commit's worktree first on the import path, like the pre-pass
(:mod:`neuronasv.run.prepass`): torch is imported once (~36 s under valgrind here, the
bulk of the cost), then every selected class's (shape, dtype) is counted by
:func:`neuronasv.measure.instructions.count_config`, and each workload's payload is written
to ``<out>/<workload>.json`` as soon as it is done::

    {"workload": "rmsnorm.naive", "results": {"4x512|float32": {"total": 12102.0,
      "ops": {"aten::mul": ...}, "modules": {...}, "calls": {...}, "deterministic": true}}}

plus ``<out>/_meta.json`` (valgrind's and torch's versions, the iterations). The suite's
``instr_total`` / ``instr_op`` benchmarks read these payloads (``NEURONASV_INSTR_DIR``);
the runner merges them into the sidecar's profiles.

Outside valgrind this refuses to run (exit 3): counts are only meaningful inside it.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from neuronasv.fileio import write_atomic
from neuronasv.run.prepass import discover_classes, payload_path, selected

__all__ = ["META_FILE", "main", "run_instrpass"]

META_FILE = "_meta.json"


def _count_workload(
    suite: Any,
    requests: Any,
    read: Callable[[], Any],
    iterations: int,
    say: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Every (shape, dtype) of one class, counted; failures recorded per entry.

    One line per configuration: the runner's idle watchdog sees progress (one transformer
    block configuration takes minutes under callgrind).
    """
    import torch

    from neuronasv.measure import backends, instructions, workloads
    from neuronasv.measure.workloads import parse_dtype, parse_shape

    workload = workloads.get(suite.workload)
    skip = workload.skip_reason(backends.get_backend("cpu"))
    if workload.compiled:
        skip = "compiled workloads are not counted under valgrind (compiling there takes minutes)"
    results: dict[str, Any] = {}
    for shape in suite.shapes:
        for dtype in suite.dtypes:
            key = f"{shape}|{dtype}"
            if skip:
                results[key] = {"skip": skip}
                continue
            try:
                step = workload.build(parse_shape(shape), parse_dtype(dtype), "cpu", 0)
                with torch.no_grad():
                    counts = instructions.count_config(
                        step,
                        requests,
                        read,
                        label=f"{suite.workload}|{shape}|{dtype}",
                        iterations=iterations,
                    )
                results[key] = counts.to_json()
                say(f"instructions {suite.workload} [{shape},{dtype}] counted")
            except Exception as exc:  # one failing configuration must not lose the others
                tb = traceback.format_exc(limit=3)
                results[key] = {"error": f"{type(exc).__name__}: {exc}\n{tb}"}
    return {"workload": suite.workload, "results": results}


def _one_class(
    suite: Any,
    out_dir: str,
    requests: Any,
    read: Callable[[], Any],
    iterations: int,
    say: Callable[[str], None],
) -> None:
    started = time.monotonic()
    payload = _count_workload(suite, requests, read, iterations, say)
    write_atomic(payload_path(out_dir, suite.workload), json.dumps(payload, allow_nan=False))
    results = payload["results"].values()
    bad = sum("error" in r for r in results)
    unstable = sum(r.get("deterministic") is False for r in results)
    note = f", {bad} failed" if bad else ""
    note += f", {unstable} NOT deterministic" if unstable else ""
    say(
        f"instructions {suite.workload}: {len(payload['results'])} (shape, dtype)"
        f" in {time.monotonic() - started:.1f} s{note}"
    )
    gc.collect()


def run_instrpass(
    benchmark_dir: str,
    out_dir: str,
    *,
    helper: str,
    dumps: str,
    regexes: Sequence[str] = (),
    iterations: int = 1,
    repeat: int = 1,
    say: Callable[[str], None] = print,
) -> int:
    """Count every selected class; one payload per workload. Returns the count.

    Args:
        benchmark_dir: the commit's suite.
        out_dir: where the payloads go.
        helper: the compiled client-request library.
        dumps: callgrind's ``--callgrind-out-file`` prefix (its folder is read after each
            configuration and the dumps deleted).
        regexes: asv ``--bench`` filters, as the pre-pass applies them.
        iterations: ``n`` of the n/n/2n repetitions.
        repeat: count everything this many times in the same process, into
            ``<out>/rep<k>/`` for k > 0 (the A/A experiment of
            ``bench/bench_instructions.py``: identical code counted again must give
            identical numbers).
    """
    import torch

    from neuronasv.measure.callgrind import ClientRequests, read_dumps, valgrind_version

    requests = ClientRequests(helper)
    if not requests.on_valgrind():
        raise SystemExit("neuronasv instrpass: not running under valgrind; nothing counted")
    torch.set_num_threads(1)
    dumps_dir, prefix = os.path.split(os.path.abspath(dumps))

    def read() -> Any:
        return read_dumps(dumps_dir, prefix)

    classes = selected(discover_classes(benchmark_dir), regexes)
    os.makedirs(out_dir, exist_ok=True)
    meta = {
        "valgrind": valgrind_version() or "",
        "torch": torch.__version__,
        "iterations": iterations,
        "threads": 1,
    }
    write_atomic(os.path.join(out_dir, META_FILE), json.dumps(meta))
    say(f"instructions: {len(classes)} workload(s) in one callgrind process")
    for rep in range(max(1, repeat)):
        rep_dir = out_dir if rep == 0 else os.path.join(out_dir, f"rep{rep}")
        os.makedirs(rep_dir, exist_ok=True)
        for cls in classes:
            _one_class(cls(), rep_dir, requests, read, iterations, say)
    return len(classes)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m neuronasv.run.instrpass", description=__doc__.splitlines()[0]
    )
    parser.add_argument("benchmark_dir")
    parser.add_argument("--out", required=True, help="folder for the payloads")
    parser.add_argument("--helper", required=True, help="the compiled client-request library")
    parser.add_argument("--dumps", required=True, help="callgrind's --callgrind-out-file")
    parser.add_argument("--bench", action="append", default=[], help="asv --bench regex")
    parser.add_argument("--iterations", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=1, help="count everything N times")
    args = parser.parse_args(argv)
    run_instrpass(
        args.benchmark_dir,
        args.out,
        helper=args.helper,
        dumps=args.dumps,
        regexes=args.bench,
        iterations=args.iterations,
        repeat=args.repeat,
        say=lambda s: print(s, flush=True),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
