#!/usr/bin/env bash
# test_gpus.sh — `campaign --gpus` on a CPU machine (CTest: bash ci/tests/test_gpus.sh path/to/attnfuzz).
# The plugin misbehave_env logs the CUDA_VISIBLE_DEVICES of the process its run() is in
# (and declines the case), so what each worker process was given is seen from inside it.
#  1. --gpus 0,1 --workers-per-gpu 2: the workers saw exactly "0" and "1", each from 2
#     worker processes, no process saw both; stats.json: jobs 4, gpus ["0","1"],
#     gpu_cases per GPU = the runs logged with that value, summing to cases;
#  2. --gpus all with CUDA_VISIBLE_DEVICES=3,5: two workers, one with 3, one with 5;
#  3. --resume of campaign 1 adds its GPU counts up; `attnfuzz merge` of campaigns 1 and
#     2 sums them per GPU;
#  4. findings carry the GPU: a planted bug under --gpus 3,5: every bucket's verdict.json
#     and report.json entry names a device in {3,5}, and the report.html shows it;
#  5. --merge-every 3 merges the live corpus during the campaign: a merge per 3 cases at least;
#  6. bad lists ('0,x', '0,1,0', '', '-1'), --jobs with --gpus: exit 2 with one line;
#     --gpus all without CUDA_VISIBLE_DEVICES on a machine without the NVIDIA driver:
#     exit 3 "no GPU found" (on a machine with it: skipped, reason printed).
set -u
AF=${1:?usage: test_gpus.sh path/to/attnfuzz}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
ENV_PLUGIN=$(cd "$(dirname "$AF")" && pwd)/plugins_misbehave/misbehave_env.so
[ -f "$ENV_PLUGIN" ] || fail "no $ENV_PLUGIN (harness/plugins builds it)"
T=${ATTNFUZZ_TEST_GPUS_TIME:-5}

# check_env_log LOG STATS 'V1 V2' WORKERS_PER_VALUE: the log and stats.json agree (see 1.)
check_env_log() {
    python3 - "$@" <<'EOF'
import collections, json, sys
log, stats_path, values, per_value = sys.argv[1], sys.argv[2], sys.argv[3].split(), int(sys.argv[4])
pids_of, runs_of, values_of_pid = collections.defaultdict(set), collections.Counter(), collections.defaultdict(set)
for line in open(log):
    pid, kv = line.split()[1], line.split()[2]
    value = kv.split("=", 1)[1]
    pids_of[value].add(pid)
    runs_of[value] += 1
    values_of_pid[pid].add(value)
s = json.load(open(stats_path))
assert sorted(pids_of) == sorted(values), f"workers saw {sorted(pids_of)}, want {values}"
for v in values:
    assert len(pids_of[v]) == per_value, f"CUDA_VISIBLE_DEVICES={v}: {len(pids_of[v])} worker(s), want {per_value}"
both = [p for p, vs in values_of_pid.items() if len(vs) > 1]
assert not both, f"processes that saw two values: {both}"
assert s["gpus"] == values, f"stats gpus {s['gpus']}, want {values}"
assert s["jobs"] == len(values) * per_value, f"stats jobs {s['jobs']}"
gc = s["gpu_cases"]
assert sorted(gc) == sorted(values), f"gpu_cases keys {sorted(gc)}"
assert sum(gc.values()) == s["cases"] > 0, f"gpu_cases {gc} do not sum to cases {s['cases']}"
for v in values:
    # a case reaches the plugin's run() at most once, in its worker (the adapter declines
    # some itself): as many cases counted for a GPU as runs logged there, or more
    assert gc[v] >= runs_of[v] > 0, f"GPU {v}: {gc[v]} cases counted, {runs_of[v]} runs logged there"
print(f"{stats_path}: {s['cases']} cases, gpu_cases {gc}, workers per value {per_value}, runs logged {dict(runs_of)}")
EOF
}

# --- 1. --gpus 0,1 --workers-per-gpu 2 ---------------------------------------------------
MISBEHAVE_MARKER=$WORK/env1.log env -u CUDA_VISIBLE_DEVICES "$AF" campaign --inprocess --time "$T" --gpus 0,1 \
    --workers-per-gpu 2 --seed 21 --backend "plugin:$ENV_PLUGIN" --out "$WORK/c1" 2>"$WORK/c1.log"
