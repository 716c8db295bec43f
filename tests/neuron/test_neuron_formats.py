"""Neuron Explorer's outputs read by their documented fields and units, and every wrong
format said in one line (hand-made fixtures: tests/neuron/fixtures.py)."""

from __future__ import annotations

import copy
import logging

import pytest

from neuronasv.measure.neuron_formats import (
    CHROME_TRACE,
    EXPLORER_JSON,
    PARQUET,
    SUMMARY_JSON,
    FormatMismatch,
    mismatch_line,
    parse_explorer_json,
    parse_parquet_tables,
    parse_summary_json,
    sniff,
    sniff_bytes,
)
from neuronasv.measure.neuron_trace import device_ops, driver_ops, host_cycle
from neuronasv.measure.opnames import UNATTRIBUTED_OP
from tests.neuron import fixtures as F

pytestmark = pytest.mark.standin


def test_summary_json_is_unwrapped_and_read_in_its_units() -> None:
    (one,) = parse_summary_json(F.SUMMARY_JSON, "file")
    assert one.profile == "profile_nc_0_session_0"  # the one top-level key
    # seconds -> µs; the device time is total_active_time, never total_time
    assert one.device_time_us == pytest.approx(6.15)
    assert one.device_time_field == "total_active_time"
    assert one.source == "neuron-explorer summary-json total_active_time"
    assert one.total_time_us == pytest.approx(1870.0)
    assert one.total_time_us / one.device_time_us > 300  # semaphore waits, as on Trainium
    assert one.throttle == {
        "throttle_avg_util_limit_nc0_percent": "1.0",
        "throttle_active_nc0_time_ns": "0",
        "throttle_activity_0_time_ns": "0",
    }
    assert one.versions == {
        "runtime_version": "2.29.40",
        "profiler_version": "2.27.33",
        "compiler_version": "2.22.0",
    }


def test_the_fixture_is_self_consistent() -> None:
    """cycles / total_time is the NeuronCore clock; percents are fractions."""
    row = F.SUMMARY_JSON["profile_nc_0_session_0"]
    assert row["neuroncore_cycle_count"] / row["total_time"] == pytest.approx(F.CLOCK_HZ)
    assert row["total_active_time_percent"] == pytest.approx(
        row["total_active_time"] / row["total_time"], rel=0.01
    )


def test_exec_time_stands_in_when_active_time_is_missing() -> None:
    data = copy.deepcopy(F.SUMMARY_JSON)
    del data["profile_nc_0_session_0"]["total_active_time"]
    (one,) = parse_summary_json(data, "file")
    assert one.device_time_field == "total_exec_time"
    assert one.device_time_us == pytest.approx(6.9)


def test_only_total_time_is_refused_as_device_time() -> None:
    (one,) = parse_summary_json(F.TOTAL_TIME_ONLY, "file")
    assert one.device_time_us is None and one.source is None
    assert one.total_time_us == pytest.approx(1870.0)
    assert one.refusal is not None
    assert one.refusal.startswith("only total_time (1870.000 µs), which counts semaphore waits")
    assert "total_active_time or total_exec_time" in one.refusal


def test_several_profiles_and_a_flat_object() -> None:
    two = {"a": F.SUMMARY_JSON["profile_nc_0_session_0"], "b": {"total_exec_time": 1e-6}}
    got = parse_summary_json(two, "file")
    assert [(s.profile, s.device_time_field) for s in got] == [
        ("a", "total_active_time"),
        ("b", "total_exec_time"),
    ]
    (flat,) = parse_summary_json(F.SUMMARY_JSON["profile_nc_0_session_0"], "flat")
    assert flat.profile == "flat" and flat.device_time_us == pytest.approx(6.15)


def test_explorer_json_tables() -> None:
    prof = parse_explorer_json(F.EXPLORER_JSON, "graph")
    assert prof.fmt == EXPLORER_JSON
    assert prof.summary is not None
    assert prof.summary.device_time_us == pytest.approx(6.15)
    assert prof.summary.source == "device-profile Summary (Explorer JSON) total_active_time"
    assert [(i.start_ns, i.end_ns, i.engine, i.opcode, i.layer) for i in prof.events] == [
        (1000, 1869000, "Sync", "EVENT_SEMAPHORE", ""),
        (1869000, 1873000, "Vector", "TENSOR_TENSOR", "aten.mul"),
        (1871000, 1873000, "Scalar", "ACTIVATE", "aten.mul"),
    ]
    assert prof.events[0].is_setup and not prof.events[1].is_setup
    assert prof.versions == {"ntff_version": "5"}
    assert prof.neff_names == ("graph.neff",)
    assert prof.warnings == ("Missing Data: Current NEFF is missing compiler metrics",)
    assert prof.source == "device-profile instruction rows (Explorer JSON)"


