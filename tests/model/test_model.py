"""Round trips and bad input for the versioned data model (the contracts between stages)."""

from __future__ import annotations

import json

import pytest

from neuronasv.errors import CorruptResultsError, SchemaVersionError
from neuronasv.model import (
    CanaryReading,
    ChangePoint,
    EnvChange,
    Estimate,
    Finding,
    FindingsDocument,
    OpContribution,
    OpProfile,
    ProfileDocument,
    RowState,
    RunRef,
    RunSidecar,
    SeriesId,
    WorkloadProfile,
)
from neuronasv.store.layout import sidecar_path


def _profile() -> WorkloadProfile:
    return WorkloadProfile(
        name="rmsnorm.naive",
        backend="cpu",
        shape="4x512",
        dtype="bfloat16",
        device_time_us=(30.0, 31.5, 29.0),
        ops=(
            OpProfile("aten::mul", 3.0, (12.0, 13.0, 12.5), (12.0, 13.0, 12.5), flops=6144.0),
            OpProfile("aten::mean", 1.0, (5.0, 5.5, 5.1), (5.0, 5.5, 5.1)),
        ),
        device_time_is_cpu=True,
        warnings=("noisy",),
        canary=CanaryReading("matmul256", (10.0, 11.0), (10.5,)),
    )


def test_profile_document_round_trip_is_exact() -> None:
    doc = ProfileDocument(backend="cpu", workloads=(_profile(),), fingerprint={"torch": "2.13.0"})
    text = doc.dumps()
    again = ProfileDocument.loads(text)
    assert again == doc
    assert again.dumps() == text  # deterministic bytes
    assert again.workloads[0].op("aten::mul") is not None
    assert again.workloads[0].key == "rmsnorm.naive[4x512,bfloat16]"


def test_truncated_document_is_a_clear_error() -> None:
    text = ProfileDocument(backend="cpu", workloads=(_profile(),)).dumps()
    with pytest.raises(CorruptResultsError, match="truncated"):
        ProfileDocument.loads(text[: len(text) // 2], source="out.json")


def test_nan_is_rejected_with_the_field_named() -> None:
    data = ProfileDocument(backend="cpu", workloads=(_profile(),)).to_json()
    text = json.dumps(data).replace("30.0", "NaN", 1)
    with pytest.raises(CorruptResultsError, match="NaN"):
        ProfileDocument.loads(text)
    data["workloads"][0]["device_time_us"] = [1.0, "fast"]
    with pytest.raises(CorruptResultsError, match=r"device_time_us\[1\]"):
        ProfileDocument.from_json(data)


def test_unknown_schema_version_names_the_versions() -> None:
    data = ProfileDocument(backend="cpu", workloads=(_profile(),)).to_json()
    data["schema_version"] = 99
    with pytest.raises(SchemaVersionError, match="99") as info:
        ProfileDocument.from_json(data, source="x.json")
    assert info.value.hint


def test_wrong_kind_is_rejected() -> None:
    data = ProfileDocument(backend="cpu", workloads=()).to_json()
    with pytest.raises(CorruptResultsError, match=r"neuronasv\.findings"):
        FindingsDocument.from_json(data)


def test_sidecar_round_trip_and_path() -> None:
    side = RunSidecar(
        machine="m",
        commit_hash="a" * 40,
        env_name="existing-py",
        fingerprint={"torch": "2.13.0"},
        profiles=(_profile(),),
        series=(SeriesId("rmsnorm.Naive.devtime_total", ("'4x512'",), "rmsnorm.naive", "4x512"),),
        failures={"rmsnorm.compiled[4x512,float32]": "boom"},
    )
    assert RunSidecar.loads(side.dumps()) == side
    assert sidecar_path("r/m/aaaaaaaa-existing-py.json") == "r/m/aaaaaaaa-existing-py.neuronasv"


def test_findings_round_trip() -> None:
    sid = SeriesId("b", ("x",), "rmsnorm.naive", "4x512", "bfloat16", None)
    finding = Finding(
        series=sid,
        estimate=Estimate("seconds", 1e-5, 1.2e-5, ci_low=1.1, ci_high=1.3, n_base=10,
                          n_head=10),
        state=RowState(time="slower"),
        p_value=0.001,
        p_adjusted=0.004,
        reason="+20 %",
        attribution=(OpContribution("aten::mul", 5e-6, 7e-6, 2e-6, 1.0, 3.0, 4.0),),
    )  # fmt: skip
    cp = ChangePoint(
        series=sid,
        machine="m",
        commit_before="a" * 40,
        commit_after="b" * 40,
        index=3,
        before=1.0,
        after=1.2,
        ratio=1.2,
        p_value=0.0001,
        unit="seconds",
        kind="regression",
        open=True,
        env_changes=(EnvChange("torch", "2.12", "2.13"),),
    )
    doc = FindingsDocument(
        mode="compare",
        base=RunRef("a" * 40, "m"),
        head=RunRef("b" * 40, "m", label="feature/x"),
        findings=(finding,),
        change_points=(cp,),
        settings={"min_effect": 0.05},
    )
    again = FindingsDocument.loads(doc.dumps())
    assert again == doc
    assert again.count("new") == 0
    # the printed values are the estimate's, and the ratio is theirs by definition
    assert (finding.base, finding.head, finding.unit) == (1e-5, 1.2e-5, "seconds")
    assert finding.ratio == 1.2e-5 / 1e-5 and finding.change_pct == pytest.approx(20.0)
    assert (finding.ci_low, finding.ci_high, finding.n_base) == (1.1, 1.3, 10)
    assert sid.label == "rmsnorm.naive 4x512 bfloat16"


def test_unknown_time_axis_is_rejected() -> None:
    data = FindingsDocument(mode="compare", base=None, head=None).to_json()
    data["findings"] = [{"series": {"benchmark": "b"}, "state": {"time": "meh"},
                         "estimate": {"unit": "s", "base": 1.0, "head": 1.0}}]  # fmt: skip
    with pytest.raises(CorruptResultsError, match="meh"):
        FindingsDocument.from_json(data)
    del data["findings"][0]["state"]
    with pytest.raises(CorruptResultsError, match="row state must be an object"):
        FindingsDocument.from_json(data)
