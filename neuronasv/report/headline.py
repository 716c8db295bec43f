"""A finding's one-line sentence (the headline a reviewer reads) and its CI wording.

Analyse returns data (findings with ratios, intervals and signed attribution); the words
around them live here, in report, beside the other renderers.
"""

from __future__ import annotations

import math

from neuronasv.dtypes import short_name
from neuronasv.format import format_calls_per_iter, format_delta_pct, format_signed, pct_number
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
    return f" ({n(c.calls_head)} calls)"


def headline(finding: Finding) -> str:
    """The sentence a reviewer reads.

    Example: ``rmsnorm.naive 4x512 bf16: +18 % (CI 12–25 %); aten::mul +0.41 ms (3 calls),
    4 other ops +0.03 ms`` (signed parts that add up to the ops' total change), with
    ``(re-measured rounds)`` when the figures and parts come from the rounds. Without a
    ratio it states the verdict (``new``, ``failed``, ...).
    """
    s = finding.series
    if s.workload is not None:
        name = " ".join(x for x in (s.workload, s.shape or "", short_name(s.dtype)) if x)
        if s.op:
            name += f" · {s.op}"
    else:
        name = s.label
    if finding.ratio is None or not math.isfinite(finding.ratio):
        return f"{name}: {finding.verdict}"
    text = f"{name}: {format_delta_pct(finding.ratio)}"
    if finding.ci_low is not None and finding.ci_high is not None:
        text += f" ({ci_text(finding.ci_low, finding.ci_high)})"
    if finding.attribution:
        # Signed parts that add up (the top op and the rest), never "explains 160 %".
        top, rest = finding.attribution[0], finding.attribution[1:]
        text += f"; {top.op} {format_signed(top.delta, finding.unit)}{_calls(top)}"
        moved = [a for a in rest if a.delta != 0.0]
        if moved:
            other = sum(a.delta for a in moved)
            word = "op" if len(moved) == 1 else "ops"
            text += f", {len(moved)} other {word} {format_signed(other, finding.unit)}"
    if finding.from_rounds:  # the figures and the parts: the same re-measured rounds
        text += " (re-measured rounds)"
    return text
