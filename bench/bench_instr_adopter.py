r"""The instructions pass at an adopter's size: its cost beside the timing run, per commit.

    .venv/bin/python bench/bench_instr_adopter.py                     # this checkout, 3 reps
    .venv/bin/python bench/bench_instr_adopter.py --refs main,WORKTREE # before and after
    .venv/bin/python bench/bench_instr_adopter.py --arms visionkit --reps 5

What an adopter does, in a scratch folder, once per neuronasv version (``--refs``: a git ref
of this repository, or ``WORKTREE`` for the checkout as it is): the wheel built from it and
installed into a clean venv (``tests/wheelenv.py``), then two repositories —

* ``visionkit`` (``bench/adopters/visionkit``): a ConvNeXt (7x7 depthwise convolutions,
  LayerNorm, a pointwise MLP with GELU, strided downsampling convolutions) and a ViT (patch
  embedding convolution, attention, GELU MLP), written in plain torch; ten workloads — parts,
  whole forwards, a training step of each (loss, backward, AdamW) — registered in
  ``visionkit/workloads.py``; ``neuronasv init --workloads visionkit.workloads``, and the
  suite's ``dtypes=("float32", "bfloat16")`` (the line ``init`` writes says how): 20
  configurations, 750 device-time series;
* ``ours``: the wheel's own source repository, its default CPU suite.

One untimed ``neuronasv run HEAD --metrics devtime`` of each first (the op catalogue, the
CPU peak, torch.compile's cache, as a runner's first run leaves them). Then ``--reps``
rounds, each running every (version, repository) once with ``--metrics
devtime,instructions``, in an order that alternates from round to round. In each run, every
progress line is time-stamped as it arrives: the instructions pass is the span from the
pre-pass's end (the pass starts then: torch's import under valgrind is its cost) to
``instructions pass done``; the timing run is the rest of the commit (pre-pass + asv). The
ratio pass / timing run is taken within one run, so the load that both saw is close; the load
average at each run's start and end is printed beside it. Printed: each run, then per
(version, repository) the median ratio, the medians of both spans, and the configurations the
pass marked not deterministic with the reason it gave.
"""

from __future__ import annotations

import argparse
import json
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
from tests.wheelenv import clean_venv, git, run, source_copy  # noqa: E402

ADOPTER = ROOT / "bench" / "adopters" / "visionkit"
WORKTREE = "WORKTREE"
DTYPES = 'dtypes=("float32", "bfloat16")'


@dataclass
class Version:
    """One neuronasv version: its wheel in a clean venv, and the two repositories."""

    ref: str
    nx: Path
    repos: dict[str, Path] = field(default_factory=dict)


@dataclass
class Sample:
    """One ``neuronasv run --metrics devtime,instructions`` of one commit."""

    ref: str
    arm: str
    instr: float
    timing: float
    load: tuple[float, float]
    unstable: list[str]
    cpu: float  # the whole run's process tree: both parts
    # config -> {"total": ..., each op and module: ...}
    counts: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def ratio(self) -> float:
        return self.instr / self.timing


def _source(ref: str, dest: Path, env: dict[str, str]) -> None:
    """The build's source: this checkout as it is, or ``ref``'s tree, in a new repository."""
    if ref == WORKTREE:
        source_copy(dest, env)
        return
    archive = subprocess.run(["git", "archive", ref], cwd=ROOT, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    for skipped in ("tests", "docs/img", "bench/data"):
        shutil.rmtree(dest / skipped, ignore_errors=True)
    git(dest, env, "init", "-q", "-b", "main")
    git(dest, env, "add", "-A")
    git(dest, env, "commit", "-qm", f"build source: {ref}")


def _version(ref: str, where: Path, env: dict[str, str]) -> Version:
    where.mkdir(parents=True)
    src, dist = where / "src", where / "dist"
    src.mkdir()
    _source(ref, src, env)
    run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(src)],
        where, {**env, "NEURONASV_REPOSITORY": "acme/neuronasv"})  # fmt: skip
    wheel = next(dist.glob("neuronasv-*.whl"))
    py = clean_venv(where)
    run([str(py), "-m", "pip", "install", "-q", "--no-index", "--no-build-isolation",
         str(wheel)], where, env)  # fmt: skip
    v = Version(ref, py.parent / "neuronasv")
    v.repos["ours"] = src
    v.repos["visionkit"] = _adopter(where / "visionkit", v.nx, env)
    return v


def _adopter(repo: Path, nx: Path, env: dict[str, str]) -> Path:
    shutil.copytree(ADOPTER, repo / "visionkit", ignore=shutil.ignore_patterns("__pycache__"))
    git(repo, env, "init", "-q", "-b", "main")
    git(repo, env, "add", "-A")
    git(repo, env, "commit", "-qm", "visionkit: ConvNeXt and ViT, their workloads")
    run([str(nx), "init", "--workloads", "visionkit.workloads"], repo, env)
    suite = repo / "benchmarks" / "devtime.py"
    text = suite.read_text()
    assert "dtypes=()" in text, "neuronasv init's suite changed: update this bench"
    suite.write_text(text.replace("dtypes=()", DTYPES))
    git(repo, env, "add", "-A")
    git(repo, env, "commit", "-qm", "neuronasv init; float32 and bfloat16")
    return repo


def _stamped(cmd: list[str], cwd: Path, env: dict[str, str]) -> list[tuple[float, str]]:
    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)  # fmt: skip
    assert proc.stdout is not None
    lines = [(time.monotonic() - start, line.rstrip()) for line in proc.stdout]
    if proc.wait() != 0:
        sys.exit(f"{' '.join(cmd)} failed\n" + "\n".join(t for _, t in lines[-30:]))
    return lines


