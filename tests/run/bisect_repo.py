"""A synthetic repository for bisection: N commits, one of which changes one workload.

Adopted with ``neuronasv init`` (its asv config and suite), two workloads of its own:
``synth.gate`` (``gelu(x) * x``) and ``synth.other`` (``tanh(x) + x``). Commit 0 adds them;
every later commit edits a notes file, except ``others`` (which change ``synth.other`` only,
nothing ``synth.gate`` runs) and ``culprit``, which changes ``synth.gate``:

- ``change="op"``: one more op (``aten::add``: ``y = y + x``), the issue's "adds an op";
- ``change="slow"``: ``aten::mul`` twice instead of once over the same data (the same ops,
  one of them with twice the calls and about twice the time: a step of ≥ 30 % in one op's
  time that a time-only bisection finds);
- ``change="alloc"``: the same edit, read as memory: ``aten::mul`` allocates a second
  temporary of ``x``'s size per iteration (its self allocated bytes double, exactly), as
  ``examples/alloc-rmsnorm-temp.patch`` does to the naive RMSNorm.

Used by the slow end-to-end test of ``neuronasv bisect`` and by ``bench/eval_bisect.py
--real``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

__all__ = ["GATE", "build_repo", "git"]

NEURONASV = str(Path(sys.executable).parent / "neuronasv")

_GATE = """
def _build_gate(shape, dtype, device, seed):
    import torch

    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=gen).to(dtype=dtype, device=device)

    def step():
        y = torch.nn.functional.gelu(x) * x
{extra}        return y

    return step


def _build_other(shape, dtype, device, seed):
    import torch

    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=gen).to(dtype=dtype, device=device)

    def step():
        return {other}

    return step


register(Workload("synth.gate", "gate", "{shape}", _build_gate, default_dtype="float32"))
register(Workload("synth.other", "other", "{shape}", _build_other, default_dtype="float32"))
"""
_HEAD = "from neuronasv.measure.workloads import Workload, register\n"
_EXTRA = {
    "op": "        y = y + x  # the culprit: one more op\n",
    "slow": "        y = y * x  # the culprit: aten::mul twice\n",
    "alloc": "        y = y * x  # the culprit: a second temporary of x's size\n",
}
#: The series a bisection of ``synth.gate`` names (instruction count of its total).
GATE = "synth.gate {shape} float32 (instructions)"


def git(repo: Path, *args: str) -> str:
    env = dict(
        os.environ,
        GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.invalid",
        GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.invalid",
    )  # fmt: skip
    return subprocess.run(
        ["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True
    ).stdout.strip()


def _workloads(changed: bool, others: int, change: str, shape: str) -> str:
    other = "torch.tanh(x) + x" + "".join(f" * {i + 2}" for i in range(others))
    extra = _EXTRA[change] if changed else ""
    return _HEAD + _GATE.format(extra=extra, other=other, shape=shape)


def build_repo(
    repo: Path,
    *,
    commits: int = 64,
    culprit: int = 37,
    others: Iterable[int] = (9, 23, 51),
    change: str = "op",
    shape: str = "4x512",
) -> list[str]:
    """Make the repository at ``repo``; returns its commits, oldest first."""
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    subprocess.run(
        [NEURONASV, "init", "--workloads", "synth_workloads", "--ref", "0" * 40,
         "--from", "acme/neuronasv"],  # a checkout without a GitHub origin records none
        cwd=repo, check=True, capture_output=True, text=True,
    )  # fmt: skip
    other_at = sorted(others)
    shas = []
    for i in range(commits):
        n_other = sum(1 for k in other_at if k <= i)
        (repo / "synth_workloads.py").write_text(
            _workloads(i >= culprit, n_other, change, shape), encoding="utf-8"
        )
        with open(repo / "NOTES.md", "a", encoding="utf-8") as fh:
            fh.write(f"note {i}\n")
        git(repo, "add", "-A")
        what = "change synth.gate" if i == culprit else (
            "change synth.other" if i in other_at else f"notes {i}")  # fmt: skip
        git(repo, "commit", "-q", "-m", what if i else "synth workloads")
        shas.append(git(repo, "rev-parse", "HEAD"))
    return shas
