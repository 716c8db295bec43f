"""What making untrusted strings inert by type costs the PR comment (issue 22 item 1).

``render_markdown`` first walks its findings document with ``escape.inert_model``. This
builds one compare document with ``--findings`` op series (realistic names) and times,
``--repeat`` times each, ``inert_model(doc)`` alone and the whole ``render_comment(doc)``
(which includes it); printed: the medians and the walk's share of the render, measured in
the same run.

Usage::

    python bench/bench_inert.py --findings 20000 --repeat 5
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from neuronasv.model import Estimate, Finding, RowState, SeriesId
from neuronasv.report import render_comment
from neuronasv.report.escape import inert_model
from tests.report.fixtures import compare_doc


def _doc(n: int):  # type: ignore[no-untyped-def]
    base = compare_doc()
    many = tuple(
        Finding(
            series=SeriesId("b", ("p",), f"wl{i % 200:03d}.v", "8x1024", "bfloat16",
                            f"aten::op_{i}"),
            estimate=Estimate("seconds", 1e-3, 1e-3), state=RowState(time="noise"),
        )
        for i in range(n)
    )  # fmt: skip
    return dataclasses.replace(base, findings=base.findings + many)


def _median(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--findings", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    doc = _doc(args.findings)
    walk = _median(lambda: inert_model(doc), args.repeat)
    render = _median(lambda: render_comment(doc), args.repeat)
    print(f"{args.findings} op findings, median of {args.repeat}:")
    print(f"  inert_model     {walk:.3f} s")
    print(f"  render_comment  {render:.3f} s (includes the walk: {walk / render:.0%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
