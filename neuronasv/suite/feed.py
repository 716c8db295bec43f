"""What a suite class's ``setup_cache`` returns: one profile per (shape, dtype), as builtins.

Every generated class (:mod:`neuronasv.suite.build`) has one ``setup_cache``; asv runs it
once and hands its result to every parameter combination of the class. Its body is here:

* with the commit's pre-pass (``NEURONASV_PREPASS_DIR``, :mod:`neuronasv.run.prepass`), the
  payload the pre-pass wrote for the class's workload, completed by profiling only the
  (shape, dtype) entries it did not deliver or that failed there;
* without one (plain ``asv run``), a profile of every entry, taken in asv's process.

The pre-pass writes its payloads with :func:`profile_class` too, so both are the same
profile. A profile's series and their samples come from
:meth:`neuronasv.model.WorkloadProfile.series_samples` (the one mapping), through
:func:`series_payload`.

The user's workloads are imported only here, when a profile is taken
(:func:`workload_of`): asv's other processes read builtins from the payload.
"""

from __future__ import annotations

import json
import logging
import os
import traceback
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from neuronasv import env
from neuronasv.fileio import read_regular, write_atomic
from neuronasv.keys import payload_name, profile_key, results_key
from neuronasv.suite.names import payload_path

if TYPE_CHECKING:
    from neuronasv.model.profile import WorkloadProfile

__all__ = [
    "prepass_payload",
    "profile_class",
    "sample_count",
    "series_payload",
    "setup_cache",
    "workload_of",
]

log = logging.getLogger(__name__)

#: A pre-pass payload (every sample of one workload's profiles) is far below this.
MAX_PAYLOAD_BYTES = 256 << 20


def sample_count(repeat: int, rounds: int) -> int:
    """Samples per (shape, dtype) profile: ``repeat * rounds`` unless told otherwise."""
    if env.QUICK.read():
        return 2
    samples = env.SAMPLES.read()
    if samples is not None:
        return max(1, samples)
    return max(1, int(repeat)) * max(1, int(rounds))


def _write_json(folder: str, name: str, payload: dict[str, Any]) -> None:
    os.makedirs(folder, exist_ok=True)
    write_atomic(os.path.join(folder, name), json.dumps(payload, allow_nan=False))


def workload_of(suite: Any) -> Any:
    """The registered ``measure.workloads.Workload`` of a suite class (or instance).

    A class declared from the pre-pass's record (:mod:`neuronasv.suite.declare`) did not
    import the user's workloads module; it is imported now, the suite's way
    (:mod:`neuronasv.suite.usermodule`), before the registry is asked.
    """
    from neuronasv.measure import workloads

    module = getattr(suite, "workloads_module", None)
    if module:
        from neuronasv.suite.usermodule import import_workloads_module

        import_workloads_module(module, getattr(suite, "suite_file", None))
    return workloads.get(suite.workload)


