#!/usr/bin/env bash
# Local rehearsal of the whole CI flow, with no GitHub: a bare git remote stands in for the
# repository, tests/ci/fakegithub_ext.py (loopback, 127.0.0.1) for the API, and folders for
# artifacts. The ci/*.sh scripts run exactly as the workflows call them, from checkouts of
# the commits (so this rehearses the *committed* scripts of HEAD).
#
#   1. push #1 and push #2 to main → per-commit flow each: plan → bench → store → analyse
#      (change points + site) → issue sync                         (benchmarks.yml)
#   2. a PR branch with a real injected op regression (extra aten::mul in rmsnorm.naive)
#      → merge-base vs head, ABAB confirmation, artifact            (pr-benchmarks.yml)
#   3. the comment job binds the artifact to the run's PR, recomputes the verdicts from its
#      numbers and posts the sticky comment + status to the loopback GitHub; the comment
#      must name the op                                             (pr-comment.yml)
#   4. a tampered artifact (head SHA of another commit) is refused, nothing posted.
#   5. a push of 4 commits measured only at its ends (the newest; the commit before the push
#      measured earlier), one of them an extra aten::mul in rmsnorm.naive; the next push's
#      flow finds the change point over the unmeasured commits, bisects it (the workflow's
#      bisect step, instruction counts), stores what it measured, and the regression issue
#      on the loopback GitHub names the culprit commit, its PR and the op (benchmarks.yml)
#
# Usage: bash ci/rehearse.sh [--keep] [--work DIR]
# Tiny suite by default (CPU, one shape, one dtype, naive RMSNorm only, few samples);
# override with NEURONASV_SHAPES / NEURONASV_DTYPES / NEURONASV_SAMPLES / REHEARSE_BENCH.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
source "$ROOT/ci/lib.sh"
keep=0 work=""
while [ $# -gt 0 ]; do
  case "$1" in
    --keep) keep=1; shift ;;
    --work) work="$2"; shift 2 ;;
    *) die "unknown argument $1" ;;
  esac
done
[ -x "$ROOT/.venv/bin/neuronasv" ] || bash "$ROOT/ci/setup.sh" >&2
export NEURONASV_BIN="$ROOT/.venv/bin/neuronasv"
PY="$ROOT/.venv/bin/python"
export NEURONASV_BACKEND=cpu NEURONASV_MACHINE=rehearsal
export NEURONASV_SHAPES=${NEURONASV_SHAPES:-2x128x512} NEURONASV_DTYPES=${NEURONASV_DTYPES:-float32}
export NEURONASV_SAMPLES=${NEURONASV_SAMPLES:-10}
export NEURONASV_BACKFILL=${REHEARSE_BACKFILL:-0} NEURONASV_CONFIRM_ROUNDS=${REHEARSE_CONFIRM_ROUNDS:-2} NEURONASV_CONFIRM_MAX_ROUNDS=${REHEARSE_CONFIRM_MAX_ROUNDS:-2} NEURONASV_CONFIRM_SAMPLES=${NEURONASV_CONFIRM_SAMPLES:-6}
bench=${REHEARSE_BENCH:-rmsnorm.Naive}
# Instruction counts on every push: exact change points from four measured commits on.
metrics=${REHEARSE_METRICS:-devtime,instructions}
export NEURONASV_SHARDS="[{\"name\":\"all\",\"bench\":\"$bench\"}]"
export GIT_AUTHOR_NAME=rehearsal GIT_AUTHOR_EMAIL=rehearsal@example.invalid
export GIT_COMMITTER_NAME=rehearsal GIT_COMMITTER_EMAIL=rehearsal@example.invalid
unset GITHUB_OUTPUT GITHUB_STEP_SUMMARY
started=$SECONDS

W=${work:-$(mktemp -d "${TMPDIR:-/tmp}/neuronasv-rehearsal.XXXXXX")}
mkdir -p "$W"
# A HOME of its own: neuronasv writes nothing there (asv's machine file lives in the run's
# scratch folder), but git and the tools the rehearsal starts must not read the real one.
mkdir -p "$W/home"
export HOME="$W/home"
fake_pid=""
fake_state() { curl -fsS "$GITHUB_API_URL/_fake/state"; }
stop_fake() {
  if [ -n "$fake_pid" ]; then kill "$fake_pid" 2>/dev/null || true; wait "$fake_pid" 2>/dev/null || true; fi
  fake_pid=""
}
cleanup() {
  stop_fake
  if [ "$keep" = 0 ] && [ -z "$work" ]; then rm -rf "$W"; else log "kept $W"; fi
}
trap cleanup EXIT
step() { printf '\n######## %s (%ds)\n' "$*" "$((SECONDS - started))" >&2; }
fail() { printf 'REHEARSAL FAILED: %s\n' "$*" >&2; exit 1; }

