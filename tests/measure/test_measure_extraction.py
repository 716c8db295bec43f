"""Device-time extraction from synthetic EventLists (real torch classes, synthetic events).

Covers the accelerator paths this machine cannot run: CUDA kernels, PrivateUse1 (Neuron)
device events, the legacy per-op device time, nesting, bookkeeping rows, and time no op
launched.
"""

from __future__ import annotations

import pytest
from torch.autograd import DeviceType
from torch.autograd.profiler_util import EventList, FunctionEvent

from neuronasv.errors import CaptureError
from neuronasv.measure.profiling import (
    UNATTRIBUTED_OP,
    CycleStats,
    OpSample,
    ProfiledConfig,
    extract_cycle,
    normalize_op_name,
    summarize_cycles,
)
from neuronasv.samples import noise


class Trace:
    """Builds a synthetic profile the way torch's kineto parser does."""

    def __init__(self, use_device: str, device_type: DeviceType) -> None:
        self.use_device = use_device
        self.device_type = device_type
        self.events: list[FunctionEvent] = []
        self._id = 0

    def op(self, name: str, start: float, end: float, **kw: object) -> FunctionEvent:
        self._id += 1
        ev = FunctionEvent(
            id=self._id,
            name=name,
            thread=1,
            start_us=start,
            end_us=end,
            use_device=self.use_device,
            device_type=DeviceType.CPU,
            stack=[],
            **kw,
        )
        self.events.append(ev)
        return ev

    def kernel(
        self,
        launcher: FunctionEvent | None,
        name: str,
        start: float,
        dur: float,
        annotation: bool = False,
    ) -> FunctionEvent:
        """A device event; its time also lands on the launching op, as the parser does."""
        self._id += 1
        ev = FunctionEvent(
            id=self._id,
            name=name,
            thread=7,
            start_us=start,
            end_us=start + dur,
            use_device=self.use_device,
            device_type=self.device_type,
            device_index=0,
            is_user_annotation=annotation,
            stack=[],
        )
        self.events.append(ev)
        if launcher is not None:
            launcher.append_kernel(name, 0, dur)
        return ev

    def averages(self) -> EventList:
        el = EventList(self.events, use_device=self.use_device)
        el._build_tree()
        return el.key_averages()


@pytest.mark.parametrize(
    ("use_device", "device_type"),
    [("cuda", DeviceType.CUDA), ("neuron", DeviceType.PrivateUse1)],
)
def test_device_time_per_op_without_double_counting(
    use_device: str, device_type: DeviceType
) -> None:
    t = Trace(use_device, device_type)
    t.op("ProfilerStep#4", 0, 200)
    for i, dur in enumerate((4.0, 5.0, 6.0)):
        mul = t.op("aten::mul", 10 + 20 * i, 20 + 20 * i)
        t.kernel(mul, "vectorized_mul_kernel", 100 + 10 * i, dur)
    mean = t.op("aten::mean", 80, 95)
    t.kernel(mean, "reduce_kernel", 140, 7.5)
    t.op("aten::empty", 96, 97)  # host-only op: no device time
    # A GPU-side span of a user annotation: never device work of its own.
    t.kernel(None, "ProfilerStep#4", 0, 190, annotation=True)

    stats = extract_cycle(t.averages(), device_time_is_cpu=False)

    assert stats.ops["aten::mul"] == OpSample(self_device_us=15.0, self_cpu_us=30.0, count=3)
    assert stats.ops["aten::mean"].self_device_us == 7.5
    assert stats.ops["aten::empty"].self_device_us == 0.0
    assert "ProfilerStep*" not in stats.ops and "vectorized_mul_kernel" not in stats.ops
    assert UNATTRIBUTED_OP not in stats.ops
    assert stats.device_time_us == pytest.approx(22.5)  # kernels once, annotation excluded


def test_nested_ops_use_self_time() -> None:
    t = Trace("cuda", DeviceType.CUDA)
    linear = t.op("aten::linear", 0, 100)
    addmm = t.op("aten::addmm", 10, 90)
    t.kernel(addmm, "gemm_kernel", 20, 30.0)

    stats = extract_cycle(t.averages(), device_time_is_cpu=False)

    assert linear.device_time_total == 30.0  # the parent's *total* includes the child's
    assert stats.ops["aten::linear"].self_device_us == 0.0
    assert stats.ops["aten::addmm"].self_device_us == 30.0
    assert stats.device_time_us == 30.0


def test_kernels_no_kept_op_launched_get_their_own_row() -> None:
    t = Trace("cuda", DeviceType.CUDA)
    step = t.op("ProfilerStep#1", 0, 100)
    mul = t.op("aten::mul", 10, 20)
    t.kernel(mul, "mul_kernel", 30, 4.0)
    t.kernel(step, "triton_poi_fused_0", 40, 6.0)  # launched straight from the step

    stats = extract_cycle(t.averages(), device_time_is_cpu=False)

    assert stats.ops[UNATTRIBUTED_OP].self_device_us == pytest.approx(6.0)
    assert stats.device_time_us == pytest.approx(10.0)


