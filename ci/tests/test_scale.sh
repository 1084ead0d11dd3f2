#!/usr/bin/env bash
# test_scale.sh ATTNFUZZ — campaigns beyond one process (issue 16), on the cpu machine:
#   1. resume: a campaign on planted:scale_ignored is SIGKILLed after ~10 s and resumed
#      (--resume) for 10 s: stats.json's cases and elapsed_s grow from where they were, resumed = 1,
#      every bucket of the killed run is still there and none is duplicated (report.json's
#      signatures are distinct, stats buckets = findings dirs);
#   2. lock: a second campaign on a running campaign's DIR is refused (exit 7, one line
#      naming pid and host), so is a merge of it; a lock held by a live process for a
#      dead holder (pid gone, this host) is taken over, one naming a live pid is not;
#   3. shards: two shards (--shard 0/2, 1/2, same --seed) see disjoint config cells
#      (config_cells.bin); `attnfuzz merge` gives the union of their buckets without
#      duplicates, each bucket's count the sum, cases summed, reports rebuilt, the united
#      corpus merged (content-hash names, no more inputs than the shards had), plot_data
#      summed over time (its last line the shards' last lines added); a merge
#      into a directory that holds a campaign is refused; bad --shard values exit 2.
set -u
bin=${1:?usage: test_scale.sh path/to/attnfuzz}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
command -v python3 >/dev/null || { echo "SKIP test_scale: no python3"; exit 77; }
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
fail=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
json() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$@"; }
wait_for() { # wait_for SECONDS TEST... : poll until the test holds
  local until=$((SECONDS + $1)); shift
  while [ $SECONDS -lt $until ]; do "$@" && return 0; sleep 0.2; done; return 1
}
has_finding() { [ -n "$(ls "$1"/findings 2>/dev/null)" ]; }
buckets_of() { ls "$1/findings" 2>/dev/null | sort; }
locked() { [ -s "$1/lock" ]; }
backend=planted:scale_ignored

# ---- 1. SIGKILL, then resume --------------------------------------------------------
d=$tmp/resume
"$bin" campaign --inprocess --time 120 --backend $backend --seed 7 --out "$d" >"$d.log1" 2>&1 &
pid=$!; pids+=($pid)
wait_for 60 has_finding "$d" || bad "resume: no finding within 60 s"
sleep 10
kill -9 $pid; wait $pid 2>/dev/null
before_cases=$(json "$d/stats.json" cases); before_elapsed=$(json "$d/stats.json" elapsed_s)
before_buckets=$(buckets_of "$d")
echo "killed after $before_elapsed s: $before_cases cases, buckets: $(echo $before_buckets)"
"$bin" campaign --inprocess --time 10 --backend $backend --seed 7 --resume --out "$d" >"$d.log2" 2>&1
rc=$?
[ "$rc" = 1 ] || { bad "resume: exit $rc, expected 1 (findings)"; tail -3 "$d.log2"; }
grep -q "resuming $d (run 2)" "$d.log2" && ok "resume: says it resumes run 2" || bad "resume: no 'resuming' line"
python3 - "$d" "$before_cases" "$before_elapsed" "$before_buckets" <<'PY' || fail=$((fail + 1))
import json, os, sys
d, cases0, elapsed0, buckets0 = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4].split()
s = json.load(open(f"{d}/stats.json"))
r = json.load(open(f"{d}/report.json"))
dirs = sorted(os.listdir(f"{d}/findings"))
sigs = [b["signature"] for b in r["buckets"]]
bad = []
if not s["cases"] > cases0: bad.append(f"cases {s['cases']} not above {cases0}")
if not s["elapsed_s"] >= elapsed0 + 9: bad.append(f"elapsed_s {s['elapsed_s']} not >= {elapsed0} + 9")
if s["resumed"] != 1: bad.append(f"resumed {s['resumed']}, expected 1")
lost = [b for b in buckets0 if b not in dirs]
if lost: bad.append(f"buckets lost: {lost}")
if len(set(sigs)) != len(sigs): bad.append(f"duplicate signatures in report.json: {sigs}")
if s["buckets"] != len(dirs) or r["summary"]["buckets"] != len(dirs):
    bad.append(f"stats buckets {s['buckets']}, report {r['summary']['buckets']}, findings dirs {len(dirs)}")
