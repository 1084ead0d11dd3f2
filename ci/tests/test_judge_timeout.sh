#!/usr/bin/env bash
# test_judge_timeout.sh ATTNFUZZ — a deadline that finds a case in attnfuzz's own stages is
# not a hang of the kernel (campaign/session_child.c, util/stage_mark.h): a cpu campaign with
# --deadline 1 from one seed whose MPFR oracle takes several seconds ends with the case "not
# judged" (stats.json judge_timeouts >= 1, counted in errors, hangs 0, no finding), the case
# kept in DIR/errors/ with the stage in its first line ("oracle stage"), the summary saying
# how many. Both child kinds: persistent workers and a fresh child per case (ATTNFUZZ_POOL=0).
set -u
bin=${1:?usage: test_judge_timeout.sh path/to/attnfuzz}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
mkdir -p "$tmp/seeds"
# fp16 b1 h4 s512 d64 causal backward: the MPFR tier judges it in seconds (6.5 s on a 2-core
# machine), far past a 1 s deadline; its backend run (the cpu backend) takes milliseconds
cat > "$tmp/seeds/slow-oracle.case" <<'CASE'
dtype = fp16
batch = 1
heads_q = 4
heads_kv = 2
seqlen_q = 512
seqlen_kv = 512
head_dim_qk = 64
head_dim_v = 64
mask = causal
backward = yes
seed = 43
CASE
check() {
  local label=$1 dir=$2
  if python3 - "$dir" <<'PY'
import glob, json, sys
d = sys.argv[1]
st = json.load(open(d + "/stats.json"))
problems = []
if st.get("judge_timeouts", 0) < 1: problems.append("judge_timeouts %s" % st.get("judge_timeouts"))
if st["hangs"] != 0: problems.append("hangs %d (a judge stage past the deadline is no hang)" % st["hangs"])
if st["errors"] < st.get("judge_timeouts", 0): problems.append("errors %d < judge_timeouts" % st["errors"])
firsts = [open(f).readline() for f in sorted(glob.glob(d + "/errors/*.case"))]
if not any("not judged" in l and "oracle stage" in l and "no backend call in flight" in l for l in firsts):
    problems.append("no errors/*.case names the oracle stage: %r" % firsts[:2])
if glob.glob(d + "/findings/*/finding.case"): problems.append("a finding was stored")
if problems:
    print("; ".join(problems)); sys.exit(1)
print("%d cases, judge_timeouts %d, errors %d, hangs 0; %s" % (st["cases"], st["judge_timeouts"], st["errors"],
                                                               firsts[0].strip()[:150]))
PY
  then
    grep -q "not judged within the deadline" "$dir.log" && echo "ok   $label" ||
      { echo "FAIL $label: the summary does not say so"; tail -8 "$dir.log"; fail=$((fail+1)); }
  else
    echo "FAIL $label"; tail -8 "$dir.log"; fail=$((fail+1))
  fi
}
common=(--backend cpu --time 4 --deadline 1 --max-work 1e9 --seed 3 --minimize-runs 1)
"$bin" campaign "${common[@]}" --inprocess --out "$tmp/pool" "$tmp/seeds" >"$tmp/pool.log" 2>&1
check "persistent workers" "$tmp/pool"
ATTNFUZZ_POOL=0 "$bin" campaign "${common[@]}" --inprocess --out "$tmp/fresh" "$tmp/seeds" >"$tmp/fresh.log" 2>&1
check "a fresh child per case" "$tmp/fresh"
[ "$fail" = 0 ] && echo "all judge-timeout checks passed" || echo "$fail judge-timeout check(s) failed"
[ "$fail" = 0 ]
