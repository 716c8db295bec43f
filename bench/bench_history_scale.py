"""History at size: ``neuronasv regressions`` over long histories, this tree against a baseline.

For each size, one synthetic history (``bench/synth_history.py``: ``--workloads`` ×
``--ops`` series with known steps, asv results + sidecars + a git repository, the same
layout ``bench_publish.py`` uses) is generated once; then, each in its own process timed
here (wall seconds, CPU seconds of the process and its children, peak RSS of the largest
process), with ``--format json``:

* ``base``: the baseline tree's ``neuronasv regressions`` (``--base``, a copy of the
  package as it was: ``git archive REV neuronasv | tar -x -C DIR``, or ``--base-rev REV``
  to have this script make it), sizes up to ``--base-max`` commits only (it takes minutes);
* ``cold``: this tree, no cache;
* ``fill``: this tree with an empty ``--cache-dir`` (cold, and writing the cache);
* ``+1 commit``: one more commit appended to the history, then this tree with that cache
  (the per-push job's case: one new results file, the rest cached);
* ``checkout``: the results folder moved away and copied back (new inodes and mtimes, as
  a fresh checkout of the results branch in CI gives), then this tree with the cache
  (every file hashed instead of trusted by its stat).

The baseline's and this tree's documents for the same folder are compared (change points,
their p-values to 1e-6, the newest check) and the result printed. Machine load is printed
at start and end: the figures are this machine's, ratios are what carries over.

Usage::

    python bench/bench_history_scale.py --base-rev 2103258 --sizes 1000 --big 10000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
THIS = HERE.parent
sys.path.insert(0, str(HERE))
from synth_history import generate  # noqa: E402

_TIMER = (
    "import json, resource, subprocess, sys, time;"
    "t = time.perf_counter();"
    "p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE);"
    "w = time.perf_counter() - t;"
    "r = resource.getrusage(resource.RUSAGE_CHILDREN);"
    "print(json.dumps([p.returncode, w, r.ru_utime + r.ru_stime, r.ru_maxrss / 1024,"
    " p.stderr.decode(errors='replace')[-800:]]))"
)


def timed(cmd: list[str], tree: Path) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MiB) of ``cmd`` with ``tree`` first on the path.

    Run from the filesystem root: ``python -m`` puts the working directory before
    ``PYTHONPATH``, and from a checkout that would be this tree's package, not ``tree``'s.
    """
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, "-c", _TIMER, *cmd], capture_output=True, text=True, env=env,
        check=True, cwd="/",
    )  # fmt: skip
    rc, wall, cpu, rss, err = json.loads(out.stdout.strip().splitlines()[-1])
    if rc != 0:
        raise SystemExit(f"{tree}: {cmd[3:6]} failed ({rc}): {err}")
    return wall, cpu, rss


def regressions(hist: Path, out: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "neuronasv", "regressions", "--results-dir",
        str(hist / "results"), "--repo", str(hist / "repo"), "--format", "json",
        "--out", str(out), *extra,
    ]  # fmt: skip


def _norm(doc: dict[str, Any]) -> dict[str, Any]:
    doc = dict(doc)
    doc.pop("created", None)
    cps = []
    for cp in doc.get("change_points", []):
        cp = dict(cp)
        cp["p_value"] = float(f"{cp['p_value']:.6g}") if cp["p_value"] > 1e-290 else 0.0
        cp["reason"] = cp["reason"].split(" (t-test")[0]
        cps.append(cp)
    doc["change_points"] = cps
    return doc


def same_documents(a: Path, b: Path) -> str:
    da, db = json.loads(a.read_text()), json.loads(b.read_text())
    n = len(da.get("change_points", []))
    if _norm(da) == _norm(db):
        return f"same document ({n} change points, p-values to 1e-6)"
    diff = [k for k in set(da) | set(db) if _norm(da).get(k) != _norm(db).get(k)]
    return f"DIFFERENT documents: {sorted(diff)}"


