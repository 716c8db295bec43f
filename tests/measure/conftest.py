"""Shared fixtures: one real CPU profile of the three RMSNorm variants per test session.

torch.compile costs 10-25 s the first time, so the compiled variant is profiled once and
every end-to-end test reads the same profiles.
"""

from __future__ import annotations

import pytest

from neuronasv.measure import ProfileOptions, get_backend, profile_workload
from neuronasv.measure.workloads import get
from neuronasv.model import WorkloadProfile
from tests.builders import logged_lines

VARIANTS = ("rmsnorm.naive", "rmsnorm.fused", "rmsnorm.compiled")


@pytest.fixture(scope="session")
def cpu_trace_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("traces"))


@pytest.fixture(scope="session")
def cpu_progress() -> list[str]:
    """Progress lines the session profile logged (filled by ``cpu_profiles``)."""
    return []


@pytest.fixture(scope="session")
def cpu_profiles(cpu_trace_dir: str, cpu_progress: list[str]) -> dict[str, WorkloadProfile]:
    backend = get_backend("cpu")
    out = {}
    with logged_lines("neuronasv.measure.profiling") as lines:
        for name in VARIANTS:
            out[name] = profile_workload(
                get(name),
                backend,
                shape="4x512",
                dtype="bfloat16",
                options=ProfileOptions(samples=10, trace_dir=cpu_trace_dir),
            )
    cpu_progress.extend(lines)
    return out
