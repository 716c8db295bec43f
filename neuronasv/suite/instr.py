"""The ``instr_`` benchmarks of a generated suite class (``--metrics devtime,instructions``).

When ``NEURONASV_INSTR_DIR`` names the payloads of the commit's callgrind pass
(:mod:`neuronasv.run.instrpass`), every generated class gets two more benchmarks beside
its ``devtime_`` ones:

* ``instr_total(shape, dtype)`` — instructions per iteration of the whole step;
* ``instr_op(shape, dtype, op)`` — of each op (``aten::mul``) and module
  (``module:block.mlp``), as counted at the dispatch boundaries.

They are of the plugin's ``instr_`` type (``asv_bench_neuronasv``): one number, unit
``instructions``, stored by asv like a ``track_`` value, so ``asv compare`` and
``asv publish`` show them as they are. The op list is fixed at import, like the devtime
one: the machine's op catalogue under ``<backend>:instructions``. Without the variable
(plain ``asv run``, accelerators) the suite has no ``instr_`` benchmarks at all.

Import stays light (no torch): the counts are read from JSON.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from neuronasv import env
from neuronasv.keys import results_key
from neuronasv.suite.names import payload_path

__all__ = ["INSTR_VERSION", "instr_methods", "instr_payload", "known_op"]

log = logging.getLogger(__name__)

#: asv ``version`` of the instruction series: bump when the meaning of the counts changes
#: (what is excluded, how ops are separated).
INSTR_VERSION = "instr-1"


def instr_payload(workload: str) -> dict[str, Any]:
    """``{"shape|dtype": entry}`` of ``workload`` from the pass, ``{}`` without one."""
    folder = env.INSTR_DIR.read()
    if not folder:
        return {}
    path = payload_path(folder, workload)
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning(f"neuronasv suite: ignoring unreadable counts {path}: {exc}")
        return {}
    results = doc.get("results") if isinstance(doc, dict) else None
    return results if isinstance(results, dict) else {}


def _entry(cache: dict[str, Any], shape: str, dtype: str) -> dict[str, Any] | None:
    entry = (cache.get("instr") or {}).get(results_key(shape, dtype))
    if not isinstance(entry, dict) or "total" not in entry:
        return None
    return entry


def known_op(cache: dict[str, Any], shape: str, dtype: str, op: str) -> bool:
    """True when the pass counted ``op`` (an op or ``module:<path>``) for (shape, dtype)."""
    entry = _entry(cache, shape, dtype)
    return entry is not None and (
        op in (entry.get("ops") or {}) or op in (entry.get("modules") or {})
    )


def instr_methods(
    workload: str, shapes: Sequence[str], dtypes: Sequence[str], ops: Sequence[str]
) -> dict[str, Any]:
    """The ``instr_total`` / ``instr_op`` methods of a class (``None`` result = skipped)."""

    def instr_total(self: Any, cache: dict[str, Any], shape: str, dtype: str) -> float | None:
        entry = _entry(cache, shape, dtype)
        return None if entry is None else float(entry["total"])

    instr_total.params = [list(shapes), list(dtypes)]  # type: ignore[attr-defined]
    instr_total.param_names = ["shape", "dtype"]  # type: ignore[attr-defined]
    instr_total.neuronasv_workload = workload  # type: ignore[attr-defined]
    instr_total.neuronasv_series = "total"  # type: ignore[attr-defined]
    instr_total.version = INSTR_VERSION  # type: ignore[attr-defined]
    methods: dict[str, Any] = {"instr_total": instr_total}
    if ops:

        def instr_op(
            self: Any, cache: dict[str, Any], shape: str, dtype: str, op: str
        ) -> float | None:
            entry = _entry(cache, shape, dtype)
            if entry is None:
                return None
            value = (entry.get("ops") or {}).get(op, (entry.get("modules") or {}).get(op))
            return None if value is None else float(value)

        instr_op.params = [list(shapes), list(dtypes), list(ops)]  # type: ignore[attr-defined]
        instr_op.param_names = ["shape", "dtype", "op"]  # type: ignore[attr-defined]
        instr_op.neuronasv_workload = workload  # type: ignore[attr-defined]
        instr_op.neuronasv_series = "op"  # type: ignore[attr-defined]
        instr_op.version = INSTR_VERSION  # type: ignore[attr-defined]
        methods["instr_op"] = instr_op
    return methods
