"""Generate a synthetic neuronasv history in asv's results format, with known steps.

Writes, under ``DEST``:

- ``repo/``: a git repository with ``commits`` commits on ``main`` (made with
  ``git fast-import``, so 10,000 commits take a second or two);
- ``results/``: asv results, exactly as ``asv run`` lays them out —
  ``benchmarks.json``, ``<machine>/machine.json`` and one
  ``<machine>/<hash8>-<env>.json`` per commit — plus a neuronasv sidecar
  (``.neuronasv``) per results file mapping every asv series to its workload/op and
  carrying the environment fingerprint and trace paths;
- ``asv.conf.json``: so that ``asv publish`` runs on the same history.

Series: ``workloads`` workloads × (total + ``ops - 1`` ops). Each workload has one asv
benchmark ``synth.DeviceTime.devtime_wNN`` parametrised over the op name (``'total'``
for the workload total). Values are seconds. Known steps (returned by :func:`generate`
and written to ``steps.json``): op 1 of every third workload regresses by +20 % at 60 %
of the history, op 2 of every fifth workload improves by -25 % at 30 %; the torch
version in the fingerprint changes at 80 %.

Usage::

    python bench/synth_history.py DEST --commits 1000 --workloads 50 --ops 20
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from neuronasv.model import RunSidecar, SeriesId
from neuronasv.store.layout import sidecar_path

MACHINE = "synth-runner"
ENV_NAME = "existing-py_venv"
BENCH_MODULE = "synth.DeviceTime"
START_MS = 1_700_000_000_000  # commit dates: one hour apart from here
OP_NAMES = (
    "aten::mul",
    "aten::add",
    "aten::mean",
    "aten::pow",
    "aten::rsqrt",
    "aten::_to_copy",
    "aten::copy_",
    "aten::mm",
    "aten::softmax",
    "aten::gelu",
)


@dataclass(frozen=True)
class Step:
    """One known level shift in the synthetic history."""

    workload: str
    op: str
    commit_index: int  # index of the first commit of the new level
    factor: float

    def to_json(self) -> dict[str, object]:
        return {
            "workload": self.workload,
            "op": self.op,
            "commit_index": self.commit_index,
            "factor": self.factor,
        }


def op_names(n_ops: int) -> list[str]:
    """``n_ops`` op names (``total`` excluded), the familiar ones first."""
    names = list(OP_NAMES[:n_ops])
    names += [f"aten::op{i:03d}" for i in range(len(names), n_ops)]
    return names


def _git(repo: Path, *args: str, stdin: bytes | None = None) -> str:
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull)
    out = subprocess.run(
        ["git", "-C", str(repo), *args], input=stdin, env=env, check=True, capture_output=True
    )
    return out.stdout.decode()


def make_repo(repo: Path, n_commits: int, *, first: int = 0) -> list[str]:
    """Append ``n_commits`` commits to ``repo`` (created if needed); return their hashes."""
    if not (repo / ".git").exists():
        repo.mkdir(parents=True, exist_ok=True)
        _git(repo, "init", "-q", "-b", "main")
    parent = _git(repo, "rev-parse", "--verify", "-q", "main^{commit}").strip() if first else ""
    chunks: list[bytes] = []
    for i in range(first, first + n_commits):
        when = (START_MS // 1000) + 3600 * i
        msg = f"synthetic commit {i}\n".encode()
        body = f"commit {i}\n".encode()
        head = f"commit refs/heads/main\nmark :{i + 1}\n"
        head += f"author Synth <synth@example.invalid> {when} +0000\n"
        head += f"committer Synth <synth@example.invalid> {when} +0000\n"
        chunks.append(head.encode() + b"data %d\n" % len(msg) + msg)
        if i == first and parent:
            chunks.append(f"from {parent}\n".encode())
        chunks.append(b"M 644 inline counter.txt\ndata %d\n" % len(body) + body + b"\n")
    _git(repo, "fast-import", "--quiet", stdin=b"".join(chunks))
    hashes = _git(repo, "rev-list", "--reverse", "main").split()
    return hashes[first:]


def _benchmarks_json(workloads: list[str], params: list[str]) -> dict[str, object]:
    out: dict[str, object] = {}
    for w in workloads:
        name = f"{BENCH_MODULE}.devtime_{w.replace('.', '_')}"
        out[name] = {
            "code": f"def devtime_{w}(self, op): ...",
            "name": name,
            "param_names": ["op"],
            "params": [params],
            "type": "time",
            "unit": "seconds",
            "version": "1" * 64,
            "timeout": 600,
            "number": 1,
            "repeat": 10,
            "min_run_count": 2,
            "rounds": 1,
            "sample_time": 0.01,
            "warmup_time": 0.0,
            "pretty_name": name,
        }
    out["version"] = 2
    return out


def generate(
    dest: str | os.PathLike[str],
    *,
    commits: int,
    workloads: int = 50,
    ops: int = 20,
    samples: int = 0,
    seed: int = 0,
    append: bool = False,
    sidecars: bool = True,
) -> dict[str, object]:
    """Write (or with ``append``, extend by ``commits``) a synthetic history at ``dest``.

    Args:
        dest: target folder (``repo/``, ``results/``, ``asv.conf.json`` under it).
        commits: number of commits to write (to add, with ``append``).
        workloads: number of workloads (one asv benchmark each).
        ops: series per workload, the total included.
        samples: raw samples stored per value (asv ``--record-samples``); 0 = none.
        seed: random seed (the noise; the steps are fixed).
        append: add commits after the existing ones (same layout and parameters).
        sidecars: also write the neuronasv sidecars.

    Returns:
        ``{"hashes": [...], "steps": [...], "series": n}`` for the commits written.
    """
    root = Path(dest)
    results = root / "results"
    mdir = results / MACHINE
    state_file = root / "synth.json"
    first = 0
    if append:
        state = json.loads(state_file.read_text())
        first = int(state["commits"])
        workloads, ops, samples, sidecars = (
            state["workloads"],
            state["ops"],
            state["samples"],
            state["sidecars"],
        )
        total_commits = int(state["planned"])
    else:
        total_commits = commits
    mdir.mkdir(parents=True, exist_ok=True)
    hashes = make_repo(root / "repo", commits, first=first)

    wnames = [f"synth.w{i:02d}" for i in range(workloads)]
    onames = op_names(ops - 1)
    params = ["'total'"] + [repr(o) for o in onames]
    steps: list[Step] = []
    for wi, w in enumerate(wnames):
        if wi % 3 == 0 and onames:
            steps.append(Step(w, onames[0], int(total_commits * 0.6), 1.2))
        if wi % 5 == 0 and len(onames) > 1:
            steps.append(Step(w, onames[1], int(total_commits * 0.3), 0.75))
    env_change_at = int(total_commits * 0.8)

    if not append:
        (results / "benchmarks.json").write_text(json.dumps(_benchmarks_json(wnames, params)))
        (mdir / "machine.json").write_text(
            json.dumps(
                {
                    "machine": MACHINE,
                    "arch": "x86_64",
                    "cpu": "Synthetic CPU",
                    "num_cpu": "2",
                    "os": "Linux",
                    "ram": "16GB",
                    "version": 1,
                }
            )
        )
        conf = {
            "version": 1,
            "project": "synth",
            "project_url": "https://example.invalid/synth",
            "repo": "repo",
            "branches": ["main"],
            "environment_type": "existing",
            "results_dir": "results",
            "html_dir": "asv-html",
        }
        (root / "asv.conf.json").write_text(json.dumps(conf, indent=2))

    rng = np.random.default_rng(seed + first)
    # base[w, o]: per-op device time in seconds (5 µs .. 2 ms); total = sum of ops
    base_rng = np.random.default_rng(seed)
    base = base_rng.uniform(5e-6, 2e-3, size=(workloads, len(onames)))
    factor = np.ones((len(hashes), workloads, len(onames)))
    idx = np.arange(first, first + len(hashes))
    for s in steps:
        wi, oi = wnames.index(s.workload), onames.index(s.op)
        factor[idx >= s.commit_index, wi, oi] *= s.factor
    noise = rng.lognormal(0.0, 0.02, size=factor.shape)
    values = base[None] * factor * noise  # (commits, workloads, ops)
    spread = np.abs(rng.normal(0.03, 0.01, size=factor.shape))
    columns = [
        "result", "params", "version", "started_at", "duration", "stats_ci_99_a",
        "stats_ci_99_b", "stats_q_25", "stats_q_75", "stats_number", "stats_repeat",
        "samples",
    ]  # fmt: skip
    series_ids: list[SeriesId] = []
    for w in wnames:
        bench = f"{BENCH_MODULE}.devtime_{w.replace('.', '_')}"
        for p, o in zip(params, [None, *onames], strict=False):
            series_ids.append(
                SeriesId(bench, (p,), workload=w, shape="4x512", dtype="float32", op=o)
            )
    sidecar_text: dict[str, str] = {}
    for ci, h in enumerate(hashes):
        i = first + ci
        date = START_MS + 3600_000 * i
        res: dict[str, list[object]] = {}
        for wi, w in enumerate(wnames):
            ops_v = values[ci, wi]
            tot = float(ops_v.sum())
            vals = [tot, *(float(v) for v in ops_v)]
            sp = [float(spread[ci, wi].mean()), *(float(x) for x in spread[ci, wi])]
            # one op of workload 1 is absent in the first tenth: asv writes NaN there
            if wi == 1 and i < total_commits // 10 and len(vals) > 2:
                vals[-1] = float("nan")
            q25 = [v * (1 - s) for v, s in zip(vals, sp, strict=False)]
            q75 = [v * (1 + s) for v, s in zip(vals, sp, strict=False)]
            row: list[object] = [
                vals, [params], "1" * 64, date, 1.0,
                [v * 0.97 for v in vals], [v * 1.03 for v in vals], q25, q75,
                [1] * len(vals), [10] * len(vals),
            ]  # fmt: skip
            if samples:
                row.append(
                    [
                        [float(v * x) for x in rng.lognormal(0, 0.03, samples)] if v == v else None
                        for v in vals
                    ]
                )
            res[f"{BENCH_MODULE}.devtime_{w.replace('.', '_')}"] = row
        doc = {
            "commit_hash": h,
            "env_name": ENV_NAME,
            "date": date,
            "params": {"machine": MACHINE, "python": "3.11", "arch": "x86_64"},
            "python": "3.11",
            "requirements": {},
            "env_vars": {},
            "result_columns": columns,
            "results": res,
            "durations": {},
            "version": 2,
        }
        path = mdir / f"{h[:8]}-{ENV_NAME}.json"
        # asv writes bare NaN (allow_nan defaults to True): keep that, it is the point
        path.write_text(json.dumps(doc, separators=(",", ":")))
        if sidecars:
            torch = "2.13.0" if i >= env_change_at else "2.12.0"
            if torch not in sidecar_text:
                # Render the (large, identical) sidecar once per fingerprint through the
                # real model, then only substitute the commit: same bytes, 50x faster.
                fp = {
                    "backend": "cpu",
                    "python": "3.11.2",
                    "torch": torch,
                    "cpu_model": "Synthetic CPU",
                    "device_model": "none",
                    "platform": "Linux",
                }
                sc = RunSidecar(
                    machine=MACHINE,
                    commit_hash="@@HASH@@",
                    env_name=ENV_NAME,
                    fingerprint=fp,
                    series=tuple(series_ids),
                    traces={f"{w}[4x512,float32]": f"@@H8@@/{w}.pt.trace.json" for w in wnames[:3]},
                )
                sidecar_text[torch] = sc.dumps()
            text = sidecar_text[torch].replace("@@HASH@@", h).replace("@@H8@@", h[:8])
            Path(sidecar_path(path)).write_text(text)
    state = {
        "commits": first + len(hashes),
        "planned": total_commits,
        "workloads": workloads,
        "ops": ops,
        "samples": samples,
        "sidecars": sidecars,
    }
    state_file.write_text(json.dumps(state))
    step_json = [s.to_json() for s in steps]
    (root / "steps.json").write_text(
        json.dumps({"steps": step_json, "env_change_at": env_change_at}, indent=2)
    )
    return {"hashes": hashes, "steps": step_json, "series": len(series_ids)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dest")
    p.add_argument("--commits", type=int, default=1000)
    p.add_argument("--workloads", type=int, default=50)
    p.add_argument("--ops", type=int, default=20, help="series per workload, total included")
    p.add_argument("--samples", type=int, default=0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--append", action="store_true", help="add --commits commits")
    p.add_argument("--no-sidecars", action="store_true")
    a = p.parse_args(argv)
    out = generate(
        a.dest,
        commits=a.commits,
        workloads=a.workloads,
        ops=a.ops,
        samples=a.samples,
        seed=a.seed,
        append=a.append,
        sidecars=not a.no_sidecars,
    )
    print(f"wrote {len(out['hashes'])} commits × {out['series']} series to {a.dest}")  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    sys.exit(main())
