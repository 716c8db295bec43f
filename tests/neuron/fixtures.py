"""Hand-made Neuron Explorer outputs (tests only): field names, nesting and units as the
Neuron docs and the audit's real samples give them (shared/research/neuron-audit-2026-12.md,
aws-neuron-sdk profile-schema-reference.rst); values made up, no file copied.

* :data:`SUMMARY_JSON` — ``view --output-format summary-json``: ``{"<profile>": {...}}``,
  times in seconds, ``*_percent`` as fractions, counts and bytes as integers, the throttle
  and version fields of the audit's sample. ``total_time`` is ~300x the active time, as on
  the audit's tiny matmul (semaphore waits).
* :data:`EXPLORER_JSON` — the legacy full JSON of an older profiler (no
  ``total_exec_time``): a dict of row lists, instruction ``timestamp``/``duration`` in ns.
* :data:`PARQUET_TABLES` — the Parquet tables as rows (``Instruction.start_ts``... ns,
  ``ExecutionInfo``, ``Metadata``, ``NeffHeader``, ``ThrottleSummary``, ``Warning``).
* :data:`CHROME_TRACE` — a TorchNeuron ``trace.json`` as the docs describe its framework
  events: ``privateuse1_runtime`` (dispatch) and ``privateuse1_driver`` (device
  interaction) complete events beside the ``cpu_op`` rows; no device (``neuron_hw``) events.
"""

from __future__ import annotations

from typing import Any

CLOCK_HZ = 1.4e9  # the NeuronCore clock the real samples' cycle counts give (trn1/inf2)

SUMMARY_JSON: dict[str, Any] = {
    "profile_nc_0_session_0": {
        "total_time": 0.00187,
        "total_active_time": 6.15e-06,
        "total_exec_time": 6.9e-06,
        "total_active_time_percent": 0.00329,
        "vector_engine_active_time": 4.1e-06,
        "vector_engine_active_time_percent": 0.00219,
        "tensor_engine_active_time_percent": 0.00062,
        "neuroncore_cycle_count": 2618000,
        "event_count": 11215,
        "hbm_read_bytes": 266240,
        "hbm_write_bytes": 131072,
        "throttle_avg_util_limit_nc0_percent": 1.0,
        "throttle_active_nc0_time_ns": 0,
        "throttle_activity_0_time_ns": 0,
        "runtime_version": "2.29.40",
        "profiler_version": "2.27.33",
        "compiler_version": "2.22.0",
    }
}

#: Only ``total_time``: a trace that cannot say what the engines did.
TOTAL_TIME_ONLY: dict[str, Any] = {"profile_nc_0_session_0": {"total_time": 0.00187}}

EXPLORER_JSON: dict[str, Any] = {
    "summary": [
        {
            "total_time": 0.00187,
            "total_active_time": 6.15e-06,
            "total_active_time_percent": 0.00329,
            "neuroncore_cycle_count": 2618000,
        }
    ],
    "summary_groups": [],
    "instruction": [
        # A semaphore wait (not work), then a multiply on two engines that overlap.
        {
            "timestamp": 1000,
            "duration": 1868000,
            "label": "Sync",
            "opcode": "EVENT_SEMAPHORE",
            "hlo_name": "",
            "layer": "",
            "bir_instruction_name": "I-1",
        },
        {
            "timestamp": 1869000,
            "duration": 4000,
            "label": "Vector",
            "opcode": "TENSOR_TENSOR",
            "hlo_name": "%multiply.1 = multiply(%p0, %p0)",
            "layer": "aten.mul",
            "bir_instruction_name": "I-2",
        },
        {
            "timestamp": 1871000,
            "duration": 2000,
            "label": "Scalar",
            "opcode": "ACTIVATE",
            "hlo_name": "%multiply.1 = multiply(%p0, %p0)",
            "layer": "aten.mul",
            "bir_instruction_name": "I-3",
        },
    ],
    "active_time": [
        {"engine": "Vector", "start_ts": 1869000, "end_ts": 1873000, "duration_ns": 4000}
    ],
    "layer_summary": [{"name": "/sg00/_dot.3", "start": 1869000, "end": 1873000, "duration": 4000}],
    "dma": [],
    "metadata": [{"pe_clock_freq": 2.8, "ntff_version": 5}],
    "neff_header": [{"network_name": "graph.neff"}],
    "warnings": [
        {"category": "Missing Data", "message": "Current NEFF is missing compiler metrics"}
    ],
    "terminology": [],
}

