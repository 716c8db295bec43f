"""A PR artifact as ``ci/pr-bench.sh`` uploads it, with every kind of series the comment shows.

Two commits of a CPU suite written with asv's own ``Results`` (as ``neuronasv run
--metrics devtime,instructions`` stores them): a transformer-like workload with module
series (``module:block``, ``module:block.mlp``), op series and instruction counts (the
whole step, each op, each module; ``aten::slice`` counted at base only while it still runs
nested at head), and a plain RMSNorm beside it; the sidecars with the profiles (modules,
op shares per module, instruction counts). At head the MLP's matmul is 40 % slower and
counts 40 % more instructions.

:func:`confirm_rounds` re-measures the suspects the way ``neuronasv confirm`` does (a
seeded runner recorded by :class:`~neuronasv.analyse.replay.RecordingRunner`) and gives
the rounds document the artifact carries.
"""

from __future__ import annotations

import itertools
import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from neuronasv.model import (
    FindingsDocument,
    ModuleProfile,
    OpProfile,
    RunSidecar,
    SeriesId,
    WorkloadProfile,
)
from neuronasv.model.counts import PassCounts
from neuronasv.model.rounds import RoundsDocument
from tests.analyse.analyse_asvdata import ENV, Bench, write_run

BASE = "b" * 40
HEAD = "c" * 40
MACHINE = "ci-cpu"
FP = {"backend": "cpu", "device_model": "cpu", "torch": "2.13.0+cpu", "python": "3.11.9"}
N = 10

BLOCK = ("block.toy", "8x64", "float32")
NORM = ("rmsnorm.naive", "4x512", "float32")
#: µs per iteration of each (module path, op) at base
PARTS = {
    (BLOCK, "block.attn", "aten::mm"): 40.0,
    (BLOCK, "block.attn", "aten::add"): 6.0,
    (BLOCK, "block.mlp", "aten::mm"): 60.0,
    (BLOCK, "block.mlp", "aten::silu"): 8.0,
    (BLOCK, "block", "aten::slice"): 3.0,
    (NORM, "", "aten::mul"): 11.0,
    (NORM, "", "aten::add"): 4.0,
    (NORM, "", "aten::rsqrt"): 2.0,
}
#: instructions per iteration at base: (config, target) -> count (modules as
#: ``module:<path>``, the whole step as ``total``)
COUNTS = {
    (BLOCK, "aten::mm"): 100_000.0,
    (BLOCK, "aten::add"): 9_000.0,
    (BLOCK, "aten::silu"): 5_000.0,
    (BLOCK, "aten::slice"): 11_876.0,
    (BLOCK, "module:block.mlp"): 65_000.0,
    (BLOCK, "total"): 140_000.0,
    (NORM, "aten::mul"): 25_637.0,
    (NORM, "aten::add"): 15_073.0,
    (NORM, "total"): 68_592.0,
}


def _scale(side: str, config: tuple[str, str, str], path: str, op: str) -> float:
    """The code change: the MLP's matmul takes 40 % longer at head."""
    return 1.4 if side == "head" and (config, path, op) == (BLOCK, "block.mlp", "aten::mm") else 1.0


def _counts(side: str, config: tuple[str, str, str]) -> dict[str, float]:
    out = {t: v for (c, t), v in COUNTS.items() if c == config}
    if side == "head" and config == BLOCK:
        out["aten::mm"] += 40_000.0  # the slower matmul counts more
        out["module:block.mlp"] += 40_000.0
        out["total"] += 40_000.0 - 11_876.0
        del out["aten::slice"]  # at head it runs only inside another op: no count of its own
    return out


