"""Between-run noise of the device-health canary: what the withhold threshold is built on.

Times the backend's canary (``neuronasv.measure.canary``) in ``--runs`` separate processes
(a fresh process is what separates two asv runs of a commit), ``--repeats`` calls at the
start and again at the end of each, as ``CanaryRun`` does, and prints per run the level
(median of start + end) and the start-to-end drift, then across runs: the median level, the
scaled MAD / median (the noise :mod:`neuronasv.analyse.health` estimates from a machine's
history), SD / median, and the largest |drift|. Ratios are against the median run of the
same invocation.

    .venv/bin/python bench/canary_noise.py                      # CPU, 12 processes
    .venv/bin/python bench/canary_noise.py --backend cuda --runs 8
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

_CHILD = """
import json, sys
from neuronasv.measure.backends import get_backend
from neuronasv.measure.canary import CanaryRun
b = get_backend(sys.argv[1])
with b.measuring():
    run = CanaryRun(b, repeats=int(sys.argv[2]))
    run.start()
    r = run.finish()
print(json.dumps({"start": r.start_us, "end": r.end_us, "name": r.name}))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--runs", type=int, default=12)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", help="write the per-run figures here")
    args = ap.parse_args()
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    levels, drifts, rows = [], [], []
    for i in range(args.runs):
        out = subprocess.run(
            [sys.executable, "-c", _CHILD, args.backend, str(args.repeats)],
            capture_output=True, text=True, check=True, cwd=root,
        )
        r = json.loads(out.stdout.strip().splitlines()[-1])
        level = statistics.median(r["start"] + r["end"])
        s, e = statistics.median(r["start"]), statistics.median(r["end"])
        drift = (e - s) / s
        levels.append(level)
        drifts.append(drift)
        rows.append({"run": i, "level_us": level, "drift": drift, **r})
        print(f"run {i:2d}  level {level:10.1f} µs  drift {drift:+6.1%}  ({r['name']})", flush=True)
    med = statistics.median(levels)
    mad = 1.4826 * statistics.median(abs(v - med) for v in levels)
    sd = statistics.stdev(levels) if len(levels) > 1 else 0.0
    print(f"\n{args.runs} runs on {args.backend}: median level {med:.1f} µs")
    print(f"  scaled MAD / median  {mad / med:6.2%}")
    print(f"  SD / median          {sd / med:6.2%}")
    print(f"  min / max vs median  {min(levels) / med:.3f} / {max(levels) / med:.3f}")
    print(f"  max |drift|          {max(abs(d) for d in drifts):6.1%}")
    print(f"  median |drift|       {statistics.median(abs(d) for d in drifts):6.1%}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
