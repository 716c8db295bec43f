# Sourced by the scripts that measure (bench-run.sh, pr-bench.sh): make sure the neuronasv
# that runs the suite lives in the interpreter that has the accelerator stack.
#  - NEURONASV_PYTHON set (e.g. the Neuron DLAMI venv's python, in the runner's .env file):
#    install this checkout's neuronasv + asv plugin into it, without touching its torch and
#    without downloads when its dependencies are present (ci/install_project.py).
#  - otherwise, on an accelerator host whose python has torch (an NGC image, a DLAMI):
#    .venv-host, a venv that sees that torch, with this checkout installed the same way.
#  - otherwise (a CPU host): ci/setup.sh builds .venv (CPU torch), as on a laptop.
if [ -n "${NEURONASV_PYTHON:-}" ]; then
  log "using $NEURONASV_PYTHON (runner-provided interpreter)"
  "$NEURONASV_PYTHON" ci/install_project.py >&2 || die "cannot install neuronasv into $NEURONASV_PYTHON (see above)"
  NEURONASV_BIN="$(dirname "$NEURONASV_PYTHON")/neuronasv"
  export NEURONASV_BIN
elif [ -z "${NEURONASV_BIN:-}" ]; then
  if host_py=$(host_accelerator_python); then
    log "accelerator host: using the torch of $host_py via .venv-host"
    ensure_host_venv "$host_py" .venv-host >&2 || die "cannot set up .venv-host (see above)"
    NEURONASV_BIN="$PWD/.venv-host/bin/neuronasv"
    export NEURONASV_BIN
  else
    bash ci/setup.sh --no-dev >&2
  fi
fi
