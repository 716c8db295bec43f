"""The CPU backend pins torch's intra-op threads while measuring, and restores them."""

from __future__ import annotations

import pytest
import torch

from neuronasv.errors import UsageError
from neuronasv.measure.backends.cpu import CPU_THREADS_ENV, CpuBackend, cpu_threads


def test_default_is_one_thread_and_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CPU_THREADS_ENV, raising=False)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with CpuBackend().measuring():
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_env_override_and_bad_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CPU_THREADS_ENV, "2")
    assert cpu_threads() == 2
    assert CpuBackend().describe()["threads"] == "2"
    for bad in ("0", "-1", "two"):
        monkeypatch.setenv(CPU_THREADS_ENV, bad)
        with pytest.raises(UsageError, match=CPU_THREADS_ENV):
            cpu_threads()
