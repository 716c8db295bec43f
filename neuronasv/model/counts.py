"""The counts of one configuration from a counting pass (exact, not sampled).

The one count type of the metrics a pass counts and the run sidecar keeps
(:data:`neuronasv.metrics.IN_SIDECAR`: the registry entries with a ``sidecar_key``): the
metric's collector produces it inside its pass, the runner reads it back from the pass's
file, and :class:`~neuronasv.model.profile.WorkloadProfile` stores it under the entry's
``sidecar_key``, without ``calls`` (the collector's docs: docs/metrics.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from neuronasv.errors import CorruptResultsError
from neuronasv.metrics import IN_SIDECAR
from neuronasv.model._codec import Model, spec
from neuronasv.units import value_problem

__all__ = ["PassCounts"]

#: The unit counts are checked in: the sidecar metric's (one today; a second one gives the
#: count type its metric's name).
_UNIT = IN_SIDECAR[0].unit


def _count(value: Any, name: str, source: str) -> float:
    """A count in range (:func:`neuronasv.units.value_problem`), else a clear error: a
    negative or fractional count is not what the pass writes (issue 28)."""
    problem = value_problem(_UNIT, value)
    if problem:
        raise CorruptResultsError(f"{source}: {_UNIT} count {name}: {problem}"[:300])
    return float(value)


def _calls(data: Mapping[str, Any], source: str) -> dict[str, float]:
    raw = data.get("calls", {})
    if not isinstance(raw, Mapping):
        raise CorruptResultsError(f"{source}: field 'calls' must be an object")
    out = {}
    for k, v in raw.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < math.inf:
            raise CorruptResultsError(f"{source}: calls of {str(k)[:80]!r}: {v!r}"[:300])
        out[str(k)] = float(v)
    return out


def _total(data: Mapping[str, Any], source: str) -> float:
    if "total" not in data:
        raise CorruptResultsError(f"{source}: field 'total' is missing")
    return _count(data["total"], "total", source)


def _counts(key: str) -> Callable[[Mapping[str, Any], str], dict[str, float]]:
    def decode(data: Mapping[str, Any], source: str) -> dict[str, float]:
        raw = data.get(key, {})
        if not isinstance(raw, Mapping):
            raise CorruptResultsError(f"{source}: field {key!r} must be an object")
        return {str(k): _count(v, repr(str(k))[:80], source) for k, v in raw.items()}

    return decode


@dataclass(frozen=True)
class PassCounts(Model):
    """One (workload, shape, dtype)'s counts per iteration, from its metric's counting pass.

    Attributes:
        total: the whole step, per iteration.
        ops: op (``aten::mul``) -> the count of its calls per iteration (native code:
            bindings, dispatcher, kernel and the ops it calls internally).
        modules: ``module:<path>`` -> the count of the ops in that module and below.
        Every count is a whole number in the metric's range, checked when read.
        calls: op -> calls per iteration seen by the pass's dispatch mode (the pass's
            record; not kept in a sidecar).
        deterministic: every count was the same when taken twice in a row; False means
            these counts are not judged (said, never a verdict).
        unstable: the targets whose two counts differed (``total``, op or module names).
        why: one line per kind of unstable target, ``total`` (the whole step) and ``ops``
            (every op and module: the pass checks their replays together), on where the
            two counts differed and, where known, the cause
            (the collector's ``explain``).
        valgrind, torch: the versions that produced the counts.
    """

    _what = "pass counts"

    total: float = field(metadata=spec(decode=_total))
    ops: Mapping[str, float] = field(default_factory=dict, metadata=spec(decode=_counts("ops")))
    modules: Mapping[str, float] = field(
        default_factory=dict, metadata=spec(decode=_counts("modules"))
    )
    calls: Mapping[str, float] = field(
        default_factory=dict, metadata=spec(decode=_calls, omit_empty=True)
    )
    deterministic: bool = True
    unstable: tuple[str, ...] = ()
    why: Mapping[str, str] = field(default_factory=dict, metadata=spec(omit_empty=True))
    valgrind: str = ""
    torch: str = ""

    def get(self, name: str | None) -> float | None:
        """The count of an op or ``module:<path>`` series, the total for None."""
        if name is None:
            return self.total
        return self.ops.get(name, self.modules.get(name))

    def why_unstable(self, target: str) -> str:
        """Where the two counts of ``target`` (``total``, an op or ``module:<path>``)
        differed, in one line; empty when not said (or not unstable)."""
        return self.why.get("total" if target == "total" else "ops", "")
