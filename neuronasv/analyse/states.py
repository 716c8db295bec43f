"""The one state rule every view shows (pure, light: no scipy, no analysis imports).

The site (``neuronasv.publish``) and ``neuronasv regressions`` (:mod:`neuronasv.analyse.newest`)
both call :func:`series_state`, so a series reads the same everywhere. States, most severe
first (:data:`STATES`): ``regression`` (an open, unacknowledged change-point regression),
``confirmed`` (the newest commit regressed against its parent and an interleaved
re-measurement confirmed it), ``suspect`` (it regressed against its parent, not
re-measured), ``failed`` (the benchmark failed at the newest commit), ``acknowledged``,
``more-work`` (the newest commit moves more bytes/FLOPs than its parent and its time was
not decided slower), ``more-instructions`` / ``fewer-instructions`` (an instruction-count
series: its own exact count rose / fell; :func:`instruction_state`), ``improved`` (latest
change point an improvement, or a confirmed faster time at the newest commit), ``new`` (an
op only the newest commit runs), ``ok``.
Noise is not a state: it is a level shown beside the state.

The newest-commit states come from the row states analyse stored in the findings
document (``Finding.state``), so every view says what the comparison said.

Kept apart from :mod:`~neuronasv.analyse.newest` because the site imports it: importing
the comparison (scipy.stats) would cost the publish command seconds and ~70 MB.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from neuronasv.analyse.exact import is_exact
from neuronasv.format import format_delta_pct
from neuronasv.model import ChangePoint, Finding, FindingsDocument

__all__ = [
    "ALARMS",
    "MIN_POINTS",
    "STATES",
    "Coverage",
    "change_text",
    "coverage_of",
    "instruction_state",
    "newest_state",
    "series_state",
]

#: Fewer points than this and the change-point detector (:func:`changepoints.detect`)
#: does not run: two a side for its t-test.
MIN_POINTS = 4

STATES = (
    "regression",
    "confirmed",
    "suspect",
    "more-work",
    "more-instructions",
    "failed",
    "acknowledged",
    "improved",
    "fewer-instructions",
    "new",
    "ok",
)
#: States someone has to act on (the index's "regressions only" filter, the text summary).
ALARMS = frozenset({"regression", "confirmed", "suspect", "more-work", "more-instructions"})


@dataclass(frozen=True)
class Coverage:
    """Whether the change-point detector could run on one machine's history.

    Attributes:
        machine: asv machine name.
        commits: commits with results on that machine.
        need: the fewest points the detector needs (:data:`changepoints.MIN_POINTS`).
    """

    machine: str
    commits: int
    need: int = MIN_POINTS

    @property
    def ran(self) -> bool:
        return self.commits >= self.need

    @property
    def sentence(self) -> str:
        if self.ran:
            return f"change points over {self.commits} commits"
        return f"too few commits for change points (have {self.commits}, need {self.need})"

    def to_json(self) -> dict[str, Any]:
        return {
            "machine": self.machine,
            "commits": self.commits,
            "need": self.need,
            "ran": self.ran,
            "note": self.sentence,
        }

    @classmethod
    def from_json(cls, data: Any) -> Coverage | None:
        if not isinstance(data, Mapping):
            return None
        try:
            return cls(str(data["machine"]), int(data["commits"]), int(data["need"]))
        except (KeyError, TypeError, ValueError):
            return None


def coverage_of(doc: FindingsDocument) -> list[Coverage]:
    """The coverage recorded in a history document's settings (empty for older documents)."""
    raw = doc.settings.get("coverage")
    if not isinstance(raw, list):
        return []
    return [c for c in (Coverage.from_json(x) for x in raw) if c is not None]


def newest_state(f: Finding | None) -> str | None:
    """The state a newest-commit finding gives on its own (None: nothing to say).

    From the row state analyse stored (:class:`~neuronasv.model.RowState`), never from the
    verdict: ``confirmed`` is a slower time the rounds confirmed, ``suspect`` a slower time
    from one run a side, ``more-work`` more bytes/FLOPs whose time was not decided
    slower, ``improved`` a confirmed faster time, ``new`` an op only the newest commit
    runs (never ``ok``: it has no history to be ok against).
    """
    if f is None:
        return None
    if f.verdict == "failed":
        return "failed" if f.acknowledged is None else "acknowledged"
    if is_exact(f.unit):
        return instruction_state(f)
    st = f.state
    if st is None:
        return None
    if st.time == "slower" or (st.work == "more" and st.time != "faster"):
        if f.acknowledged is not None:
            return "acknowledged"
        if st.time == "slower":
            return "confirmed" if st.confirmed else "suspect"
        return "more-work"
    if st.time == "faster" and st.confirmed:
        return "improved"
    if f.verdict == "new":
        return "new"
    return None


def instruction_state(f: Finding) -> str | None:
    """The state of an instruction-count finding, on its own axis: its count's sign.

    ``more-instructions`` / ``fewer-instructions`` where head's exact count is above /
    below base's (``acknowledged`` for more, when acknowledged), ``new`` for a series only
    head counts, None for the same count or a count the pass found not deterministic
    (``noisy``: not judged). Never a work or time word: the workload's work axis
    (``Finding.state.work``) says nothing about this one count's direction.
    """
    if f.verdict == "new":
        return "new"
    if f.verdict == "noisy" or f.base is None or f.head is None or f.head == f.base:
        return None
    if f.head > f.base:
        return "more-instructions" if f.acknowledged is None else "acknowledged"
    return "fewer-instructions"


def series_state(cps: Sequence[ChangePoint], newest: Finding | None) -> str:
    """One series' state from its change points and its newest-commit finding (see module)."""
    candidates = []
    if any(c.open and c.kind == "regression" and c.acknowledged is None for c in cps):
        candidates.append("regression")
    ns = newest_state(newest)
    if ns is not None:
        candidates.append(ns)
    if any(c.open and c.kind == "regression" and c.acknowledged is not None for c in cps):
        candidates.append("acknowledged")
    if cps and max(cps, key=lambda c: c.index).kind == "improvement":
        candidates.append("improved")
    return min(candidates, key=STATES.index) if candidates else "ok"


def change_text(f: Finding | None) -> str:
    """``+45 %`` for a finding's ratio ("" when there is none)."""
    if f is None or f.ratio is None or not math.isfinite(f.ratio):
        return ""
    return format_delta_pct(f.ratio)
