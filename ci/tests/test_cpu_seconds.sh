#!/usr/bin/env bash
# test_cpu_seconds.sh ATTNFUZZ — the verdicts' judge.seconds.cpu (judge/verdict.h: the CPU
# time of the thread that ran each part): every judged verdict of a few seed cases on the cpu
# backend has the five parts; the ones that did work are above 0 (prepare: the MPFR oracle;
# run: the cpu backend; compare; probes), and a thread's CPU over a part is never above that
# part's wall time (a process-wide clock read by mistake would pass it with the backend's
# and the oracle's threads).
set -u
bin=${1:?usage: test_cpu_seconds.sh path/to/attnfuzz}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mapfile -t cases < <(ls corpora/seed/*.case | head -6)
"$bin" run "${cases[@]}" --backend cpu --json > "$tmp/v.jsonl" 2> "$tmp/err" || true
python3 - "$tmp/v.jsonl" <<'PY'
import json, sys
fail = 0
n = 0
for line in open(sys.argv[1]):
    if not line.startswith("{"):
        continue
    v = json.loads(line)
    if v["verdict"] == "declined":
        continue
    n += 1
    s = v["judge"]["seconds"]
    cpu = s.get("cpu")
    def check(name, ok):
        global fail
        print(("ok   " if ok else "FAIL ") + "%s: %s" % (v["case"], name))
        fail |= not ok
    check("five parts", cpu is not None and sorted(cpu) == ["cert", "compare", "prepare", "probes", "run"])
    if cpu is None:
        continue
    check("none below 0", all(x >= 0 for x in cpu.values()))
    check("prepare, run, compare, probes above 0 (%r)" % cpu, all(cpu[k] > 0 for k in ("prepare", "run", "compare", "probes")))
    slack = 0.02  # clock reads on either side of the wall clock's
    prepare_wall = s["gen"] + s["oracle"] + s["magnitudes"] + s["reference"]
    for part, wall in (("run", s["run"]), ("compare", s["compare"]), ("probes", s["probes"]), ("prepare", prepare_wall)):
        check("%s: thread CPU %.4f <= wall %.4f" % (part, cpu[part], wall), cpu[part] <= wall + slack)
print("test_cpu_seconds: %d verdicts" % n)
sys.exit(1 if fail or n == 0 else 0)
PY
