#!/usr/bin/env bash
# ci/gate_example.sh BASE_SEL HEAD_SEL [SECONDS] [OUT] — how a repository gates a change to
# its backend-selection rules in CI. BASE_SEL / HEAD_SEL: a policy file, or
# "cmd:PROGRAM ARGS" (the project's own selector, e.g. its get_attention_backend wrapped
# to read a case on stdin). Typical CI step (the policy as on the target branch vs the
# pull request's):
#   git show origin/main:policies/attention.policy > /tmp/base.policy
#   ci/gate_example.sh /tmp/base.policy policies/attention.policy 300 out/gate
# Exit 0: nothing newly chosen fails and nothing regresses; 1: the gate failed (the CI
# job fails; upload OUT/report.junit.xml as test results, OUT/report.sarif to code
# scanning, OUT/findings/*/finding.case as artifacts: `attnfuzz repro` replays each).
set -eu
BASE=${1:?base selector}
HEAD=${2:?head selector}
SECS=${3:-300}
OUT=${4:-out/gate}
BIN=${ATTNFUZZ_BIN:-build/attnfuzz}
[ -x "$BIN" ] || { cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build -j"$(nproc)"; }
rm -rf "$OUT"
"$BIN" gate --base "$BASE" --head "$HEAD" --time "$SECS" --out "$OUT"
