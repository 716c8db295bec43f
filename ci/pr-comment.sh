#!/usr/bin/env bash
# The privileged half of the PR flow (workflow_run, hosted runner): bind the untrusted
# artifact to the run's PR, recompute the verdicts from its numbers, then post the sticky
# comment and the commit status (see neuronasv/ci/pr_comment.py).
# Usage: bash ci/pr-comment.sh --artifact DIR [--event FILE] [--dry-run] [--out FILE]
# Env: GITHUB_TOKEN (required unless --dry-run), GITHUB_REPOSITORY, GITHUB_API_URL,
#      GITHUB_SERVER_URL, GITHUB_EVENT_PATH (the workflow_run payload).
set -euo pipefail
cd "$(dirname "$0")/.."
source ci/lib.sh
nxpy -m neuronasv.ci pr-comment "$@"
