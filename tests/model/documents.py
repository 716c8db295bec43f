"""One document of each versioned type with every field set off its default.

The goldens under ``tests/data/model/`` were written from these by the hand-written
codecs that preceded the declarative one (``python -m tests.model.documents --write``), so
the round-trip test proves the codec change left the bytes on disk unchanged. Regenerate
them only for a deliberate schema change (and bump the schema version).
"""

from __future__ import annotations

import sys
from pathlib import Path

from neuronasv.model import (
    CanaryReading,
    Cause,
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
    WorkChange,
    WorkloadProfile,
)
from neuronasv.model.findings import CanaryCheck, DeviceHealth, RunnerShift, SideState
from neuronasv.model.rounds import RoundMeasurement, RoundsDocument
from neuronasv.model.sidecar import MachineReading, RunState

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "model"


CANARY = CanaryReading("matmul256", (10.0, 11.0), (10.5,), {"start.sm_clock": "1980"})


def workload(name: str = "rmsnorm.naive", canary: CanaryReading | None = CANARY) -> WorkloadProfile:
    return WorkloadProfile(
        name=name,
        backend="cuda",
        shape="4x512",
        dtype="bfloat16",
        device_time_us=(30.0, 31.5, 29.25),
        ops=(
            OpProfile(
                "aten::mul",
                3.0,
                (12.0, 13.0, 12.5),
                (2.0, 3.0, 2.5),
                flops=6144.0,
                bytes=24576.0,
                roofline_fraction=0.125,
                signature=("3×bf16[4, 512]", "3×bf16[512]"),
            ),
            OpProfile("aten::mean", 1.0, (5.0, 5.5, 5.125), (1.0, 1.5, 1.25)),
        ),
        device_time_is_cpu=False,
        iterations_per_sample=4,
        warnings=("noisy: IQR/median 12 %", "ünïcode ✓"),
        trace_files=("rmsnorm.naive/4x512-bfloat16.json.gz",),
        canary=canary,
    )


def profile() -> ProfileDocument:
    return ProfileDocument(
        backend="cuda",
        workloads=(
            workload(),
            workload("rmsnorm.fused", CanaryReading("matmul256", (9.0,), (9.5,))),
            workload("rmsnorm.compiled", None),
        ),
        fingerprint={"torch": "2.13.0", "cuda": "12.8"},
        created="2026-11-30T12:00:00+00:00",
    )


SID = SeriesId("rmsnorm.Naive.devtime_total", ("'4x512'", "'bfloat16'"), "rmsnorm.naive",
               "4x512", "bfloat16", None)  # fmt: skip
SID_OP = SeriesId("rmsnorm.Naive.devtime_op", ("'4x512'", "'bfloat16'", "'aten::mul'"),
                  "rmsnorm.naive", "4x512", "bfloat16", "aten::mul")  # fmt: skip
PLAIN = SeriesId("bench.time_x", ("1",))


def sidecar() -> RunSidecar:
    return RunSidecar(
        machine="gpu-1",
        commit_hash="a" * 40,
        env_name="existing-py",
        fingerprint={"torch": "2.13.0"},
        profiles=(workload(),),
        series=(SID, SID_OP, PLAIN),
        traces={"rmsnorm.naive[4x512,bfloat16]": "traces/aaaa/x.json.gz"},
        failures={"rmsnorm.compiled[4x512,float32]": "boom"},
        created="2026-11-30T12:00:00+00:00",
        state=RunState(
            start=MachineReading(0.5, 0.75, 1.25, 2596.5, 2),
            end=MachineReading(5.25, 3.0, 1.5, None, 2),
        ),
    )


