"""A device profile's time split over the framework's ops (pure)."""

from __future__ import annotations

import pytest

from neuronasv.measure.neuron_formats import (
    PARQUET,
    DeviceProfile,
    EngineEvent,
    Execution,
    parse_explorer_json,
    parse_parquet_tables,
)
from neuronasv.measure.neuron_ops import neff_op, op_from_framework, split_profile
from neuronasv.measure.opnames import UNATTRIBUTED_OP
from tests.neuron import fixtures as F

pytestmark = pytest.mark.standin


@pytest.mark.parametrize(
    ("name", "op"),
    [
        ("NeuronLlamaDecoderLayer[1]/function[2]/aten.add", "aten::add"),
        ("aten.mul", "aten::mul"),
        ("aten.add.Tensor", "aten::add"),
        ("aten::mul", "aten::mul"),
        ("Block[0]/aten.rsqrt[3]", "aten::rsqrt"),
        ("layer_1", "layer_1"),
        ("", None),
        ("  ", None),
    ],
)
def test_framework_names_name_ops(name: str, op: str | None) -> None:
    assert op_from_framework(name) == op


def test_a_neff_is_its_own_row_named_by_its_graph() -> None:
    assert neff_op("neff_2333223092_vnc_0.neff") == "neff::neff_2333223092_vnc_0"
    assert neff_op("/x/graph.neff") == "neff::graph"
    assert neff_op("aten.mul.neff") == "aten::mul"  # a NEFF named after its op is that op
    long_hash = "neff_" + "ab12" * 10
    assert neff_op(long_hash) == "neff::neff_<hash>"  # hashes normalised like op names


def _profile(instrs: list[EngineEvent], execs: tuple[Execution, ...] = ()) -> DeviceProfile:
    return DeviceProfile(fmt=PARQUET, summary=None, events=tuple(instrs), executions=execs)


def test_eager_ops_in_sequence_get_their_instructions_and_the_rest_is_unattributed() -> None:
    p = _profile(
        [
            EngineEvent(0, 2000, "sync", "EVENT_SEMAPHORE"),  # a wait: nobody's work
            EngineEvent(2000, 6000, "vector", "TENSOR_TENSOR", "aten.mul"),
            EngineEvent(3000, 5000, "sync", "DMA_TRIGGER", "aten.mul"),  # same op: once
            EngineEvent(7000, 8000, "scalar", "ACTIVATE", "aten.rsqrt"),
        ]
    )
    got = split_profile(6.0, p, name="s")
    assert got.times == pytest.approx({"aten::mul": 4.0, "aten::rsqrt": 1.0, UNATTRIBUTED_OP: 1.0})
    assert sum(got.times.values()) == pytest.approx(6.0) and got.warnings == ()


def test_overlapping_ops_share_each_instant_and_never_count_it_twice() -> None:
    p = _profile(
        [
            EngineEvent(0, 4000, "tensor", "MATMUL", "g/aten.mm"),
            EngineEvent(2000, 6000, "vector", "TENSOR_TENSOR", "g/aten.add"),
        ]
    )
    got = split_profile(6.0, p, name="s")
    # 0-2 mm alone, 2-4 shared, 4-6 add alone: 3 µs each, 6 in all (the union).
    assert got.times == pytest.approx({"aten::mm": 3.0, "aten::add": 3.0})


def test_unnamed_instructions_go_to_the_neff_whose_execution_holds_them() -> None:
    prof = parse_parquet_tables(F.PARQUET_TABLES, "p")
    got = split_profile(20.0, prof, name="p")
    # the named multiply (8 µs), the unnamed rsqrt in the second NEFF's window (4 µs),
    # and the active time no instruction covers (DMA alone: 8 µs)
    assert got.times == pytest.approx(
        {"aten::mul": 8.0, "neff::neff_222_vnc_0": 4.0, UNATTRIBUTED_OP: 8.0}
    )


def test_without_rows_the_neff_or_the_profile_is_the_op() -> None:
    assert split_profile(5.0, None, name="prof", neffs=["neff_9_vnc_0.neff"]).times == {
        "neff::neff_9_vnc_0": 5.0
    }
    two = ["neff_1_vnc_0.neff", "neff_2_vnc_0.neff"]
    assert split_profile(5.0, None, name="profile_nc_0_session_0", neffs=two).times == {
        "neff::profile_nc_0_session_0": 5.0
    }
    assert split_profile(0.0, None, name="p").times == {}


def test_rows_that_exceed_the_summary_are_scaled_to_it_with_a_warning() -> None:
    p = _profile([EngineEvent(0, 10000, "vector", "TENSOR_TENSOR", "aten.mul")])
    got = split_profile(5.0, p, name="p")
    assert got.times == pytest.approx({"aten::mul": 5.0})
    assert got.warnings == (
        "p: the engine events' union (10.000 µs) exceeds the summary's device time (5.000 µs);"
        " op rows scaled by 0.5000",
    )


def test_explorer_json_rows_split_its_summary() -> None:
    prof = parse_explorer_json(F.EXPLORER_JSON, "graph")
    assert prof.summary is not None and prof.summary.device_time_us is not None
    got = split_profile(prof.summary.device_time_us, prof, name="graph", neffs=["graph.neff"])
    # The multiply's two engines overlap: 4 µs once; the semaphore wait is nobody's.
    assert got.times == pytest.approx({"aten::mul": 4.0, UNATTRIBUTED_OP: 2.15})
