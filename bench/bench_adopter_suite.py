r"""Cost per series of an adopter's suite beside our own, per commit; with instructions.

    .venv/bin/python bench/bench_adopter_suite.py           # devtime twice, instructions once
    .venv/bin/python bench/bench_adopter_suite.py --reps 3 --no-instructions
    .venv/bin/python bench/bench_adopter_suite.py --spawn   # + the old way (~25 min here)

What another team does, in a scratch folder: neuronasv's wheel built from this checkout and
installed into a clean venv (``tests/wheelenv.py``), a repository of their own — ``ropekit``, a
small decoder-only LM with rotary embeddings, RMSNorm, grouped-query attention, SwiGLU, a
top-2 mixture of experts, a training step with AdamW; six workloads in
``ropekit/workloads.py`` *inside the package*, which imports torch at the top as user code
does, every submodule instrumented: ~350 op and module series — then ``neuronasv init
--workloads ropekit.workloads``, a commit, and ``neuronasv run HEAD``. Beside it, in the same
run and alternating, our own transformer suite (``neuronasv run HEAD --bench transformer`` in
the wheel's source repository, ~170 series). One untimed run of each first fills the op
catalogue and the machine's CPU peak, as a runner's first run does.

Printed per arm: wall and CPU seconds per commit (children included: the steadier figure on
a loaded machine), the series asv recorded (total / op), the phases (pre-pass, the callgrind
pass, asv), seconds per series and per op series, and the ratios adopter / ours. With
valgrind installed, the adopter's commit once more with ``--metrics devtime,instructions``.
``--spawn`` adds the old way for the record: the suite ``init`` wrote before (the workloads
module imported at the top of ``benchmarks/devtime.py``) under asv's ``spawn`` launch method
(a fresh interpreter, and so torch, per parameter). Finally unmodified ``asv compare`` and
``asv publish`` read the adopter's results.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.wheelenv import git, install_wheel, run  # noqa: E402

MODEL: dict[str, str] = {
    "ropekit/__init__.py": '''\
"""ropekit: a small decoder-only language model: rotary embeddings, a mixture of experts."""

from ropekit.config import ModelConfig
from ropekit.model import TinyLM

__all__ = ["ModelConfig", "TinyLM"]
''',
    "ropekit/config.py": """\
from dataclasses import dataclass


@dataclass(frozen=True)
class ModelConfig:
    vocab: int = 512
    dim: int = 128
    heads: int = 4
    kv_heads: int = 2
    layers: int = 2
    hidden: int = 352
    experts: int = 4
    top_k: int = 2
    max_seq: int = 256
    eps: float = 1e-5
    rope_base: float = 10000.0
""",
    "ropekit/rope.py": """\
import torch
from torch import nn


class RotaryEmbedding(nn.Module):
    def __init__(self, head_dim, max_seq, base=10000.0):
        super().__init__()
        inv = 1.0 / (base ** (torch.arange(0, head_dim, 2).float() / head_dim))
        freqs = torch.outer(torch.arange(max_seq).float(), inv)
        self.register_buffer("cos", freqs.cos(), persistent=False)
        self.register_buffer("sin", freqs.sin(), persistent=False)

    def forward(self, x, offset=0):
        seq = x.shape[-2]
        cos = self.cos[offset : offset + seq].to(x.dtype)
        sin = self.sin[offset : offset + seq].to(x.dtype)
        x1, x2 = x[..., 0::2], x[..., 1::2]
        return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)
""",
    "ropekit/norm.py": """\
import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return h.type_as(x) * self.weight
""",
    "ropekit/attention.py": """\
import torch
import torch.nn.functional as F
from torch import nn

