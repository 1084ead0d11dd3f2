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
check "declined case exits 3" 3 "$bin" run ci/tests/cases/planted-declines-mxfp8.case --backend planted:none
msg=$("$bin" run ci/tests/cases/planted-declines-mxfp8.case --backend planted:none 2>&1)
echo "$msg" | grep -q 'declined planted:none: .*fp16 and bf16 only' || { echo "FAIL decline reason missing: $msg"; fail=$((fail+1)); }
check "unknown backend exits 2" 2 "$bin" run corpora/seed/fp16-nomask-b1h1s16d64.case --backend nosuch
check "missing file exits 4 (bad file)" 4 "$bin" run no/such.case
check "no arguments exits 2" 2 "$bin"
check "unknown option exits 2" 2 "$bin" run --frobnicate corpora/seed/fp16-nomask-b1h1s16d64.case
check "print" 0 "$bin" print corpora/seed/bf16-padding-causal.case
check "backends" 0 "$bin" backends
# strict numbers: a bad or out-of-range value is an error naming the option and the value, exit 2
badnum() { # badnum NAME 'EXPECTED MESSAGE' COMMAND...
  local name=$1 want=$2; shift 2
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" != 2 ]; then echo "FAIL $name: exit $rc, expected 2"; fail=$((fail+1));
  elif ! echo "$out" | grep -qF -- "$want"; then echo "FAIL $name: message lacks '$want': $out"; fail=$((fail+1));
  else echo "ok   $name"; fi
}
seed=corpora/seed/fp16-nomask-b1h1s16d64.case
badnum "campaign --time 3x" "attnfuzz campaign: --time: '3x' is not a finite number" "$bin" campaign --time 3x --out /nonexistent/x
badnum "campaign --time nan" "attnfuzz campaign: --time: 'nan' is not a finite number" "$bin" campaign --time nan --out /nonexistent/x
badnum "campaign --time 0" "attnfuzz campaign: --time: 0 is out of range" "$bin" campaign --time 0 --out /nonexistent/x
badnum "campaign --jobs 2x" "attnfuzz campaign: --jobs: '2x' is not an integer" "$bin" campaign --jobs 2x --out /nonexistent/x
badnum "campaign --jobs -1" "attnfuzz campaign: --jobs: -1 is out of range (1 to 1024)" "$bin" campaign --jobs -1 --out /nonexistent/x
badnum "campaign --jobs huge" "attnfuzz campaign: --jobs: 99999999999999999999 is out of range" "$bin" campaign --jobs 99999999999999999999
badnum "campaign --seed -3" "attnfuzz campaign: --seed: '-3' is not an unsigned integer" "$bin" campaign --seed -3
badnum "campaign --max-work 10" "attnfuzz campaign: --max-work: 10 is out of range" "$bin" campaign --max-work 10
badnum "campaign --deadline ' 5'" "attnfuzz campaign: --deadline: ' 5' is not an integer" "$bin" campaign --deadline ' 5'
badnum "campaign --total-time inf" "attnfuzz campaign: --total-time: 'inf' is not a finite number" "$bin" campaign --total-time inf
badnum "campaign value missing" "attnfuzz campaign: --time needs a value" "$bin" campaign --time
badnum "campaign unknown option" "attnfuzz campaign: unknown option '--frobnicate'" "$bin" campaign --frobnicate
badnum "run --threads x" "attnfuzz run: --threads: 'x' is not an integer" "$bin" run "$seed" --threads x
badnum "repro --deadline 0" "attnfuzz repro: --deadline: 0 is out of range" "$bin" repro "$seed" --deadline 0
badnum "minimize --max-runs 1e3" "attnfuzz minimize: --max-runs: '1e3' is not an integer" "$bin" minimize "$seed" -o /tmp/x.case --max-runs 1e3
badnum "minimize -x" "attnfuzz minimize: unknown option '-x'" "$bin" minimize "$seed" -x
badnum "triage unknown option" "attnfuzz triage: unknown option '--nope'" "$bin" triage --nope
badnum "print unknown option" "attnfuzz print: unknown option '--nope'" "$bin" print --nope "$seed"
badnum "engines unknown option" "attnfuzz engines: unknown option '--nope'" "$bin" engines --nope "$seed"
# options may follow or precede operands, and --opt=value works (getopt_long)
check "run --backend=cpu after the case" 0 "$bin" run "$seed" --backend=cpu --threads 2
# environment: an unknown ATTNFUZZ_ variable is warned about once with the closest known name; known ones are not
msg=$(ATTNFUZZ_MAXWORK=4096 "$bin" print "$seed" 2>&1 >/dev/null)
[ "$(echo "$msg" | grep -c 'unknown environment variable ATTNFUZZ_MAXWORK (ignored); did you mean ATTNFUZZ_MAX_WORK?')" = 1 ] \
  && echo "ok   unknown ATTNFUZZ_ variable warned" || { echo "FAIL no warning for ATTNFUZZ_MAXWORK: $msg"; fail=$((fail+1)); }
