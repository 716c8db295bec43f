"""Per-iteration samples: one profiler cycle split at its ProfilerStep ranges."""

from __future__ import annotations

import pytest
from torch.autograd import DeviceType

from neuronasv.errors import UsageError
from neuronasv.measure import ProfileOptions, get_backend, profile_workload
from neuronasv.measure.backends.neuron import NeuronBackend
from neuronasv.measure.profiling import extract_cycle
from neuronasv.measure.steps import is_step_range, split_steps
from neuronasv.measure.workloads import get

from .test_measure_extraction import Trace


def _cuda_cycle() -> Trace:
    """Two iterations as torch's parser delivers them on CUDA: host ranges and ops, kernels
    on the host clock (launched in their step, finished before the step's sync ends), and
    the step annotations' device-side copies."""
    t = Trace("cuda", DeviceType.CUDA)
    for k, (start, mul_us, mean_us) in enumerate(((0.0, 4.0, 7.0), (200.0, 5.0, 9.0))):
        t.op(f"ProfilerStep#{k + 3}", start, start + 190)
        mul = t.op("aten::mul", start + 10, start + 20)
        t.kernel(mul, "vectorized_mul_kernel", start + 100, mul_us)
        mean = t.op("aten::mean", start + 30, start + 40)
        t.kernel(mean, "reduce_kernel", start + 120, mean_us)
        t.kernel(None, f"ProfilerStep#{k + 3}", start + 1, 185, annotation=True)
    return t


def test_a_cycle_splits_at_its_host_step_ranges() -> None:
    t = _cuda_cycle()
    steps = split_steps(reversed(t.events))  # order of the input does not matter
    assert len(steps) == 2
    names = [sorted(e.name.split("#")[0] for e in s) for s in steps]
    assert names[0] == names[1]  # each step: its range, 2 ops, 2 kernels, 1 annotation
    assert len(steps[0]) == 6
    assert [e.time_range.start for e in steps[1] if is_step_range(e)] == [200.0]
    # the device-side annotation is not a step boundary (it is not a host range)
    assert sum(is_step_range(e) for e in t.events) == 2


def test_each_step_gives_its_own_device_time_per_op() -> None:
    t = _cuda_cycle()
    per_step = [extract_cycle(s, device_time_is_cpu=False) for s in split_steps(t.events)]
    assert [s.device_time_us for s in per_step] == pytest.approx([11.0, 14.0])
    assert [s.ops["aten::mul"].self_device_us for s in per_step] == pytest.approx([4.0, 5.0])
    assert all(s.ops["aten::mean"].count == 1 for s in per_step)
    # the split loses nothing: the steps add up to the whole cycle
    whole = extract_cycle(t.averages(), device_time_is_cpu=False)
    assert sum(s.device_time_us for s in per_step) == pytest.approx(whole.device_time_us)


def test_without_step_ranges_the_cycle_is_one_sample() -> None:
    t = Trace("cuda", DeviceType.CUDA)
    mul = t.op("aten::mul", 10, 20)
    t.kernel(mul, "k", 30, 2.0)
    assert split_steps(t.events) == [t.events]


@pytest.mark.slow
def test_per_step_profile_on_the_cpu_gives_one_sample_per_iteration() -> None:
    """The real profiler: 7 samples at 3 iterations a cycle = 3 cycles, 7 kept."""
    prof = profile_workload(
        get("rmsnorm.naive"),
        get_backend("cpu"),
        shape="4x512",
        dtype="float32",
        options=ProfileOptions(samples=7, active=3, per_step=True, roofline=False, evidence=False),
    )  # fmt: skip
    assert len(prof.device_time_us) == 7 and all(t > 0 for t in prof.device_time_us)
    assert prof.iterations_per_sample == 1
    mul = prof.op("aten::mul")
    assert mul is not None and mul.calls_per_iter == 3 and len(mul.self_device_time_us) == 7
    # every sample is one iteration, not a cycle's sum: its ops add up to its total
    for i, total in enumerate(prof.device_time_us):
        assert sum(o.self_device_time_us[i] for o in prof.ops) == pytest.approx(total)


def test_backends_whose_time_is_per_cycle_refuse_per_step() -> None:
    assert get_backend("cpu").per_step_samples and not NeuronBackend.per_step_samples

    class PerCycle(type(get_backend("cpu"))):  # type: ignore[misc]
        per_step_samples = False

    with pytest.raises(UsageError, match="per-iteration samples are not available"):
        profile_workload(
            get("rmsnorm.naive"),
            PerCycle(),
            shape="4x8",
            dtype="float32",
            options=ProfileOptions(per_step=True),
        )
