"""The lean profiler: the real torch profiler, without importing torch's compile stack."""

from __future__ import annotations

import subprocess
import sys
import warnings
from typing import Any

import pytest

PROFILE = """
import sys, torch
{before}
from torch.profiler import ProfilerActivity
from neuronasv.measure.torchprof import profile
with profile(activities=[ProfilerActivity.CPU]) as p:
    (torch.ones(64) * 2).sum()
names = {{e.key for e in p.key_averages()}}
print("torch._inductor" in sys.modules, "aten::mul" in names, hasattr(torch, "_dynamo"))
"""


@pytest.mark.parametrize(
    ("before", "expected"),
    [
        ("", "False True True"),  # not imported by the profiler; torch's lazy modules intact
        ("import torch._inductor.config", "True True True"),  # loaded: torch's own check runs
    ],
)
def test_the_profiler_leaves_inductor_alone_unless_it_is_loaded(before: str, expected: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", PROFILE.format(before=before)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[-2] == expected


# --- host_cycle: the same numbers as torch's FunctionEvent path, on real profiles ---------

CYCLES = 4


def _both_paths(step: Any, **kwargs: Any) -> list[tuple[Any, Any, Any]]:
    """Profile ``step`` for CYCLES cycles with the real profiler; per cycle: the lean read,
    torch's read (key_averages + events) of the same cycle, and host_cycle's raw answer."""
    import torch
    from torch.profiler import ProfilerActivity, schedule

    from neuronasv.measure import get_backend
    from neuronasv.measure.profiling import read_cycle
    from neuronasv.measure.torchprof import host_cycle, profile

    backend = get_backend("cpu")
    out: list[tuple[Any, Any, Any]] = []

    def on_cycle(prof: Any) -> None:
        errors: list[str] = []
        lean = read_cycle(prof, backend, "", errors)
        raw = host_cycle(prof)
        full = read_cycle(prof, backend, "", errors, lean=False)
        assert not errors
        out.append((lean, full, raw))

    with backend.measuring(), torch.no_grad(), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*Profiler clears events")
        for _ in range(3):
            step()
        prof = profile(
            activities=[ProfilerActivity.CPU],
            schedule=schedule(wait=1, warmup=1, active=3, repeat=CYCLES),
            on_trace_ready=on_cycle,
            **kwargs,
        )
        with prof:
            for _ in range(CYCLES * 5):
                step()
                prof.step()
    assert len(out) == CYCLES
    return out


def _workload_step(name: str, shape: str, dtype: str) -> Any:
    from neuronasv.measure import get_backend
    from neuronasv.measure.workloads import get, parse_dtype, parse_shape

    return get(name).build(parse_shape(shape), parse_dtype(dtype), get_backend("cpu").device, 0)


@pytest.mark.parametrize(
    ("name", "shape", "dtype"),
    [
        ("rmsnorm.naive", "4x64x256", "bfloat16"),
        ("rmsnorm.fused", "2x128x512", "float32"),
        ("transformer.block", "1x32x64x2", "float32"),  # module scopes: the rollup's tree
        ("transformer.block.backward", "1x32x64x2", "float32"),  # autograd's backward ops
    ],
)
def test_host_cycle_gives_torchs_numbers_bit_for_bit(name: str, shape: str, dtype: str) -> None:
    for lean, full, raw in _both_paths(_workload_step(name, shape, dtype)):
        assert raw is not None  # the lean path was taken, not the fallback
        assert lean.ops and lean.device_time_us > 0
        assert lean == full  # every op's floats, the total and the module rollup, exactly
    if name == "transformer.block":
        assert lean.modules is not None and len(lean.modules.self_us) > 1


def test_host_cycle_repeats_torchs_tree_rules() -> None:
    """Nested ranges, a lone same-named child (torch lifts it into its parent), siblings
    under one range: still torch's numbers."""
    import torch
    from torch.profiler import record_function

    a = torch.randn(64, 64)

    def step() -> None:
        with record_function("outer"), record_function("dup"), record_function("dup"):
            torch.mm(a, a).relu_()
        with record_function("pair"):
            torch.add(a, 1)
            torch.add(a, 2)

    cycles = _both_paths(step)
    for lean, full, raw in cycles:
        assert raw is not None
        assert lean == full
        events, rows = raw
        # Lifted: one "dup" event per iteration, as torch keeps it.
        assert sum(e.name == "dup" for e in events) == 3
        assert {r.key for r in rows} >= {"outer", "dup", "pair", "aten::mm", "aten::relu_"}


def test_host_cycle_leaves_memory_profiles_to_torch() -> None:
    """Memory records are placed by torch's own rules: host_cycle declines, the caller
    reads torch's events, and the numbers are torch's."""
    import torch

    a = torch.randn(32, 32)
    for lean, full, raw in _both_paths(lambda: torch.mm(a, a) + 1, profile_memory=True):
        assert raw is None
        assert lean == full
