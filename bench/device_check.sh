#!/usr/bin/env bash
# Accelerator path end to end, on a bare NVIDIA GPU or Trainium host: set up, run doctor,
# profile the three RMSNorm variants with --json, check device times > 0 and the op
# tables, print PASS or FAIL. Budget: under 5 minutes (the torch download dominates on a
# truly bare NVIDIA machine; an existing torch is reused).
#
# Works offline: the venv sees the base interpreter's packages (its preinstalled torch),
# and this checkout is installed with --no-deps --no-build-isolation when every dependency
# is there (ci/install_project.py); otherwise it says exactly what is missing. torch itself
# is downloaded only when the base has none (a bare host with network).
#
# Usage: bash bench/device_check.sh [auto|cuda|neuron]      (default auto; cpu = dry run)
# Env:   PYTHON=...      base interpreter (default: a Neuron DLAMI venv if present, else python3)
#        DEVICE_VENV=... venv to create/reuse (default ~/.cache/neuronasv/device-venv)
#        OUT=...         where doctor.txt, profile.txt, profile.json and traces/ go
set -euo pipefail
cd "$(dirname "$0")/.."
START=$SECONDS
BACKEND=${1:-auto}
OUT=${OUT:-$(mktemp -d -t neuronasv-device-XXXXXX)}
VENV=${DEVICE_VENV:-$HOME/.cache/neuronasv/device-venv}
mkdir -p "$(dirname "$VENV")"
mkdir -p "$OUT"
fail() { echo "FAIL: $*  ($((SECONDS - START)) s; outputs in $OUT)"; exit 1; }

BASE=${PYTHON:-}
if [ -z "$BASE" ]; then
  # The Neuron DLAMI ships torch + torch-neuronx in a venv; PyPI has only a placeholder.
  for cand in /opt/aws_neuronx_venv_pytorch*/bin/python; do
    [ -x "$cand" ] && BASE=$cand && break
  done
fi
BASE=${BASE:-python3}

echo "==> setup ($BASE -> $VENV)"
# A venv that sees everything BASE sees (also when BASE is itself a venv, as on the DLAMI),
# with this checkout installed without downloads when its dependencies are present.
timeout 600 "$BASE" ci/install_project.py --venv "$VENV" --allow-torch-download \
  || fail "setup: see the install_project lines above for what is missing"
PY=$VENV/bin/python
"$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'gpu', torch.cuda.is_available())"

if [ "$BACKEND" = "neuron" ]; then
  # Per-op Neuron device time reads neuron-explorer's Parquet output with pyarrow (the
  # neuron extra); without it the full JSON is read (unmaintained after Neuron 2.34).
  "$PY" -c "import pyarrow" 2>/dev/null || timeout 300 "$PY" -m pip install -q "pyarrow>=14" \
    || echo "note: pyarrow not installed: the device profile is read from the full JSON"
  echo "==> neuronasv doctor --neuron-check (report in $OUT/neuron-check)"
  timeout 600 "$PY" -m neuronasv doctor --neuron-check --out "$OUT/neuron-check" \
    | tee "$OUT/neuron-check.txt" || echo "note: a neuron-check check failed (see the report)"
fi

echo "==> neuronasv doctor"
timeout 120 "$PY" -m neuronasv doctor | tee "$OUT/doctor.txt" || fail "doctor exited non-zero"

echo "==> neuronasv profile --backend $BACKEND (3 variants, 10 samples)"
timeout 200 "$PY" -m neuronasv profile --backend "$BACKEND" --samples 10 \
  --json "$OUT/profile.json" --trace-dir "$OUT/traces" | tee "$OUT/profile.txt" \
  || fail "profile exited non-zero"

echo "==> checks"
"$PY" - "$OUT/profile.json" "$BACKEND" <<'PYCHECK' || fail "checks failed"
import re
import sys

from neuronasv.model import ProfileDocument

path, wanted = sys.argv[1], sys.argv[2]
doc = ProfileDocument.loads(open(path, encoding="utf-8").read(), source=path)
problems = []
if wanted == "auto" and doc.backend == "cpu":
    problems.append("auto selected the CPU: no accelerator backend is available here")
by_name = {w.name: w for w in doc.workloads}
for name in ("rmsnorm.naive", "rmsnorm.fused", "rmsnorm.compiled"):
    w = by_name.get(name)
    if w is None:
        problems.append(f"{name}: missing from the profile")
        continue
    if len(w.device_time_us) < 10:
        problems.append(f"{name}: {len(w.device_time_us)} samples < 10")
    if not all(t > 0 for t in w.device_time_us):
        problems.append(f"{name}: a sample has device time <= 0: {w.device_time_us}")
    if doc.backend != "cpu" and w.device_time_is_cpu:
        problems.append(f"{name}: device time is CPU time on an accelerator")
    if not w.ops:
        problems.append(f"{name}: no ops")
    hashed = [o.op for o in w.ops if re.search(r"[a-z0-9]{32,}", o.op)]
    if hashed:
        problems.append(f"{name}: op names keep hashes: {hashed}")
    print(f"{name}: median {sorted(w.device_time_us)[len(w.device_time_us) // 2]:.2f} us/iter;"
          f" top ops: " + ", ".join(f"{o.op} x{o.calls_per_iter:g}" for o in w.ops[:5])
          + f"; device time from {w.device_time_source or 'key_averages'}")
naive = by_name.get("rmsnorm.naive")
if naive is not None:
    mul = naive.op("aten::mul")
    if mul is None or mul.calls_per_iter != 3:
        problems.append(f"rmsnorm.naive: aten::mul should be 3 calls/iter, got {mul and mul.calls_per_iter}")
    elif not all(v > 0 for v in mul.self_device_time_us):
        problems.append("rmsnorm.naive: aten::mul has zero device time in a sample")
    for op in ("aten::mean", "aten::add", "aten::rsqrt"):
        if naive.op(op) is None:
            problems.append(f"rmsnorm.naive: {op} missing (ops: {[o.op for o in naive.ops]})")
fused = by_name.get("rmsnorm.fused")
if fused is not None and not any("rms_norm" in o.op for o in fused.ops):
    problems.append(f"rmsnorm.fused: no rms_norm op with device time (ops: {[o.op for o in fused.ops]})")
fp = doc.fingerprint
print("fingerprint:", ", ".join(f"{k}={v}" for k, v in sorted(fp.items())))
if doc.backend != "cpu" and fp.get("device_model", "none") == "none":
    problems.append("fingerprint has no device_model")
for p in problems:
    print("problem:", p)
sys.exit(1 if problems else 0)
PYCHECK

echo "PASS: accelerator path end to end on $(grep -o '"backend": "[a-z]*"' "$OUT/profile.json" | head -1) in $((SECONDS - START)) s (outputs in $OUT)"