rc=$?
[ "$rc" -eq 0 ] || { cat "$WORK/c1.log"; fail "campaign --gpus 0,1 --workers-per-gpu 2 exited $rc"; }
grep -q "^attnfuzz campaign: --gpus 0,1: 2 worker(s) per GPU" "$WORK/c1.log" || { cat "$WORK/c1.log"; fail "no --gpus line"; }
check_env_log "$WORK/env1.log" "$WORK/c1/stats.json" "0 1" 2 || fail "campaign --gpus 0,1 --workers-per-gpu 2"

# --- 2. --gpus all with CUDA_VISIBLE_DEVICES=3,5 ------------------------------------------
MISBEHAVE_MARKER=$WORK/env2.log CUDA_VISIBLE_DEVICES=3,5 "$AF" campaign --inprocess --time "$T" --gpus all \
    --seed 22 --backend "plugin:$ENV_PLUGIN" --out "$WORK/c2" 2>"$WORK/c2.log"
rc=$?
[ "$rc" -eq 0 ] || { cat "$WORK/c2.log"; fail "campaign --gpus all (CUDA_VISIBLE_DEVICES=3,5) exited $rc"; }
check_env_log "$WORK/env2.log" "$WORK/c2/stats.json" "3 5" 1 || fail "campaign --gpus all with CUDA_VISIBLE_DEVICES=3,5"

# --- 3. resume and merge add the counts up ------------------------------------------------
cp "$WORK/c1/stats.json" "$WORK/c1.before.json"
MISBEHAVE_MARKER=$WORK/env3.log "$AF" campaign --inprocess --time 3 --gpus 0,1 --workers-per-gpu 2 --seed 23 \
    --backend "plugin:$ENV_PLUGIN" --out "$WORK/c1" --resume 2>"$WORK/c3.log"
rc=$?
[ "$rc" -eq 0 ] || { cat "$WORK/c3.log"; fail "--resume with --gpus exited $rc"; }
"$AF" merge "$WORK/m" "$WORK/c1" "$WORK/c2" --quiet 2>"$WORK/m.log" || { cat "$WORK/m.log"; fail "merge"; }
python3 - "$WORK/c1.before.json" "$WORK/c1/stats.json" "$WORK/env3.log" "$WORK/c2/stats.json" "$WORK/m/stats.json" <<'EOF' || fail "resume / merge of GPU counts"
import collections, json, sys
before, after, c2, merged = (json.load(open(p)) for p in (sys.argv[1], sys.argv[2], sys.argv[4], sys.argv[5]))
runs = collections.Counter(l.split()[2].split("=", 1)[1] for l in open(sys.argv[3]))
for v in ("0", "1"):
    added = after["gpu_cases"][v] - before["gpu_cases"][v]
    assert added >= runs[v] > 0, f"resume: GPU {v} +{added} cases, {runs[v]} runs logged there"
assert sum(after["gpu_cases"].values()) == after["cases"] > before["cases"], "resume: gpu_cases do not sum to cases"
want = collections.Counter(after["gpu_cases"]) + collections.Counter(c2["gpu_cases"])
assert merged["gpu_cases"] == dict(want), f"merge: {merged['gpu_cases']}, want {dict(want)}"
assert sorted(merged["gpus"]) == ["0", "1", "3", "5"], f"merge gpus {merged['gpus']}"
assert sum(merged["gpu_cases"].values()) == merged["cases"], "merge: gpu_cases do not sum to cases"
print(f"resume: {before['gpu_cases']} -> {after['gpu_cases']}; merge: {merged['gpu_cases']}")
EOF

