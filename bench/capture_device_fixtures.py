"""Capture raw profiler facts on an accelerator host, as fixtures for code built without one.

    python bench/capture_device_fixtures.py --out DIR [--backend cuda]

For each (workload, shape, dtype) below: build the step, warm it up, profile a few
iterations with ``record_shapes`` and write

* ``<stem>.events.json`` — every profiler event that has device time or a name of interest:
  name, input shapes/dtypes, concrete scalars, self device time, count, and the names of
  the enclosing ``record_function`` ranges (outermost first) — what the of-peak estimate
  for compiled (Triton) and cuDNN kernels and the module rollup read;
* ``<stem>.trace.json.gz`` — the exported chrome trace (open in Perfetto).

The transformer block is profiled with ``record_function`` ranges around its parts (the
module scopes ``attn_norm``, ``attn``, ``mlp_norm``, ``mlp``) so the rollup can be checked
against the kernels the device ran. Prints one summary line per capture.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CAPTURES = [
    ("rmsnorm.compiled", "4x512", "bfloat16"),
    ("rmsnorm.compiled", "8x1024x4096", "bfloat16"),
    ("transformer.attention", "1x2048x4096x32", "bfloat16"),
    ("transformer.block", "1x2048x4096x32", "bfloat16"),
    ("transformer.block.compiled", "1x2048x4096x32", "bfloat16"),
]


def _scoped_block(dims, dtype, device, seed):
    """transformer.block with record_function ranges around its parts."""
    import torch
    import torch.nn.functional as F
    from torch.profiler import record_function

    from neuronasv.measure.workloads import transformer as T

    shape = T.BlockShape.from_dims(dims)
    x, p = T.make_block(shape, dtype, device, seed)
    cos, sin = T.rope_tables(shape.seq, shape.head_dim, dtype, device)

    def step():
        with torch.no_grad(), record_function("neuronasv.module::block"):
            b, s, hidden = x.shape
            d = hidden // shape.heads
            with record_function("neuronasv.module::block.attn_norm"):
                hn = T.rmsnorm(x, p.attn_norm)
            with record_function("neuronasv.module::block.attn"):
                q = F.linear(hn, p.wq).view(b, s, shape.heads, d).transpose(1, 2)
                k = F.linear(hn, p.wk).view(b, s, shape.heads, d).transpose(1, 2)
                v = F.linear(hn, p.wv).view(b, s, shape.heads, d).transpose(1, 2)
                q, k = T.apply_rope(q, k, cos, sin)
                a = T.attention(q, k, v).transpose(1, 2).reshape(b, s, hidden)
                h = x + F.linear(a, p.wo)
            with record_function("neuronasv.module::block.mlp_norm"):
                hn2 = T.rmsnorm(h, p.mlp_norm)
            with record_function("neuronasv.module::block.mlp"):
                return h + T.swiglu_mlp(hn2, p.w_gate, p.w_up, p.w_down)

    return step


def capture(name, shape, dtype, backend_name, out, iters=5):
    import torch
    from torch.profiler import ProfilerActivity, profile

    from neuronasv.measure import workloads
    from neuronasv.measure.backends import get_backend

    backend = get_backend(backend_name)
    dims = workloads.parse_shape(shape)
    tdt = workloads.parse_dtype(dtype)
    device = backend.device
    if name == "transformer.block":
        step = _scoped_block(dims, tdt, device, 0)
    else:
        step = workloads.get(name).build(dims, tdt, device, 0)
    t0 = time.time()
    for _ in range(3):
        step()
    sync = torch.cuda.synchronize if backend_name == "cuda" else (lambda: None)
    sync()
    acts = [ProfilerActivity.CPU]
    if backend_name == "cuda":
        acts.append(ProfilerActivity.CUDA)
    with profile(activities=acts, record_shapes=True) as prof:
        for _ in range(iters):
            step()
        sync()
    stem = f"{name}-{shape}-{dtype}"
    rows = []
    for e in prof.events():
        dev = float(getattr(e, "self_device_time_total", 0.0) or 0.0)
        if dev <= 0 and not (e.name.startswith(("triton", "neuronasv.")) or "attention" in e.name):
            continue
        scopes = []
        p = e.cpu_parent
        while p is not None:
            if p.name.startswith("neuronasv.module::") or p.name.startswith("triton"):
                scopes.append(p.name)
            p = p.cpu_parent
        rows.append(
            {
                "name": e.name,
                "input_shapes": [
                    list(s) if isinstance(s, (list, tuple)) else s for s in (e.input_shapes or [])
                ],
                "input_dtypes": [str(t) for t in (getattr(e, "input_dtypes", None) or [])],
                "concrete_inputs": [repr(c) for c in (getattr(e, "concrete_inputs", None) or [])],
                "self_device_us": dev,
                "device_us": float(getattr(e, "device_time_total", 0.0) or 0.0),
                "cpu_us": float(e.cpu_time_total),
                "scopes": list(reversed(scopes)),
                "kernels": [k.name for k in (getattr(e, "kernels", None) or [])][:8],
            }
        )
    with open(os.path.join(out, stem + ".events.json"), "w", encoding="utf-8") as fh:
        json.dump({"workload": name, "shape": shape, "dtype": dtype, "iters": iters,
                   "torch": torch.__version__, "rows": rows}, fh, indent=1)
    tpath = os.path.join(out, stem + ".trace.json")
    prof.export_chrome_trace(tpath)
    with open(tpath, "rb") as src, gzip.open(tpath + ".gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    os.remove(tpath)
    total = sum(r["self_device_us"] for r in rows) / iters
    by_scope: dict[str, float] = {}
    for r in rows:
        key = r["scopes"][-1] if r["scopes"] else "-"
        by_scope[key] = by_scope.get(key, 0.0) + r["self_device_us"] / iters
    top = sorted(((r["self_device_us"] / iters, r["name"]) for r in rows), reverse=True)[:4]
    scopes = {k: round(v, 1) for k, v in by_scope.items()}
    print(f"{stem}: {total:.1f} us/iter device, {len(rows)} rows, {time.time() - t0:.1f} s;"
          f" top {[(n, round(t, 2)) for t, n in top]}; scopes {scopes}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--out", required=True)
    ap.add_argument("--backend", default="cuda")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name, shape, dtype in CAPTURES:
        if args.backend == "cpu" and shape.startswith("1x2048"):
            shape = "1x128x256x4"
        if args.backend == "cpu" and shape == "8x1024x4096":
            shape = "4x64x256"
        try:
            capture(name, shape, dtype, args.backend, args.out)
        except Exception as exc:  # a capture that fails must not stop the others
            print(f"{name} {shape} {dtype}: FAILED {type(exc).__name__}: {exc}", flush=True)


if __name__ == "__main__":
    main()
