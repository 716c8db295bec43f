"""The stand-in device profile: what a simulated NeuronCore "ran", and what Neuron
Explorer would make of it (tests only).

A real NTFF is a binary trace only ``neuron-explorer`` reads, so the stand-in NTFF is our
own JSON record of the executions (marked ``"standin"``), and the stand-in NEFF a JSON
header. Everything neuronasv reads is derived from that record here, by the definitions
the Neuron docs give (aws-neuron-sdk ``tools/neuron-explorer/profile-schema-reference.rst``
and the audit, shared/research/neuron-audit-2026-12.md) — facts, not copied files:

* Summary: ``total_time`` = the whole span (semaphore waits included), seconds;
  ``total_active_time`` = the union of non-setup instruction and DMA intervals, seconds;
  ``total_exec_time`` = earliest to latest non-setup instruction or DMA, seconds;
  ``*_percent`` as fractions; per-engine ``<engine>_engine_active_time`` (union, seconds)
  and ``_instruction_count``; ``neuroncore_cycle_count`` = ``total_time`` x the clock.
* summary-json: ``{"<ntff stem>": {summary fields, throttle_avg_util_limit_nc0_percent,
  throttle_active_nc0_time_ns, runtime_version, profiler_version, compiler_version}}``.
* Explorer JSON (legacy): a dict of row lists — ``summary``, ``instruction`` (``timestamp``,
  ``duration`` ns, ``label`` = engine, ``opcode``, ``hlo_name``, ``layer``,
  ``bir_instruction_name``), ``metadata`` (``ntff_version``, ``pe_clock_freq``),
  ``neff_header``, ``warnings`` (``category``, ``message``), ``active_time``.
* Parquet tables (rows): ``Summary``, ``Instruction`` (``start_ts``, ``end_ts``,
  ``duration_ns``, ``engine``, ``opcode``, ``layer``, ``hlo_name``, ...), ``ExecutionInfo``,
  ``Metadata``, ``NeffHeader``, ``ThrottleSummary``, ``ActiveTime``, ``Warning``.

``summary_fields`` in the record limits which summary fields the "tool" emits (an old
profiler without ``total_exec_time``; a trace with only ``total_time``).
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

STANDIN_MARK = "neuronasv stand-in NTFF (tests only; a real NTFF is binary)"
NEFF_MARK = "neuronasv stand-in NEFF (tests only)"
#: The highest NTFF version the stand-in tool reads (the 2.29 tool said "supported: 1 - 6").
SUPPORTED_NTFF = 6
SETUP = frozenset({"EVENT_SEMAPHORE", "NOP", "SET_ORDERING_MODE"})
CLOCK_GHZ = 1.4  # trn1/inf2 NeuronCore clock, as the real samples' cycle counts give


@dataclass(frozen=True)
class Instr:
    start: int
    end: int
    engine: str
    opcode: str
    layer: str = ""
    hlo: str = ""


@dataclass(frozen=True)
class Execution:
    neff: str
    start: int
    end: int
    instrs: tuple[Instr, ...]
    dma: tuple[tuple[int, int], ...] = ()


@dataclass
class Record:
    """One NTFF's worth of device activity."""

    executions: list[Execution] = field(default_factory=list)
    ntff_version: int = 5
    metadata: dict[str, Any] = field(
        default_factory=lambda: {
            "instance_type": "trn2.3xlarge",
            "runtime_version": "2.29.40",
            "driver_version": "2.24.7.0",
            "compiler_version": "2.22.0",
            "profile_schema_version": "12.0.1",
            "neuroncore_clock_freq": CLOCK_GHZ,
        }
    )
    throttle_ns: int = 0
    summary_fields: tuple[str, ...] | None = None
    warnings: tuple[tuple[str, str], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "standin": STANDIN_MARK,
            "ntff_version": self.ntff_version,
            "metadata": self.metadata,
            "throttle_ns": self.throttle_ns,
            "summary_fields": list(self.summary_fields) if self.summary_fields else None,
            "warnings": [list(w) for w in self.warnings],
            "executions": [
                {
                    "neff": e.neff,
                    "start": e.start,
                    "end": e.end,
                    "dma": [list(d) for d in e.dma],
                    "instrs": [vars(i) for i in e.instrs],
                }
                for e in self.executions
            ],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Record:
        if data.get("standin") != STANDIN_MARK:
            raise ValueError("not a stand-in NTFF")
        execs = [
            Execution(
                neff=e["neff"],
                start=e["start"],
                end=e["end"],
                dma=tuple(tuple(d) for d in e.get("dma", [])),  # type: ignore[misc]
                instrs=tuple(Instr(**i) for i in e["instrs"]),
            )
            for e in data["executions"]
        ]
        sf = data.get("summary_fields")
        return cls(
            executions=execs,
            ntff_version=int(data["ntff_version"]),
            metadata=dict(data["metadata"]),
            throttle_ns=int(data.get("throttle_ns", 0)),
            summary_fields=tuple(sf) if sf else None,
            warnings=tuple(tuple(w) for w in data.get("warnings", [])),  # type: ignore[misc]
        )


# -- what a simulated op costs on the simulated core ------------------------------------------
#: (engine, opcode, hlo, ns per element) per op; the numbers are made up but fixed, so the
#: same work always takes the same simulated time.
OP_COSTS: dict[str, tuple[str, str, str, float]] = {
    "mul": ("vector", "TENSOR_TENSOR", "multiply", 0.25),
    "add": ("vector", "TENSOR_SCALAR_PTR", "add", 0.25),
    "mean": ("vector", "TENSOR_REDUCE", "reduce", 0.5),
    "rsqrt": ("scalar", "ACTIVATE", "rsqrt", 1.0),
    "pow": ("scalar", "ACTIVATE", "power", 1.0),
    "mm": ("tensor", "MATMUL", "dot", 0.0),
}
SEMAPHORE_NS = 2000  # a wait before each execution: in total_time, never device time
SETUP_NS = 300
GAP_NS = 1000


def neff_name(op: str, signature: str) -> str:
    """``neff_<hash>_vnc_0.neff`` (the documented session-folder name), hash of the work."""
    h = zlib.crc32(f"{op}|{signature}".encode())
    return f"neff_{h:010d}_vnc_0.neff"


def execution(op: str, numel: int, start: int, *, neff: str, flops: float = 0.0,
              layer: bool = True, in_bytes: int = 0) -> Execution:  # fmt: skip
    """One op run on the simulated core from ``start`` (ns): a semaphore wait, the input
    DMA, then its compute instruction(s), deterministic in the work."""
    engine, opcode, hlo, ns_per = OP_COSTS.get(op, ("vector", "TENSOR_TENSOR", op, 0.5))
    work = int(SETUP_NS + ns_per * numel + flops / 90.0)
    t = start
    instrs = [Instr(t, t + SEMAPHORE_NS, "sync", "EVENT_SEMAPHORE")]
    t += SEMAPHORE_NS
    dma_ns = max(50, in_bytes // 200)
    dma = ((t, t + dma_ns),)
    t += dma_ns
    name = f"aten.{op}" if layer else ""
    # Two overlapping instructions on two engines: the split must not count twice.
    half = work // 2
    instrs.append(Instr(t, t + work, engine, opcode, name, f"{hlo}.1"))
    instrs.append(Instr(t + half, t + half + work // 4, "sync", "DMA_TRIGGER", name, f"{hlo}.1"))
    end = t + work
    return Execution(neff=neff, start=start, end=end, instrs=tuple(instrs), dma=dma)


# -- derived tables ---------------------------------------------------------------------------
def _union(intervals: Iterable[tuple[int, int]]) -> int:
    total, cur_s, cur_e = 0, None, None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None and cur_s is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None and cur_s is not None:
        total += cur_e - cur_s
    return total


def _all_instrs(rec: Record) -> list[Instr]:
    return [i for e in rec.executions for i in e.instrs]


def summary(rec: Record) -> dict[str, Any]:
    """The Summary row (seconds, fractions), limited to ``rec.summary_fields``."""
    instrs = _all_instrs(rec)
    work = [(i.start, i.end) for i in instrs if i.opcode not in SETUP]
    dma = [d for e in rec.executions for d in e.dma]
    every = [(i.start, i.end) for i in instrs] + dma
    if not every:
        row: dict[str, Any] = {"total_time": 0.0, "event_count": 0}
    else:
        t0, t1 = min(s for s, _ in every), max(e for _, e in every)
        total_ns = t1 - t0
        active_ns = _union(work + dma)
        spans = work + dma
        exec_ns = max(e for _, e in spans) - min(s for s, _ in spans) if spans else 0
        row = {
            "total_time": total_ns / 1e9,
            "total_active_time": active_ns / 1e9,
            "total_exec_time": exec_ns / 1e9,
            "total_active_time_percent": active_ns / total_ns if total_ns else 0.0,
            "neuroncore_cycle_count": round(total_ns * CLOCK_GHZ),
            "event_count": sum(1 for i in instrs if i.opcode in SETUP),
            "trace_count": len(instrs) + len(dma),
            "dma_active_time": _union(dma) / 1e9,
        }
        for engine in sorted({i.engine for i in instrs}):
            mine = [
                (i.start, i.end) for i in instrs if i.engine == engine and i.opcode not in SETUP
            ]
            row[f"{engine}_engine_active_time"] = _union(mine) / 1e9
            row[f"{engine}_engine_active_time_percent"] = (
                _union(mine) / total_ns if total_ns else 0.0
            )
            row[f"{engine}_engine_instruction_count"] = sum(1 for i in instrs if i.engine == engine)
    if rec.summary_fields is not None:
        row = {k: v for k, v in row.items() if k in rec.summary_fields}
    return row


def summary_json(rec: Record, name: str, tool_version: str) -> dict[str, Any]:
    """summary-json: one key (the profile), a flat object (fields as the audit read them)."""
    row = dict(summary(rec))
    row["throttle_avg_util_limit_nc0_percent"] = 1.0 if not rec.throttle_ns else 0.75
    row["throttle_active_nc0_time_ns"] = rec.throttle_ns
    row["runtime_version"] = rec.metadata.get("runtime_version")
    row["compiler_version"] = rec.metadata.get("compiler_version")
    row["profiler_version"] = tool_version
    return {name: row}


def parquet_tables(
    rec: Record, neffs: Mapping[str, Mapping[str, Any]], tool_version: str
) -> dict[str, list[dict[str, Any]]]:
    """The Parquet tables as row lists (Parquet column names and units)."""
    instrs = []
    for k, i in enumerate(_all_instrs(rec)):
        instrs.append(
            {
                "start_ts": i.start, "end_ts": i.end, "duration_ns": i.end - i.start,
                "engine": i.engine, "opcode": i.opcode, "operands": "",
                "id": k, "pc": k, "bir_id": f"sg0000:{k}",
                "layer": i.layer or None, "hlo_name": i.hlo or None,
            }
        )  # fmt: skip
    execs = [
        {
            "execution_index": k,
            "neff_name": e.neff,
            "execution_start_ts": e.start,
            "execution_end_ts": e.end,
            "num_subgraphs": 1,
        }
        for k, e in enumerate(rec.executions)
    ]
    meta = {
        "profile_schema_version": rec.metadata.get("profile_schema_version"),
        "ntff_version": rec.ntff_version,
        "num_physical_cores": 1,
        "vnc_enabled": False,
        "neuroncore_clock_freq": CLOCK_GHZ,
        "ticks_per_nanosec": 1,
        "instance_type": rec.metadata.get("instance_type"),
        "runtime_version": rec.metadata.get("runtime_version"),
        "driver_version": rec.metadata.get("driver_version"),
        "compiler_version": rec.metadata.get("compiler_version"),
        "explorer_version": tool_version,
    }
    span = summary(rec).get("total_time") or 0.0
    throttle = [
        {
            "nc_idx": 0,
            "throttle_type": "all",
            "throttle_active_time_ns": rec.throttle_ns,
            "throttle_active_time_percent": rec.throttle_ns / (span * 1e9) if span else 0.0,
            "max_achievable_util_with_throttling_percent": 1.0 if not rec.throttle_ns else 0.75,
        }
    ]
    headers = [dict(h) for h in neffs.values()]
    active = []
    for engine in sorted({i.engine for i in _all_instrs(rec)}):
        for i in _all_instrs(rec):
            if i.engine == engine and i.opcode not in SETUP:
                active.append({"start_ts": i.start, "end_ts": i.end, "engine": engine,
                               "pcore_idx": 0, "duration_ns": i.end - i.start})  # fmt: skip
    tables: dict[str, list[dict[str, Any]]] = {
        "Summary": [summary(rec)],
        "Instruction": instrs,
        "ExecutionInfo": execs,
        "Metadata": [meta],
        "NeffHeader": headers,
        "ThrottleSummary": throttle,
        "ActiveTime": active,
    }
    if rec.warnings:
        tables["Warning"] = [{"category": c, "message": m} for c, m in rec.warnings]
    return tables


def explorer_json(rec: Record, neffs: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The legacy full JSON: a dict of row lists (instruction times in ns)."""
    instrs = [
        {
            "timestamp": i.start,
            "duration": i.end - i.start,
            "label": i.engine,
            "opcode": i.opcode,
            "hlo_name": i.hlo,
            "layer": i.layer,
            "bir_instruction_name": f"I-{k}",
        }
        for k, i in enumerate(_all_instrs(rec))
    ]
    return {
        "summary": [summary(rec)],
        "summary_groups": [],
        "instruction": instrs,
        "active_time": [],
        "dma": [],
        "metadata": [
            {
                "ntff_version": rec.ntff_version,
                "pe_clock_freq": 2.8,
                "runtime_version": rec.metadata.get("runtime_version"),
            }
        ],
        "neff_header": [dict(h) for h in neffs.values()],
        "warnings": [{"category": c, "message": m} for c, m in rec.warnings],
        "terminology": [],
    }


# -- files ------------------------------------------------------------------------------------
def write_neff(path: str, network_name: str) -> None:
    h = os.path.basename(path).split("_")[1] if "_" in os.path.basename(path) else "0"
    with open(path, "w", encoding="utf-8") as fh:
        json.dump({"standin": NEFF_MARK, "network_name": network_name, "hash": h,
                   "uuid": f"{zlib.crc32(path.encode()):032x}"}, fh)  # fmt: skip


def read_neff(path: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    if data.get("standin") != NEFF_MARK:
        raise ValueError("not a stand-in NEFF")
    return {k: v for k, v in data.items() if k != "standin"}


def write_ntff(path: str, rec: Record) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(rec.to_json(), fh)


def read_ntff(path: str) -> Record:
    with open(path, encoding="utf-8") as fh:
        return Record.from_json(json.load(fh))


def sequential(ops: Sequence[tuple[str, int]], *, layer: bool = True, start: int = 0,
               signature: str = "") -> tuple[Record, dict[str, str]]:  # fmt: skip
    """A session record of ``ops`` (``(op, numel)``) run one after another, and the NEFF
    file -> network name of each distinct op (eager: one NEFF per op)."""
    rec = Record()
    neffs: dict[str, str] = {}
    t = start
    for op, numel in ops:
        neff = neff_name(op, f"{numel}|{signature}")
        neffs[neff] = f"aten.{op}"
        e = execution(op, numel, t, neff=neff, layer=layer, in_bytes=numel * 4)
        rec.executions.append(e)
        t = e.end + GAP_NS
    return rec, neffs


def write_session(folder: str, rec: Record, neffs: Mapping[str, str], *, nc: int = 0,
                  trace: Mapping[str, Any] | None = None) -> str:  # fmt: skip
    """A ``<timestamp>`` folder as TorchNeuron's profiler leaves it: the NEFFs, one session
    NTFF per core, ``trace.json`` (when given) and the runtime's ``.pb`` files (empty)."""
    os.makedirs(folder, exist_ok=True)
    for neff, name in neffs.items():
        write_neff(os.path.join(folder, neff), name)
    ntff = os.path.join(folder, f"profile_nc_{nc}_session_0.ntff")
    write_ntff(ntff, rec)
    for pb in ("ntrace.pb", "trace_info.pb"):
        open(os.path.join(folder, pb), "wb").close()
    if trace is not None:
        with open(os.path.join(folder, "trace.json"), "w", encoding="utf-8") as fh:
            json.dump(trace, fh)
    return ntff
