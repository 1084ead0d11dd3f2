#!/usr/bin/env bash
# test_slurm.sh ATTNFUZZ — the Slurm job array of ci/slurm/ on a real (localhost) cluster:
# submit.sh queues 2 shards of a campaign on planted:scale_ignored (10 s each) and the
# merge job after them; the merged stats.json counts the shards' cases together and its
# buckets are the union of theirs. Skipped (exit 77, with the reason) when sbatch is not
# installed or no slurmctld answers (ci/slurm/localhost-up.sh starts one as root).
set -u
bin=${1:?usage: test_slurm.sh path/to/attnfuzz}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
command -v sbatch >/dev/null || { echo "SKIP test_slurm: sbatch not installed (apt-get install slurm-wlm munge)"; exit 77; }
timeout 10 sinfo -h >/dev/null 2>&1 || { echo "SKIP test_slurm: no slurmctld answers (ci/slurm/localhost-up.sh)"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP test_slurm: no python3"; exit 77; }
tmp=$(mktemp -d)
jobs_of=""
trap '[ -n "$jobs_of" ] && scancel $jobs_of 2>/dev/null; rm -rf "$tmp"' EXIT
out=$(AF_ARGS=--inprocess ci/slurm/submit.sh --shards 2 --out "$tmp/n" --time 10 --backend planted:scale_ignored --seed 5 --bin "$bin") || {
  echo "FAIL submit.sh: $out"; exit 1; }
echo "$out"
jobs_of=$(echo "$out" | grep -o 'job [0-9]*' | awk '{print $2}' | tr '\n' ' ')
merge_job=$(echo "$out" | sed -n 's/.*merge job \([0-9]*\).*/\1/p')
until=$((SECONDS + 240))
while [ $SECONDS -lt $until ] && squeue -h -j "$merge_job" 2>/dev/null | grep -q .; do sleep 1; done
squeue -h -j "$merge_job" 2>/dev/null | grep -q . && { echo "FAIL merge job $merge_job still queued after 240 s"; squeue; exit 1; }
jobs_of=""
for f in "$tmp"/n/*.log; do echo "--- $(basename "$f")"; tail -n 3 "$f"; done
python3 - "$tmp/n" <<'PY'
import json, os, sys
n = sys.argv[1]
st = [json.load(open(f"{n}/shard-{i}/stats.json")) for i in (0, 1)]
m = json.load(open(f"{n}/merged/stats.json"))
bk = [set(os.listdir(f"{n}/shard-{i}/findings")) for i in (0, 1)]
mb = set(os.listdir(f"{n}/merged/findings"))
bad = []
if [s["shard"] for s in st] != ["0/2", "1/2"]: bad.append(f"shards {[s['shard'] for s in st]}")
if m["cases"] != st[0]["cases"] + st[1]["cases"]: bad.append(f"cases {m['cases']} != {st[0]['cases']} + {st[1]['cases']}")
if mb != bk[0] | bk[1] or m["buckets"] != len(mb): bad.append(f"merged buckets {sorted(mb)} != union {sorted(bk[0] | bk[1])}")
if not mb: bad.append("no bucket found")
if json.load(open(f"{n}/merged/report.json"))["summary"]["buckets"] != len(mb): bad.append("report.json disagrees")
if bad: print("FAIL slurm: " + "; ".join(bad)); sys.exit(1)
print(f"ok   slurm array: shards {st[0]['cases']} + {st[1]['cases']} cases -> merged {m['cases']}, "
      f"buckets {sorted(bk[0])} | {sorted(bk[1])} -> {sorted(mb)}")
PY
