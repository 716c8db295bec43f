"""Instruction counts of one configuration, from the callgrind pass (exact, not sampled).

Stored on :class:`~neuronasv.model.profile.WorkloadProfile` (``instructions``) in the run
sidecar; produced by :mod:`neuronasv.measure.instructions` inside one valgrind process per
commit (``docs/instructions.md``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from neuronasv.model._codec import Model

__all__ = ["InstructionCounts"]


@dataclass(frozen=True)
class InstructionCounts(Model):
    """Instructions per iteration of one (workload, shape, dtype), counted under callgrind.

    Attributes:
        total: the whole step, per iteration.
        ops: op (``aten::mul``) -> instructions of its calls per iteration (native code:
            bindings, dispatcher, kernel and the ops it calls internally).
        modules: ``module:<path>`` -> the instructions of the ops in that module and below.
        deterministic: every count was the same when taken twice in a row; False means
            these counts are not judged (said, never a verdict).
        unstable: the targets whose two counts differed (``total``, op or module names).
        valgrind, torch: the versions that produced the counts.
    """

    _what = "instruction counts"

    total: float
    ops: Mapping[str, float] = field(default_factory=dict)
    modules: Mapping[str, float] = field(default_factory=dict)
    deterministic: bool = True
    unstable: tuple[str, ...] = ()
    valgrind: str = ""
    torch: str = ""

    def get(self, name: str | None) -> float | None:
        """The count of an op or ``module:<path>`` series, the total for None."""
        if name is None:
            return self.total
        return self.ops.get(name, self.modules.get(name))