def findings() -> FindingsDocument:
    finding = Finding(
        series=SID,
        estimate=Estimate("seconds", 1e-5, 1.2e-5, "rounds", 1.1, 1.3, 10, 12, rounds=3),
        state=RowState(work="more", time="slower", exact="more", confirmed=True,
                       gate="confirmed slower time"),
        p_value=0.001, p_adjusted=0.004,
        noise_base=0.02, noise_head=0.03, reason="+20 %",
        warnings=("few samples",),
        attribution=(OpContribution("aten::mul", 5e-6, 7e-6, 2e-6, 1.0, 3.0, 4.0),
                     OpContribution("aten::new", None, 1e-6, 1e-6, 0.5)),
        acknowledged="known", calls_base=3.0, calls_head=4.0,
    )  # fmt: skip
    other = Finding(series=PLAIN, estimate=Estimate("seconds", None, 2.0),
                    state=RowState(presence="new"))  # fmt: skip
    shifted = Finding(series=SID_OP, estimate=Estimate("seconds", 1e-6, 2e-6, ci_low=1.5,
                                                       ci_high=2.5, n_base=10, n_head=10,
                                                       shift=1.875),
                      state=RowState(work="same", time="undecided", exact="same",
                                     exact_base=100.0, exact_head=100.0))  # fmt: skip
    cp = ChangePoint(
        series=SID, machine="m", commit_before="a" * 40, commit_after="b" * 40, index=3,
        before=1.0, after=1.25, ratio=1.25, p_value=0.0001, unit="seconds", kind="regression",
        open=True, env_changes=(EnvChange("torch", "2.12", "2.13"), EnvChange("new", None, "1")),
        acknowledged="ack", reason="step",
    )  # fmt: skip
    work = WorkChange(
        "rmsnorm.naive", "4x512", "bfloat16", "aten::mul", "calls", calls_base=3.0,
        calls_head=4.0, bytes_base=1.0, bytes_head=2.0, flops_base=3.0, flops_head=4.0,
        signature_base=("3×bf16[4, 512]",), signature_head=("4×bf16[4, 512]",),
        time_base=1e-6, time_head=2e-6,
    )  # fmt: skip
    cause = Cause("work", "rmsnorm.naive", "regression", ops=("aten::mul",),
                  configs=(("4x512", "bfloat16"),), totals=(SID,))  # fmt: skip
    check = CanaryCheck(
        side="head", commit="b" * 40, machine="m", status="withheld", reason="slow",
        level_us=12.0, baseline_us=10.0, change=0.2, threshold=0.1, history_n=7, readings=2,
        device_state={"end.sm_clock": "1410"},
    )  # fmt: skip
    return FindingsDocument(
        mode="compare",
        base=RunRef("a" * 40, "m", {"torch": "2.12"}, "main", "https://x/trace"),
        head=RunRef("b" * 40, "m", label="feature/x"),
        findings=(finding, other, shifted),
        change_points=(cp,),
        env_changes=(EnvChange("torch", "2.12", "2.13"),),
        settings={"min_effect": 0.05, "alpha": 0.01, "nested": {"a": [1, 2]}},
        load_errors=("r/m/x.json: truncated",),
        links={"history_url": "https://h"},
        created="2026-11-30T12:00:00+00:00",
        work=(work,),
        causes=(cause,),
        forced=("different machine",),
        health=DeviceHealth("withheld", "head canary 20 % slower", (check,)),
        runner=RunnerShift(
            "runner",
            factor=1.875,
            spread=0.25,
            series=20,
            along=19,
            counted=18,
            canary=6.0,
            base=SideState("base", 0.5, 0.75, 2596.5, 2590.0, 2, 1000.0, "none"),
            head=SideState("head", 4.75, 5.5, None, None, 2, 6000.0, "sw_power_cap"),
        ),
    )


def rounds() -> RoundsDocument:
    return RoundsDocument(
        base="a" * 40,
        head="b" * 40,
        rounds=2,
        measurements=(
            RoundMeasurement("base", 0, ((SID, (1.0, 1.5)), (SID_OP, (0.25,)))),
            RoundMeasurement("head", 0, ((SID, (1.25, 1.75)),)),
            RoundMeasurement("base", 3, ()),
        ),
        max_rounds=4,
    )


DOCUMENTS = {
    "profile.json": profile,
    "sidecar.neuronasv": sidecar,
    "findings.json": findings,
    "rounds.json": rounds,
}


def main(argv: list[str]) -> int:
    if argv != ["--write"]:
        print(__doc__)
        return 2
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for name, build in DOCUMENTS.items():
        (GOLDEN / name).write_text(build().dumps(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
