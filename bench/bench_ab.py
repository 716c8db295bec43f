"""Side by side: this tree's loader and publish against another tree's, same history, same run.

For a refactor that must not slow things down: ``--base`` is a copy of the package as it
was (``git worktree add /tmp/base main`` or ``git archive main neuronasv | tar -x -C
/tmp/base``). One synthetic history (``bench/synth_history.py``, default 1,000 commits ×
1,000 series, as ``bench_publish.py``) is generated once; then, ``--repeat`` times and
alternating base/this so a change of machine load hits both alike, each tree runs in its
own process (``PYTHONPATH`` = that tree):

* ``load_history`` of the whole folder with git commit order (compare/regressions);
* ``python -m neuronasv.publish`` into an empty folder with no cache (full, cold);
* the same again on that folder (nothing new: every cache entry stat'ed and read);
* ``python -m neuronasv regressions`` of the whole folder, JSON, no cache (cold);
* ``python -m neuronasv compare`` of the two newest commits, JSON.

Printed: per measurement the median wall seconds and CPU seconds (user+sys of the process
and its children, less sensitive to other people's load on a shared machine) of each
tree and the ratio this/base; then the size of each tree's site (all files, and the data
files ``m/*/*/c*.js`` the workload pages load) after the full publish.

Usage::

    python bench/bench_ab.py --base /tmp/base --work /tmp/nasv-ab --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
THIS = HERE.parent

_TIMER = (
    "import json, resource, subprocess, sys, time;"
    "t = time.perf_counter();"
    "p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE);"
    "w = time.perf_counter() - t;"
    "r = resource.getrusage(resource.RUSAGE_CHILDREN);"
    "print(json.dumps([p.returncode, w, r.ru_utime + r.ru_stime, r.ru_maxrss / 1024,"
    " p.stderr.decode(errors='replace')[-800:]]))"
)


def timed(cmd: list[str], tree: Path, cwd: Path) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MiB) of ``cmd`` run with ``tree`` first on the path.

    ``cwd`` must hold no ``neuronasv/``: ``python -m``/``-c`` put the working folder before
    ``PYTHONPATH``, so run from a checkout both trees would measure that checkout.
    """
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, "-c", _TIMER, *cmd],
        capture_output=True, text=True, env=env, check=True, cwd=cwd,
    )  # fmt: skip
    rc, wall, cpu, rss, err = json.loads(out.stdout.strip().splitlines()[-1])
    if rc != 0:
        raise SystemExit(f"{tree}: {cmd[:4]} failed ({rc}): {err}")
    return wall, cpu, rss


def site_bytes(site: Path) -> tuple[int, int]:
    """(all files, data files) of a published site, in bytes (the parse cache left out)."""
    total = data = 0
    for p in site.rglob("*"):
        if p.is_file() and ".neuronasv-cache" not in p.parts:
            n = p.stat().st_size
            total += n
            data += n if p.suffix == ".js" and p.parent.parent.parent.name == "m" else 0
    return total, data


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base", required=True, help="folder holding the baseline neuronasv/")
    p.add_argument("--commits", type=int, default=1000)
    p.add_argument("--workloads", type=int, default=50)
    p.add_argument("--ops", type=int, default=20)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--work", default="/tmp/nasv-ab")
    a = p.parse_args(argv)
    trees = {"base": Path(a.base).resolve(), "this": THIS}
    work = Path(a.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    hist = Path(a.work) / f"h{a.commits}"
    if not (hist / "results").is_dir():
        shutil.rmtree(hist, ignore_errors=True)
        subprocess.run(
            [sys.executable, str(HERE / "synth_history.py"), str(hist), "--commits",
             str(a.commits), "--workloads", str(a.workloads), "--ops", str(a.ops)],
            check=True, env={**os.environ, "PYTHONPATH": str(THIS)},
        )  # fmt: skip
    res, repo = str(hist / "results"), str(hist / "repo")
    load = [sys.executable, "-c",
            "import sys; from neuronasv.store.history import load_history;"
            f"h = load_history({res!r}, repo={repo!r});"
            "assert h.series and not h.load_errors, h.load_errors[:3]"]  # fmt: skip
    for name, tree in trees.items():  # each tree's own package, not the working folder's
        where = subprocess.run(
            [sys.executable, "-c", "import neuronasv; print(neuronasv.__file__)"],
            capture_output=True, text=True, check=True, cwd=work,
            env={**os.environ, "PYTHONPATH": str(tree)},
        ).stdout.strip()  # fmt: skip
        if not where.startswith(str(tree)):
            raise SystemExit(f"{name}: imports {where}, not {tree}")
    got: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    sizes: dict[str, tuple[int, int]] = {}
    load0 = os.getloadavg()
    regressions = [sys.executable, "-m", "neuronasv", "regressions", "--results-dir", res,
                   "--repo", repo, "--format", "json", "--out", os.devnull]  # fmt: skip
    compare = [sys.executable, "-m", "neuronasv", "compare", "HEAD~1", "HEAD",
               "--results-dir", res, "--repo", repo, "--format", "json",
               "--out", os.devnull]  # fmt: skip
    for r in range(a.repeat):
        order = ("base", "this") if r % 2 == 0 else ("this", "base")
        for name in order:
            tree = trees[name]
            site = Path(a.work) / f"site-{name}"
            shutil.rmtree(site, ignore_errors=True)
            pub = [sys.executable, "-m", "neuronasv.publish", "--results-dir", res,
                   "--repo", repo, "--out", str(site)]  # fmt: skip
            got.setdefault(("load_history", name), []).append(timed(load, tree, work))
            got.setdefault(("publish full", name), []).append(
                timed([*pub, "--no-cache"], tree, work)
            )
            sizes[name] = site_bytes(site)
            shutil.rmtree(site, ignore_errors=True)
            timed(pub, tree, work)  # fills the cache
            got.setdefault(("publish no-change", name), []).append(timed(pub, tree, work))
            got.setdefault(("regressions", name), []).append(timed(regressions, tree, work))
            got.setdefault(("compare", name), []).append(timed(compare, tree, work))
        print(f"# round {r + 1} of {a.repeat} done", flush=True)
    load1 = os.getloadavg()
    print(f"\n{a.commits} commits x {a.workloads * a.ops} series; medians of {a.repeat};"
          f" cpus {os.cpu_count()}; load average at start {load0[0]:.2f}, at end"
          f" {load1[0]:.2f}")  # fmt: skip
    print(f"{'':20} {'base wall':>10} {'this wall':>10} {'ratio':>6}"
          f" {'base CPU':>9} {'this CPU':>9} {'ratio':>6} {'base MiB':>9} {'this MiB':>9}")
    for what in ("load_history", "publish full", "publish no-change", "regressions", "compare"):
        b, t = got[(what, "base")], got[(what, "this")]
        med = [statistics.median(x[i] for x in rows) for rows in (b, t) for i in range(3)]
        bw, bc, bm, tw, tc, tm = med
        print(f"{what:20} {bw:10.2f} {tw:10.2f} {tw / bw:6.2f} {bc:9.2f} {tc:9.2f}"
              f" {tc / bc:6.2f} {bm:9.0f} {tm:9.0f}")  # fmt: skip
    (bt, bd), (tt, td) = sizes["base"], sizes["this"]
    print(f"{'site MiB (all)':20} {bt / 2**20:10.2f} {tt / 2**20:10.2f} {tt / bt:6.2f}")
    print(f"{'site MiB (data)':20} {bd / 2**20:10.2f} {td / 2**20:10.2f} {td / bd:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
