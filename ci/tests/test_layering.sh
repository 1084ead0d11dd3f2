#!/usr/bin/env bash
# test_layering.sh — the stage order of the tree (ci/check_layering.py) holds, and the
# check catches what it must: a planted upward include, a backend including the oracle,
# the oracle including the case struct, an include that does not name its stage, a function
# whose name prefix belongs to another folder.
set -euo pipefail
cd "$(dirname "$0")/../.."
fail() { echo "test_layering: FAIL: $*" >&2; exit 1; }
python3 ci/check_layering.py >/dev/null || { python3 ci/check_layering.py; fail "the tree breaks the stage order"; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
copy() { rm -rf "$tmp/t"; mkdir -p "$tmp/t"; cp -r harness oracle triage kernels "$tmp/t/"; }
# expect_violation FILE LINE-TEXT NEEDLE: plant LINE-TEXT at the top of FILE, expect the
# check to fail naming FILE:1 and NEEDLE.
expect_violation() {
  copy
  sed -i "1i $2" "$tmp/t/$1"
  if out=$(python3 ci/check_layering.py "$tmp/t" 2>&1); then fail "no violation reported for $2 in $1"; fi
  grep -q "^$1:1: .*$3" <<< "$out" || fail "wrong report for $2 in $1: $out"
}
expect_violation harness/model/case.c '#include "campaign/campaign.h"' 'a stage above it'
expect_violation harness/judge/compare.c '#include "cli/cli.h"' 'a stage above it'
expect_violation harness/fuzz/fuzz_mutate.c '#include "triage/findings.h"' 'a stage above it'
expect_violation harness/backends/cpu.c '#include "oracle/mask_spec.h"' 'never include the oracle'
expect_violation kernels/af_gpu.h '#include "oracle/oracle.h"' 'never include the oracle'
expect_violation harness/backends/cpu.c '#include "model/mask_rule.h"' 'keep their own mask code'
expect_violation kernels/ref_gpu.cu '#include "model/case_mask.h"' 'keep their own mask code'
expect_violation oracle/src/oracle.c '#include "model/case.h"' 'reads only'
expect_violation harness/judge/runner.c '#include "runner.h"' 'does not name its stage'
expect_violation harness/plugins/example/example_plugin.c '#include "model/case.h"' 'plugins see only'
# a name says its stage: a campaign function defined in the judge, a CP function in the campaign
expect_violation harness/judge/compare.c 'int af_camp_planted(void) { return 0; }' 'af_camp_ belongs in harness/campaign/'
expect_violation harness/campaign/queue.c 'void af_cp_planted(int x) {' 'af_cp_ belongs in harness/backends/cp/'
# circles of calls: one across folders, one new inside a folder, a kept one gone
# expect_circle FILE_A FILE_B REGEX WHAT: A calls into B and B into A; the check must fail
# with a line matching REGEX (grep -E)
expect_circle() {
  copy
  echo 'void af_planted_a(void) { af_planted_b(); }' >> "$tmp/t/$1"
  echo 'void af_planted_b(void) { af_planted_a(); }' >> "$tmp/t/$2"
  out=$(python3 ci/check_layering.py "$tmp/t" 2>&1) && fail "$4 was not reported"
  grep -qE "$3" <<< "$out" || fail "wrong report for $4: $out"
}
expect_circle harness/backends/cpu.c harness/backends/cp/cp_plan.c \
  "circle of calls across folders \(harness/backends/cp/cp_plan.c, harness/backends/cpu.c\)" "a circle across folders"
expect_circle harness/fuzz/fuzz_mutate.c harness/fuzz/fuzz_repair.c \
  "a new circle of calls \(.*harness/fuzz/fuzz_mutate.c, harness/fuzz/fuzz_repair.c\)" "a new circle inside a folder"
copy
sed -i 's/af_worker_config_free(/af_planted_free(/g' "$tmp/t/harness/backends/worker/worker_backend.c"
out=$(python3 ci/check_layering.py "$tmp/t" 2>&1) && fail "a kept circle that is gone was not reported"
grep -q "KEPT_CIRCLES lists a circle that is gone" <<< "$out" || fail "wrong report for a gone circle: $out"

# a test may meet its ground truth, but not reach above its stage
copy
sed -i '1i #include "oracle/mask_spec.h"' "$tmp/t/harness/backends/tests/test_cpu_backend.c"
python3 ci/check_layering.py "$tmp/t" >/dev/null || fail "a backend test including the oracle was refused"
expect_violation harness/backends/tests/test_cpu_backend.c '#include "judge/runner.h"' 'a stage above it'
echo "test_layering: all passed"
