# Shared helpers for the ci/*.sh scripts (sourced, not run). Every script runs the same way
# in a workflow and on a laptop: arguments in, files out, no hidden GitHub state.

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 2; }

# The neuronasv to run: $NEURONASV_BIN, else the repo's .venv, else the light CI venv,
# else whatever is on PATH.
nx() {
  local root; root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  if [ -n "${NEURONASV_BIN:-}" ]; then "$NEURONASV_BIN" "$@"
  elif [ -x "$root/.venv/bin/neuronasv" ]; then "$root/.venv/bin/neuronasv" "$@"
  elif [ -x "$root/.venv-light/bin/neuronasv" ]; then "$root/.venv-light/bin/neuronasv" "$@"
  else neuronasv "$@"
  fi
}

# Python of the same environment as nx (for ci/*.py helpers).
nxpy() {
  local root; root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  if [ -n "${NEURONASV_BIN:-}" ]; then "$(dirname "$NEURONASV_BIN")/python" "$@"
  elif [ -x "$root/.venv/bin/python" ]; then "$root/.venv/bin/python" "$@"
  elif [ -x "$root/.venv-light/bin/python" ]; then "$root/.venv-light/bin/python" "$@"
  else python3 "$@"
  fi
}

# asv machine name of a shard: the base name for the single default shard "all", else
# "<base>-<shard>". One machine per shard keeps every series' history on one (kind of)
# runner, and makes shards write disjoint <machine>/ folders that merge by file layout.
machine_for_shard() {
  local base="$1" shard="$2"
  [[ "$base" =~ ^[A-Za-z0-9._-]+$ ]] || die "machine name '$base' must be [A-Za-z0-9._-]+"
  [[ "$shard" =~ ^[A-Za-z0-9._-]+$ ]] || die "shard name '$shard' must be [A-Za-z0-9._-]+"
  if [ "$shard" = "all" ]; then printf '%s\n' "$base"; else printf '%s-%s\n' "$base" "$shard"; fi
}

is_sha() { [[ "$1" =~ ^[0-9a-f]{40}$ ]]; }

# Folders a script clears: it deletes only what it created, marked by this file inside.
OWNED_MARKER=.neuronasv-owned

# claim_dir DIR: DIR afresh and marked as ours. An existing DIR is removed only when a
# script made it before (the marker); an empty folder is taken as is; anything else (a
# user's folder, a file, a symbolic link) is refused, never deleted.
claim_dir() {
  local d=$1
  if [ -L "$d" ] || { [ -e "$d" ] && [ ! -d "$d" ]; }; then
    die "$d exists and is not a folder: choose another path"
  elif [ -f "$d/$OWNED_MARKER" ]; then
    rm -rf -- "$d"
  elif [ -d "$d" ] && [ -n "$(ls -A -- "$d")" ]; then
    die "$d exists and was not created by this script (no $OWNED_MARKER): nothing deleted;" \
      "remove it yourself or choose another folder"
  fi
  mkdir -p -- "$d" && : > "$d/$OWNED_MARKER"
}

# remove_owned DIR: delete DIR only when claim_dir made it.
remove_owned() {
  local d=$1
  [ -e "$d" ] || [ -L "$d" ] || return 0
  { [ ! -L "$d" ] && [ -f "$d/$OWNED_MARKER" ]; } \
    || die "refusing to delete $d: it was not created by this script (no $OWNED_MARKER)"
  rm -rf -- "$d"
}

# Write key=value to $GITHUB_OUTPUT when running in Actions, and always to stdout.
set_output() {
  printf '%s=%s\n' "$1" "$2"
  if [ -n "${GITHUB_OUTPUT:-}" ]; then printf '%s=%s\n' "$1" "$2" >> "$GITHUB_OUTPUT"; fi
}

# The interpreter of an accelerator host, printed when there is one: $PYTHON if set, else a
# Neuron DLAMI venv, else python3 — when its torch sees CUDA or torch_neuronx is installed.
# Nothing printed (status 1) on a CPU-only host. Used by demo.sh and env-full.sh so that a
# runner with torch preinstalled measures on its accelerator, not on a CPU wheel.
host_accelerator_python() {
  local cand
  for cand in "${PYTHON:-}" /opt/aws_neuronx_venv_pytorch*/bin/python python3; do
    [ -n "$cand" ] || continue
    command -v "$cand" >/dev/null 2>&1 || [ -x "$cand" ] || continue
    if timeout 120 "$cand" - >/dev/null 2>&1 <<'PYEOF'
import importlib.util, sys
import torch
sys.exit(0 if importlib.util.find_spec("torch_neuronx") or torch.cuda.is_available() else 1)
PYEOF
    then printf '%s\n' "$cand"; return 0; fi
  done
  return 1
}

# Make (or reuse) VENV seeing BASE's packages (its torch) and install this checkout into it
# without downloads when the dependencies are there (ci/install_project.py says what is
# missing otherwise). Usage: ensure_host_venv BASE VENV [--allow-torch-download]
ensure_host_venv() {
  local base="$1" venv="$2"; shift 2
  local root; root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  "$base" "$root/ci/install_project.py" --venv "$venv" "$@"
}
