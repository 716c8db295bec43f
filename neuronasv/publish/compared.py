"""The newest commit's comparison as the site prints and draws it: the finding's own numbers.

A row of the findings document (``neuronasv compare``/``confirm``, or the newest-commit
part of ``neuronasv regressions``) carries one estimate: base, head and Δ. The PR comment
prints it; the site's index, its workload pages, their charts and the commit details must
print the *same* text, so a reviewer who follows the comment's link sees ``87.0 µs →
155 µs, +80 %`` again — not asv's first-run median of the same commit (194 µs), which is
a different measurement. This module is the one place the site reads that estimate
(:func:`estimate_of`) and words it (:func:`compared_of`, through :mod:`neuronasv.format`
as the comment does); every other part of the site takes a :class:`Compared`.

Older commits are drawn from asv's results as they are (labelled so): only the two
commits the comparison is about take the comparison's values.
"""

from __future__ import annotations

from dataclasses import dataclass

from neuronasv.format import format_delta_pct, format_pair, format_value, plural
from neuronasv.model import Finding

__all__ = ["ASV_SOURCE", "Compared", "compared_of", "estimate_of"]

#: What a history point that is not the comparison's is (the commit details say it).
ASV_SOURCE = "asv result of this commit's run"

_SEP = "\x00"


@dataclass(frozen=True)
class Compared:
    """One row's newest-commit comparison, as printed.

    Attributes:
        base_col, head_col: commit indices of base (the parent) and head on the machine
            (``base_col`` None when the parent has no results here).
        base, head: the estimate's values (None where a side has none: new/removed).
        base_label, head_label: their text, on one scale (:func:`format_pair`), exactly
            as the comment prints them.
        change: the estimate's Δ (``+80 %``; "" without one).
        source: ``rounds``, ``first run`` or ``exact count``.
        source_text: how the numbers were measured, for the commit details.
        raw_base, raw_head: asv's own result at those commits (printed beside, never
            drawn: the chart draws the comparison's), "" when asv has none.
    """

    base_col: int | None
    head_col: int
    base: float | None
    head: float | None
    base_label: str
    head_label: str
    change: str
    source: str
    source_text: str
    raw_base: str = ""
    raw_head: str = ""


def estimate_of(f: Finding) -> tuple[float | None, float | None, float | None, str]:
    """``(base, head, ratio, source)`` of a finding's :class:`~neuronasv.model.Estimate`:
    the values every view prints as they are.

    The one reader of the estimate on the site; Δ is ``format_delta_pct(ratio)`` and
    ``ratio`` is ``head / base`` of the printed values, by the estimate's definition.
    """
    e = f.estimate
    return e.base, e.head, e.ratio, e.source


def _source_text(f: Finding, source: str) -> str:
    """How the estimate was measured, in the words of :class:`~neuronasv.model.Estimate`."""
    if source == "exact count":
        return "exact count (callgrind)"
    n = f"{f.n_base} + {f.n_head} samples"
    if source == "rounds":
        rounds = f.estimate.rounds
        n = f"{plural(rounds, 'round')}, {n}" if rounds else n
        return (
            f"the comparison's interleaved rounds ({n}; each side the geometric mean of its"
            " rounds' medians)"
        )
    return f"the comparison of the two runs ({n}; each side its median), not re-measured"


def compared_of(
    f: Finding,
    base_col: int | None,
    head_col: int,
    raw_base: float | None = None,
    raw_head: float | None = None,
) -> Compared:
    """The printed comparison of ``f`` between commit ``base_col`` and ``head_col``."""
    base, head, ratio, source = estimate_of(f)
    base_label, head_label = format_pair(base, head, f.unit, sep=_SEP).split(_SEP)
    return Compared(
        base_col=base_col,
        head_col=head_col,
        base=base,
        head=head,
        base_label=base_label,
        head_label=head_label,
        change=format_delta_pct(ratio) if ratio is not None else "",
        source=source,
        source_text=_source_text(f, source),
        raw_base=format_value(raw_base, f.unit) if raw_base is not None else "",
        raw_head=format_value(raw_head, f.unit) if raw_head is not None else "",
    )
