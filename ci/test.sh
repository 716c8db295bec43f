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
exec .venv/bin/python -m pytest -q --durations=25 "$@"
