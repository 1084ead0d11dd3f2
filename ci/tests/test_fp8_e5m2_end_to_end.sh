#!/usr/bin/env bash
# test_fp8_e5m2_end_to_end.sh ATTNFUZZ — the fp8_e5m2 dtype end to end (docs/fp8.md):
#   1. the E5M2 seed passes on the cpu backend and on flash_fp8 (a correct flash-style
#      fp8 kernel), and flash_fp8_bug:e5m2_sat_448 (E5M2 outputs saturated at E4M3's
#      448) is a mismatch on it;
#   2. a short campaign from the fp8_e4m3 seed alone finds flash_fp8_bug:e5m2_sat_448:
#      the fuzzer draws fp8_e5m2 itself, every minimised finding keeps it (the bug needs
#      it) and the first still fails (repro exits 1);
#   3. the minimiser drops it when the finding survives without it: flash_fp8_bug:
#      row_scale (an O row x 1.5, any fp8 kind) on the E5M2 seed minimises to fp8_e4m3;
#   4. who does not serve it declines with a reason: CP (cp = 2 over cpu) and a worker
#      whose hello does not list fp8_e5m2.
set -u
bin=${1:?usage: test_fp8_e5m2_end_to_end.sh path/to/attnfuzz}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TIME=${TIME:-12}
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
seed=corpora/seed/fp8-e5m2-causal-bwd.case
. "$(dirname "$0")/lib_fp8_kind.sh"

# 1. the seed
"$bin" run "$seed" --backend cpu > "$tmp/cpu.out" 2>&1
check "cpu passes the E5M2 seed" "$tmp/cpu.out" "fp8-e5m2-causal-bwd.case \[cpu\]: pass"
"$bin" run "$seed" --backend flash_fp8 > "$tmp/flash.out" 2>&1
check "flash_fp8 passes the E5M2 seed" "$tmp/flash.out" "\[flash_fp8\]: pass"
"$bin" run "$seed" --backend flash_fp8_bug:e5m2_sat_448 > "$tmp/sat.out" 2>&1
rc=$?
check "flash_fp8_bug:e5m2_sat_448 is a mismatch on the E5M2 seed" "$tmp/sat.out" "FINDING mismatch"
[ "$rc" = 1 ] || { echo "FAIL e5m2_sat_448 on the seed: exit $rc, expected 1"; fail=1; }
"$bin" run corpora/seed/fp8-e4m3-causal.case --backend flash_fp8_bug:e5m2_sat_448 > "$tmp/sat-e4m3.out" 2>&1
check "flash_fp8_bug:e5m2_sat_448 passes fp8_e4m3 (its bug is E5M2's)" "$tmp/sat-e4m3.out" ": pass"

# 2. a campaign from the E4M3 seed: the fuzzer must reach E5M2
kind_campaign e5m2_sat_448 "dtype = fp8_e5m2" '^dtype = fp8_e5m2$'

# 3. the minimiser drops fp8_e5m2 when the bug does not need it
kind_dropped "$seed" '^dtype = fp8_e4m3$' fp8_e5m2

# 4. declines
sed 's/^seed = 59$/seed = 59\ncp = 2 p2p/' "$seed" > "$tmp/cp.case"
"$bin" run "$tmp/cp.case" --backend cpu > "$tmp/cp.out" 2>&1
check "CP declines fp8_e5m2" "$tmp/cp.out" "declined.*fp8_e5m2 is not served"
worker_declines "$seed" "declined.*fp8_e5m2" "a worker declines fp8_e5m2 (E5M2 storage not carried)"
[ "$fail" = 0 ] && echo "test_fp8_e5m2_end_to_end: ok"
exit "$fail"