def profile_class(
    suite: Any,
    keys: Sequence[tuple[str, str]] | None = None,
) -> dict[str, Any]:
    """Profile each (shape, dtype) of a suite class once; the payload (builtins only).

    Returns only builtins (the pickle is loaded by light benchmark processes). A failure of
    one (shape, dtype) is recorded for that entry and the others still run. ``keys``
    limits the (shape, dtype) entries (default: all of the class's).
    :func:`~neuronasv.measure.profiling.profile_workload` logs its progress (the pre-pass
    times its phases from those records)
    """
    out_dir = env.PROFILE_OUT.read()
    trace_root = env.TRACE_DIR.read()
    results: dict[str, dict[str, Any]] = {}
    if keys is None:
        keys = [(s, d) for s in suite.shapes for d in suite.dtypes]

    def fail(shape: str, dtype: str, error: str) -> None:
        results[results_key(shape, dtype)] = {"error": error}
        if out_dir:
            key = profile_key(suite.workload, shape, dtype)
            _write_json(out_dir, payload_name(key), {"key": key, "error": error})

    try:
        from neuronasv.measure import backends, profiling

        backend = backends.get_backend(env.BACKEND.read())
        workload = workload_of(suite)
    except Exception as exc:  # the commit's measure code may be broken: say so per entry
        error = f"{type(exc).__name__}: {exc}"
        for shape, dtype in keys:
            fail(shape, dtype, error)
        return {"workload": suite.workload, "results": results}

    skip = workload.skip_reason(backend)
    samples = sample_count(suite.repeat, suite.rounds)
    for shape, dtype in keys:
        key = profile_key(suite.workload, shape, dtype)
        if skip:
            results[results_key(shape, dtype)] = {"skip": skip}
            continue
        try:
            prof = profiling.profile_workload(
                workload,
                backend,
                shape=shape,
                dtype=dtype,
                options=profiling.ProfileOptions(
                    samples=samples,
                    active=suite.active,
                    trace_dir=trace_root,
                    # Device-health canary before/after each profile: stored in the profile
                    # JSON (-> run sidecar), so the analysis can refuse to blame code for a
                    # throttled device (neuronasv.analyse.health).
                    canary=True,
                ),
            )
        except Exception as exc:  # one failing (shape, dtype) must not lose the others
            tb = traceback.format_exc(limit=3)
            fail(shape, dtype, f"{type(exc).__name__}: {exc}\n{tb}")
            continue
        results[results_key(shape, dtype)] = series_payload(prof)
        if env.MEMORY.read():  # the memory metric: its own untimed profiles, after
            from neuronasv.measure.memory import self_bytes

            try:
                mem = self_bytes(workload, backend, shape=shape, dtype=dtype, samples=samples)
            except Exception as exc:  # the time series stand; the memory ones are skipped
                log.warning(f"{key}: memory not measured: {type(exc).__name__}: {exc}")
                mem = None
            if mem is not None:
                results[results_key(shape, dtype)]["memory"] = mem
        if out_dir:
            _write_json(out_dir, payload_name(key), {"key": key, "profile": prof.to_json()})
    return {"workload": suite.workload, "backend": backend.name, "results": results}


def series_payload(prof: WorkloadProfile) -> dict[str, Any]:
    """What asv stores of one profile: ``total`` and ``ops`` (op names and ``module:<path>``
    series, docs/asv.md), in seconds, from
    :meth:`~neuronasv.model.WorkloadProfile.series_samples` — the one profile → series
    mapping, the one confirm and ``compare --round-*`` read back from profile documents."""
    series = prof.series_samples("seconds")
    total = series.pop(None)
    return {"total": total, "ops": {k: v for k, v in series.items() if k is not None}}


def prepass_payload(suite: Any) -> dict[str, Any] | None:
    """The pre-pass payload of ``suite``'s workload, when it is there and fits the class."""
    folder = env.PREPASS_DIR.read()
    if not folder:
        return None
    path = payload_path(folder, suite.workload)
    try:  # a regular file only: a FIFO there must not hang setup_cache
        payload = json.loads(read_regular(path, MAX_PAYLOAD_BYTES))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, RecursionError) as exc:
        log.warning(f"neuronasv suite: ignoring unreadable pre-pass {path}: {exc}")
        return None
    fits = (
        isinstance(payload, dict)
        and payload.get("workload") == suite.workload
        and payload.get("shapes") == list(suite.shapes)
        and payload.get("dtypes") == list(suite.dtypes)
        and payload.get("samples") == sample_count(suite.repeat, suite.rounds)
        and payload.get("active") == suite.active
        and isinstance(payload.get("results"), dict)
    )
    return payload if fits else None


def setup_cache(suite: Any) -> dict[str, Any]:
    """What every class's ``setup_cache`` returns: the pre-pass payload, completed.

    Entries the pre-pass did not deliver, or that failed in its shared process, are
    profiled here in asv's fresh process (the behaviour without a pre-pass).
    """
    from neuronasv.suite.instr import instr_payload

    instr = instr_payload(suite.workload) if suite.instr_ops is not None else {}
    payload = prepass_payload(suite)
    if payload is None:
        return {**profile_class(suite), "instr": instr}
    results: dict[str, Any] = payload["results"]
    todo = [
        (s, d)
        for s in suite.shapes
        for d in suite.dtypes
        if not isinstance(entry := results.get(results_key(s, d)), dict) or "error" in entry
    ]
    if todo:
        rest = profile_class(suite, todo)
        results.update(rest["results"])
        payload.setdefault("backend", rest.get("backend"))
    return {
        "workload": suite.workload,
        "backend": payload.get("backend"),
        "results": results,
        "instr": instr,
    }