if sum(s["seqlen_q_hist"].values()) != s["cases"]: bad.append("seqlen_q_hist does not sum to cases")
if bad: print("FAIL resume: " + "; ".join(bad)); sys.exit(1)
print(f"ok   resume: cases {cases0} -> {s['cases']}, elapsed {elapsed0} -> {s['elapsed_s']} s, "
      f"buckets {len(buckets0)} -> {len(dirs)} (all kept, none twice)")
PY

# ---- 2. the lock ---------------------------------------------------------------------
d=$tmp/locked
"$bin" campaign --inprocess --time 30 --backend cpu --seed 3 --out "$d" >"$d.log" 2>&1 &
pid=$!; pids+=($pid)
wait_for 20 locked "$d" || bad "lock: no $d/lock within 20 s"
wait_for 20 test -s "$d/stats.json" || bad "lock: no $d/stats.json within 20 s"
err=$("$bin" campaign --inprocess --time 2 --backend cpu --out "$d" 2>&1); rc=$?
if [ "$rc" = 7 ] && [ "$(echo "$err" | wc -l)" = 1 ] && echo "$err" | grep -q "in use by a running campaign (pid $pid on host"; then
  ok "lock: second campaign refused (exit 7): $err"
else bad "lock: second campaign exit $rc: $err"; fi
err=$("$bin" merge "$tmp/merge-of-running" "$d" 2>&1); rc=$?
[ "$rc" = 7 ] && ok "lock: merge of a running campaign refused (exit 7)" || bad "lock: merge of a running campaign: exit $rc: $err"
kill -9 $pid; wait $pid 2>/dev/null
# a dead holder whose lock is still held (an orphaned child kept the fd): taken over
sleep 300 & dead=$!; kill -9 $dead; wait $dead 2>/dev/null
printf 'pid %d host %s\n' "$dead" "$(hostname)" > "$d/lock"
flock -n "$d/lock" sleep 60 & holder=$!; pids+=($holder)
sleep 0.5
out=$("$bin" campaign --inprocess --time 2 --backend cpu --resume --out "$d" 2>&1); rc=$?
[ "$rc" = 0 ] && ok "lock: stale lock of dead pid $dead taken over (resumed, exit 0)" || { bad "lock: stale lock: exit $rc"; echo "$out" | tail -3; }
# the same, but the file names a live process: refused
kill -9 $holder; wait $holder 2>/dev/null
flock -n "$d/lock" sleep 60 & holder=$!; pids+=($holder)
sleep 0.5
printf 'pid %d host %s\n' "$holder" "$(hostname)" > "$d/lock"
"$bin" campaign --inprocess --time 2 --backend cpu --resume --out "$d" >/dev/null 2>&1; rc=$?
[ "$rc" = 7 ] && ok "lock: a lock of live pid $holder is not taken over (exit 7)" || bad "lock: live holder: exit $rc"
kill -9 $holder; wait $holder 2>/dev/null

# ---- 3. shards and merge ------------------------------------------------------------
for i in 0 1; do
  "$bin" campaign --inprocess --time 8 --backend $backend --seed 11 --shard $i/2 --out "$tmp/shard$i" >"$tmp/shard$i.log" 2>&1 &
  pids+=($!)
done
wait "${pids[@]: -2}" 2>/dev/null
out=$("$bin" merge "$tmp/merged" "$tmp/shard0" "$tmp/shard1" 2>&1); rc=$?
echo "$out"
[ "$rc" = 1 ] || bad "merge: exit $rc, expected 1 (buckets)"
python3 - "$tmp" <<'PY' || fail=$((fail + 1))
import json, os, sys
t = sys.argv[1]
bad = []
def load(d): return json.load(open(f"{t}/{d}/stats.json"))
def counts(d):
    out = {}
    for b in os.listdir(f"{t}/{d}/findings"):
        out[b] = json.loads(open(f"{t}/{d}/findings/{b}/verdict.json").read())["count"]
    return out
s0, s1, m = load("shard0"), load("shard1"), load("merged")
c0, c1, cm = counts("shard0"), counts("shard1"), counts("merged")
cells = [int.from_bytes(open(f"{t}/shard{i}/config_cells.bin", "rb").read(), "little") for i in (0, 1)]
if not cells[0] or not cells[1]: bad.append("a shard saw no config cell")
if cells[0] & cells[1]: bad.append(f"shards share {bin(cells[0] & cells[1]).count('1')} config cell(s)")
if (s0["shard"], s1["shard"]) != ("0/2", "1/2"): bad.append(f"shard keys {s0['shard']}, {s1['shard']}")
if not c0 or not c1: bad.append(f"a shard found nothing: {c0} {c1}")
union = sorted(set(c0) | set(c1))
if sorted(cm) != union: bad.append(f"merged buckets {sorted(cm)} != union {union}")
for b in union:
    if cm.get(b) != c0.get(b, 0) + c1.get(b, 0): bad.append(f"bucket {b}: count {cm.get(b)} != {c0.get(b,0)} + {c1.get(b,0)}")
