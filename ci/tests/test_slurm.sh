#!/usr/bin/env bash
# test_slurm.sh ATTNFUZZ — the Slurm job array of ci/slurm/ on a real localhost cluster:
#   1. as root, slurm-wlm and munge are installed when missing (ci/setup.sh installs them
#      in CI) and ci/slurm/localhost-up.sh starts munged, slurmctld and slurmd;
#   2. submit.sh queues a 3-task array of 10 s in-process campaigns on
#      planted:scale_ignored and the merge job after it; the merged directory is checked
#      against the shards: buckets = their union, each bucket's count the sum, cases
#      summed, report.json and stats.json agree;
#   3. the daemons this test started are stopped and waited for (localhost-up.sh --stop),
#      and none is left running.
# Skipped (exit 77, with the reason) only where it is not root, or the packages are
# missing and cannot be installed. Tests that use the cluster run one at a time (flock).
set -u
bin=${1:?usage: test_slurm.sh path/to/attnfuzz}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
here=$(cd "$(dirname "$0")/../slurm" && pwd)
command -v python3 >/dev/null || { echo "SKIP test_slurm: no python3"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "SKIP test_slurm: not root (a localhost slurmctld / slurmd needs root)"; exit 77; }
if ! command -v sbatch >/dev/null || ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  echo "test_slurm: installing slurm-wlm munge"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null 2>&1 ||
    { DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null 2>&1 &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null 2>&1; } ||
    { echo "SKIP test_slurm: slurm-wlm / munge not installed and apt-get could not install them"; exit 77; }
fi
mkdir -p /run/attnfuzz-slurm
exec 9>/run/attnfuzz-slurm/test.lock
flock -w 600 9 || { echo "FAIL test_slurm: the localhost cluster stayed busy 600 s (/run/attnfuzz-slurm/test.lock)"; exit 1; }
tmp=$(mktemp -d)
started=0 jobs_of=""
stop_cluster() {
  [ -n "$jobs_of" ] && scancel $jobs_of 2>/dev/null
  if [ "$started" = 1 ]; then "$here/localhost-up.sh" --stop; started=0; fi
}
trap 'stop_cluster; rm -rf "$tmp"' EXIT
fail=0
daemons_running() { pgrep -x -r R,S,D slurmctld >/dev/null || pgrep -x -r R,S,D slurmd >/dev/null || pgrep -x -r R,S,D munged >/dev/null; }
if timeout 10 sinfo -h >/dev/null 2>&1; then
  echo "test_slurm: a slurmctld answers already: using it (not stopped afterwards)"
else
  daemons_running && { echo "FAIL test_slurm: slurm daemons run but sinfo gets no answer: $(pgrep -a 'slurm|munged' | tr '\n' ';')"; exit 1; }
  up=$("$here/localhost-up.sh" 2>&1) || { echo "FAIL test_slurm: localhost-up.sh: $up"; tail -n 5 /var/log/slurm/*.log; exit 1; }
  started=1
  echo "$up"
fi
out=$(cd "$(dirname "$0")/../.." && AF_ARGS=--inprocess "$here/submit.sh" --shards 3 --out "$tmp/n" --time 10 \
  --backend planted:scale_ignored --seed 5 --bin "$bin") || { echo "FAIL submit.sh: $out"; exit 1; }
echo "$out"
jobs_of=$(echo "$out" | grep -o 'job [0-9]*' | awk '{print $2}' | tr '\n' ' ')
merge_job=$(echo "$out" | sed -n 's/.*merge job \([0-9]*\).*/\1/p')
until=$((SECONDS + 150))
while [ $SECONDS -lt $until ] && squeue -h -j "$merge_job" 2>/dev/null | grep -q .; do sleep 1; done
if squeue -h -j "$merge_job" 2>/dev/null | grep -q .; then echo "FAIL merge job $merge_job still queued after 150 s"; squeue; exit 1; fi
jobs_of=""
for f in "$tmp"/n/*.log; do echo "--- $(basename "$f")"; tail -n 2 "$f"; done
python3 - "$tmp/n" <<'PY' || fail=$((fail + 1))
import json, os, sys
n = sys.argv[1]
bad = []
shards = [f"{n}/shard-{i}" for i in range(3)]
st = [json.load(open(f"{d}/stats.json")) for d in shards]
m = json.load(open(f"{n}/merged/stats.json"))
r = json.load(open(f"{n}/merged/report.json"))
def counts(d): return {b: json.load(open(f"{d}/findings/{b}/verdict.json"))["count"] for b in os.listdir(f"{d}/findings")}
cs, cm = [counts(d) for d in shards], counts(f"{n}/merged")
union = set().union(*cs)
if [s["shard"] for s in st] != ["0/3", "1/3", "2/3"]: bad.append(f"shards {[s['shard'] for s in st]}")
if m["cases"] != sum(s["cases"] for s in st): bad.append(f"cases {m['cases']} != sum {[s['cases'] for s in st]}")
if m["findings"] != sum(s["findings"] for s in st): bad.append(f"findings {m['findings']} != sum {[s['findings'] for s in st]}")
if set(cm) != union or m["buckets"] != len(union): bad.append(f"merged buckets {sorted(cm)} != union {sorted(union)}")
for b in union:
    if cm.get(b) != sum(c.get(b, 0) for c in cs): bad.append(f"bucket {b}: count {cm.get(b)} != {[c.get(b, 0) for c in cs]} summed")
if not union: bad.append("no bucket found")
if r["summary"]["buckets"] != len(union) or r["summary"]["findings"] != sum(cm.values()): bad.append(f"report.json summary {r['summary']}")
if m["shards_merged"] != 3: bad.append(f"shards_merged {m['shards_merged']}")
if bad: print("FAIL slurm: " + "; ".join(bad)); sys.exit(1)
print(f"ok   slurm 3-task array: cases {[s['cases'] for s in st]} -> merged {m['cases']}; buckets "
      f"{[sorted(c) for c in cs]} -> {sorted(cm)}, counts summed ({sum(cm.values())} findings)")
PY
if [ "$started" = 1 ]; then
  stop_cluster
  sleep 0.5
  if daemons_running || pgrep -x -r R,S,D slurmstepd >/dev/null; then
    echo "FAIL daemons left running: $(pgrep -a 'slurm|munged' | tr '\n' ';')"; fail=$((fail + 1))
  else echo "ok   daemons stopped: no munged, slurmctld, slurmd or slurmstepd left"; fi
fi
[ "$fail" = 0 ] && echo "all slurm checks passed" || echo "$fail slurm check(s) failed"
[ "$fail" = 0 ]
