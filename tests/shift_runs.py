"""Two runs of one CPU suite, the head measured on a loaded runner (issue 39).

What ``neuronasv run --metrics devtime,instructions`` stores for a merge-base and a head:
asv's own ``Results`` files with device-time series (each op and each workload's total),
instruction counts (each op and the total, exact: equal on both sides unless a change says
otherwise) and sidecars with the profiles, one canary reading per profile and the machine's
state at the start and end of each run.

The head ran beside busy processes: every device-time series moves by the shared ``shift``
times its own response to the load (``exp(N(0, scatter))`` per series, seeded), and the
canary by ``canary``; the code is the same unless ``change`` names one op whose time and
instruction count grow by its factors. The figures are shaped after
``bench/eval_detection.py``'s loaded runs (head +19 … +89 %, spread 9–25 %, canary ×4–18).
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from neuronasv.model import CanaryReading, OpProfile, RunSidecar, SeriesId, WorkloadProfile
from neuronasv.model.counts import PassCounts
from neuronasv.model.sidecar import MachineReading, RunState
from tests.analyse.analyse_asvdata import ENV, Bench, write_run

BASE = "d" * 40
HEAD = "e" * 40
MACHINE = "shared-cpu"
FP = {"backend": "cpu", "device_model": "cpu", "torch": "2.13.0+cpu", "python": "3.11.9"}
CANARY = "canary.cpu.mm256-float32+copy16MiB"
N = 10
DEVTIME = "suite.Suite.devtime"
INSTR_TOTAL = "suite.Suite.instr_total"
INSTR_OP = "suite.Suite.instr_op"

#: (workload, shape, dtype) -> op -> µs per iteration at base
OPS: dict[tuple[str, str, str], dict[str, float]] = {
    (wl, shape, "float32"): {
        "aten::mm": 80.0 * scale,
        "aten::add": 9.0 * scale,
        "aten::gelu": 14.0 * scale,
        "aten::copy_": 5.0 * scale,
    }
    for wl in ("vision.convnext", "vision.vit")
    for shape, scale in (("2x64", 1.0), ("8x64", 4.0))
}
#: instructions per iteration at base of each op (the total: their sum plus the step's own)
COUNT_PER_US = 2_500.0


@dataclass(frozen=True)
class Change:
    """A real change of one op at head: its time and instruction count times these."""

    config: tuple[str, str, str]
    op: str
    time: float = 1.3
    instructions: float = 1.3


@dataclass(frozen=True)
class Load:
    """What the runner did during a run: its load average at the start and end."""

    start: float
    end: float


QUIET = Load(0.4, 0.5)
BUSY = Load(4.9, 5.6)


def _counts(cfg: tuple[str, str, str], change: Change | None) -> dict[str | None, float]:
    ops = {op: round(us * COUNT_PER_US) for op, us in OPS[cfg].items()}
    if change is not None and change.config == cfg:
        ops[change.op] = round(ops[change.op] * change.instructions)
    out: dict[str | None, float] = dict(ops)
    out[None] = sum(ops.values()) + 12_345.0
    return out


def _samples(
    cfg: tuple[str, str, str],
    factor: dict[str, float],
    rng: np.random.Generator,
    noise: float,
) -> dict[str | None, list[float]]:
    """µs per sample of each op and of the total (the ops' sum), ``noise`` within the run."""
    out: dict[str | None, list[float]] = {}
    for op, us in OPS[cfg].items():
        out[op] = list(us * factor[op] * (1.0 + noise * rng.standard_normal(N)))
    out[None] = list(np.sum([out[op] for op in OPS[cfg]], axis=0))
    return out


def _canary(level_us: float, load: Load) -> CanaryReading:
    return CanaryReading(
        CANARY,
        start_us=(level_us, level_us * 1.01, level_us * 0.99),
        end_us=(level_us * 1.02, level_us, level_us * 0.98),
        device_state={"start.loadavg_1m": str(load.start), "end.loadavg_1m": str(load.end)},
    )


def _bench(name: str, axes: list[list[str]], value: object) -> tuple[Bench, list[SeriesId]]:
    values, ids = [], []
    for combo in itertools.product(*axes):
        wl, shape, dtype, *rest = (json.loads(x.replace("'", '"')) for x in combo)
        op = rest[0] if rest else None
        v, sid_op = value((wl, shape, dtype), op)  # type: ignore[operator]
        values.append(v)
        ids.append(SeriesId(name, combo, wl, shape, dtype, sid_op))
    return Bench(name, axes, values), ids


def write_side(
    results: Path,
    commit: str,
    date_ms: int,
    *,
    shift: float = 1.0,
    scatter: float = 0.0,
    canary: float = 1.0,
    load: Load = QUIET,
    change: Change | None = None,
    seed: int = 0,
    state: bool = True,
    counts: bool = True,
    noise: float = 0.03,
) -> None:
    """One commit's results file and sidecar, as ``neuronasv run`` writes them."""
    rng = np.random.default_rng(seed)
    offset = math.exp(noise / 3 * rng.standard_normal())  # the run's own process offset
    configs = sorted(OPS)
    samples = {}
    for cfg in configs:
        factor = {op: shift * offset * math.exp(scatter * rng.standard_normal()) for op in OPS[cfg]}
        if change is not None and change.config == cfg:
            factor[change.op] *= change.time
        samples[cfg] = _samples(cfg, factor, rng, noise)
    counted = {cfg: _counts(cfg, change) for cfg in configs}
    w = sorted({repr(c[0]) for c in configs})
    sh = sorted({repr(c[1]) for c in configs})
    dt = sorted({repr(c[2]) for c in configs})
    ops = [repr(op) for op in sorted({op for c in configs for op in OPS[c]})]

    def devtime(cfg: tuple[str, str, str], op: str) -> tuple[object, str | None]:
        key = None if op == "total" else op
        return [x * 1e-6 for x in samples[cfg][key]], key

    def instr_total(cfg: tuple[str, str, str], _op: None) -> tuple[object, None]:
        return [counted[cfg][None]], None

    def instr_op(cfg: tuple[str, str, str], op: str) -> tuple[object, str]:
        return [counted[cfg][op]], op

    benches, ids = [], []
    kinds = [(DEVTIME, [w, sh, dt, [repr("total"), *ops]], devtime)]
    if counts:
        kinds += [(INSTR_TOTAL, [w, sh, dt], instr_total), (INSTR_OP, [w, sh, dt, ops], instr_op)]
    for name, axes, fn in kinds:
        b, i = _bench(name, axes, fn)
        benches.append(b)
        ids += i
    reading = _canary(1000.0 * canary, load)
    profiles = tuple(
        WorkloadProfile(
            cfg[0], "cpu", cfg[1], cfg[2], tuple(samples[cfg][None]),
            tuple(
                OpProfile(op, 1.0, tuple(samples[cfg][op]), tuple(samples[cfg][op]))
                for op in sorted(OPS[cfg])
            ),
            device_time_is_cpu=True,
            canary=reading,
            counted=PassCounts(
                total=counted[cfg][None],
                ops={op: v for op, v in counted[cfg].items() if op is not None},
                valgrind="3.22.0",
                torch="2.13.0+cpu",
            ) if counts else None,
        )
        for cfg in configs
    )  # fmt: skip
    run_state = RunState(
        start=MachineReading(load_1m=load.start, load_5m=load.start, load_15m=load.start,
                             cpu_mhz=2596.1, cpus=2),
        end=MachineReading(load_1m=load.end, load_5m=load.end, load_15m=load.end,
                           cpu_mhz=2596.1, cpus=2),
    )  # fmt: skip
    sidecar = RunSidecar(
        machine=MACHINE, commit_hash=commit, env_name=ENV, fingerprint=FP, profiles=profiles,
        series=tuple(ids), state=run_state if state else None,
    )  # fmt: skip
    write_run(str(results), MACHINE, commit, date_ms, benches, sidecar=sidecar)
    units = {DEVTIME: "seconds", INSTR_TOTAL: "instructions", INSTR_OP: "instructions"}
    bj = {name: {"name": name, "unit": unit} for name, unit in units.items()}
    (results / "benchmarks.json").write_text(json.dumps({**bj, "version": 2}))


def write_pair(
    results: Path,
    *,
    shift: float = 1.9,
    scatter: float = 0.15,
    canary: float = 6.0,
    change: Change | None = None,
    seed: int = 0,
    head_load: Load = BUSY,
    counts: bool = True,
    noise: float = 0.03,
) -> Path:
    """The merge-base measured quiet and the head beside busy processes (see module);
    ``counts``: with instruction counts (a CPU run's callgrind pass; a GPU has none)."""
    results.mkdir(parents=True, exist_ok=True)
    write_side(results, BASE, 1_700_000_000_000, seed=seed, counts=counts, noise=noise)
    write_side(
        results, HEAD, 1_700_000_100_000, shift=shift, scatter=scatter, canary=canary,
        load=head_load, change=change, seed=seed + 1, counts=counts, noise=noise,
    )  # fmt: skip
    return results
