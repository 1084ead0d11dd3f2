# ci/device_preamble.sh — sourced by a device call's script (docs/device/run-*/runN.sh),
# from the repository root on the GPU machine, with $OUT set by the device tool. Sets:
#   B           the carried build (default build-dev, ci/make_devbuild.sh)
#   R, S        the results folder ($OUT/r) and its summary file ($R/summary.txt)
#   VENV_CUDNN  the torch venv's cuDNN library folder (empty when there is none)
# and puts B's libraries (jansson, libpng) and python/ on the search paths. The script
# ends with `device_pack`, which leaves one file, $OUT/all.tgz, to bring back.
set -u
B=${B:-build-dev}
export LD_LIBRARY_PATH="$PWD/$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
R=$OUT/r
S=$R/summary.txt
mkdir -p "$R"
VENV_CUDNN=$(python3 -c 'import nvidia.cudnn as m, os; print(os.path.join(list(m.__path__)[0], "lib"))' 2>/dev/null)
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >>"$S" 2>&1
# stamp LABEL CMD...: run CMD, then append "LABEL: exit RC, N s" to the summary
stamp() {
    local label=$1 t0 rc
    shift
    t0=$(date +%s)
    "$@"
    rc=$?
    echo "$label: exit $rc, $(($(date +%s) - t0)) s" >>"$S"
    return $rc
}
# (DEVICE_NO_PACK=1: leave $R for a script that runs several calls' scripts in one call)
device_pack() { [ -n "${DEVICE_NO_PACK:-}" ] || (cd "$OUT" && tar czf all.tgz r && rm -rf r); }
# camp_report DIR LABEL RUN_ARGS...: a campaign's stats into the summary (cases/s, declines,
# buckets, the s_kv histogram), then every bucket's finding.case replayed in its own process
# with `attnfuzz run ... RUN_ARGS` (REPLAY_S seconds in all), and the findings packed as
# $R/camp-findings.tgz
camp_report() {
    local dir=$1 label=$2 d
    shift 2
    cp "$dir/stats.json" "$R/stats.json" 2>/dev/null
    python3 - "$dir/stats.json" "$label" >>"$S" 2>&1 <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
n, e = s.get("cases", 0) or 0, s.get("elapsed_s") or 1
print("campaign %s: %d cases in %.1f s = %.2f cases/s, declined %s, buckets %s, findings %s, crashes %s, hangs %s" % (
    sys.argv[2], n, e, n / e, s.get("declined"), s.get("buckets"), s.get("findings"), s.get("crashes"), s.get("hangs")))
print("s_kv", s.get("seqlen_kv_hist"))
for key in ("seqlen_kv_hist", "seqlen_kv_judged_hist"):  # the shares above 1024 / 16384, all and judged
    h = s.get(key) or {}
    m = sum(h.values()) or 1
    print("%s: %d cases, s_kv >= 1024 %.1f %%, >= 16384 %.1f %%" % (key, sum(h.values()),
          100.0 * sum(v for k, v in h.items() if int(k.split("-")[0]) >= 1024) / m,
          100.0 * sum(v for k, v in h.items() if int(k.split("-")[0]) >= 16384) / m))
PY
    # the replays stop after REPLAY_S seconds in all (default 180), so a call's limit never
    # cuts the report and the pack (a bucket not replayed says so)
    local t_end=$(($(date +%s) + ${REPLAY_S:-180}))
    for d in "$dir"/findings/*/; do
        [ -d "$d" ] || continue
        echo "bucket $(basename "$d"): $(head -c 300 "$d/verdict.json" 2>/dev/null | tr '\n' ' ')" >>"$S"
        if [ "$(date +%s)" -ge "$t_end" ]; then
            echo "  replay: not run (REPLAY_S spent)" >>"$S"
            continue
        fi
        timeout 60 "$B/attnfuzz" run "$d/finding.case" --json "$@" >"$R/replay-$(basename "$d").txt" 2>&1
        echo "  replay (separate process): exit $? $(grep -m1 -o '"verdict":"[a-z_]*"' "$R/replay-$(basename "$d").txt") $(grep -m1 -o '"reason":"[^"]*' "$R/replay-$(basename "$d").txt" | cut -c1-200) $(tail -1 "$R/replay-$(basename "$d").txt" | cut -c1-300)" >>"$S"
        rm -f "$R/replay-$(basename "$d").txt" # its line is in the summary; the files would crowd what comes back
    done
    tar czf "$R/camp-findings.tgz" -C "$dir" findings $(cd "$dir" && ls -d errors 2>/dev/null) 2>/dev/null
}
# cpu_run LABEL CMD...: run CMD (an `attnfuzz run ... --json`, whose workers end with it), its
# stdout in $R/LABEL.jsonl and stderr in $R/LABEL.err, then add to the summary its verdicts,
# wall seconds, cases/s and the user + system CPU ms per verdict of every process it waited
# for (getrusage of the children: the workers included)
cpu_run() {
    local label=$1
    shift
    python3 - "$R/$label" "$@" >>"$S" 2>&1 <<'PY'
import resource, subprocess, sys, time
t = time.monotonic()
subprocess.run(sys.argv[2:], stdout=open(sys.argv[1] + ".jsonl", "w"), stderr=open(sys.argv[1] + ".err", "w"))
e = time.monotonic() - t
r = resource.getrusage(resource.RUSAGE_CHILDREN)
n = sum(1 for line in open(sys.argv[1] + ".jsonl") if line.startswith("{") and '"verdict"' in line) or 1
print("%-14s %4d cases in %6.1f s: %5.2f cases/s, %6.1f ms wall/case, user %6.1f + sys %5.1f = %6.1f ms CPU/case (%.1f cores busy)" % (
    sys.argv[1].split("/")[-1], n, e, n / e, 1e3 * e / n, 1e3 * r.ru_utime / n, 1e3 * r.ru_stime / n,
    1e3 * (r.ru_utime + r.ru_stime) / n, (r.ru_utime + r.ru_stime) / e))
PY
}