from ropekit.rope import RotaryEmbedding


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.heads, self.kv_heads = cfg.heads, cfg.kv_heads
        self.head_dim = cfg.dim // cfg.heads
        self.q = nn.Linear(cfg.dim, cfg.heads * self.head_dim, bias=False)
        self.kv = nn.Linear(cfg.dim, 2 * cfg.kv_heads * self.head_dim, bias=False)
        self.out = nn.Linear(cfg.heads * self.head_dim, cfg.dim, bias=False)
        self.rope = RotaryEmbedding(self.head_dim, cfg.max_seq, cfg.rope_base)

    def forward(self, x):
        b, s, _ = x.shape
        q = self.q(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k, v = self.kv(x).view(b, s, 2, self.kv_heads, self.head_dim).unbind(2)
        q, k = self.rope(q), self.rope(k.transpose(1, 2))
        rep = self.heads // self.kv_heads
        k = k.repeat_interleave(rep, dim=1)
        v = v.transpose(1, 2).repeat_interleave(rep, dim=1)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(o.transpose(1, 2).reshape(b, s, -1))
""",
    "ropekit/mlp.py": """\
import torch
import torch.nn.functional as F
from torch import nn


class SwiGLU(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.gate = nn.Linear(dim, hidden, bias=False)
        self.up = nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


class MoE(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.top_k = cfg.top_k
        self.router = nn.Linear(cfg.dim, cfg.experts, bias=False)
        self.experts = nn.ModuleList(SwiGLU(cfg.dim, cfg.hidden // 2) for _ in range(cfg.experts))

    def forward(self, x):
        flat = x.reshape(-1, x.shape[-1])
        probs = F.softmax(self.router(flat).float(), dim=-1)
        weights, chosen = torch.topk(probs, self.top_k, dim=-1)
        weights = (weights / weights.sum(-1, keepdim=True)).to(x.dtype)
        out = torch.zeros_like(flat)
        for i, expert in enumerate(self.experts):
            rows, slot = torch.where(chosen == i)
            if rows.numel():
                y = expert(flat.index_select(0, rows)) * weights[rows, slot].unsqueeze(-1)
                out.index_add_(0, rows, y)
        return out.view(x.shape)
""",
    "ropekit/model.py": """\
import torch.nn.functional as F
from torch import nn

from ropekit.attention import Attention
from ropekit.mlp import MoE, SwiGLU
from ropekit.norm import RMSNorm


class Block(nn.Module):
    def __init__(self, cfg, moe):
        super().__init__()
        self.attn_norm = RMSNorm(cfg.dim, cfg.eps)
        self.attn = Attention(cfg)
        self.mlp_norm = RMSNorm(cfg.dim, cfg.eps)
        self.mlp = MoE(cfg) if moe else SwiGLU(cfg.dim, cfg.hidden)

    def forward(self, x):
        x = x + self.attn(self.attn_norm(x))
        return x + self.mlp(self.mlp_norm(x))


class TinyLM(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab, cfg.dim)
        self.layers = nn.ModuleList(Block(cfg, moe=i % 2 == 1) for i in range(cfg.layers))
        self.norm = RMSNorm(cfg.dim, cfg.eps)

    def forward(self, tokens):
        x = self.embed(tokens)
        for layer in self.layers:
            x = layer(x)
        return F.linear(self.norm(x), self.embed.weight)

    def loss(self, tokens):
        logits = self(tokens[:, :-1]).float()
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))
""",
    "ropekit/workloads.py": '''\
"""ropekit's workloads for neuronasv: the model's parts, and a training step of the whole."""

import torch

from neuronasv.measure.modules import instrument
from neuronasv.measure.workloads import Workload, register

from ropekit import ModelConfig, TinyLM
from ropekit.attention import Attention
from ropekit.mlp import MoE, SwiGLU
from ropekit.norm import RMSNorm
from ropekit.rope import RotaryEmbedding

CFG = ModelConfig()
HEAD = CFG.dim // CFG.heads


def _module(make):
    def build(shape, dtype, device, seed):
        torch.manual_seed(seed)
        module = make().to(device=device, dtype=dtype).eval()
        gen = torch.Generator().manual_seed(seed)
        x = torch.randn(shape, generator=gen).to(dtype=dtype, device=device)

        def step():
            with torch.no_grad(), instrument(module, "m"):
                return module(x)

        return step

    return build


def _build_train(shape, dtype, device, seed):
    torch.manual_seed(seed)
    model = TinyLM(CFG).to(device=device, dtype=dtype).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
    gen = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, CFG.vocab, shape, generator=gen).to(device)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.enable_grad():  # neuronasv profiles steps under no_grad
            with instrument(model, "model"):
                loss = model.loss(tokens)
            loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss

    return step


for name, what, shape, build in [
    ("ropekit.rope", "rotary embedding of q", f"2x{CFG.heads}x64x{HEAD}",
     _module(lambda: RotaryEmbedding(HEAD, CFG.max_seq, CFG.rope_base))),
    ("ropekit.rmsnorm", "RMSNorm", f"2x64x{CFG.dim}", _module(lambda: RMSNorm(CFG.dim))),
    ("ropekit.attention", "GQA attention with RoPE", f"2x64x{CFG.dim}",
     _module(lambda: Attention(CFG))),
    ("ropekit.mlp", "SwiGLU MLP", f"2x64x{CFG.dim}", _module(lambda: SwiGLU(CFG.dim, CFG.hidden))),
    ("ropekit.moe", "top-2 mixture of experts", f"2x64x{CFG.dim}", _module(lambda: MoE(CFG))),
    ("ropekit.train", "training step: loss, backward, clip, AdamW", "2x65", _build_train),
]:
    register(Workload(name, what, shape, build, default_dtype="float32"))
''',
}

#: The suite ``init`` wrote before this change, for ``--spawn``: the workloads module
#: imported at the top, so every asv process that imports the suite imports torch.
OLD_DEVTIME = '''\
"""The suite as `neuronasv init` wrote it before (bench_adopter_suite.py --spawn)."""

import ropekit.workloads  # noqa: F401  (registers the workloads)
from neuronasv.suite import build_suite

globals().update(build_suite(None, module=__name__, cpu_shapes=(), dtypes=()))
'''


#: The devtime arms say so: on the CPU, ``neuronasv run`` adds instructions where valgrind
#: is usable unless told ``--metrics devtime``.
DEVTIME = ("--metrics", "devtime")
#: Our own suite: the transformer workloads, as issue 29 measured it.
OURS = ("--bench", "transformer")


def _cpu_children() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


@dataclass
class Run:
    """One ``neuronasv run`` of one commit."""

    arm: str
    wall: float
    cpu: float
    total: int = 0
    ops: int = 0
    instr: int = 0
    phases: dict[str, float] = field(default_factory=dict)

    @property
    def series(self) -> int:
        return self.total + self.ops


_MARKS = (
    ("prepass", r"prepass: \d+ workload"),
    ("catalogue, callgrind pass", r"pre-pass done in"),
    ("asv", r"Discovering benchmarks"),
    ("end", r"\] done: "),
)


def _phases(stamped: list[tuple[float, str]], end: float) -> dict[str, float]:
    """Seconds between the marks of ``neuronasv run``'s progress lines: start-up (machine,
    fingerprint, catalogue), the pre-pass, what follows it until asv starts (the catalogue
    update and, with instructions, the callgrind pass), asv, and the sidecar."""
    marks: dict[str, float] = {}
    for t, line in stamped:
        for name, pat in _MARKS:
            if name not in marks and re.search(pat, line):
                marks[name] = t
    marks.setdefault("end", end)
    order = [name for name, _ in _MARKS if name in marks]
    out = {"start-up": marks[order[0]] if order else end}
    for a, b in itertools.pairwise(order):
        out[a] = marks[b] - marks[a]
    out["sidecar"] = end - marks["end"]
    return out


def _count(results: Path, sha: str) -> tuple[int, int, int]:
    """(devtime totals, devtime op series, instr series) with a value in ``sha``'s file."""
    total = ops = instr = 0
    for path in results.glob(f"*/{sha[:8]}-*.json"):
        doc = json.loads(path.read_text())
        cols = doc["result_columns"]
        for name, row in doc["results"].items():
            values = dict(zip(cols, row, strict=False)).get("result") or []
            n = sum(1 for v in values if v is not None and not math.isnan(float(v)))
            if ".instr_" in name:
                instr += n
            elif name.endswith(".devtime_op"):
                ops += n
            elif name.endswith(".devtime_total"):
                total += n
    return total, ops, instr


def neuronasv_run(arm: str, nx: Path, repo: Path, env: dict[str, str], *args: str) -> Run:
    sha = git(repo, env, "rev-parse", "HEAD")
    cmd = [str(nx), "run", "HEAD", *args]
    cpu0, start = _cpu_children(), time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=repo, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)  # fmt: skip
    assert proc.stdout is not None
    stamped = [(time.perf_counter() - start, line) for line in proc.stdout]
    rc = proc.wait()
    wall, cpu = time.perf_counter() - start, _cpu_children() - cpu0
    if rc != 0:
        sys.exit(f"{arm}: {' '.join(cmd)} -> exit {rc}\n" + "".join(x for _, x in stamped[-30:]))
    total, ops, instr = _count(repo / ".asv" / "results", sha)
    return Run(arm, wall, cpu, total, ops, instr, _phases(stamped, wall))


def _row(r: Run) -> str:
    phases = ", ".join(f"{k} {v:.1f}" for k, v in r.phases.items())
    per = r.wall / max(r.series, 1)
    per_op = r.wall / max(r.ops, 1)
    instr = f" + {r.instr} instr" if r.instr else ""
    return (f"  {r.arm:<26} {r.wall:7.1f} s wall {r.cpu:7.1f} s CPU  {r.total:3d} total +"
            f" {r.ops:3d} op{instr}  {per * 1e3:6.0f} ms/series {per_op * 1e3:6.0f} ms/op series"
            f"  ({phases})")  # fmt: skip


def _adopter_repo(where: Path, env: dict[str, str], nx: Path, old: bool = False) -> Path:
    repo = where / ("ropekit-old" if old else "ropekit")
    for rel, text in MODEL.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    git(repo, env, "init", "-q", "-b", "main")
    git(repo, env, "add", "-A")
    git(repo, env, "commit", "-qm", "ropekit: the model and its workloads")
    run([str(nx), "init", "--workloads", "ropekit.workloads"], repo, env)  # the build's repo
    if old:
        (repo / "benchmarks" / "devtime.py").write_text(OLD_DEVTIME)
        conf = (repo / "asv.conf.json").read_text()
        (repo / "asv.conf.json").write_text(
            conf.replace('"environment_type"', '"launch_method": "spawn",\n    "environment_type"')
        )
    git(repo, env, "add", "-A")
    git(repo, env, "commit", "-qm", "neuronasv init")
    return repo


def _median(runs: list[Run], attr: str) -> float:
    return statistics.median(getattr(r, attr) for r in runs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2, help="devtime runs of each suite")
    parser.add_argument("--no-instructions", action="store_true")
    parser.add_argument("--spawn", action="store_true", help="also the old way (slow)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    args = parser.parse_args()

    from neuronasv.measure.callgrind import valgrind_status

    print(f"load average at the start (1/5/15 min): {os.getloadavg()}", flush=True)
    work = Path(tempfile.mkdtemp(prefix="bench-adopter-"))
    try:
        (work / "home").mkdir()
        env = {"PATH": os.environ["PATH"], "HOME": str(work / "home"), "LANG": "C.UTF-8",
               "PYTHONUNBUFFERED": "1", "GIT_AUTHOR_NAME": "adopter",
               "GIT_AUTHOR_EMAIL": "adopter@example.invalid", "GIT_COMMITTER_NAME": "adopter",
               "GIT_COMMITTER_EMAIL": "adopter@example.invalid"}  # fmt: skip
        t0 = time.perf_counter()
        # What a `git+https://github.com/OWNER/neuronasv@<sha>` install records (init pins it).
        py, _, ours = install_wheel(work, {**env, "NEURONASV_REPOSITORY": "acme/neuronasv"})
        env["PATH"] = f"{py.parent}{os.pathsep}{env['PATH']}"
        nx = py.parent / "neuronasv"
        print(f"wheel built and installed in a clean venv: {time.perf_counter() - t0:.0f} s")
        adopter = _adopter_repo(work, env, nx)

        first = [
            neuronasv_run("adopter, first run", nx, adopter, env, *DEVTIME),
            neuronasv_run("ours, first run", nx, ours, env, *DEVTIME, *OURS),
        ]
        print("first runs (untimed: op catalogue and CPU peak made here):")
        for r in first:
            print(_row(r), flush=True)
        runs: dict[str, list[Run]] = {"adopter": [], "ours": []}
        for i in range(args.reps):
            order = ["adopter", "ours"] if i % 2 == 0 else ["ours", "adopter"]
            for arm in order:
                if arm == "adopter":
                    r = neuronasv_run("adopter (devtime)", nx, adopter, env, *DEVTIME)
                else:
                    r = neuronasv_run("ours (devtime)", nx, ours, env, *DEVTIME, *OURS)
                runs[arm].append(r)
                print(_row(r), f"load {os.getloadavg()[0]:.1f}", flush=True)

        instr: Run | None = None
        if not args.no_instructions:
            ok, why = valgrind_status()[:2]
            if ok:
                instr = neuronasv_run("adopter (+instructions)", nx, adopter, env, "--metrics",
                                      "devtime,instructions")  # fmt: skip
                print(_row(instr), f"load {os.getloadavg()[0]:.1f}", flush=True)
            else:
                print(f"instructions: not measured ({why})")
        old: Run | None = None
        if args.spawn:
            repo_old = _adopter_repo(work, env, nx, old=True)
            neuronasv_run("old way, first run", nx, repo_old, env, *DEVTIME)
            old = neuronasv_run("adopter, the old way", nx, repo_old, env, *DEVTIME)
            print(_row(old), f"load {os.getloadavg()[0]:.1f}", flush=True)

        a, o = runs["adopter"], runs["ours"]
        a_per = statistics.median(r.wall / r.series for r in a)
        o_per = statistics.median(r.wall / r.series for r in o)
        a_cpu = statistics.median(r.cpu / r.series for r in a)
        o_cpu = statistics.median(r.cpu / r.series for r in o)
        a_op = statistics.median(r.wall / max(r.ops, 1) for r in a)
        o_op = statistics.median(r.wall / max(r.ops, 1) for r in o)
        a_asv = statistics.median(r.phases.get("asv", math.nan) / r.series for r in a)
        o_asv = statistics.median(r.phases.get("asv", math.nan) / r.series for r in o)
        print("\nmedians per commit:")
        print(f"  adopter: {_median(a, 'wall'):.1f} s wall, {_median(a, 'cpu'):.1f} s CPU,"
              f" {a[0].series} series ({a[0].ops} op series)")  # fmt: skip
        print(f"  ours:    {_median(o, 'wall'):.1f} s wall, {_median(o, 'cpu'):.1f} s CPU,"
              f" {o[0].series} series ({o[0].ops} op series)")  # fmt: skip
        print(f"cost per series, adopter / ours: wall {a_per * 1e3:.0f} / {o_per * 1e3:.0f} ms"
              f" = x{a_per / o_per:.2f}; CPU {a_cpu * 1e3:.0f} / {o_cpu * 1e3:.0f} ms"
              f" = x{a_cpu / o_cpu:.2f}; per op series (wall) {a_op * 1e3:.0f} / {o_op * 1e3:.0f}"
              f" ms = x{a_op / o_op:.2f}")  # fmt: skip
        print(f"asv's part per series (after the pre-pass: discovery, setup_cache, one fork per"
              f" parameter), adopter / ours: {a_asv * 1e3:.0f} / {o_asv * 1e3:.0f} ms"
              f" = x{a_asv / o_asv:.2f}")  # fmt: skip
        if instr is not None:
            print(f"with instructions (adopter, one commit): {instr.wall:.1f} s wall,"
                  f" {instr.cpu:.1f} s CPU, x{instr.wall / _median(a, 'wall'):.2f} devtime's;"
                  f" {instr.instr} instr_ series beside {instr.series} devtime ones")  # fmt: skip
        if old is not None:
            print(f"the old way (spawn, workloads imported per process): {old.wall:.1f} s wall,"
                  f" {old.cpu:.1f} s CPU = x{old.wall / _median(a, 'wall'):.1f} wall,"
                  f" x{old.cpu / _median(a, 'cpu'):.1f} CPU of now")  # fmt: skip

        # Ordinary asv results: unmodified asv reads them.
        sha = git(adopter, env, "rev-parse", "HEAD")
        (machine,) = [p.name for p in (adopter / ".asv" / "results").iterdir() if p.is_dir()]
        asv = [str(py), "-m", "asv"]
        table = run([*asv, "compare", "--config", "asv.conf.json", "--machine", machine, sha,
                     sha], adopter, env)  # fmt: skip
        rows = sum(1 for line in table.splitlines() if "devtime_" in line)
        run([*asv, "publish", "--config", "asv.conf.json"], adopter, env)
        html = (adopter / ".asv" / "html" / "index.html").is_file()
        print(f"unmodified asv: compare lists {rows} devtime rows; publish wrote index.html {html}")
        print(f"load average at the end (1/5/15 min): {os.getloadavg()}")
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