PARQUET_TABLES: dict[str, list[dict[str, Any]]] = {
    "Summary": [
        {
            "total_time": 4.0e-05,
            "total_active_time": 2.0e-05,
            "total_exec_time": 3.0e-05,
            "total_active_time_percent": 0.5,
        }
    ],
    "Instruction": [
        {
            "start_ts": 0,
            "end_ts": 2000,
            "duration_ns": 2000,
            "engine": "sync",
            "opcode": "EVENT_SEMAPHORE",
            "layer": None,
            "hlo_name": None,
        },
        {
            "start_ts": 2000,
            "end_ts": 10000,
            "duration_ns": 8000,
            "engine": "vector",
            "opcode": "TENSOR_TENSOR",
            "layer": "Block[0]/function[1]/aten.mul",
            "hlo_name": "multiply.1",
        },
        {
            "start_ts": 12000,
            "end_ts": 16000,
            "duration_ns": 4000,
            "engine": "scalar",
            "opcode": "ACTIVATE",
            "layer": None,
            "hlo_name": "rsqrt.2",
        },
    ],
    "ExecutionInfo": [
        {
            "execution_index": 0,
            "neff_name": "neff_111_vnc_0.neff",
            "execution_start_ts": 0,
            "execution_end_ts": 11000,
        },
        {
            "execution_index": 1,
            "neff_name": "neff_222_vnc_0.neff",
            "execution_start_ts": 11000,
            "execution_end_ts": 20000,
        },
    ],
    "Metadata": [
        {
            "profile_schema_version": "12.0.1",
            "ntff_version": 5,
            "runtime_version": "2.29.40",
            "explorer_version": "2.33.0",
            "compiler_version": "2.22.0",
            "instance_type": "trn2.3xlarge",
            "neuroncore_clock_freq": 1.4,
        }
    ],
    "NeffHeader": [
        {"network_name": "neff_111_vnc_0.neff"},
        {"network_name": "neff_222_vnc_0.neff"},
    ],
    "ThrottleSummary": [
        {
            "nc_idx": 0,
            "throttle_type": "activity_0",
            "throttle_active_time_ns": 100,
            "throttle_active_time_percent": 0.0025,
        },
        {
            "nc_idx": 0,
            "throttle_type": "all",
            "throttle_active_time_ns": 400,
            "throttle_active_time_percent": 0.01,
            "max_achievable_util_with_throttling_percent": 0.9,
        },
    ],
    "Warning": [
        {"category": "Missing Data", "message": "Current NEFF is missing compiler metrics"}
    ],
}


def chrome_trace(*, driver: bool = True, device: bool = False) -> dict[str, Any]:
    """A TorchNeuron-style ``trace.json``: two ``aten::mul`` and one ``aten::add`` on the
    host, their ``privateuse1_runtime`` dispatch events, ``privateuse1_driver`` spans
    (``driver``) and, for the CUDA-like shape, ``kernel`` device events (``device``)."""
    ev: list[dict[str, Any]] = [
        {"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#4", "ts": 0, "dur": 100,
         "pid": 1, "tid": 1, "args": {"External id": 1}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mul", "ts": 10, "dur": 20,
         "pid": 1, "tid": 1, "args": {"External id": 2}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::empty", "ts": 12, "dur": 5,
         "pid": 1, "tid": 1, "args": {"External id": 3}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mul", "ts": 40, "dur": 20,
         "pid": 1, "tid": 1, "args": {"External id": 4}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 70, "dur": 10,
         "pid": 1, "tid": 1, "args": {"External id": 5}},
        {"ph": "X", "cat": "privateuse1_runtime", "name": "nrt_execute", "ts": 20, "dur": 5,
         "pid": 1, "tid": 1, "args": {"External id": 2, "correlation": 102}},
        {"ph": "X", "cat": "privateuse1_runtime", "name": "nrt_execute", "ts": 50, "dur": 5,
         "pid": 1, "tid": 1, "args": {"External id": 4, "correlation": 104}},
        {"ph": "X", "cat": "privateuse1_runtime", "name": "nrt_execute", "ts": 75, "dur": 2,
         "pid": 1, "tid": 1, "args": {"External id": 5, "correlation": 105}},
    ]  # fmt: skip
    if driver:
        ev += [
            {"ph": "X", "cat": "privateuse1_driver", "name": "exec", "ts": 22, "dur": 3.5,
             "pid": 1, "tid": 7, "args": {"correlation": 102}},
            {"ph": "X", "cat": "privateuse1_driver", "name": "exec", "ts": 52, "dur": 3.5,
             "pid": 1, "tid": 7, "args": {"correlation": 104}},
            {"ph": "X", "cat": "privateuse1_driver", "name": "exec", "ts": 76, "dur": 1.0,
             "pid": 1, "tid": 7, "args": {"correlation": 105}},
        ]  # fmt: skip
    if device:
        ev += [
            {"ph": "X", "cat": "kernel", "name": "k", "ts": 23, "dur": 2.0, "pid": 0, "tid": 0,
             "args": {"External id": 2}},
        ]  # fmt: skip
    return {"traceEvents": ev, "displayTimeUnit": "ms"}