msg=$(ATTNFUZZ_MAX_WORK=4096 ATTNFUZZ_CPU_THREADS=1 "$bin" print "$seed" 2>&1 >/dev/null)
[ -z "$msg" ] && echo "ok   known ATTNFUZZ_ variables not warned" || { echo "FAIL warning for a known variable: $msg"; fail=$((fail+1)); }
# the environment-variable table of docs/environment.md: ci/tests/test_readme.sh
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
# ---- help, version, limits in messages (issue 11, Interface) ----
tmp=$(mktemp -d)
verbs=$("$bin" --help | sed -n 's/^  attnfuzz \([a-z]*\).*/\1/p')
[ "$(echo "$verbs" | wc -w)" -ge 8 ] && echo "ok   --help lists $(echo $verbs | wc -w) verbs" || { echo "FAIL --help lists: $verbs"; fail=$((fail+1)); }
for v in run print backends engines triage minimize campaign repro; do
  echo "$verbs" | grep -qx "$v" || { echo "FAIL --help omits the verb $v"; fail=$((fail+1)); }
done
for v in $verbs; do
  for h in --help -h; do
    out=$("$bin" "$v" "$h" 2>&1); rc=$?
    if [ $rc -ne 0 ] || ! echo "$out" | grep -q "^usage: attnfuzz $v"; then
      echo "FAIL attnfuzz $v $h: exit $rc: $(echo "$out" | head -2)"; fail=$((fail+1))
    fi
  done
done
echo "ok   VERB --help and VERB -h for every verb"
# print --help is help, not a file named --help; a file named --help after -- is a file
case "$bin" in /*) abs_bin=$bin ;; *) abs_bin=$PWD/$bin ;; esac
cp "$seed" "$tmp/--help"
(cd "$tmp" && "$abs_bin" print -- --help > printed.case 2>&1) && grep -q '^dtype = ' "$tmp/printed.case" \
  && echo "ok   print -- --help prints the file named --help" || { echo "FAIL print -- --help"; fail=$((fail+1)); }
for want in "--total-time SEC" "--deadline SEC" "--seed N" "--max-work W" "--fail-on-findings"; do
  "$bin" --help | grep -qF -- "$want" || { echo "FAIL --help lacks '$want'"; fail=$((fail+1)); }
done
ver=$("$bin" --version 2>&1); rc=$?
commit=$(echo "$ver" | sed -n 's/^commit: *//p'); commit=${commit%+dirty}
if [ $rc -ne 0 ] || ! echo "$ver" | grep -q '^attnfuzz [0-9]' || ! echo "$ver" | grep -qE '^cudnn: +([0-9]+\.[0-9]+\.[0-9]+ |not found \(.+\))' \
  || ! echo "$ver" | grep -qE '^cuda runtime: +([0-9]+\.[0-9]+ |not found \(.+\))'; then
  echo "FAIL --version: exit $rc: $ver"; fail=$((fail+1))
elif [ "$commit" != unknown ] && git rev-parse --git-dir > /dev/null 2>&1 && ! git cat-file -e "$commit^{commit}" 2> /dev/null; then
  echo "FAIL --version names commit '$commit', which this repository does not have"; fail=$((fail+1))
else
  echo "ok   --version: $(echo "$ver" | head -2 | tr '\n' ' ')"
fi
printf 'window = 200000,0\n' > "$tmp/w.case"
badnum "window beyond the limit" "window: '200000,0' is not 'left,right' with each -1 (unbounded) or in [0, 131072]" "$bin" print "$tmp/w.case"
printf 'scale = 1e-13\n' > "$tmp/s.case"
badnum "scale beyond the limit" "scale: '1e-13' is not a finite non-zero number with 1e-12 <= |scale| <= 1e6" "$bin" print "$tmp/s.case"
printf 'data = normal:1 zeros:2\n' > "$tmp/d.case"
badnum "data term beyond its range" "term 'zeros' has parameters out of range (2, 0): it needs 0 < p0 < 1" "$bin" print "$tmp/d.case"
# scale at its lower limit: the printed (fp32) value parses back (ci/fuzz_long.sh found it did not)
printf 'scale = 1e-12\n' > "$tmp/s.case"
"$bin" print "$tmp/s.case" > "$tmp/s1.case" && "$bin" print "$tmp/s1.case" > "$tmp/s2.case" && cmp -s "$tmp/s1.case" "$tmp/s2.case" \
  && echo "ok   scale = 1e-12 prints a fixed point" || { echo "FAIL scale = 1e-12 does not print a fixed point"; fail=$((fail+1)); }
