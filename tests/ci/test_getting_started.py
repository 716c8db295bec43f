"""The getting-started page's "adopt it" commands, verbatim, exit 0 with a package's workloads.

The commands are read from ``docs/getting-started.md`` (the fenced block under "Adopt it in
your repository"), so the page cannot drift from what is tested. The repository is the
case the page failed on (issue 29): the user's package ``mypkg`` exists in the commits
before ``init`` and the workloads module lives inside it (``mypkg/workloads.py``, written
just before ``init``), so ``neuronasv run HEAD~1 HEAD`` measures a commit whose own
``mypkg`` has no ``workloads.py``: today's suite and workloads module, that commit's code.
neuronasv comes from the wheel in a clean venv (``tests/wheelenv.py``); the ``pip install``
line installs that wheel, ``cd your-repo`` enters the repository. Afterwards unmodified
``asv compare`` and ``asv publish`` read the results.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.wheelenv import ROOT, git, install_wheel, run

PAGE = ROOT / "docs" / "getting-started.md"

KERNEL = """\
import torch
import torch.nn.functional as F


def gate(x: torch.Tensor) -> torch.Tensor:
    return F.gelu(x) * x
"""

WORKLOADS = """\
import torch  # the package's own code imports torch at the top, as most do

from neuronasv.measure.workloads import Workload, register

from mypkg.kernel import gate


def _build(shape, dtype, device, seed):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=gen).to(dtype=dtype, device=device)
    return lambda: gate(x)


register(Workload("mypkg.gate", "GELU gate", "64x256", _build, default_dtype="float32"))
"""


def page_commands(text: str) -> list[str]:
    """The command lines of the page's "adopt it" block, comments and blanks left out."""
    section = text.split("## Adopt it in your repository", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, flags=re.S)
    assert block, "the adopt-it section has no bash block"
    lines = [re.sub(r"\s+#.*$", "", line).strip() for line in block.group(1).splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def test_the_page_block_is_found() -> None:
    cmds = page_commands(PAGE.read_text(encoding="utf-8"))
    assert any(c.startswith("neuronasv init --workloads mypkg.workloads") for c in cmds), cmds
    assert any(c.startswith("neuronasv run ") for c in cmds), cmds


@pytest.mark.slow
def test_the_adopt_it_page_verbatim_with_a_package_workloads_module(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    base_env = {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8"}
    # What a `git+https://github.com/OWNER/REPO@<sha>` install records: the repository.
    build_env = {**base_env, "NEURONASV_REPOSITORY": "acme/neuronasv"}
    py, wheel, src = install_wheel(tmp_path, build_env)
    # The metadata links the docs at the recorded commit of the recorded repository.
    import zipfile

    with zipfile.ZipFile(wheel) as z:
        meta = z.read(next(n for n in z.namelist() if n.endswith("METADATA"))).decode()
    commit = git(src, build_env, "rev-parse", "HEAD")
    assert ("Project-URL: Documentation, https://github.com/acme/neuronasv/blob/"
            f"{commit}/docs/getting-started.md") in meta, meta[:1500]  # fmt: skip
    assert "no GitHub repository recorded" not in (tmp_path / "build.log").read_text()
    env = {**base_env, "PATH": f"{py.parent}{os.pathsep}{base_env['PATH']}"}
    # A user's git has an identity (the page's `git commit` needs one).
    ident = (("NAME", "adopter"), ("EMAIL", "adopter@example.invalid"))
    env.update({f"GIT_{who}_{k}": v for who in ("AUTHOR", "COMMITTER") for k, v in ident})

    repo = tmp_path / "your-repo"
    (repo / "mypkg").mkdir(parents=True)
    (repo / "mypkg" / "__init__.py").write_text("from mypkg.kernel import gate\n")
    (repo / "mypkg" / "kernel.py").write_text(KERNEL)
    git(repo, env, "init", "-q", "-b", "main")
    git(repo, env, "add", "-A")
    git(repo, env, "commit", "-qm", "mypkg: the gate")
    (repo / "mypkg" / "kernel.py").write_text(KERNEL.replace("gelu(x) * x", "gelu(x) * x * 1.0"))
    git(repo, env, "commit", "-qam", "mypkg: the gate, scaled")
    (repo / "mypkg" / "workloads.py").write_text(WORKLOADS)  # the module the page names

    cwd = tmp_path
    outputs: dict[str, str] = {}
    for cmd in page_commands(PAGE.read_text(encoding="utf-8")):
        if cmd.startswith("python -m venv"):
            continue  # the clean venv with the wheel's neuronasv is on PATH already
        if cmd.startswith("pip install"):
            cmd = f"python -m pip install -q --no-index --no-build-isolation {wheel}"
        if cmd.startswith("cd "):
            where, _, cmd = cmd[3:].partition("&&")
            where = where.strip()
            cwd = repo if where == "your-repo" else cwd / where
            cmd = cmd.strip()
            if not cmd:
                continue
        proc = subprocess.run(
            ["bash", "-c", cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=900,
            check=False,
        )  # fmt: skip
        assert proc.returncode == 0, f"{cmd} -> {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
        outputs[cmd.split()[1] if cmd.startswith("neuronasv ") else cmd] = proc.stdout + proc.stderr

    ran = outputs["run"]
    assert "2 commit(s) benchmarked" in ran, ran
    assert "no benchmarks/" in ran, ran
    assert "the suite's workloads win" in ran, ran
    assert ran.count("Traceback") == 0, ran

    # Ordinary asv results: unmodified asv reads them.
    (machine,) = [p.name for p in (repo / ".asv" / "results").iterdir() if p.is_dir()]
    base, head = git(repo, env, "rev-parse", "HEAD~1"), git(repo, env, "rev-parse", "HEAD")
    asv = [str(py), "-m", "asv"]
    table = run([*asv, "compare", "--config", "asv.conf.json", "--machine", machine, base, head],
                repo, env)  # fmt: skip
    assert "devtime.MypkgGate.devtime_total" in table, table
    assert re.search(r"devtime_op\('64x256', 'float32', 'aten::gelu'\)", table), table
    run([*asv, "publish", "--config", "asv.conf.json"], repo, env)
    assert (repo / ".asv" / "html" / "index.html").is_file()
