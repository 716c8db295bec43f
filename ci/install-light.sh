#!/usr/bin/env bash
# Install neuronasv *without torch* into .venv-light for the GitHub-hosted jobs (store,
# change points, site, issues, PR comment): they only read results and talk to GitHub, and
# the default torch wheel would pull gigabytes. Dependencies come from pyproject.toml
# (minus torch), so this list never drifts. Usage: bash ci/install-light.sh
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${NEURONASV_LIGHT_VENV:-.venv-light}
PY=${PYTHON:-python3}
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
mapfile -t deps < <("$VENV/bin/python" - <<'PYEOF'
import re, tomllib
with open("pyproject.toml", "rb") as fh:
    deps = tomllib.load(fh)["project"]["dependencies"]
for d in deps:
    name = re.split(r"[<>=!~;\[ ]", d, maxsplit=1)[0].strip().lower()
    if name not in ("torch", "torch-neuronx", "torch_neuronx"):
        print(d)
PYEOF
)
"$VENV/bin/python" -m pip install -q --disable-pip-version-check "${deps[@]}"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps .
"$VENV/bin/neuronasv" --version
