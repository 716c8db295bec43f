"""Module scopes and the rollup of op time to module paths (neuronasv.measure.modules)."""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from neuronasv.errors import CorruptResultsError
from neuronasv.measure import ProfileOptions, get_backend, profile_workload
from neuronasv.measure.modules import (
    MODULE_RANGE_PREFIX,
    ROOT,
    ancestors,
    current_path,
    inclusive,
    instrument,
    module_of,
    rollup_events,
    scope,
)
from neuronasv.measure.profiling import (
    CycleStats,
    OpSample,
    ProfiledConfig,
    extract_cycle,
    summarize_cycles,
)
from neuronasv.measure.workloads import get
from neuronasv.model import ProfileDocument, WorkloadProfile


@dataclass
class _Type:
    name: str


@dataclass
class Ev:
    """A stand-in FunctionEvent: the attributes the rollup reads, a real parent tree."""

    name: str
    self_cpu_time_total: float = 0.0
    self_device_time_total: float = 0.0
    cpu_parent: Ev | None = None
    device_type: Any = field(default_factory=lambda: _Type("CPU"))
    is_async: bool = False
    count: int = 1
    is_user_annotation: bool = False

    @property
    def key(self) -> str:
        return self.name


def _tree() -> list[Ev]:
    step = Ev("ProfilerStep#3", 5.0, 0.0)
    block = Ev(MODULE_RANGE_PREFIX + "block", 2.0, 1.0, step)  # the range's own time: no op
    attn = Ev(MODULE_RANGE_PREFIX + "block.attn", 1.0, 0.0, block)
    linear = Ev("aten::linear", 1.0, 0.0, attn)
    mm_attn = Ev("aten::mm", 10.0, 40.0, linear)  # nested two levels below the range
    mlp = Ev(MODULE_RANGE_PREFIX + "block.mlp", 1.0, 0.0, block)
    mm_mlp = Ev("aten::mm", 20.0, 80.0, mlp)
    silu = Ev("aten::silu", 3.0, 6.0, mlp)
    norm = Ev("aten::mul", 4.0, 4.0, block)  # directly in block
    outside = Ev("aten::add", 2.0, 5.0, step)  # no module range: the root
    kernel = Ev("sm90_gemm", 0.0, 80.0, None, _Type("CUDA"))  # device row: its op has it
    return [step, block, attn, linear, mm_attn, mlp, mm_mlp, silu, norm, outside, kernel]


def test_each_op_goes_to_its_nearest_module_range_or_the_root() -> None:
    ev = _tree()
    assert module_of(ev[4]) == "block.attn"  # through aten::linear
    assert module_of(ev[6]) == "block.mlp"
    assert module_of(ev[8]) == "block"
    assert module_of(ev[9]) == ROOT
    mc = rollup_events(ev, device_time_is_cpu=False)
    assert mc.self_us == {"block.attn": 40.0, "block.mlp": 86.0, "block": 4.0, ROOT: 5.0}
    assert mc.op_us == {
        ("block.attn", "aten::mm"): 40.0,
        ("block.mlp", "aten::mm"): 80.0,
        ("block.mlp", "aten::silu"): 6.0,
        ("block", "aten::mul"): 4.0,
        (ROOT, "aten::add"): 5.0,
    }
    # Every op microsecond lands in exactly one module: the rows' total, once.
    ops = extract_cycle(ev, device_time_is_cpu=False)
    assert sum(mc.self_us.values()) == pytest.approx(ops.device_time_us) == 135.0
    assert "neuronasv.module::block" not in ops.ops  # a scope is not an op row


def test_cpu_reads_self_cpu_time_and_the_remainder_goes_to_the_root() -> None:
    mc = rollup_events(_tree(), device_time_is_cpu=True, total_us=50.0)
    assert mc.self_us["block.attn"] == 11.0  # linear 1 + mm 10
    assert mc.self_us["block.mlp"] == 23.0
    assert mc.self_us[ROOT] == 2.0 + (50.0 - 40.0)  # aten::add + what no op claimed
    assert mc.op_us[(ROOT, "[unattributed device time]")] == pytest.approx(10.0)


