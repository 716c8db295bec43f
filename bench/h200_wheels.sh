#!/usr/bin/env bash
# The wheels bench/h200_session.sh carries to a lent device (no network there): what the
# device's image lacks of neuronasv's run-time needs (asv and its own needs), at the versions
# this checkout's .venv holds, for CPython 3.12 on x86-64 Linux. Run here, then carry `.whl`.
#
#   bash bench/h200_wheels.sh            # -> .whl/*.whl (ignored: add /.whl/ to .git/info/exclude)
#
# The image's package list (what it already has: numpy, scipy, requests, rich, pyyaml,
# tabulate, packaging, filelock, zipp, build, pyarrow, torch) is in the device tool's
# KINDS.md. 2026-12-04: importlib-metadata 10 needs lazy-importer; without it the suite step
# died on `import asv` after the profile runs had passed (they do not import asv).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
NEEDED="asv asv_runner msgspec json5 virtualenv pympler importlib-metadata lazy-importer distlib platformdirs python-discovery"
mkdir -p .whl
for name in $NEEDED; do
  version=$("$PY" -c "import importlib.metadata as m, sys; print(m.version(sys.argv[1]))" "$name" 2>/dev/null || true)
  [ -n "$version" ] || { echo "skip $name: not in $PY's environment (not needed by this checkout)"; continue; }
  "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d .whl "$name==$version"
done
ls .whl