# the sample case of docs/cases.md: ci/tests/test_readme.sh
# the libFuzzer dictionaries: every field `print` writes is in case.dict; both parse as dictionaries
for k in $("$bin" print "$seed" | sed -n 's/^\(# \)\{0,1\}\([a-z_]*\) = .*/\2/p'); do
  grep -q "^field_$k=\"$k\"" corpora/case.dict || { echo "FAIL corpora/case.dict lacks the field $k"; fail=$((fail+1)); }
done
dict_fail=$fail
for d in corpora/case.dict corpora/fuzz_bytes.dict; do
  python3 - "$d" << 'PY' || { echo "FAIL $d is not a libFuzzer dictionary"; fail=$((fail+1)); }
import re, sys
n = 0
for i, line in enumerate(open(sys.argv[1], encoding="utf-8"), 1):
    line = line.strip()
    if not line or line.startswith("#"):
        continue
    m = re.fullmatch(r'[A-Za-z0-9_]*="((?:[^"\\]|\\\\|\\"|\\x[0-9A-Fa-f]{2})+)"', line)
    assert m, f"{sys.argv[1]}:{i}: not name=\"value\": {line}"
    n += 1
assert n >= 20, f"{sys.argv[1]}: only {n} entries"
PY
done
[ $fail = "$dict_fail" ] && echo "ok   corpora/*.dict well formed"
# every campaign writes AFL-style fuzzer_stats beside stats.json (execs_done = stats.json's cases)
fstats_ok() { # fstats_ok DIR
  local d=$1 k
  for k in start_time last_update execs_done execs_per_sec paths_total unique_crashes unique_hangs; do
    grep -qE "^$k +: [0-9.]+$" "$d/fuzzer_stats" || { echo "FAIL $d/fuzzer_stats lacks '$k : N'"; return 1; }
  done
  python3 -c "import json,sys; d=json.load(open(sys.argv[1]+'/stats.json')); s=dict((a.strip(),b) for a,b in (l.split(' : ',1) for l in open(sys.argv[1]+'/fuzzer_stats').read().splitlines())); assert int(s['execs_done'].strip())==d['cases'], (s, d['cases'])" "$d" \
    || { echo "FAIL $d/fuzzer_stats disagrees with stats.json"; return 1; }
}
"$bin" campaign --time 2 --inprocess --backend cpu --out "$tmp/ip" > /dev/null 2>&1
fstats_ok "$tmp/ip" && echo "ok   in-process campaign writes fuzzer_stats" || fail=$((fail+1))
# libFuzzer mode (attnfuzz_fuzz beside attnfuzz: the clang fuzzer build): --total-time bounds the run,
# -dict is passed, the corpus is merged (-merge=1), fuzzer_stats is written
lf="$(dirname "$bin")/attnfuzz_fuzz"
if [ -x "$lf" ]; then
  t0=$(date +%s)
  "$bin" campaign --time 60 --total-time 12 --backend cpu --out "$tmp/lf" > "$tmp/lf.log" 2>&1
  took=$(( $(date +%s) - t0 ))
  if [ "$took" -gt 13 ]; then echo "FAIL libFuzzer campaign with --total-time 12 ran ${took}s"; fail=$((fail+1));
  else echo "ok   libFuzzer campaign with --total-time 12 ended in ${took}s"; fi
  grep -q '^Dictionary: [0-9]* entries' "$tmp/lf/fuzzer.log" && echo "ok   libFuzzer mode passes -dict" \
    || { echo "FAIL libFuzzer mode: no dictionary in fuzzer.log"; fail=$((fail+1)); }
  fstats_ok "$tmp/lf" && echo "ok   libFuzzer campaign writes fuzzer_stats" || fail=$((fail+1))
  # without --total-time the corpus is merged after fuzzing (-merge=1; a two-case corpus keeps it short)
  mkdir -p "$tmp/seeds" && cp "$seed" corpora/seed/fp16-causal-tl.case "$tmp/seeds/"
  "$bin" campaign --time 3 --backend cpu --out "$tmp/lm" "$tmp/seeds" > "$tmp/lm.log" 2>&1
  if grep -q 'corpus merged (libFuzzer -merge=1): [1-9][0-9]* inputs add coverage' "$tmp/lm.log" && grep -q 'MERGE-OUTER' "$tmp/lm/merge.log" \
    && [ -n "$(ls "$tmp/lm/corpus")" ] && [ ! -e "$tmp/lm/corpus.merge" ]; then echo "ok   libFuzzer mode merges the corpus"
  else echo "FAIL libFuzzer mode: no -merge=1 of the corpus"; tail -3 "$tmp/lm.log"; fail=$((fail+1)); fi
else
  echo "skip libFuzzer-mode checks (--total-time, -dict, -merge): no $lf (build with CC=clang -DATTNFUZZ_FUZZERS=ON)"
fi
rm -rf "$tmp"
if [ $fail -ne 0 ]; then echo "test_cli: $fail failed"; exit 1; fi
echo "test_cli: all passed"