r = json.load(open(f"{t}/merged/report.json"))
sigs = [b["signature"] for b in r["buckets"]]
if len(sigs) != len(set(sigs)) or len(sigs) != len(union): bad.append(f"report.json buckets {len(sigs)} (distinct {len(set(sigs))}), union {len(union)}")
if m["cases"] != s0["cases"] + s1["cases"]: bad.append(f"cases {m['cases']} != {s0['cases']} + {s1['cases']}")
def plot(d): return [[float(x) for x in l.split(",")] for l in open(f"{t}/{d}/plot_data") if not l.startswith("#")]
p0, p1, pm = plot("shard0"), plot("shard1"), plot("merged")
if [r[0] for r in pm] != sorted({r[0] for r in p0 + p1}): bad.append("merged plot_data: not one line per shard line time")
if pm[-1][1] != p0[-1][1] + p1[-1][1] or pm[-1][3] != p0[-1][3] + p1[-1][3]:
    bad.append(f"merged plot_data's last line {pm[-1][:4]} is not the sum of the shards' {p0[-1][:4]} {p1[-1][:4]}")
if m["findings"] != s0["findings"] + s1["findings"]: bad.append("findings not summed")
if m["buckets"] != len(union) or m["shards_merged"] != 2: bad.append(f"merged buckets {m['buckets']}, shards_merged {m['shards_merged']}")
if m["config_cells"] != s0["config_cells"] + s1["config_cells"]: bad.append("config cells not united")
for b in union:
    v = json.loads(open(f"{t}/merged/findings/{b}/verdict.json").read())
    if f"{t}/merged/findings/{b}/finding.case" not in v["repro"]: bad.append(f"bucket {b}: repro {v['repro']}")
def fnv1a64(data):
    h = 0xcbf29ce484222325
    for byte in data: h = ((h ^ byte) * 0x100000001b3) & 0xffffffffffffffff
    return f"{h:016x}"
corpus = {d: {f: open(f"{t}/{d}/corpus/{f}", "rb").read() for f in os.listdir(f"{t}/{d}/corpus")} for d in ("shard0", "shard1", "merged")}
united = {fnv1a64(v) for d in ("shard0", "shard1") for v in corpus[d].values()}
named = [f for f, v in corpus["merged"].items() if f != fnv1a64(v)]
if named: bad.append(f"merged corpus inputs not named by content hash: {named[:3]}")
if not set(corpus["merged"]) <= united: bad.append("merged corpus holds an input no shard had")
if not 0 < len(corpus["merged"]) <= len(united) or m["corpus"] != len(corpus["merged"]):
    bad.append(f"merged corpus {len(corpus['merged'])} (stats {m['corpus']}) of {len(united)} united")
if bad: print("FAIL merge: " + "; ".join(bad)); sys.exit(1)
print(f"ok   merge: corpus merged to {len(corpus['merged'])} of {len(united)} distinct inputs, content-hash names")
print(f"ok   shards: disjoint config cells ({s0['config_cells']} + {s1['config_cells']}); merge: buckets "
      f"{sorted(c0)} + {sorted(c1)} -> {union}, counts summed, {m['cases']} cases")
PY
err=$("$bin" merge "$tmp/merged" "$tmp/shard0" 2>&1); rc=$?
[ "$rc" = 6 ] && echo "$err" | grep -q "already holds" && ok "merge: into a used OUT refused (exit 6)" || bad "merge into a used OUT: exit $rc: $err"
for v in 2/2 -1/2 1/0 x 1/2/3; do
  "$bin" campaign --time 1 --shard "$v" --out "$tmp/badshard" >/dev/null 2>&1; rc=$?
  [ "$rc" = 2 ] || bad "--shard $v: exit $rc, expected 2"
done
ok "bad --shard values exit 2"

[ "$fail" = 0 ] && echo "all scale checks passed" || echo "$fail scale check(s) failed"
[ "$fail" = 0 ]