def test_inclusive_sums_every_level_and_the_root_is_the_total() -> None:
    incl = inclusive({"block.attn": 40.0, "block.mlp": 86.0, "block": 4.0, ROOT: 5.0})
    assert incl == {"block.attn": 40.0, "block.mlp": 86.0, "block": 130.0, ROOT: 135.0}
    assert ancestors("a.b.c") == ["a.b.c", "a.b", "a", ""]


def test_scopes_compose_paths_and_instrument_hooks_every_submodule() -> None:
    import torch
    from torch import nn
    from torch.profiler import ProfilerActivity, profile

    assert current_path() == ""
    with scope("model") as outer:
        with scope("layer") as inner:
            assert (outer, inner, current_path()) == ("model", "model.layer", "model.layer")
        assert current_path() == "model"
    assert current_path() == ""

    net = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Sequential(nn.Linear(8, 4)))
    x = torch.randn(2, 8)
    with profile(activities=[ProfilerActivity.CPU]) as prof, torch.no_grad():
        with scope("run"), instrument(net, "net"):
            net(x)
        net(x)  # hooks removed on exit: this call has no ranges
    names = [e.name for e in prof.events() if e.name.startswith(MODULE_RANGE_PREFIX)]
    assert sorted(set(names)) == [
        MODULE_RANGE_PREFIX + p
        for p in ["run", "run.net", "run.net.0", "run.net.1", "run.net.2", "run.net.2.0"]
    ]
    assert names.count(MODULE_RANGE_PREFIX + "run.net.0") == 1
    mc = rollup_events(prof.events(), device_time_is_cpu=True)
    assert {"run.net.0", "run.net.1", "run.net.2.0", ROOT} <= set(mc.self_us)
    assert not any(m._forward_hooks or m._forward_pre_hooks for m in net.modules())

    class Boom(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            raise ValueError("boom")

    with pytest.raises(ValueError), instrument(Boom(), "b") as m:
        m(x)
    assert current_path() == ""  # the failed forward closed its range


def _cycle(total: float, mods: dict[str, float], ops: dict[tuple[str, str], float]) -> CycleStats:
    from neuronasv.measure.modules import ModuleCycle

    names: dict[str, float] = {}
    for (_, op), t in ops.items():
        names[op] = names.get(op, 0.0) + t
    return CycleStats(
        ops={o: OpSample(t, t, 1) for o, t in names.items()},
        device_time_us=total,
        modules=ModuleCycle(self_us=mods, op_us=ops),
    )


def test_summary_has_inclusive_module_series_and_op_shares() -> None:
    c1 = _cycle(
        100.0,
        {"block.attn": 30.0, "block.mlp": 60.0, ROOT: 10.0},
        {
            ("block.attn", "aten::mm"): 30.0,
            ("block.mlp", "aten::mm"): 60.0,
            (ROOT, "aten::add"): 10.0,
        },
    )
    c2 = _cycle(
        200.0,
        {"block.attn": 60.0, "block.mlp": 120.0, ROOT: 20.0},
        {
            ("block.attn", "aten::mm"): 60.0,
            ("block.mlp", "aten::mm"): 120.0,
            (ROOT, "aten::add"): 20.0,
        },
    )
    config = ProfiledConfig("w", "cpu", "1", "float32")
    prof = summarize_cycles(config, [c1, c2], active=2, device_time_is_cpu=True)
    assert [m.path for m in prof.modules] == ["", "block", "block.attn", "block.mlp"]
    root = prof.module("")
    assert root is not None and root.device_time_us == prof.device_time_us == (50.0, 100.0)
    block = prof.module("block")
    assert block is not None and block.device_time_us == (45.0, 90.0)
    assert block.self_device_time_us == (0.0, 0.0)
    mm = prof.op("aten::mm")
    assert mm is not None and mm.modules == {
        "block.attn": pytest.approx(1 / 3),
        "block.mlp": pytest.approx(2 / 3),
    }
    # the one reader of a profile's series (analyse.profile_samples) has the module series
    from neuronasv.analyse.profile_samples import profile_samples

    found = profile_samples(ProfileDocument("cpu", (prof,)), unit="us")
    key = (prof.name, prof.shape, prof.dtype)
    assert found[(*key, "module:block.mlp")] == [30.0, 60.0]
    assert (*key, "module:nope") not in found
    # A workload without scopes keeps the profile it had: no modules, no shares.
    plain = summarize_cycles(
        config,
        [_cycle(10.0, {ROOT: 10.0}, {(ROOT, "aten::add"): 10.0})],
        active=1, device_time_is_cpu=True,
    )  # fmt: skip
    assert plain.modules == () and plain.ops[0].modules == {}
    # Schema 3 round trip; a version 2 document reads with no modules.
    doc = ProfileDocument("cpu", (prof,))
    assert ProfileDocument.loads(doc.dumps()) == doc
    old = json.loads(doc.dumps())
    old["schema_version"] = 2
    for w in old["workloads"]:
        w.pop("modules")
        for o in w["ops"]:
            o.pop("modules", None)
    read = ProfileDocument.from_json(old).workloads[0]
    assert read.modules == () and read.op("aten::mm").modules == {}  # type: ignore[union-attr]
    bad = json.loads(doc.dumps())
    bad["workloads"][0]["ops"][0]["modules"] = {"block": 2.0}
    with pytest.raises(CorruptResultsError, match="module share"):
        ProfileDocument.from_json(bad)


@pytest.fixture(scope="module")
def block_profile() -> WorkloadProfile:
    return profile_workload(
        get("transformer.block"),
        get_backend("cpu"),
        shape="1x32x64x2",
        dtype="float32",
        options=ProfileOptions(samples=3, active=2, roofline=False, evidence=False),
    )  # fmt: skip


def test_real_cpu_block_rolls_up_to_its_modules(block_profile: WorkloadProfile) -> None:
    prof = block_profile
    paths = [m.path for m in prof.modules]
    assert paths == ["", "block", "block.attn", "block.attn_norm", "block.mlp", "block.mlp_norm"]
    for i, total in enumerate(prof.device_time_us):
        root = prof.module("")
        assert root is not None and root.device_time_us[i] == pytest.approx(total, rel=1e-9)
        # The self times of all paths partition the total: every op lands in one module.
        assert sum(m.self_device_time_us[i] for m in prof.modules) == pytest.approx(total)
        children = [m for m in prof.modules if m.path.startswith("block.")]
        block = prof.module("block")
        assert block is not None
        assert sum(m.device_time_us[i] for m in children) + block.self_device_time_us[i] == (
            pytest.approx(block.device_time_us[i])
        )
        for m in children:
            assert m.device_time_us[i] > 0
    for op in prof.ops:
        assert op.modules, f"{op.op} has no module"
        assert sum(op.modules.values()) == pytest.approx(1.0, abs=1e-5)
    sdpa = next(o for o in prof.ops if "scaled_dot_product" in o.op)
    assert set(sdpa.modules) == {"block.attn"}
    silu = prof.op("aten::silu")
    assert silu is not None and set(silu.modules) == {"block.mlp"}
    mm = prof.op("aten::mm")
    assert mm is not None and set(mm.modules) == {"block.attn", "block.mlp"}
    assert not any(o.op.startswith(MODULE_RANGE_PREFIX) for o in prof.ops)


H200_BLOCK = (
    Path(__file__).resolve().parents[1]
    / "data"
    / "h200-transformer.block-1x2048x4096x32-bfloat16.events.json.gz"
)


def _h200_events() -> tuple[list[Ev], float, int]:
    """The H200 capture (bench/capture_device_fixtures.py) as events with their real
    parent ranges; returns (events, kernel µs, iterations)."""
    with gzip.open(H200_BLOCK, "rt", encoding="utf-8") as fh:
        doc = json.load(fh)
    rows = doc["rows"]
    kernels = {k for r in rows for k in r["kernels"]}
    ranges: dict[tuple[str, ...], Ev] = {}

    def parent(scopes: list[str]) -> Ev | None:
        ev = None
        for i in range(len(scopes)):
            key = tuple(scopes[: i + 1])
            if key not in ranges:
                ranges[key] = Ev(scopes[i], 1.0, 0.0, ev)
            ev = ranges[key]
        return ev

    events: list[Ev] = []
    kernel_us = 0.0
    for r in rows:
        device_row = r["cpu_us"] == 0.0 and not r["kernels"]
        if device_row and (r["name"] in kernels or r["name"].startswith(MODULE_RANGE_PREFIX)):
            if not r["name"].startswith(MODULE_RANGE_PREFIX):  # the annotation's GPU span
                kernel_us += r["self_device_us"]
            ev = Ev(r["name"], 0.0, r["self_device_us"], None, _Type("CUDA"))
            ev.is_user_annotation = r["name"].startswith(MODULE_RANGE_PREFIX)
            events.append(ev)
        else:
            events.append(Ev(r["name"], r["cpu_us"], r["self_device_us"], parent(r["scopes"])))
    return events, kernel_us, int(doc["iters"])


def test_h200_block_capture_every_kernel_microsecond_lands_in_a_module() -> None:
    """Real CUDA rows (NVIDIA H200, torch 2.11.0+cu130, 5 iterations of transformer.block
    1x2048x4096x32 bf16 with the module ranges of block_forward)."""
    events, kernel_us, iters = _h200_events()
    assert kernel_us > 0
    mc = rollup_events(events, device_time_is_cpu=False)
    assert ROOT not in mc.self_us  # nothing ran outside the block's ranges
    assert sum(mc.self_us.values()) == pytest.approx(kernel_us, rel=1e-9)
    # The op table agrees: CUPTI's "Activity Buffer Request" row (it repeats a kernel of
    # its parent op) is bookkeeping, so the rows sum to the kernels exactly once.
    cycle = extract_cycle(events, device_time_is_cpu=False)
    assert "Activity Buffer Request" not in cycle.ops
    assert cycle.device_time_us == pytest.approx(kernel_us, rel=1e-9)
    per_iter = {p: t / iters for p, t in inclusive(mc.self_us).items()}
    assert set(per_iter) == {"", "block", "block.attn", "block.attn_norm", "block.mlp",
                             "block.mlp_norm"}  # fmt: skip
    assert per_iter["block"] == pytest.approx(1693.6, abs=1.0)  # 1.69 ms / iteration
    assert per_iter["block.mlp"] > per_iter["block.attn"] > per_iter["block.attn_norm"]
    mm_mlp = mc.op_us[("block.mlp", "aten::mm")] / iters
    assert mm_mlp / per_iter["block.mlp"] > 0.8  # the MLP is its three GEMMs


def test_a_failing_rollup_loses_the_module_times_not_the_profile(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from neuronasv.measure import profiling

    def broken(*_a: Any, **_k: Any) -> Any:
        raise RuntimeError("no event tree")

    monkeypatch.setattr(profiling, "rollup_events", broken)
    prof = profile_workload(
        get("transformer.block"),
        get_backend("cpu"),
        shape="1x32x64x2",
        dtype="float32",
        options=ProfileOptions(samples=2, active=1, roofline=False, evidence=False),
    )  # fmt: skip
    assert prof.modules == () and len(prof.device_time_us) == 2 and prof.ops
    assert "module rollup skipped: RuntimeError: no event tree" in prof.warnings