def test_legacy_privateuse1_time_on_host_events() -> None:
    # The parser's fallback: device time reported on the host event itself (is_legacy).
    t = Trace("neuron", DeviceType.PrivateUse1)
    add = t.op("aten::add", 0, 10)
    add.append_kernel("aten::add", 0, 2.5)
    add.is_legacy = True

    stats = extract_cycle(t.averages(), device_time_is_cpu=False)

    assert stats.ops["aten::add"].self_device_us == 2.5
    assert stats.device_time_us == 2.5


def test_cpu_backend_reads_self_cpu_time() -> None:
    t = Trace("", DeviceType.CPU)
    t.op("ProfilerStep#2", 0, 100)
    outer = t.op("aten::mean", 10, 40)
    t.op("aten::sum", 15, 30)
    del outer

    stats = extract_cycle(t.averages(), device_time_is_cpu=True)

    assert stats.ops["aten::mean"].self_device_us == pytest.approx(15.0)
    assert stats.ops["aten::sum"].self_device_us == pytest.approx(15.0)
    assert stats.device_time_us == pytest.approx(30.0)  # the step's own time is not work


@pytest.mark.parametrize(
    ("raw", "stable"),
    [
        (
            "## Call CompiledFxGraph fdisxz36yeya2qjxv4sde6oteovlgxrogpli6mwq7zcpo5i3jfqh ##",
            "## Call CompiledFxGraph",
        ),
        (
            "## Call CompiledFxGraph f3l6orbbr2ddxwrfrfcnfgkamq3xwmkdzjfu4hkfutd4dkqcctnu",
            "## Call CompiledFxGraph",
        ),
        ("Torch-Compiled Region: 0/0", "Torch-Compiled Region: 0/0"),
        ("aten::mul", "aten::mul"),
        (
            "graph_cpogk2imnqkn3e2y5hnkyyu3yiktadpkgklphw7jeyxzsf5cbcst_kernel",
            "graph_<hash>_kernel",
        ),
        ("launch at 0x7f3a2b4c5d60", "launch at 0x?"),
        ("triton_poi_fused_add_mean_mul_0", "triton_poi_fused_add_mean_mul_0"),
    ],
)
def test_op_names_are_stable(raw: str, stable: str) -> None:
    assert normalize_op_name(raw) == stable


def test_compiled_graphs_with_different_hashes_merge() -> None:
    t = Trace("", DeviceType.CPU)
    t.op("## Call CompiledFxGraph aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa1111 ##", 0, 10)
    t.op("## Call CompiledFxGraph bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb2222 ##", 20, 25)
    stats = extract_cycle(t.averages(), device_time_is_cpu=True)
    assert stats.ops == {"## Call CompiledFxGraph": OpSample(15.0, 15.0, 2)}


def _cycle(total: float, **ops: float) -> CycleStats:
    return CycleStats(ops={k: OpSample(v, v, 2) for k, v in ops.items()}, device_time_us=total)


def test_summary_per_iteration_sorted_and_warns_on_noise() -> None:
    cycles = [
        _cycle(30.0, a=10.0, b=20.0),
        _cycle(60.0, a=20.0, b=40.0),
        _cycle(32.0, a=12.0, b=20.0),
    ]
    prof = summarize_cycles(
        ProfiledConfig("w.x", "cuda", "4x512", "bfloat16"), cycles, active=2,
        device_time_is_cpu=False,
    )  # fmt: skip
    assert prof.device_time_us == (15.0, 30.0, 16.0)
    assert [o.op for o in prof.ops] == ["b", "a"]
    assert prof.op("a") is not None and prof.op("a").calls_per_iter == 1.0  # type: ignore[union-attr]
    assert prof.iterations_per_sample == 2
    assert any("IQR/median" in w for w in prof.warnings)


def test_quiet_series_has_no_noise_warning() -> None:
    cycles = [_cycle(10.0 + 0.01 * i, a=10.0 + 0.01 * i) for i in range(10)]
    config = ProfiledConfig("w", "cpu", "4", "float32")
    prof = summarize_cycles(config, cycles, active=1, device_time_is_cpu=True)
    assert prof.warnings == ()


@pytest.mark.parametrize(
    "cycles",
    [[], [_cycle(0.0)], [_cycle(5.0, a=5.0), _cycle(0.0, a=0.0)]],
    ids=["no-cycles", "empty-cycle", "zero-device-time"],
)
def test_failed_capture_is_an_error_naming_the_workload(cycles: list[CycleStats]) -> None:
    with pytest.raises(CaptureError, match=r"rmsnorm\.naive \[4x512,bfloat16\] on neuron"):
        summarize_cycles(
            ProfiledConfig("rmsnorm.naive", "neuron", "4x512", "bfloat16"),
            cycles,
            active=1,
            device_time_is_cpu=False,
            capture_hint="check DEVICE mode",
        )


def test_noise_as_the_profile_uses_it() -> None:
    # the profile's warning reads "no spread" (0.0) where samples.noise has no ratio
    assert (noise([1.0]) or 0.0) == 0.0
    assert noise([10.0, 10.0, 10.0]) == 0.0
    assert noise([1.0, 2.0, 3.0, 4.0, 5.0]) == pytest.approx(2.0 / 3.0)
