"""The instructions pass leaves nothing in the temporary folder: torch's inductor cache
folder, which importing ``torch._dynamo`` makes (a ``TorchDispatchMode`` does), goes in the
pass's own folder unless the run has a compile cache."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from neuronasv.run.instrrun import valgrind_env

# What the pass does first (measure/instructions.py): enter a dispatch mode.
_ENTER_MODE = """
import torch
from torch.utils._python_dispatch import TorchDispatchMode

class M(TorchDispatchMode):
    def __torch_dispatch__(self, f, t, a=(), k=None):
        return f(*a, **(k or {}))

with M():
    torch.ones(3) * 2
"""


def test_the_pass_keeps_torchs_cache_folder_in_its_own_folder(tmp_path: Path) -> None:
    tmpdir, work = tmp_path / "tmpdir", tmp_path / "work"
    tmpdir.mkdir()
    work.mkdir()
    # torch sets the variable in a process that used inductor (this suite's, for one)
    base = {k: v for k, v in os.environ.items() if k != "TORCHINDUCTOR_CACHE_DIR"}
    env = valgrind_env({**base, "TMPDIR": str(tmpdir)}, scratch=str(work))
    subprocess.run([sys.executable, "-c", _ENTER_MODE], env=env, check=True, timeout=300)
    assert os.listdir(tmpdir) == []
    assert os.listdir(work) == ["inductor"]


def test_a_compile_cache_of_the_run_is_kept() -> None:
    env = valgrind_env({"TORCHINDUCTOR_CACHE_DIR": "/cache/inductor"}, scratch="/work/x")
    assert env["TORCHINDUCTOR_CACHE_DIR"] == "/cache/inductor"