def test_parquet_tables() -> None:
    prof = parse_parquet_tables(F.PARQUET_TABLES, "p")
    assert prof.fmt == PARQUET
    assert prof.summary is not None and prof.summary.device_time_us == pytest.approx(20.0)
    assert [(e.index, e.neff, e.start_ns, e.end_ns) for e in prof.executions] == [
        (0, "neff_111_vnc_0.neff", 0, 11000),
        (1, "neff_222_vnc_0.neff", 11000, 20000),
    ]
    assert prof.versions["ntff_version"] == "5"
    assert prof.versions["explorer_version"] == "2.33.0"
    # ThrottleSummary: the "all" row, throttle fields only.
    assert prof.throttle == {
        "throttle_active_time_ns": "400",
        "throttle_active_time_percent": "0.01",
        "max_achievable_util_with_throttling_percent": "0.9",
    }


@pytest.mark.parametrize(
    ("data", "looks_like"),
    [
        (F.SUMMARY_JSON, SUMMARY_JSON),
        (F.SUMMARY_JSON["profile_nc_0_session_0"], SUMMARY_JSON),
        (F.EXPLORER_JSON, EXPLORER_JSON),
        (F.chrome_trace(), CHROME_TRACE),
        (F.chrome_trace()["traceEvents"], CHROME_TRACE),
        ({"x": 1, "y": [1]}, "JSON of another kind (keys: x, y)"),
    ],
)
def test_sniff_names_each_format(data: object, looks_like: str) -> None:
    assert sniff(data) == looks_like


def test_sniff_bytes() -> None:
    assert sniff_bytes(b"PAR1\x15\x04") == PARQUET
    assert sniff_bytes(b'  {"a": 1}') == "JSON"
    assert sniff_bytes(b"\x00NTFF") == "binary (not JSON, not Parquet)"


_LOOKS = "but it looks like"


@pytest.mark.parametrize(
    ("reader", "data", "message"),
    [
        (parse_summary_json, F.EXPLORER_JSON, f"expected summary-json, {_LOOKS} Explorer JSON"),
        (parse_summary_json, F.chrome_trace(), f"expected summary-json, {_LOOKS} chrome trace"),
        (parse_explorer_json, F.SUMMARY_JSON, f"expected Explorer JSON, {_LOOKS} summary-json"),
        (parse_explorer_json, F.chrome_trace(), f"expected Explorer JSON, {_LOOKS} chrome trace"),
        (
            parse_parquet_tables,
            {"Flow": []},
            f"expected Parquet device profile, {_LOOKS} Parquet without Summary or Instruction"
            " (Flow)",
        ),
    ],
)
def test_each_reader_refuses_another_format(reader: object, data: object, message: str) -> None:
    with pytest.raises(FormatMismatch) as info:
        reader(data, "f")  # type: ignore[operator]
    assert str(info.value) == message
    assert mismatch_line("out.json", info.value) == f"out.json: {message}; not read as device time"


@pytest.mark.parametrize(
    ("data", "looks_like"),
    [
        (F.SUMMARY_JSON, SUMMARY_JSON),
        (F.EXPLORER_JSON, EXPLORER_JSON),
        ([], "a JSON list"),
    ],
)
def test_a_trace_reader_given_another_format_warns_in_one_line(
    data: object, looks_like: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The audit's four real Neuron outputs came back as "no device events" with no word:
    now each is a warning that names what it looks like."""
    with caplog.at_level(logging.WARNING, logger="neuronasv"):
        assert device_ops(data, where="trace.json") == ({}, {})
    (record,) = caplog.records
    assert record.getMessage() == (
        f"trace.json: expected chrome trace, but it looks like {looks_like};"
        " not read as device time"
    )


def test_driver_spans_are_counted_per_op_only_as_a_source_of_their_own() -> None:
    trace = F.chrome_trace(driver=True)
    assert device_ops(trace) == ({}, {})  # no device events: driver spans are not those
    times, counts = driver_ops(trace)
    # Each driver span reaches its op through the runtime event's correlation.
    assert times == {"aten::mul": 7.0, "aten::add": 1.0}
    assert counts == {"aten::mul": 2, "aten::add": 1}
    times, _ = device_ops(F.chrome_trace(device=True))
    assert times == {"aten::mul": 2.0}
    assert driver_ops(F.SUMMARY_JSON) == ({}, {})


def test_host_cycle_reads_calls_and_self_time_back() -> None:
    got = host_cycle(F.chrome_trace())
    assert {k: (v.count, v.self_cpu_us, v.self_device_us) for k, v in got.ops.items()} == {
        "aten::mul": (2, 35.0, 0.0),  # 20 - 5 (its aten::empty child) + 20
        "aten::empty": (1, 5.0, 0.0),
        "aten::add": (1, 10.0, 0.0),
    }
    assert UNATTRIBUTED_OP not in got.ops
    assert host_cycle(F.SUMMARY_JSON).ops == {}