def series_samples(
    side: str, rng: np.random.Generator, n: int = N
) -> dict[tuple[tuple[str, str, str], str | None], list[float]]:
    """Microseconds per sample of every timed series (op, module, total) of one run: one
    process offset for the run, within-run noise per sample."""
    offset = math.exp(rng.normal(0.0, 0.01))
    noise = {k: 1.0 + 0.01 * rng.standard_normal(n) for k in PARTS}
    parts = {k: v * offset * _scale(side, *k) * noise[k] for k, v in PARTS.items()}
    out: dict[tuple[tuple[str, str, str], str | None], list[float]] = {}
    for (cfg, path, op), xs in parts.items():
        for key in ((cfg, op), (cfg, None)):
            out[key] = list(np.add(out.get(key, np.zeros(n)), xs))
        parts_of = [p for p in _prefixes(path)]
        for p in parts_of:
            key = (cfg, f"module:{p}")
            out[key] = list(np.add(out.get(key, np.zeros(n)), xs))
    return out


def _prefixes(path: str) -> list[str]:
    bits = path.split(".") if path else []
    return [".".join(bits[: i + 1]) for i in range(len(bits))]


def _profile(
    cfg: tuple[str, str, str], side: str, xs: Mapping[str | None, list[float]]
) -> WorkloadProfile:
    ops = []
    for op in sorted({o for (c, _, o) in PARTS if c == cfg}):
        paths = {p: PARTS[(c, p, o)] for (c, p, o) in PARTS if c == cfg and o == op}
        whole = sum(paths.values())
        share = {p: v / whole for p, v in paths.items() if p}
        calls = 8.0 if op == "aten::slice" else 1.0
        ops.append(OpProfile(op, calls, tuple(xs[op]), tuple(xs[op]), modules=share))
    modules = []
    if any(p for (c, p, _) in PARTS if c == cfg):
        modules.append(ModuleProfile("", tuple(xs[None]), (0.0,) * N))
        for m in sorted({m for (c, p, _) in PARTS if c == cfg for m in _prefixes(p)}):
            modules.append(ModuleProfile(m, tuple(xs[f"module:{m}"]), tuple(xs[f"module:{m}"])))
    counts = _counts(side, cfg)
    instr = PassCounts(
        total=counts["total"],
        ops={k: v for k, v in counts.items() if k.startswith("aten::")},
        modules={k: v for k, v in counts.items() if k.startswith("module:")},
        valgrind="3.22.0",
        torch="2.13.0+cpu",
    )
    name, shape, dtype = cfg
    return WorkloadProfile(name, "cpu", shape, dtype, tuple(xs[None]), tuple(ops),
                           device_time_is_cpu=True, modules=tuple(modules),
                           counted=instr)  # fmt: skip


def _bench(name: str, axes: list[list[str]], value: object) -> tuple[Bench, list[SeriesId]]:
    values, ids = [], []
    for combo in itertools.product(*axes):
        wl, shape, dtype, *rest = (eval(x) for x in combo)
        op = rest[0] if rest else None
        v, sid_op = value((wl, shape, dtype), op)  # type: ignore[operator]
        values.append(v)
        ids.append(SeriesId(name, combo, wl, shape, dtype, sid_op))
    return Bench(name, axes, values), ids


