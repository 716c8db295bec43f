"""A finding's one-line sentence (the headline a reviewer reads) and its CI wording.

Analyse returns data (findings with ratios, intervals and signed attribution); the words
around them live here, in report, beside the other renderers.
"""

from __future__ import annotations

import math

from neuronasv.dtypes import short_name
from neuronasv.format import format_calls_per_iter, format_delta_pct, format_signed, pct_number
from neuronasv.metrics import by_unit
from neuronasv.model import Finding, OpContribution

__all__ = ["ci_text", "headline"]


def _num(ratio: float, signed: bool = False) -> str:
    return pct_number(ratio - 1.0, signed=signed)


def ci_text(low: float, high: float) -> str:
    """``CI 12–25 %`` when both bounds are on one side of zero, else ``CI -3.1 to +8.0 %``."""
    if (low >= 1.0) == (high >= 1.0) and low >= 1.0:
        return f"CI {_num(low)}–{_num(high)} %"
    if high < 1.0:
        return f"CI {_num(low)} to {_num(high)} %"
    return f"CI {_num(low, True)} to {_num(high, True)} %"


def _calls(c: OpContribution) -> str:
    n = format_calls_per_iter
    if c.calls_base is None and c.calls_head is None:
        return ""
    if c.calls_base is None:
        return f" (new, {n(c.calls_head or 0)} calls)"
    if c.calls_head is None:
        return f" (removed, was {n(c.calls_base)} calls)"
    if c.calls_base != c.calls_head:
        return f" ({n(c.calls_base)}→{n(c.calls_head)} calls)"
    return f" ({n(c.calls_head)} call{'' if c.calls_head == 1 else 's'})"


def headline(finding: Finding) -> str:
    """The sentence a reviewer reads.

    Example: ``rmsnorm.naive 4x512 bf16: +18 % (CI 12–25 %); aten::mul +0.41 ms (3 calls),
    the rest +0.03 ms`` (the top op and the rest add up to the row's change, head - base
    of its estimate), with ``(re-measured rounds)`` when the figures and parts come from
    the rounds. An exact metric's row states its count's change; without a ratio it states
    the row's presence (``new``, ``failed``, ...).
    """
    s = finding.series
    if s.workload is not None:
        name = " ".join(x for x in (s.workload, s.shape or "", short_name(s.dtype)) if x)
        if s.op:
            name += f" · {s.op}"
        metric = by_unit(finding.unit)
        if metric is not None:  # an exact metric's row names it (its twin is the time row)
            name += f" ({metric.name})"
    else:
        name = s.label
    if finding.ratio is None or not math.isfinite(finding.ratio):
        st = finding.state
        word = st.presence if st.presence != "both" else "no change figure"
        return f"{name}: {word}"
    text = f"{name}: {format_delta_pct(finding.ratio)}"
    if finding.ci_low is not None and finding.ci_high is not None:
        text += f" ({ci_text(finding.ci_low, finding.ci_high)})"
    if finding.attribution and finding.estimate.delta is not None:
        # The top op and the rest: signed parts that add up to the row's change.
        top = max(finding.attribution, key=lambda a: (abs(a.delta), a.op))
        text += f"; {top.op} {format_signed(top.delta, finding.unit)}{_calls(top)}"
        rest = finding.estimate.delta - top.delta
        if format_signed(rest, finding.unit).lstrip("+-") != format_signed(
            0.0, finding.unit
        ).lstrip("+-"):
            text += f", the rest {format_signed(rest, finding.unit)}"
    if finding.remeasured:  # the figures and the parts: the same re-measured rounds
        text += " (re-measured rounds)"
    return text