def _cpu_children() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _sample(v: Version, arm: str, env: dict[str, str]) -> Sample:
    load0, cpu0, since = os.getloadavg()[0], _cpu_children(), time.time()
    lines = _stamped([str(v.nx), "run", "HEAD", "--backend", "cpu", "--metrics",
                      "devtime,instructions", "--no-traces"], v.repos[arm], env)  # fmt: skip
    load1, cpu = os.getloadavg()[0], _cpu_children() - cpu0

    def at(pattern: str) -> float:
        return next(t for t, line in lines if re.search(pattern, line))

    first, done = at(r"\] commit "), at(r"\] done: ")
    i0, i1 = at("pre-pass done"), at("instructions pass done")
    why = [line.split("] ", 1)[-1] for _, line in lines
           if re.search("not deterministic:", line, re.IGNORECASE)]
    return Sample(v.ref, arm, i1 - i0, (done - first) - (i1 - i0), (load0, load1), why, cpu,
                  _counted(v.repos[arm], since))


def _counted(repo: Path, since: float) -> dict[str, dict[str, float]]:
    """Each configuration's counts in the sidecar the run just wrote (HEAD's, rewritten by
    every run of it, after ``since``): the whole step's (``total``), every op's and module's
    by name."""
    from neuronasv.store.asvresults import AsvResultsReader
    from neuronasv.store.layout import result_path_of_sidecar

    out: dict[str, dict[str, float]] = {}
    try:
        paths = [p for p in repo.rglob("*.neuronasv") if p.stat().st_mtime >= since]
    except OSError as exc:
        print(f"sidecars under {repo} unreadable: {exc}", flush=True)
        return out
    for path in paths:
        sidecar = AsvResultsReader().read_sidecar(result_path_of_sidecar(str(path)))[0]
        for p in sidecar.profiles if sidecar is not None else ():
            c = p.counted
            if c is not None:
                out[p.key] = {"total": c.total, **c.ops, **c.modules}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--refs", default=WORKTREE,
                        help=f"comma list of git refs of neuronasv, {WORKTREE}: this checkout")
    parser.add_argument("--arms", default="visionkit,ours", help="visionkit, ours or both")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    args = parser.parse_args()
    arms = [a for a in args.arms.split(",") if a]
    print(f"load average at the start (1/5/15 min): {os.getloadavg()}", flush=True)
    work = Path(tempfile.mkdtemp(prefix="bench-instr-adopter-"))
    try:
        (work / "home").mkdir()
        env = {"PATH": os.environ["PATH"], "HOME": str(work / "home"), "LANG": "C.UTF-8",
               "PYTHONUNBUFFERED": "1", "GIT_AUTHOR_NAME": "adopter",
               "GIT_AUTHOR_EMAIL": "adopter@example.invalid", "GIT_COMMITTER_NAME": "adopter",
               "GIT_COMMITTER_EMAIL": "adopter@example.invalid"}  # fmt: skip
        refs = args.refs.split(",")
        versions = [_version(ref, work / f"v{i}", env) for i, ref in enumerate(refs)]
        for v in versions:
            for arm in arms:
                t = time.monotonic()
                _stamped([str(v.nx), "run", "HEAD", "--backend", "cpu", "--metrics", "devtime",
                          "--no-traces"], v.repos[arm], env)  # fmt: skip
                print(f"{v.ref} {arm}: first run (untimed) {time.monotonic() - t:.0f} s",
                      flush=True)
        cells = [(v, arm) for v in versions for arm in arms]
        samples: list[Sample] = []
        for rep in range(args.reps):
            for v, arm in cells if rep % 2 == 0 else cells[::-1]:
                s = _sample(v, arm, env)
                samples.append(s)
                print(f"rep {rep + 1} {s.ref} {s.arm}: instructions pass {s.instr:.0f} s,"
                      f" timing run {s.timing:.0f} s, ratio {s.ratio:.2f}"
                      f" (load {s.load[0]:.1f} -> {s.load[1]:.1f}; the run's CPU {s.cpu:.0f} s)",
                      flush=True)  # fmt: skip
        print("\nmedians per commit:")
        for v, arm in cells:
            mine = [s for s in samples if s.ref == v.ref and s.arm == arm]
            ratios = sorted(round(s.ratio, 2) for s in mine)
            instr = statistics.median(s.instr for s in mine)
            print(f"  {v.ref} {arm}: instructions pass {instr:.0f} s,"
                  f" timing run {statistics.median(s.timing for s in mine):.0f} s, ratio"
                  f" {statistics.median(s.ratio for s in mine):.2f} (each: {ratios};"
                  f" load {min(s.load[0] for s in mine):.1f}-{max(s.load[1] for s in mine):.1f})")
            for line in sorted({w for s in mine for w in s.unstable}):
                print(f"    {line}")
            if not any(s.unstable for s in mine):
                print("    every configuration deterministic in every run")
            keys = set().union(*(s.counts for s in mine))
            same = sorted(k for k in keys if all(s.counts.get(k) == mine[0].counts.get(k)
                                                 for s in mine))  # fmt: skip
            print(f"    across the {len(mine)} runs: {len(same)} of {len(keys)} configurations"
                  " counted identically (the whole step, every op and module)")
            for k in sorted(keys - set(same)):
                runs = [s.counts.get(k, {}) for s in mine]
                moved = sorted(n for n in set().union(*runs)
                               if len({r.get(n) for r in runs}) > 1)  # fmt: skip
                print(f"      differs: {k}: " + "; ".join(
                    f"{n} {[r.get(n) for r in runs]}" for n in moved[:4]))  # fmt: skip
        print(json.dumps([{k: v for k, v in s.__dict__.items() if k != "counts"} for s in samples]))
        print(f"load average at the end (1/5/15 min): {os.getloadavg()}")
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
