#!/usr/bin/env bash
# test_cli.sh ATTNFUZZ — the CLI's contract: exit codes, messages, canonical printing.
set -u
bin=${1:?usage: test_cli.sh path/to/attnfuzz}
fail=0
check() { # check NAME EXPECTED_RC COMMAND...
  local name=$1 want=$2; shift 2
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" != "$want" ]; then echo "FAIL $name: exit $rc, expected $want"; echo "$out" | tail -5; fail=$((fail+1)); else echo "ok   $name"; fi
}
check "seed corpus passes on cpu" 0 "$bin" run corpora/seed/*.case --backend cpu
check "cpu regression cases pass" 0 "$bin" run corpora/regression/cpu-*.case --backend cpu
check "malformed case exits 2" 2 "$bin" run ci/tests/cases/malformed.case
msg=$("$bin" run ci/tests/cases/malformed.case 2>&1)
echo "$msg" | grep -q 'ci/tests/cases/malformed.case:3: head_dim: ' || { echo "FAIL malformed message lacks file:line: field: $msg"; fail=$((fail+1)); }
check "declined case exits 3" 3 "$bin" run ci/tests/cases/cpu-declines-fp8-bwd.case --backend cpu
msg=$("$bin" run ci/tests/cases/cpu-declines-fp8-bwd.case --backend cpu 2>&1)
echo "$msg" | grep -q 'declined cpu: .*backward' || { echo "FAIL decline reason missing: $msg"; fail=$((fail+1)); }
check "unknown backend exits 2" 2 "$bin" run corpora/seed/fp16-nomask-b1h1s16d64.case --backend nosuch
check "missing file exits 2" 2 "$bin" run no/such.case
check "no arguments exits 2" 2 "$bin"
check "unknown option exits 2" 2 "$bin" run --frobnicate corpora/seed/fp16-nomask-b1h1s16d64.case
check "print" 0 "$bin" print corpora/seed/bf16-padding-causal.case
check "backends" 0 "$bin" backends
# cudnn: on a machine without a GPU it is unavailable and `run` exits 3 with a reason
if ! (command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1); then
  check "cudnn without a GPU exits 3" 3 "$bin" run corpora/seed/fp16-causal-tl.case --backend cudnn
  msg=$("$bin" run corpora/seed/fp16-causal-tl.case --backend cudnn 2>&1)
  echo "$msg" | grep -qi 'declined cudnn: ' || { echo "FAIL cudnn reason missing: $msg"; fail=$((fail+1)); }
else
  echo "skip cudnn-unavailable check: a GPU is present"
fi
# canonical form: print(parse(print(c))) == print(c) for every seed case
tmp=$(mktemp -d)
for f in corpora/seed/*.case; do
  "$bin" print "$f" > "$tmp/a.case" && "$bin" print "$tmp/a.case" > "$tmp/b.case" && cmp -s "$tmp/a.case" "$tmp/b.case" \
    || { echo "FAIL canonical form not stable for $f"; fail=$((fail+1)); }
done
# JSON: one object per line with a verdict
"$bin" run corpora/seed/fp16-causal-tl.case --json > "$tmp/out.json"
python3 -c "import json,sys; [json.loads(l) for l in open(sys.argv[1])]; d=json.loads(open(sys.argv[1]).readline()); assert d['verdict']=='pass', d; assert 'O' in d['tensors']" "$tmp/out.json" \
  || { echo "FAIL json output"; fail=$((fail+1)); }
rm -rf "$tmp"
n=$(ls corpora/seed/*.case | wc -l)
[ "$n" -ge 40 ] || { echo "FAIL seed corpus has $n cases (< 40)"; fail=$((fail+1)); }
if [ $fail -ne 0 ]; then echo "test_cli: $fail failed"; exit 1; fi
echo "test_cli: all passed"
