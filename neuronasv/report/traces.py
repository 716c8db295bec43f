"""Which traces a reviewer should open, and what the comment says about them (pure).

Per-commit runs keep one gzipped chrome trace per workload (``neuronasv run``, see
docs/asv.md). For a comparison, the traces worth opening are those of the *flagged*
workloads: every (workload, shape, dtype) of a cause (:func:`neuronasv.report.causes.
cause_views`), with the op to look for (the one that moved most in the cause's direction).
The PR flow uploads those as the ``pr-benchmark-traces`` artifact, laid out as
``<side>-<hash8>/<stem>.json.gz`` (:func:`trace_path`); the comment links each one with the
op named and a one-line hint (:data:`TRACE_HINT`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from neuronasv.keys import SeriesConfig, profile_key
from neuronasv.model import Finding, FindingsDocument
from neuronasv.report.causes import cause_views

__all__ = [
    "PERFETTO_URL",
    "TRACES_ARTIFACT",
    "TRACE_HINT",
    "TRACE_HINT_MD",
    "FlaggedWorkload",
    "flagged_workloads",
    "trace_file_name",
    "trace_path",
    "with_trace_links",
]

PERFETTO_URL = "https://ui.perfetto.dev"
#: The one-line hint under the trace links (plain text).
TRACE_HINT = (
    f"Open a trace in {PERFETTO_URL} (drag the .json.gz file onto the page);"
    " a Neuron trace folder (NEFF/NTFF) opens in Neuron Explorer."
)
#: The same hint in markdown (trusted text: a link to Perfetto, no untrusted parts).
TRACE_HINT_MD = (
    f"Open a trace in [Perfetto]({PERFETTO_URL}) (download the artifact, drag the `.json.gz`"
    " file onto the page); a Neuron trace folder (NEFF/NTFF) opens in Neuron Explorer."
)
#: Name of the PR workflow's artifact that holds the flagged workloads' traces.
TRACES_ARTIFACT = "pr-benchmark-traces"
_MAX = 20  # flagged workloads listed (the rest are in the artifact anyway)


@dataclass(frozen=True)
class FlaggedWorkload:
    """One (workload, shape, dtype) a cause flagged, with the op to look for."""

    workload: str
    shape: str
    dtype: str
    op: str | None
    direction: str

    @property
    def key(self) -> str:
        """``name[shape,dtype]``, as in sidecars and ``RunRef.traces``."""
        return profile_key(self.workload, self.shape, self.dtype)


def _top_op(totals: Sequence[Finding], ops: Sequence[Finding], sign: float) -> str | None:
    """The op that moved most in the cause's direction: from the total's attribution,
    else from the op series."""
    best: tuple[float, str] | None = None
    for f in totals:
        for a in f.attribution:
            if sign * a.delta > 0 and (best is None or sign * a.delta > best[0]):
                best = (sign * a.delta, a.op)
    if best is not None:
        return best[1]
    moved = [
        (sign * math.log(f.ratio), f.series.op)
        for f in ops
        if f.series.op and f.ratio and f.ratio > 0 and sign * math.log(f.ratio) > 0
    ]
    return max(moved)[1] if moved else (ops[0].series.op if ops else None)


def _place(f: Finding) -> SeriesConfig:
    return f.series.config


def flagged_workloads(doc: FindingsDocument) -> list[FlaggedWorkload]:
    """The (workload, shape, dtype) of every cause of ``doc``, in the comment's order."""
    out: list[FlaggedWorkload] = []
    seen: set[str] = set()
    for view in cause_views(doc):
        c = view.cause
        sign = -1.0 if c.direction == "improvement" else 1.0
        for place in c.places:
            totals = [f for f in view.totals if _place(f) == place]
            ops = [f for f in view.ops if _place(f) == place]
            fw = FlaggedWorkload(*place, _top_op(totals, ops, sign), c.direction)
            if fw.key not in seen:
                seen.add(fw.key)
                out.append(fw)
    return out


def trace_file_name(workload: str, shape: str, dtype: str) -> str:
    """The trace file ``neuronasv run`` writes for a workload (file-system safe)."""
    from neuronasv.measure.profiling import trace_file_stem  # torch-free import

    return trace_file_stem(workload, shape, dtype) + ".json.gz"


def trace_path(side: str, commit: str, workload: str, shape: str, dtype: str) -> str:
    """``base-1a2b3c4d/rmsnorm.naive-4x512-bfloat16.json.gz``: where the PR workflow puts a
    flagged workload's trace inside :data:`TRACES_ARTIFACT`. ``side`` is base or head."""
    if side not in ("base", "head"):
        raise ValueError(f"side must be base or head, got {side!r}")
    return f"{side}-{commit[:8]}/{trace_file_name(workload, shape, dtype)}"


def with_trace_links(
    doc: FindingsDocument, url: str | None, flagged: Iterable[FlaggedWorkload] | None = None
) -> FindingsDocument:
    """``doc`` with each side's ``trace_url`` set to ``url`` (where the traces can be
    downloaded: the artifact's page, or the run's page when its id is unknown) and its
    ``traces`` naming the file of every flagged workload (:func:`trace_path`)."""
    if doc.base is None or doc.head is None:
        return doc
    fws = list(flagged if flagged is not None else flagged_workloads(doc))[:_MAX]
    sides = []
    for word, ref in (("base", doc.base), ("head", doc.head)):
        traces = {fw.key: trace_path(word, ref.commit, fw.workload, fw.shape, fw.dtype)
                  for fw in fws}  # fmt: skip
        sides.append(replace(ref, trace_url=url, traces=traces))
    return replace(doc, base=sides[0], head=sides[1])
