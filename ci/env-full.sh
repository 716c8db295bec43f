# Sourced by the scripts that measure (bench-run.sh, pr-bench.sh): make sure the neuronasv
# that runs the suite lives in the interpreter that has the accelerator stack.
#  - NEURONASV_PYTHON set (e.g. the Neuron DLAMI venv's python, in the runner's .env file):
#    install this checkout's neuronasv + asv plugin into it, without touching its torch.
#  - otherwise: ci/setup.sh builds .venv (CPU torch), as on a laptop.
if [ -n "${NEURONASV_PYTHON:-}" ]; then
  log "using $NEURONASV_PYTHON (runner-provided interpreter)"
  "$NEURONASV_PYTHON" -m pip install -q --disable-pip-version-check --no-deps -e . -e ./asv_bench_neuronasv
  NEURONASV_BIN="$(dirname "$NEURONASV_PYTHON")/neuronasv"
  export NEURONASV_BIN
elif [ -z "${NEURONASV_BIN:-}" ]; then
  bash ci/setup.sh --no-dev >&2
fi