# --- 4. findings carry the GPU ------------------------------------------------------------
BE=planted:window_off_by_one
"$AF" backends 2>/dev/null | grep -q "^$BE .*available" || fail "$BE is not available"
# the windowed seeds only: the planted bug's findings come first, whatever the machine's load
"$AF" campaign --inprocess --time "$T" --gpus 3,5 --seed 7 --backend "$BE" --out "$WORK/c4" corpora/seed/*window*.case \
    2>"$WORK/c4.log"
rc=$?
[ "$rc" -eq 1 ] || { cat "$WORK/c4.log"; fail "campaign --gpus 3,5 on $BE exited $rc, want 1 (findings)"; }
python3 - "$WORK/c4" <<'EOF' || fail "findings carry the device"
import glob, json, sys
d = sys.argv[1]
verdicts = glob.glob(f"{d}/findings/*/verdict.json")
assert verdicts, "no findings stored"
for p in verdicts:
    assert json.load(open(p)).get("device") in ("3", "5"), f"{p}: device {json.load(open(p)).get('device')}"
buckets = json.load(open(f"{d}/report.json"))["buckets"]
assert len(buckets) == len(verdicts) and all(b["device"] in ("3", "5") for b in buckets), "report.json devices"
html = open(f"{d}/report.html").read()
assert html.count("<th>GPU</th>") == len(buckets), "report.html: a GPU row per bucket"
print(f"{len(buckets)} bucket(s), devices {sorted(b['device'] for b in buckets)}")
EOF

# --- 5. --merge-every -------------------------------------------------------------------
"$AF" campaign --inprocess --time "$T" --merge-every 3 --seed 9 --backend cpu --out "$WORK/c5" 2>"$WORK/c5.log"
rc=$?
[ "$rc" -eq 0 ] || { cat "$WORK/c5.log"; fail "campaign --merge-every 3 exited $rc"; }
merges=$(grep -c "^attnfuzz campaign: corpus merged:" "$WORK/c5.log")
cases=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['cases'])" "$WORK/c5/stats.json")
[ "$cases" -ge 3 ] || fail "--merge-every 3: only $cases cases in $T s"
# one merge per 3 cases during the run, one at the end
[ "$merges" -ge $((cases / 3)) ] && [ "$merges" -ge 2 ] ||
    { cat "$WORK/c5.log"; fail "--merge-every 3: $merges corpus merge(s) over $cases cases"; }
echo "--merge-every 3: $merges corpus merges over $cases cases"

# --- 6. bad lists, --jobs, no GPU ---------------------------------------------------------
expect() { # expect RC 'MESSAGE' ARGS...
    local want=$1 msg=$2
    shift 2
    out=$(env -u CUDA_VISIBLE_DEVICES "$AF" campaign --time 1 --out "$WORK/bad" "$@" 2>&1)
    local rc=$?
    [ "$rc" -eq "$want" ] || fail "campaign $*: exit $rc, want $want ($out)"
    [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "campaign $*: not one line: $out"
    printf '%s\n' "$out" | grep -qF -- "$msg" || fail "campaign $*: '$out' lacks '$msg'"
    [ ! -e "$WORK/bad" ] || fail "campaign $*: created its --out"
}
expect 2 "--gpus: '0,x' is not a list of GPU ordinals" --gpus 0,x
expect 2 "--gpus: GPU '0' is listed twice in '0,1,0'" --gpus 0,1,0
expect 2 "--gpus: GPU '1' is listed twice in '1,01'" --gpus 1,01
expect 2 "--gpus: '' is not a list of GPU ordinals" --gpus ''
expect 2 "--gpus: '-1' is not a list of GPU ordinals" --gpus -1
expect 2 "--gpus: '0,,1' is not a list of GPU ordinals" --gpus 0,,1
expect 2 "--jobs with --gpus" --gpus 0,1 --jobs 2
expect 2 "--gpus is not supported with --policy" --gpus 0 --policy x.json
if [ -e /proc/driver/nvidia/gpus ]; then
    echo "skipped: --gpus all without CUDA_VISIBLE_DEVICES (this machine has /proc/driver/nvidia/gpus)"
else
    expect 3 "--gpus all: no GPU found (CUDA_VISIBLE_DEVICES is unset and /proc/driver/nvidia/gpus does not exist)" \
        --gpus all
fi
out=$(CUDA_VISIBLE_DEVICES= "$AF" campaign --time 1 --out "$WORK/bad" --gpus all 2>&1)
[ $? -eq 3 ] && echo "$out" | grep -qF "CUDA_VISIBLE_DEVICES is set and empty" || fail "empty CUDA_VISIBLE_DEVICES: $out"
echo "test_gpus: ok"
