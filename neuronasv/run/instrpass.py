"""The instructions pass: one callgrind process counts every configuration of the suite.

``neuronasv run --metrics devtime,instructions`` starts this once per commit, under
``valgrind --tool=callgrind`` (:mod:`neuronasv.run.instrrun` builds the command), with the
commit's worktree first on the import path, like the pre-pass
(:mod:`neuronasv.run.prepass`): torch is imported once (~10 s under valgrind on this
machine, quiet), then every selected class's (shape, dtype) is counted by
:func:`neuronasv.measure.instructions.count_config`, and each workload's payload is written
to ``<out>/<workload>.json`` as soon as it is done, its entries *pending* (the dumps are
written, not read: reading them inside valgrind was half the pass for small
configurations). After valgrind exits, :func:`finish_payloads` reads the dumps at native
speed and turns each entry into its counts::

    {"workload": "rmsnorm.naive", "results": {"4x512|float32": {"total": 12102.0,
      "ops": {"aten::mul": ...}, "modules": {...}, "calls": {...}, "deterministic": true}}}

plus ``<out>/_meta.json`` (valgrind's and torch's versions, the iterations, the matrix
libraries' instruction sets). The suite's ``instr_total`` / ``instr_op`` benchmarks read
these payloads (``NEURONASV_INSTR_DIR``); the runner merges them into the sidecar's profiles.

Outside valgrind this refuses to run (exit 3): counts are only meaningful inside it.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import sys
import time
import traceback
from collections.abc import Sequence
from typing import Any

from neuronasv.fileio import write_atomic
from neuronasv.keys import results_key
from neuronasv.log import InertArgumentParser, cli_output
from neuronasv.run.prepass import discover_classes, selected
from neuronasv.suite.names import payload_path

__all__ = ["META_FILE", "finish_payloads", "main", "run_instrpass"]

log = logging.getLogger("neuronasv.run.instrpass")  # not __name__: also run as __main__

META_FILE = "_meta.json"


def _count_workload(
    suite: Any,
    requests: Any,
    iterations: int,
    *,
    tag: str = "",
) -> dict[str, Any]:
    """Every (shape, dtype) of one class counted, its dumps written; failures per entry.

    One INFO line per configuration: the runner's idle watchdog sees progress.
    """
    import torch

    from neuronasv.measure import backends, instructions
    from neuronasv.measure.workloads import parse_dtype, parse_shape
    from neuronasv.suite.feed import workload_of

    workload = workload_of(suite)  # imports the workloads module of a declared class
    skip = workload.skip_reason(backends.get_backend("cpu"))
    if workload.compiled:
        skip = "compiled workloads are not counted under valgrind (compiling there takes minutes)"
    results: dict[str, Any] = {}
    for shape in suite.shapes:
        for dtype in suite.dtypes:
            key = results_key(shape, dtype)
            if skip:
                results[key] = {"skip": skip}
                continue
            try:
                step = workload.build(parse_shape(shape), parse_dtype(dtype), "cpu", 0)
                with torch.no_grad():
                    pending = instructions.count_config(
                        step,
                        requests,
                        label=f"{tag}{suite.workload}|{shape}|{dtype}",
                        iterations=iterations,
                    )
                results[key] = {"pending": pending.to_json()}
                log.info(f"instructions {suite.workload} [{shape},{dtype}] counted")
            except Exception as exc:  # one failing configuration must not lose the others
                tb = traceback.format_exc(limit=3)
                results[key] = {"error": f"{type(exc).__name__}: {exc}\n{tb}"}
    return {"workload": suite.workload, "results": results}


def _one_class(
    suite: Any,
    out_dir: str,
    requests: Any,
    iterations: int,
    tag: str,
) -> None:
    started = time.monotonic()
    payload = _count_workload(suite, requests, iterations, tag=tag)
    write_atomic(payload_path(out_dir, suite.workload), json.dumps(payload, allow_nan=False))
    bad = sum("error" in r for r in payload["results"].values())
    note = f", {bad} failed" if bad else ""
    log.info(
        f"instructions {suite.workload}: {len(payload['results'])} (shape, dtype)"
        f" in {time.monotonic() - started:.1f} s{note}"
    )


def run_instrpass(
    benchmark_dir: str,
    out_dir: str,
    *,
    helper: str,
    regexes: Sequence[str] = (),
    iterations: int = 1,
    repeat: int = 1,
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
    log.info(f"instructions: {len(classes)} workload(s) in one callgrind process")
    with instructions.instrumented(requests):
        for rep in range(max(1, repeat)):
            rep_dir = out_dir if rep == 0 else os.path.join(out_dir, f"rep{rep}")
            os.makedirs(rep_dir, exist_ok=True)
            for cls in classes:
                tag = f"rep{rep}|" if rep else ""
                _one_class(cls(), rep_dir, requests, iterations, tag)
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
    from neuronasv.measure.instructions import Pending, counts_from_dumps

    if not os.path.isdir(out_dir):
        return 0
    folder, prefix = os.path.split(os.path.abspath(dumps))
    found = read_dumps(folder, prefix) if os.path.isdir(folder) else {}
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
    args = parser.parse_args(argv)
    with cli_output():
        run_instrpass(
            args.benchmark_dir,
            args.out,
            helper=args.helper,
            regexes=args.bench,
            iterations=args.iterations,
            repeat=args.repeat,
        )
    return 0


if __name__ == "__main__":
    code = main()
    # Every payload is written and closed: skip the interpreter's teardown of torch, which
    # under valgrind costs seconds of the pass for nothing.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