def measure(
    hist: Path, work: Path, base: Path | None, repeat: int
) -> tuple[dict[str, tuple[float, float, float]], str]:
    runs: dict[str, list[tuple[float, float, float]]] = {}
    note = ""
    for _ in range(repeat):
        if base is not None:
            runs.setdefault("base", []).append(timed(regressions(hist, work / "base.json"), base))
        runs.setdefault("cold", []).append(timed(regressions(hist, work / "cold.json"), THIS))
    if base is not None:
        note = same_documents(work / "base.json", work / "cold.json")
    cache = work / "cache"
    shutil.rmtree(cache, ignore_errors=True)
    runs["fill"] = [timed(regressions(hist, work / "fill.json", "--cache-dir", str(cache)), THIS)]
    generate(hist, commits=1, append=True)
    time.sleep(2.1)  # past the cache's "racy" window: files written just now are hashed
    runs["+1 commit"] = [
        timed(regressions(hist, work / "warm.json", "--cache-dir", str(cache)), THIS)
    ]
    res = hist / "results"
    shutil.move(str(res), str(hist / "results.moved"))
    shutil.copytree(hist / "results.moved", res)
    shutil.rmtree(hist / "results.moved")
    runs["checkout"] = [
        timed(regressions(hist, work / "checkout.json", "--cache-dir", str(cache)), THIS)
    ]
    timed(regressions(hist, work / "after.json"), THIS)
    warm_same = same_documents(work / "after.json", work / "checkout.json")
    note += f"; cached runs after one more commit: {warm_same.split(' (')[0]} as without a cache"
    med = {
        k: (
            statistics.median(r[0] for r in v),
            statistics.median(r[1] for r in v),
            statistics.median(r[2] for r in v),
        )
        for k, v in runs.items()
    }
    return med, note


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="1000", help="commit counts (comma-separated)")
    p.add_argument("--big", type=int, default=0, help="also this many commits")
    p.add_argument("--base", help="folder holding the baseline neuronasv/")
    p.add_argument("--base-rev", help="git revision to extract as the baseline (git archive)")
    p.add_argument("--base-max", type=int, default=1000, help="largest size run with the base")
    p.add_argument("--workloads", type=int, default=50)
    p.add_argument("--ops", type=int, default=20)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--work", default="/tmp/nasv-hist")
    a = p.parse_args(argv)
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    base = Path(a.base).resolve() if a.base else None
    if a.base_rev:
        base = work / "base"
        shutil.rmtree(base, ignore_errors=True)
        base.mkdir()
        tar = subprocess.run(["git", "-C", str(THIS), "archive", a.base_rev, "neuronasv"],
                             capture_output=True, check=True).stdout  # fmt: skip
        subprocess.run(["tar", "-x", "-C", str(base)], input=tar, check=True)
    for tree in [THIS] + ([base] if base is not None else []):
        where = subprocess.run(
            [sys.executable, "-c", "import neuronasv; print(neuronasv.__file__)"], cwd="/",
            env={**os.environ, "PYTHONPATH": str(tree)}, capture_output=True, text=True,
            check=True,
        ).stdout.strip()  # fmt: skip
        if not where.startswith(str(tree)):
            raise SystemExit(f"{tree}: the package imported is {where}, not this tree's")
        print(f"# {'base' if tree != THIS else 'this tree'}: {where}", flush=True)
    sizes = [int(s) for s in a.sizes.split(",") if s] + ([a.big] if a.big else [])
    load0 = os.getloadavg()
    rows = []
    for n in sizes:
        hist = work / f"h{n}"
        shutil.rmtree(hist, ignore_errors=True)
        t = time.perf_counter()
        generate(hist, commits=n, workloads=a.workloads, ops=a.ops)
        print(f"# generated {n} commits × {a.workloads * a.ops} series"
              f" in {time.perf_counter() - t:.0f} s", flush=True)  # fmt: skip
        use_base = base if base is not None and n <= a.base_max else None
        m, note = measure(hist, work, use_base, a.repeat)
        rows.append((n, m, note))
        print(f"# {n}: " + json.dumps({k: [round(x, 2) for x in v] for k, v in m.items()})
              + f"; {note}", flush=True)  # fmt: skip
        shutil.rmtree(hist, ignore_errors=True)
    load1 = os.getloadavg()
    print(f"\nseries: {a.workloads * a.ops}; cpus: {os.cpu_count()}; medians of {a.repeat} run(s);"
          f" base: {a.base_rev or a.base or 'none'}")  # fmt: skip
    print("load average (1/5/15 min) at start: " + " ".join(f"{x:.2f}" for x in load0)
          + "; at end: " + " ".join(f"{x:.2f}" for x in load1))  # fmt: skip
    print("each cell: wall s / CPU s (process + children) / peak RSS MiB of the largest process")
    cols = ["base", "cold", "fill", "+1 commit", "checkout"]
    print(f"{'commits':>8} " + " ".join(f"{c:>20}" for c in cols) + f" {'base/cold':>10}")
    for n, m, _note in rows:
        cells = [
            f"{m[c][0]:.1f}/{m[c][1]:.1f}/{m[c][2]:.0f}" if c in m else "-" for c in cols
        ]
        ratio = f"{m['base'][0] / m['cold'][0]:.1f}x" if "base" in m else "-"
        print(f"{n:>8} " + " ".join(f"{c:>20}" for c in cells) + f" {ratio:>10}")
    for n, m, note in rows:
        if "base" in m:
            print(f"{n} commits: this tree cold is {m['base'][0] / m['cold'][0]:.1f}x faster"
                  f" (wall; CPU {m['base'][1] / m['cold'][1]:.1f}x) than the base, RSS"
                  f" {m['cold'][2]:.0f} vs {m['base'][2]:.0f} MiB; {note}")  # fmt: skip
        else:
            print(f"{n} commits: {note.lstrip('; ')}")
    print("Done-when (quiet machine): 1,000 × 1,000 cold <= 10 s and < 500 MB, +1 commit <= 3 s;"
          " 10,000 × 1,000 cold <= 60 s")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
