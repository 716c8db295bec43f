"""asv runs with a private HOME (its machine file); benchmark processes get the user's back."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def test_the_plugin_gives_benchmark_processes_the_users_home(tmp_path: Path) -> None:
    env = dict(os.environ, HOME=str(tmp_path / "private"), NEURONASV_USER_HOME="/users/me")
    code = (
        "import os, asv_bench_neuronasv;"
        " print(os.environ['HOME'], 'NEURONASV_USER_HOME' in os.environ)"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout  # fmt: skip
    assert out.split() == ["/users/me", "False"]
    env.pop("NEURONASV_USER_HOME")  # plain asv: HOME untouched
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout  # fmt: skip
    assert out.split() == [str(tmp_path / "private"), "False"]


def test_the_machine_file_goes_where_it_is_told(tmp_path: Path) -> None:
    from neuronasv.store.machine import MACHINE_FILE_NAME, machine_info, save_machine

    target = tmp_path / MACHINE_FILE_NAME
    assert save_machine(machine_info("box"), str(target)) == str(target)
    assert '"box"' in target.read_text()
