"""The trace.json fallback for device time (Neuron without a working correlate_device_time).

The parser is checked on real PyTorch chrome traces (CPU profiles exported by torch here)
with device events added as Kineto writes them for CUDA (``cat: kernel`` + ``External
id``); the hook in the profiling core is checked end to end with a stand-in exporter that
writes the documented Neuron folder nesting. Which categories Neuron's own trace.json uses
is unverified (``neuronasv doctor --neuron-check`` reports them on a host).
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from neuronasv.errors import CaptureError
from neuronasv.measure.backends.cpu import CpuBackend
from neuronasv.measure.neuron_trace import (
    categories,
    cycle_from_new_traces,
    device_ops,
    find_traces,
    merge_with_host,
)
from neuronasv.measure.profiling import (
    UNATTRIBUTED_OP,
    CycleStats,
    OpSample,
    ProfileOptions,
    profile_workload,
)
from neuronasv.measure.workloads import get

pytestmark = pytest.mark.standin


def _trace() -> dict[str, Any]:
    return {
        "traceEvents": [
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": "ProfilerStep#3",
                "dur": 50,
                "args": {"External id": 9},
            },
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": "aten::mul",
                "dur": 10,
                "args": {"External id": 1},
            },
            {
                "ph": "X",
                "cat": "kernel",
                "name": "mul_kernel",
                "dur": 1.5,
                "args": {"External id": 1, "correlation": 70},
            },
            {
                "ph": "X",
                "cat": "kernel",
                "name": "mul_kernel",
                "dur": 2.5,
                "args": {"External id": 1, "correlation": 71},
            },
            {"ph": "X", "cat": "cpu_op", "name": "aten::add", "dur": 5, "args": {"External id": 2}},
            {
                "ph": "X",
                "cat": "privateuse1_runtime",
                "name": "launch",
                "dur": 1,
                "args": {"External id": 2, "correlation": 77},
            },
            {
                "ph": "X",
                "cat": "Neuron_Device",
                "name": "add_exec",
                "dur": 0.96,
                "args": {"correlation": 77},
            },
            {"ph": "X", "cat": "kernel", "name": "orphan", "dur": 0.5, "args": {}},
            {"ph": "i", "cat": "kernel", "name": "instant", "args": {"External id": 1}},
            {"ph": "X", "cat": "kernel", "name": "bad", "dur": "x", "args": {}},
        ]
    }


def test_device_time_per_op_by_external_id_and_correlation() -> None:
    times, counts = device_ops(_trace())
    assert times == {"aten::mul": 4.0, "aten::add": 0.96, UNATTRIBUTED_OP: 0.5}
    assert counts == {"aten::mul": 2, "aten::add": 1, UNATTRIBUTED_OP: 1}
    assert categories(_trace())["kernel"] == 4
    assert device_ops({"traceEvents": "nonsense"}) == ({}, {})
    assert device_ops([]) == ({}, {})


def test_merge_keeps_host_cpu_time_and_counts() -> None:
    host = CycleStats(
        ops={"aten::mul": OpSample(0.0, 10.0, 3), "aten::view": OpSample(0.0, 1.0, 1)},
        device_time_us=0.0,
    )
    got = merge_with_host(host, {"aten::mul": 4.0, UNATTRIBUTED_OP: 0.5})
    assert got.ops["aten::mul"] == OpSample(4.0, 10.0, 3)
    assert got.ops["aten::view"] == OpSample(0.0, 1.0, 1)
    assert got.ops[UNATTRIBUTED_OP] == OpSample(0.5, 0.0, 0)
    assert got.device_time_us == pytest.approx(4.5)


def _write(path: str, data: Any) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(data, fh)


def test_new_traces_in_the_documented_nesting_are_read_once(tmp_path: Any) -> None:
    root = str(tmp_path)
    host = CycleStats(ops={"aten::mul": OpSample(0.0, 10.0, 3)}, device_time_us=0.0)
    seen: set[str] = set()
    assert cycle_from_new_traces(root, host, seen=seen) is None
    # <dir>/<instance-id>_pid_<pid>/<timestamp>/trace.json (how-to-profile-workload.rst)
    _write(os.path.join(root, "i-0abc_pid_42", "20260101T000001", "trace.json"), _trace())
    first = cycle_from_new_traces(root, host, seen=seen)
    assert first is not None and first.ops["aten::mul"].self_device_us == 4.0
    assert cycle_from_new_traces(root, host, seen=seen) is None  # nothing new
    _write(os.path.join(root, "i-0abc_pid_42", "20260101T000002", "trace.json"), _trace())
    assert cycle_from_new_traces(root, host, seen=seen) is not None
    assert [os.path.basename(os.path.dirname(p)) for p, _, _ in find_traces(root)] == [
        "20260101T000001",
        "20260101T000002",
    ]
    _write(os.path.join(root, "x", "trace.json"), {"traceEvents": [{"ph": "X", "cat": "cpu_op"}]})
    assert cycle_from_new_traces(root, host, seen=seen) is None  # no device events


class _NoDeviceTimeBackend(CpuBackend):
    """A CPU run posing as an accelerator whose key_averages carry no device time, with an
    exporter that writes the Neuron folder nesting: the stand-in for torch_neuronx."""

    name = "cpu"
    device_time_is_cpu = False

    def __init__(self, with_kernels: bool) -> None:
        self.with_kernels = with_kernels
        self.cycle = 0
        self.seen: set[str] = set()

    def profiler_kwargs(self, trace_dir: str | None) -> dict[str, Any]:
        assert trace_dir is not None

        def export(prof: Any) -> None:
            self.cycle += 1
            out = os.path.join(trace_dir, "i-0abc_pid_1", f"2026010{self.cycle:02d}", "trace.json")
            os.makedirs(os.path.dirname(out), exist_ok=True)
            prof.export_chrome_trace(out)
            if self.with_kernels:
                with open(out, encoding="utf-8") as fh:
                    data = json.load(fh)
                extra = [
                    {
                        "ph": "X",
                        "cat": "kernel",
                        "name": "k",
                        "dur": 7.0,
                        "args": {"External id": e["args"]["External id"]},
                    }
                    for e in data["traceEvents"]
                    if e.get("cat") == "cpu_op" and e.get("name") == "aten::mul"
                ]
                data["traceEvents"] += extra
                with open(out, "w", encoding="utf-8") as fh:
                    json.dump(data, fh)

        return {"on_trace_ready": export}

    def fallback_cycle(self, trace_dir: str, host: Any) -> Any:
        return cycle_from_new_traces(trace_dir, host, seen=self.seen)


@pytest.mark.slow
def test_profiling_core_falls_back_to_the_exported_trace(tmp_path: Any) -> None:
    p = profile_workload(
        get("rmsnorm.naive"),
        _NoDeviceTimeBackend(with_kernels=True),
        shape="4x512",
        dtype="float32",
        options=ProfileOptions(samples=3, roofline=False, trace_dir=str(tmp_path)),
    )
    # Three aten::mul calls a step, 7 µs of "device" each, from the real torch trace's ids.
    assert [o.op for o in p.ops] == ["aten::mul"]
    assert p.ops[0].self_device_time_us == (21.0, 21.0, 21.0)
    assert p.device_time_us == (21.0, 21.0, 21.0)
    with pytest.raises(CaptureError, match="recorded no device time"):
        profile_workload(
            get("rmsnorm.naive"),
            _NoDeviceTimeBackend(with_kernels=False),
            shape="4x512",
            dtype="float32",
            options=ProfileOptions(samples=2, roofline=False, trace_dir=str(tmp_path / "b")),
        )
