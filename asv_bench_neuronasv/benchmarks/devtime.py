"""The ``devtime_`` benchmark type: a method returns measured samples, asv stores them.

asv's ``track_`` type stores one scalar, so ``asv compare`` can only judge it by a factor.
A ``devtime_`` benchmark instead returns *samples* (seconds) that were measured elsewhere,
typically by a profiler run in ``setup_cache`` whose result feeds many series; this type
hands them to asv as ``{"samples": [...], "number": 1}``, exactly what ``time_`` returns,
so asv computes statistics, keeps the samples with ``--record-samples`` and applies its
Mann-Whitney test in ``asv compare``.

The benchmark method::

    def devtime_total(self, cache, shape, dtype) -> Sequence[float] | None

returns the samples in seconds. Returning ``None`` (or raising ``NotImplementedError``
in ``setup``) skips that parameter combination: asv records NaN, shown as ``n/a``.
Empty, negative or non-finite samples are errors, never silently zero.

asv attributes honoured (read again in ``do_setup``, where asv injects ``--quick``):

* ``repeat``: at most this many samples are returned per round (``0`` = all; a
  ``(min, max, time)`` tuple uses ``max``). ``asv run --quick`` sets it to 1.
* ``rounds``: asv runs every benchmark ``rounds`` times, interleaved, but runs
  ``setup_cache`` once. When the benchmark uses ``setup_cache``, the cached samples are
  therefore split into ``rounds`` contiguous chunks and each round returns the next
  chunk (a counter file in asv's cache directory, which lives across the rounds), so no
  sample is recorded twice. Default ``rounds`` is 1.

Everything here must stay import-light (no torch): asv imports it in every benchmark
process.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from typing import Any

from asv_runner.benchmarks._base import Benchmark, _get_first_attr
from asv_runner.benchmarks.mark import SkipNotImplemented

__all__ = ["DevtimeBenchmark", "split_rounds"]

_ROUND_FILE_PREFIX = ".devtime-round-"


def split_rounds(samples: Sequence[float], rounds: int, index: int) -> list[float]:
    """Return round ``index`` (0-based, wraps) of ``samples`` split into ``rounds`` chunks.

    Chunks are contiguous and as even as possible; with fewer samples than rounds each
    round gets one sample (reused round-robin, so a round is never empty).
    """
    n = len(samples)
    rounds = max(1, int(rounds))
    if rounds == 1:
        return list(samples)
    i = index % rounds
    if n < rounds:
        return [samples[i % n]]
    size = n // rounds
    end = n if i == rounds - 1 else (i + 1) * size
    return list(samples[i * size : end])


def _repeat_cap(repeat: Any) -> int:
    """asv's ``repeat`` -> the most samples to return (0 = no cap)."""
    if isinstance(repeat, (tuple, list)):
        return int(repeat[1]) if len(repeat) >= 2 else 0
    try:
        return max(0, int(repeat))
    except (TypeError, ValueError):
        return 0


class DevtimeBenchmark(Benchmark):
    """asv benchmark type for methods named ``devtime_*`` (or classes ``Devtime*``)."""

    name_regex = re.compile(r"^(Devtime[A-Z_].+)|(devtime_.+)$")
    #: The samples' unit; whether a sample may be negative (a type of samples in
    #: another unit subclasses this one: ``alloc_``).
    samples_unit = "seconds"
    signed = False

    def __init__(self, name: str, func: Any, attr_sources: list[Any]) -> None:
        Benchmark.__init__(self, name, func, attr_sources)
        # "time" + seconds: asv treats the result like a time_ benchmark everywhere
        # (statistics, compare, publish graphs).
        self.type = "time"
        self.unit = self.samples_unit
        self._load_vars()

    def _load_vars(self) -> None:
        self.repeat = _get_first_attr(self._attr_sources, "repeat", 0)
        self.rounds = int(_get_first_attr(self._attr_sources, "rounds", 1))
        self.number = 1

    def do_setup(self) -> bool:
        result: bool = Benchmark.do_setup(self)
        # asv injects --quick (repeat=1, rounds=1) as extra attributes: read them again.
        self._load_vars()
        return result

    def _round_index(self) -> int:
        """Which round this process is: a counter in asv's setup_cache directory.

        asv runs each round in a new process whose cwd is the setup_cache directory,
        which persists across rounds; without setup_cache the cwd is a fresh temporary
        directory and there is nothing to split.
        """
        key = f"{self.name}|{self._current_params!r}".encode()
        path = _ROUND_FILE_PREFIX + hashlib.sha1(key).hexdigest()[:16]
        try:
            with open(path, encoding="ascii") as fh:
                index = int(fh.read().strip() or 0)
        except (OSError, ValueError):
            index = 0
        try:
            with open(path, "w", encoding="ascii") as fh:
                fh.write(str(index + 1))
        except OSError:
            pass
        return index

    def run(self, *param: Any) -> dict[str, Any]:
        raw = self.func(*param)
        if raw is None:
            raise SkipNotImplemented(f"{self.name}: no samples for {self._current_params}")
        try:
            samples = [float(s) for s in raw]
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"{self.name}: a devtime_ benchmark must return a sequence of seconds,"
                f" got {type(raw).__name__}"
            ) from exc
        if not samples:
            raise ValueError(f"{self.name}: no samples returned (empty capture?)")
        bad = [s for s in samples if not math.isfinite(s) or (s < 0 and not self.signed)]
        if bad:
            must = "finite" if self.signed else "finite, >= 0"
            raise ValueError(f"{self.name}: invalid samples {bad[:3]} (must be {must})")
        if self._setup_cache is not None and self.rounds > 1:
            samples = split_rounds(samples, self.rounds, self._round_index())
        cap = _repeat_cap(self.repeat)
        if cap:
            samples = samples[:cap]
        return {"samples": samples, "number": 1}


# asv_runner reads this list from every module of <plugin>/benchmarks/.
export_as_benchmark = [DevtimeBenchmark]
