#!/usr/bin/env bash
# The privileged half of the PR flow (workflow_run, hosted runner): validate the untrusted
# artifact, then post the sticky comment and the commit status from the validated findings.
# Usage: bash ci/pr-comment.sh --artifact DIR --run-head-sha SHA [--target-url URL] [--dry-run]
# Env: GITHUB_TOKEN, GITHUB_REPOSITORY, GITHUB_API_URL.
set -euo pipefail
cd "$(dirname "$0")/.."
source ci/lib.sh
nxpy ci/pr_comment.py "$@"