def write_commit(results: Path, commit: str, date_ms: int, side: str, seed: int) -> None:
    """One commit's results file and sidecar, as ``neuronasv run`` writes them."""
    rng = np.random.default_rng(seed)
    xs = series_samples(side, rng)
    configs = sorted({c for (c, _, _) in PARTS})
    w = [repr(c[0]) for c in configs]
    sh = sorted({repr(c[1]) for c in configs})
    dt = sorted({repr(c[2]) for c in configs})
    timed = sorted({repr(op) for (_, op) in xs if op is not None})
    present = {(c, op) for (c, op) in xs}

    def devtime(cfg: tuple[str, str, str], op: str) -> tuple[object, str | None]:
        key = (cfg, None if op == "total" else op)
        if cfg not in configs or key not in present:
            return math.nan, None if op == "total" else op
        return [x * 1e-6 for x in xs[key]], None if op == "total" else op

    counted = {c: _counts(side, c) for c in configs}

    def instr_total(cfg: tuple[str, str, str], _op: None) -> tuple[object, None]:
        return ([counted[cfg]["total"]] if cfg in counted else math.nan), None

    def instr_op(cfg: tuple[str, str, str], op: str) -> tuple[object, str]:
        got = counted.get(cfg, {})
        return ([got[op]] if op in got else math.nan), op

    targets = sorted({repr(t) for c in configs for t in _counts("base", c) if t != "total"})
    benches, ids = [], []
    for name, axes, fn in (
        ("toy.Suite.devtime", [w, sh, dt, [repr("total"), *timed]], devtime),
        ("toy.Suite.instr_total", [w, sh, dt], instr_total),
        ("toy.Suite.instr_op", [w, sh, dt, targets], instr_op),
    ):
        b, i = _bench(name, axes, fn)
        benches.append(b)
        ids += i
    profiles = tuple(
        _profile(c, side, {op: xs[(cc, op)] for (cc, op) in xs if cc == c}) for c in configs
    )
    sidecar = RunSidecar(machine=MACHINE, commit_hash=commit, env_name=ENV, fingerprint=FP,
                         profiles=profiles, series=tuple(ids))  # fmt: skip
    write_run(str(results), MACHINE, commit, date_ms, benches, sidecar=sidecar)
    units = {"toy.Suite.devtime": "seconds", "toy.Suite.instr_total": "instructions",
             "toy.Suite.instr_op": "instructions"}  # fmt: skip
    bj = {name: {"name": name, "unit": unit} for name, unit in units.items()}
    (results / "benchmarks.json").write_text(json.dumps({**bj, "version": 2}))


def write_results(results: Path) -> None:
    """Base and head of the PR."""
    write_commit(results, BASE, 1_000, "base", 1)
    write_commit(results, HEAD, 2_000, "head", 2)


def confirm_rounds(doc: FindingsDocument, *, rounds: int = 3, max_rounds: int = 6,
                   seed: int = 7) -> tuple[FindingsDocument, RoundsDocument]:  # fmt: skip
    """``neuronasv confirm``'s re-measurement of ``doc`` (its defaults: noisy suspects
    included, no budget) on a seeded runner, recorded: the confirmed document and the
    rounds document the artifact carries."""
    from neuronasv.analyse.confirm import confirm
    from neuronasv.analyse.replay import RecordingRunner

    rng = np.random.default_rng(seed)

    def runner(side: str, series: Sequence[SeriesId], r: int) -> dict[SeriesId, list[float]]:
        xs = series_samples(side, rng)
        out = {}
        for s in series:
            key = ((s.workload or "", s.shape or "", s.dtype or ""), s.op)
            if key in xs:
                out[s] = [x * 1e-6 for x in xs[key]]
        return out

    rec = RecordingRunner(runner)
    got = confirm(doc, rec, rounds=rounds, max_rounds=max_rounds, include_noisy=True)
    return got, rec.document(BASE, HEAD, rounds, max_rounds)


def cli_compare(results: Path, out: Path) -> FindingsDocument:
    """``neuronasv compare BASE HEAD --results-dir R --format json`` as ``ci/pr-bench.sh``
    runs it (in process: the command's own argument parsing, settings and loader)."""
    from neuronasv.cli import main

    rc = main(["compare", BASE, HEAD, "--results-dir", os.fspath(results), "--machine",
               MACHINE, "--format", "json", "--out", os.fspath(out)])  # fmt: skip
    assert rc == 0
    return FindingsDocument.loads(out.read_text(encoding="utf-8"))


def write_artifact(d: Path, *, pr: int = 7) -> tuple[Path, FindingsDocument]:
    """The artifact folder (results, rounds, claims, the run's own findings) and the
    findings ``neuronasv compare`` + ``neuronasv confirm`` wrote into it."""
    d.mkdir(parents=True, exist_ok=True)
    results = d / "results"
    write_results(results)
    first = cli_compare(results, d / "findings.json")
    confirmed, rounds = confirm_rounds(first)
    (d / "rounds.json").write_text(rounds.dumps())
    (d / "findings.json").write_text(confirmed.dumps())
    (d / "pr-number").write_text(f"{pr}\n")
    (d / "head-sha").write_text(f"{HEAD}\n")
    (d / "base-sha").write_text(f"{BASE}\n")
    return d, confirmed
