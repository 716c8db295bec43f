"""The ``instr_`` benchmark type: instructions per iteration counted under callgrind.

The counts come from one callgrind process per commit (``neuronasv run --metrics
devtime,instructions``, see ``docs/instructions.md``); the benchmark method returns the
count that process measured for its parameters::

    def instr_total(self, cache, shape, dtype) -> float | None

asv stores it like a ``track_`` value (one number, type ``track``, unit
``instructions``): the count is exact — the same code gives the same number — so there
are no samples and no statistics; ``asv compare`` and ``asv publish`` show the number.
Returning ``None`` skips that parameter combination (asv: NaN, ``n/a``). Negative or
non-finite counts are errors.

Import-light (no torch): asv imports it in every benchmark process.
"""

from __future__ import annotations

import math
import re
from typing import Any

from asv_runner.benchmarks._base import Benchmark
from asv_runner.benchmarks.mark import SkipNotImplemented

__all__ = ["InstrBenchmark"]


class InstrBenchmark(Benchmark):
    """asv benchmark type for methods named ``instr_*`` (or classes ``Instr*``)."""

    name_regex = re.compile(r"^(Instr[A-Z_].+)|(instr_.+)$")

    def __init__(self, name: str, func: Any, attr_sources: list[Any]) -> None:
        Benchmark.__init__(self, name, func, attr_sources)
        self.type = "track"
        self.unit = "instructions"

    def run(self, *param: Any) -> float:
        raw = self.func(*param)
        if raw is None:
            raise SkipNotImplemented(f"{self.name}: not counted for {self._current_params}")
        try:
            value = float(raw)
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"{self.name}: an instr_ benchmark returns a number, got {type(raw).__name__}"
            ) from exc
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"{self.name}: invalid instruction count {value!r}")
        return value


# asv_runner reads this list from every module of <plugin>/benchmarks/.
export_as_benchmark = [InstrBenchmark]
