#!/usr/bin/env bash
# test_crash_stats.sh ATTNFUZZ — a plugin that returns AF_PLUGIN_ERROR gets a crash
# verdict, and every campaign engine counts it as a crash: stats.json "crashes" and
# fuzzer_stats "unique_crashes" are >= 1 (and agree), for
#   inprocess   persistent workers (the default without attnfuzz_fuzz, or --inprocess)
#   fresh       one forked child per case (--inprocess, ATTNFUZZ_POOL=0)
#   libfuzzer   attnfuzz_fuzz beside attnfuzz (clang builds with ATTNFUZZ_FUZZERS=ON
#               only: skipped with the reason where it is absent)
# Each campaign's stats.json must name the engine that was asked for ("mode").
set -u
bin=${1:?usage: test_crash_stats.sh path/to/attnfuzz}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
plugin=$(dirname "$bin")/plugins_misbehave/misbehave_error.so
[ -f "$plugin" ] || { echo "FAIL: no $plugin"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# check_counts ENGINE DIR WANT_MODE: crashes >= 1 in stats.json, the same in fuzzer_stats
check_counts() {
  local engine=$1 dir=$2 mode=$3
  if [ ! -f "$dir/stats.json" ]; then
    echo "FAIL $engine: no stats.json"; tail -5 "$dir.log"; fail=$((fail+1)); return
  fi
  if python3 - "$dir" "$mode" <<'EOF'
import json, sys
d, mode = sys.argv[1], sys.argv[2]
st = json.load(open(d + "/stats.json"))
afl = dict(l.split(" : ", 1) for l in open(d + "/fuzzer_stats").read().splitlines() if " : " in l)
afl = {k.strip(): v.strip() for k, v in afl.items()}
problems = []
if st["mode"] != mode: problems.append("mode %r, expected %r" % (st["mode"], mode))
if st["crashes"] < 1: problems.append("crashes %d (cases %d, findings %d)" % (st["crashes"], st["cases"], st["findings"]))
if st["crashes"] > st["cases"]: problems.append("crashes %d > cases %d" % (st["crashes"], st["cases"]))
if int(afl["unique_crashes"]) != st["crashes"]:
    problems.append("fuzzer_stats unique_crashes %s != stats.json crashes %d" % (afl["unique_crashes"], st["crashes"]))
if problems:
    print("; ".join(problems)); sys.exit(1)
print("%d cases, %d crashes" % (st["cases"], st["crashes"]))
EOF
  then echo "ok   $engine: stats.json and fuzzer_stats count the AF_PLUGIN_ERROR crashes"
  else echo "FAIL $engine (see above)"; tail -3 "$dir.log"; fail=$((fail+1)); fi
}

# the verdict itself: crash, from the plugin's AF_PLUGIN_ERROR
out=$("$bin" run corpora/seed/fp16-nomask-b1h1s16d64.case --backend "plugin:$plugin" --no-probes 2>&1)
echo "$out" | grep -qE 'FINDING crash .*run failed on purpose' && echo "ok   run: AF_PLUGIN_ERROR is a crash verdict" ||
  { echo "FAIL run: no crash verdict:"; echo "$out" | tail -3; fail=$((fail+1)); }

common=(--time 4 --backend "plugin:$plugin" --seed 5 --minimize-runs 3)
"$bin" campaign "${common[@]}" --inprocess --out "$tmp/inprocess" >"$tmp/inprocess.log" 2>&1
check_counts "inprocess (persistent workers)" "$tmp/inprocess" inprocess
ATTNFUZZ_POOL=0 "$bin" campaign "${common[@]}" --inprocess --out "$tmp/fresh" >"$tmp/fresh.log" 2>&1
check_counts "inprocess (a fresh child per case)" "$tmp/fresh" inprocess
if [ -x "$(dirname "$bin")/attnfuzz_fuzz" ]; then
  "$bin" campaign "${common[@]}" --time 8 --out "$tmp/libfuzzer" >"$tmp/libfuzzer.log" 2>&1
  check_counts "libfuzzer (attnfuzz_fuzz workers)" "$tmp/libfuzzer" libfuzzer
else
  echo "skip libfuzzer engine: no attnfuzz_fuzz beside $bin (libFuzzer targets are built by clang with -DATTNFUZZ_FUZZERS=ON)"
fi

[ "$fail" = 0 ] && echo "all crash-count checks passed" || echo "$fail crash-count check(s) failed"
[ "$fail" = 0 ]