REMOTE="$W/remote.git"
git init -q --bare -b main "$REMOTE"
git clone -q "$ROOT" "$W/dev"
git -C "$W/dev" remote set-url origin "$REMOTE"
git -C "$W/dev" checkout -q -B main

# The loopback GitHub: one token (an Actions-like bot) and the PR registered later.
TOKEN="rehearsal-token-$$-$RANDOM"
REPO=octo/neuronasv
start_fake() {  # start_fake [PR:HEAD] [more options]: (re)start the loopback GitHub
  stop_fake
  rm -f "$W/fake.url"
  local pull=()
  [ -n "${1:-}" ] && pull=(--pull "$1")
  [ $# -gt 1 ] && pull+=("${@:2}")
  (cd "$ROOT" && exec "$PY" -m tests.ci.fakegithub_ext --repo "$REPO" \
     --token "$TOKEN:github-actions[bot]" "${pull[@]}" --url-file "$W/fake.url" \
     --state-out "$W/fake-state.json") > "$W/fake.log" 2>&1 &
  fake_pid=$!
  for _ in $(seq 100); do [ -s "$W/fake.url" ] && break; sleep 0.1; done
  [ -s "$W/fake.url" ] || fail "the loopback GitHub did not start: $(cat "$W/fake.log")"
  export GITHUB_API_URL; GITHUB_API_URL=$(cat "$W/fake.url")
  export GITHUB_REPOSITORY=$REPO GITHUB_TOKEN=$TOKEN
}

checkout() {  # checkout DIR SHA: a fresh clone at SHA, like actions/checkout
  rm -rf "$1"; git clone -q "$REMOTE" "$1"; git -C "$1" checkout -q "$2"
}

per_commit() {  # the benchmarks.yml jobs for a push of SHA, in order
  local sha=$1 n=$2 runner="$W/runner-$1"
  checkout "$runner" "$sha"
  local commits shards
  (cd "$runner" && bash ci/plan.sh --remote "$REMOTE" "$sha") > "$W/plan-$n.txt"
  commits=$(sed -n 's/^commits=//p' "$W/plan-$n.txt")
  shards=$(sed -n 's/^shards=//p' "$W/plan-$n.txt")
  log "plan: commits=[$commits] shards=$shards"
  # shellcheck disable=SC2086
  (cd "$runner" && bash ci/bench-run.sh --shard all --bench "$bench" --metrics "$metrics" \
     --results-dir "$W/results-$n" $commits)
  # The bisect job: change points over the stored history plus this run's results; ranges
  # with unmeasured commits bisected; what it measured stored with the bench results.
  (cd "$runner" && bash ci/bisect.sh --remote "$REMOTE" --add "$W/results-$n" \
     --out "$W/bisect-$n" --minutes 20) 2>&1 | tee "$W/bisect-$n.log" >&2
  (cd "$runner" && bash ci/store-results.sh --remote "$REMOTE" "$W/results-$n")
  if compgen -G "$W/bisect-$n/*/*" >/dev/null; then
    (cd "$runner" && bash ci/store-results.sh --remote "$REMOTE" "$W/bisect-$n")
  fi
  (cd "$runner" && bash ci/analyse.sh --remote "$REMOTE" --out "$W/analysis-$n" --site "$W/site-$n")
  (cd "$runner" && bash ci/issues-sync.sh "$W/analysis-$n")
  rm -rf "$runner"
}

start_fake  # the issues job talks to it from the first push on

step "push #1 to main"
git -C "$W/dev" push -q origin main
A=$(git -C "$W/dev" rev-parse HEAD)
per_commit "$A" 1

step "push #2 to main"
printf 'Rehearsal commit.\n' > "$W/dev/rehearsal-note.txt"
git -C "$W/dev" add rehearsal-note.txt
git -C "$W/dev" commit -q -m "rehearsal: second commit on main"
git -C "$W/dev" push -q origin main
B=$(git -C "$W/dev" rev-parse HEAD)
per_commit "$B" 2

files=$(git -C "$REMOTE" ls-tree -r --name-only benchmark-results)
for c in "$A" "$B"; do
  grep -q "^rehearsal/${c:0:8}-.*\.json$" <<<"$files" || fail "no stored result for ${c:0:8}"
  grep -q "^rehearsal/${c:0:8}-.*\.neuronasv$" <<<"$files" || fail "no stored sidecar for ${c:0:8}"
done
[ -f "$W/site-2/index.html" ] || fail "no site index.html"
[ -f "$W/analysis-2/regressions-rehearsal.json" ] || fail "no change-point document"
log "results branch holds both commits; site and change points written"

step "pull request with an injected aten::mul regression"
git -C "$W/dev" checkout -q -b pr-7
"$PY" - "$W/dev/neuronasv/measure/workloads/rmsnorm.py" <<'PYEOF'
import sys
path = sys.argv[1]
src = open(path, encoding="utf-8").read()
old = "    sq = x * x  # aten::mul (1)\n"
assert old in src, "rmsnorm_naive changed: update the rehearsal's injected regression"
new = old + "    for _ in range(24):  # injected regression: 24 extra aten::mul per call\n" \
            "        sq = x * x\n"
open(path, "w", encoding="utf-8").write(src.replace(old, new, 1))
PYEOF
git -C "$W/dev" commit -q -am "rehearsal: slow down rmsnorm.naive (extra aten::mul)"
git -C "$W/dev" push -q origin pr-7
C=$(git -C "$W/dev" rev-parse HEAD)
checkout "$W/pr-runner" "$C"
# The PR job has no token and no API: run it without them, as in pr-benchmarks.yml.
# devtime only, as ci/bench-run.sh: the rehearsal's budget (the CPU default adds instructions).
(cd "$W/pr-runner" && env -u GITHUB_TOKEN -u GITHUB_API_URL bash ci/pr-bench.sh --pr 7 --base "$B" --head "$C" --bench "$bench" \
   --metrics devtime --out "$W/artifact")
for f in findings.json comment.md pr-number head-sha base-sha rounds.json; do
  [ -s "$W/artifact/$f" ] || fail "artifact lacks $f"
done
# Base and head traces of the flagged workload (gzipped chrome traces), nothing else.
for side in "base-${B:0:8}" "head-${C:0:8}"; do
  compgen -G "$W/artifact/traces/$side/rmsnorm.naive-*.json.gz" >/dev/null \
    || fail "artifact lacks the $side trace of rmsnorm.naive: $(ls -R "$W/artifact/traces" 2>&1)"
done
[ ! -e "$W/artifact/traces-all" ] || fail "the unflagged workloads' traces were left in the artifact"
rm -rf "$W/pr-runner"

step "comment job (workflow_run): recompute from the artifact's numbers, post comment + status"
start_fake "7:$C"
cp -r "$W/artifact" "$W/downloaded"   # download-artifact, into a folder outside the checkout
checkout "$W/trusted" "$B"            # the default branch, never the PR
# The workflow_run payload GitHub hands the job ($GITHUB_EVENT_PATH): the trusted record of
# which run, commit, repository and branch the artifact came from.
cat > "$W/event.json" <<EOF
{"workflow_run": {"id": 1, "event": "pull_request", "head_sha": "$C", "head_branch": "pr-7",
 "head_repository": {"full_name": "$REPO"}, "pull_requests": [{"number": 7}]}}
EOF
export GITHUB_EVENT_PATH="$W/event.json" GITHUB_SERVER_URL=https://github.example
(cd "$W/trusted" && bash ci/pr-comment.sh --artifact "$W/downloaded")
fake_state > "$W/state.json"
"$PY" - "$C" "$W/state.json" "$W/artifact/findings.json" <<'PYEOF' || fail "comment/status check failed"
import json, sys
from neuronasv.model import FindingsDocument
from neuronasv.github.statuses import description
from neuronasv.report.digest import digest
head, path, own = sys.argv[1], sys.argv[2], sys.argv[3]
state = json.load(open(path, encoding="utf-8"))
ours = [c for c in state["comments"].get("7", []) if c["user"]["login"] == "github-actions[bot]"]
assert len(ours) == 1, f"expected one comment of ours, got {len(ours)}"
body = ours[0]["body"]
# For an honest artifact, the trusted recomputation says what the PR run said itself.
sts = state["statuses"].get(head, [])
pr_side = description(digest(FindingsDocument.loads(open(own, encoding="utf-8").read())).headline)
assert sts and sts[-1]["description"] == pr_side, (sts, pr_side)
print("recomputed headline equals the PR run's own:", pr_side)
# The injected change is certain work evidence (3 -> 27 calls of aten::mul), whatever the
# timing noise on this machine: the comment's first cause names it, exactly.
causes = body.split("\n### 1. ", 1)
assert len(causes) == 2, "the comment has no cause"
first = causes[1].split("\n### ", 1)[0].split("<details>", 1)[0]
assert "more work in" in first and "aten::mul" in first and "3 → 27 calls" in first, first
# The status follows the gate the rows' states fire: failure exactly when the headline
# names a rule that fired (more work whose time was not decided, or a confirmed slower time).
fired = "fails (gate" in body.splitlines()[1].replace("\\", "")
assert sts and sts[-1]["state"] == ("failure" if fired else "success"), (sts, body[:300])
# The flagged workload's base and head traces, named as the PR job laid them out.
traces = body.split("\n### Traces\n", 1)
assert len(traces) == 2, "the comment has no traces section"
assert "rmsnorm.naive-" in traces[1] and ".json.gz" in traces[1], traces[1][:400]
assert "look for `aten::mul`" in traces[1], traces[1][:400]
line = next(ln for ln in first.splitlines() if "3 → 27 calls" in ln)
print("comment names aten::mul:", line.strip()[:200])
print("status:", sts[-1]["state"], "-", sts[-1].get("description"))
PYEOF

step "tampered artifact is refused"
cp -r "$W/artifact" "$W/tampered"
printf '%s\n' "$B" > "$W/tampered/head-sha"
set +e
(cd "$W/trusted" && bash ci/pr-comment.sh --artifact "$W/tampered")
rc=$?
set -e
[ "$rc" = 9 ] || fail "tampered artifact: expected exit 9, got $rc"
n=$(fake_state | "$PY" -c 'import json,sys; s=json.load(sys.stdin); print(len([r for r in s["requests"] if r["method"] in ("POST","PATCH","DELETE")]))')
log "writes to GitHub so far: $n (comment + status; the tampered run added none)"

step "push #3: 4 commits at once, one of them an extra aten::mul in rmsnorm.naive"
git -C "$W/dev" checkout -q main
culprit=3
for i in 1 2 3 4; do
  if [ "$i" = "$culprit" ]; then
    "$PY" - "$W/dev/neuronasv/measure/workloads/rmsnorm.py" <<'PYEOF'
import sys
path = sys.argv[1]
src = open(path, encoding="utf-8").read()
old = "    sq = x * x  # aten::mul (1)\n"
assert old in src, "rmsnorm_naive changed: update the rehearsal's bisected change"
new = old + "    sq = sq * 1.0  # the bisected change: one more aten::mul\n"
open(path, "w", encoding="utf-8").write(src.replace(old, new, 1))
PYEOF
    git -C "$W/dev" commit -q -am "rmsnorm: keep sq in place (#41)"
  else
    printf 'note %s\n' "$i" >> "$W/dev/rehearsal-note.txt"
    git -C "$W/dev" commit -q -am "rehearsal: note $i of the batch"
  fi
done
C5=$(git -C "$W/dev" rev-parse "HEAD~$((4 - culprit))")
git -C "$W/dev" push -q origin main
E=$(git -C "$W/dev" rev-parse HEAD)
# The loopback GitHub knows the culprit's PR (the issues job and the bisect step ask it).
start_fake "" --commit-pull "$C5:41:Keep sq in place"
per_commit "$E" 3   # measures the newest commit only (backfill 0): 3 commits unmeasured

step "push #4: the flow finds the change point over the unmeasured commits and bisects it"
printf 'after the batch\n' >> "$W/dev/rehearsal-note.txt"
git -C "$W/dev" commit -q -am "rehearsal: a commit after the batch"
git -C "$W/dev" push -q origin main
F=$(git -C "$W/dev" rev-parse HEAD)
per_commit "$F" 4
grep -q "bisecting .*aten::mul (instructions)" "$W/bisect-4.log" \
  || fail "the bisect step did not bisect the aten::mul range: $(tail -20 "$W/bisect-4.log")"
fake_state > "$W/state-issues.json"
"$PY" - "$C5" "$W/state-issues.json" "$W/analysis-4/regressions-rehearsal.json" <<'PYEOF' || fail "the regression issue does not name the culprit"
import json, sys
from neuronasv.model import FindingsDocument
culprit, path, regr = sys.argv[1], sys.argv[2], sys.argv[3]
doc = FindingsDocument.loads(open(regr, encoding="utf-8").read())
named = [cp for cp in doc.change_points if cp.culprit and cp.culprit.commit == culprit]
assert named, [(cp.series.label, cp.commit_before[:8], cp.commit_after[:8]) for cp in doc.change_points]
state = json.load(open(path, encoding="utf-8"))
issues = [i for i in state["issues"] if i["state"] == "open" and culprit[:12] in i["body"]
          and "aten::mul" in i["title"]]
assert issues, [i["title"] for i in state["issues"]]
body = issues[0]["body"]
# the bisected series: its record carries the PR from the (loopback) GitHub API
assert "PR #41: Keep sq in place" in body, body[:1200]
line = next(ln for ln in body.splitlines() if "Culprit:" in ln)
print("issue names the culprit:", issues[0]["title"], "|", line[:220])
PYEOF

step "rehearsal passed"
echo "REHEARSAL OK in $((SECONDS - started)) s: 4 pushes stored + analysed + published; PR #7 comment names aten::mul; a skipped range bisected, the issue names its culprit"
