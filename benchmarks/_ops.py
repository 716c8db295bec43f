"""Refresh ``benchmarks/ops.json``, the optional *seed* of the per-op series.

asv fixes a benchmark's params when it imports the suite, so the op names of the
``devtime_op`` series are a static list (see ``neuronasv/suite/build.py``). ``neuronasv run``
discovers them itself, per machine (``neuronasv/suite/catalogue.py``): this file is only
needed for plain ``asv run`` without the runner, or to pre-declare ops. This script takes a
quick profile (2 samples) of every registered workload at its default shape plus any
``--shapes``, for each dtype, and stores the ops that showed self device time, merged with
the entries of other backends already in the file::

    python -m benchmarks._ops --update                 # this machine's backend
    python -m benchmarks._ops --update --backend cpu --shapes 4x512,4x64x256

The normal flow does not need it; run it (and commit ``ops.json``) when plain asv users
should get per-op series.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from neuronasv import env
from neuronasv.suite.build import DEFAULT_DTYPES, OPS_FILE_NAME

OPS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), OPS_FILE_NAME)

__all__ = ["collect_ops", "main"]


def collect_ops(
    backend_name: str, shapes: Sequence[str], dtypes: Sequence[str], tags: Sequence[str] = ()
) -> tuple[str, dict[str, list[str]]]:
    """Profile every workload briefly; return (resolved backend, {workload: sorted ops})."""
    from neuronasv.measure import backends, profiling, workloads
    from neuronasv.suite.catalogue import ops_from_profiles

    backend = backends.get_backend(backend_name)
    table: dict[str, list[str]] = {}
    for w in workloads.all_workloads():
        if tags and not set(tags) & set(w.tags):
            continue
        if w.skip_reason(backend):
            print(f"skip {w.name}: {w.skip_reason(backend)}", file=sys.stderr)
            continue
        seen: set[str] = set()
        for shape in dict.fromkeys([w.default_shape, *shapes]):
            for dtype in dtypes:
                prof = profiling.profile_workload(
                    w,
                    backend,
                    shape=shape,
                    dtype=dtype,
                    options=profiling.ProfileOptions(samples=2, active=1),
                )
                seen.update(ops_from_profiles([prof]).get(w.name, ()))
        table[w.name] = sorted(seen)
        print(f"{w.name}: {len(seen)} ops", file=sys.stderr)
    return backend.name, table


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks._ops", description=__doc__)
    parser.add_argument("--update", action="store_true", help="write ops.json")
    parser.add_argument("--backend", default=env.BACKEND.read())
    parser.add_argument("--shapes", default="", help="comma list beyond each default shape")
    parser.add_argument("--dtypes", default=",".join(DEFAULT_DTYPES))
    parser.add_argument("--tag", action="append", default=[], help="only workloads so tagged")
    parser.add_argument("--file", default=OPS_FILE)
    args = parser.parse_args(argv)
    shapes = [s for s in args.shapes.split(",") if s]
    dtypes = [d for d in args.dtypes.split(",") if d]
    backend, table = collect_ops(args.backend, shapes, dtypes, args.tag)
    try:
        with open(args.file, encoding="utf-8") as fh:
            doc: dict[str, Any] = json.load(fh)
    except FileNotFoundError:
        doc = {}
    import torch

    doc.setdefault("backends", {})
    doc["backends"].setdefault(backend, {}).update(table)
    doc["note"] = (
        "Per-op asv series of the devtime_ suite, by backend then workload; regenerate with"
        " `python -m benchmarks._ops --update`. Ops missing here still land in the run"
        " sidecars (reported as new)."
    )
    doc.setdefault("torch", {})[backend] = torch.__version__
    text = json.dumps(doc, indent=2, sort_keys=True) + "\n"
    if args.update:
        with open(args.file, "w", encoding="utf-8") as fh:
            fh.write(text)
        print(f"wrote {args.file}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
