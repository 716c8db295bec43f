"""One set of builders for the documents, histories and profiles tests make by hand.

Defaults are the plainest valid values (commits ``a…a``/``b…b`` on machine ``m``, the
4x512 bf16 naive RMSNorm); a test names only what it is about.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

from neuronasv.model import (
    ChangePoint,
    Estimate,
    Finding,
    FindingsDocument,
    OpProfile,
    RowState,
    RunRef,
    SeriesId,
    WorkloadProfile,
)

BASE = "a" * 40
HEAD = "b" * 40


def compare_doc(
    *findings: Finding, base: str = BASE, head: str = HEAD, machine: str = "m", **fields: Any
) -> FindingsDocument:
    """A compare document of ``findings`` (base vs head on ``machine``)."""
    return FindingsDocument(
        "compare", RunRef(base, machine), RunRef(head, machine), findings, **fields
    )


def history_doc(
    *change_points: ChangePoint, head: str | None = None, machine: str = "m", **fields: Any
) -> FindingsDocument:
    """A history document of ``change_points`` (``head``: its newest commit, if any)."""
    return FindingsDocument(
        mode="history",
        base=None,
        head=None if head is None else RunRef(head, machine),
        change_points=change_points,
        **fields,
    )


def op(name: str, *times: float, calls: float = 1.0, **fields: Any) -> OpProfile:
    """An op row: ``times`` are its self device (and CPU) times per sample, µs."""
    return OpProfile(name, calls, tuple(times), tuple(times), **fields)


def profile(
    name: str = "rmsnorm.naive",
    *ops: OpProfile,
    backend: str = "cpu",
    shape: str = "4x512",
    dtype: str = "bfloat16",
    times: tuple[float, ...] = (1.0, 1.0),
    **fields: Any,
) -> WorkloadProfile:
    """A workload profile with ``ops`` (total device time ``times``, µs)."""
    return WorkloadProfile(name, backend, shape, dtype, times, tuple(ops), **fields)


#: Old verdict words as the row state they meant (tests written before findings schema 4).
VERDICT_STATES: dict[str, dict[str, Any]] = {
    "regression": {"time": "slower"},
    "improvement": {"time": "faster"},
    "noisy": {"time": "undecided"},
    "unchanged": {"time": "noise"},
    "new": {"presence": "new"},
    "removed": {"presence": "removed"},
    "failed": {"presence": "failed"},
}


def finding(
    series: SeriesId,
    verdict: str | None = None,
    *,
    unit: str = "seconds",
    base: float | None = 1e-5,
    head: float | None = 1e-5,
    ci: tuple[float, float] | None = None,
    n: tuple[int, int] = (0, 0),
    source: str = "first run",
    state: RowState | None = None,
    **fields: Any,
) -> Finding:
    """A row: its estimate (``base``, ``head``, the CI ``ci`` of head/base) and state
    (``verdict``, an old verdict word, sets the time axis or presence; ``state`` wins;
    the state's keyword fields — ``time``, ``work``, ``exact``, ``presence``,
    ``confirmed``, ``gate`` — may be given directly)."""
    keys = ("time", "work", "exact", "presence", "confirmed", "gate",
            "exact_base", "exact_head")  # fmt: skip
    st_fields = {k: fields.pop(k) for k in keys if k in fields}
    if state is None:
        state = RowState(**{**VERDICT_STATES.get(verdict or "", {}), **st_fields})
    if state.presence == "new":
        base = None
    elif state.presence in ("removed", "failed"):
        head = None
    est = Estimate(
        unit=unit,
        base=base,
        head=head,
        source=source,  # type: ignore[arg-type]
        ci_low=ci[0] if ci else None,
        ci_high=ci[1] if ci else None,
        n_base=n[0],
        n_head=n[1],
    )
    return Finding(series=series, estimate=est, state=state, **fields)


_TIME_WORDS = {"slower": "regression", "faster": "improvement", "undecided": "noisy",
               "noise": "unchanged"}  # fmt: skip
_COUNT_WORDS = {"more": "regression", "fewer": "improvement", "same": "unchanged",
                "unsteady": "noisy"}  # fmt: skip


def verdict_of(f: Finding) -> str:
    """The old verdict word of a row's *measured or counted* decision (its time axis, or an
    instruction row's count, or its presence): what tests written before findings schema 4
    asserted. The exact work's direction is not in it (see ``RowState.direction``)."""
    st = f.state
    if st.presence != "both":
        return st.presence
    if st.time != "none":
        return _TIME_WORDS[st.time]
    return _COUNT_WORDS.get(st.exact, "unchanged")


@contextlib.contextmanager
def logged_lines(name: str = "neuronasv", level: int = logging.INFO) -> Iterator[list[str]]:
    """The messages logged under ``name`` while inside (any scope, unlike ``caplog``):
    what a test once collected with a ``progress=lines.append`` callable."""
    lines: list[str] = []

    class Recorder(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    logger = logging.getLogger(name)
    handler, old = Recorder(level), logger.level
    logger.addHandler(handler)
    logger.setLevel(level)
    try:
        yield lines
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old)
