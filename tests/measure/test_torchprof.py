"""The lean profiler: the real torch profiler, without importing torch's compile stack."""

from __future__ import annotations

import subprocess
import sys

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
def test_the_profiler_leaves_inductor_alone_unless_it_is_loaded(
    before: str, expected: str
) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", PROFILE.format(before=before)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[-2] == expected
