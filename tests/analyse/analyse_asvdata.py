"""Write honest asv results files (with asv's own ``Results`` class) for analysis tests.

``write_run`` produces ``<results>/<machine>/<hash8>-<env>.json`` exactly as ``asv run
--record-samples`` would (``Results.add_result`` computes the stats from the samples), plus
``machine.json`` and, optionally, a neuronasv sidecar.
"""

from __future__ import annotations

import datetime
import itertools
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from asv.results import Results
from asv.runner import BenchmarkResult

from neuronasv.model import (
    CanaryReading,
    OpProfile,
    RunSidecar,
    SeriesId,
    WorkloadProfile,
)
from neuronasv.store.layout import sidecar_path

ENV = "existing-py_usr_bin_python3.11"
T0 = datetime.datetime(2025, 1, 1, tzinfo=datetime.timezone.utc)


@dataclass
class Bench:
    """One asv benchmark: parameter lists (repr strings) and, per combination, samples.

    A combination's entry is a list of samples, ``None`` (failed) or ``math.nan`` (skipped).
    """

    name: str
    params: list[list[str]]
    values: list[Sequence[float] | float | None]
    version: str = "v1"


def write_run(
    results_dir: str,
    machine: str,
    commit: str,
    date_ms: int,
    benches: Sequence[Bench],
    *,
    env_name: str = ENV,
    record_samples: bool = True,
    sidecar: RunSidecar | None = None,
) -> str:
    """Write one results file with asv's ``Results``; returns its path."""
    r = Results({"machine": machine, "python": "3.11"}, {}, commit, date_ms, "3.11", env_name, {})
    for b in benches:
        result: list[float | None] = []
        samples: list[list[float] | None] = []
        number: list[int | None] = []
        for v in b.values:
            if v is None:
                result.append(None)
                samples.append(None)
                number.append(None)
            elif isinstance(v, float) and math.isnan(v):
                result.append(math.nan)
                samples.append(None)
                number.append(None)
            else:
                s = [float(x) for x in v]  # type: ignore[union-attr]
                result.append(sorted(s)[len(s) // 2])
                samples.append(s)
                number.append(1)
        r.add_result(
            {"name": b.name, "version": b.version, "params": b.params},
            BenchmarkResult(
                result=result, samples=samples, number=number, errcode=0, stderr="", profile=None
            ),
            started_at=T0,
            record_samples=record_samples,
        )
    r.save(results_dir)
    mj = os.path.join(results_dir, machine, "machine.json")
    if not os.path.exists(mj):
        with open(mj, "w") as fh:
            json.dump({"machine": machine, "version": 1}, fh)
    path = os.path.join(results_dir, r._filename)  # asv's own naming
    if sidecar is not None:
        with open(sidecar_path(path), "w", encoding="utf-8") as fh:
            fh.write(sidecar.dumps())
    return path


def neuronasv_run(
    results_dir: str,
    machine: str,
    commit: str,
    date_ms: int,
    workloads: Mapping[tuple[str, str, str], Mapping[str, tuple[float, Sequence[float]]]],
    *,
    fingerprint: Mapping[str, str] | None = None,
    benchmark: str = "devtime.DeviceTime.track_devtime",
    all_ops: Sequence[str] | None = None,
    canary: CanaryReading | None = None,
) -> str:
    """A run as ``neuronasv run`` stores it: one parameterised asv benchmark
    (workload, shape, dtype, op) in seconds + a sidecar with the op tables (µs).

    ``canary`` is stored with every workload profile, as the suite stores one per profile.

    ``workloads[(name, shape, dtype)][op] = (calls_per_iter, samples_us)``; the total is
    the per-sample sum of the ops. Ops not present get NaN (like the plugin).
    """
    keys = sorted(workloads)
    ops = sorted(all_ops or {op for w in workloads.values() for op in w})
    p_w = sorted({repr(k[0]) for k in keys})
    p_s = sorted({repr(k[1]) for k in keys})
    p_d = sorted({repr(k[2]) for k in keys})
    p_o = [repr("total")] + [repr(o) for o in ops]
    values: list[Sequence[float] | float | None] = []
    series: list[SeriesId] = []
    profiles: list[WorkloadProfile] = []
    for w, s, d, o in itertools.product(p_w, p_s, p_d, p_o):
        key = (eval(w), eval(s), eval(d))
        op = eval(o)
        table = workloads.get(key)
        if table is None:
            values.append(math.nan)
            continue
        if op == "total":
            n = len(next(iter(table.values()))[1])
            tot = [sum(t[1][i] for t in table.values()) for i in range(n)]
            values.append([x * 1e-6 for x in tot])
        elif op in table:
            values.append([x * 1e-6 for x in table[op][1]])
        else:
            values.append(math.nan)
        series.append(
            SeriesId(benchmark, (w, s, d, o), key[0], key[1], key[2], None if op == "total" else op)
        )
    for key in keys:
        table = workloads[key]
        n = len(next(iter(table.values()))[1])
        tot = tuple(sum(t[1][i] for t in table.values()) for i in range(n))
        profiles.append(
            WorkloadProfile(
                name=key[0],
                backend="cpu",
                shape=key[1],
                dtype=key[2],
                device_time_us=tot,
                ops=tuple(
                    OpProfile(op, calls, tuple(smp), tuple(smp))
                    for op, (calls, smp) in sorted(table.items())
                ),
                device_time_is_cpu=True,
                canary=canary,
            )
        )
    sc = RunSidecar(
        machine=machine,
        commit_hash=commit,
        env_name=ENV,
        fingerprint=dict(fingerprint or {"backend": "cpu", "device_model": "cpu", "torch": "2.13"}),
        profiles=tuple(profiles),
        series=tuple(series),
    )
    return write_run(
        results_dir,
        machine,
        commit,
        date_ms,
        [Bench(benchmark, [p_w, p_s, p_d, p_o], values)],
        sidecar=sc,
    )
