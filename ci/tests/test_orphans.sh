#!/usr/bin/env bash
# test_orphans.sh ATTNFUZZ — a campaign killed with SIGKILL leaves no process behind
# (util/proc.h: every child dies with its parent, and an exec'd program's own children
# with it). Each campaign has a marker unique to this run in its paths; attnfuzz is
# killed once its children are up; within 5 s no process may carry the marker:
#  1. the cpu backend, in-process engine, --jobs 2 (persistent workers)
#  2. a worker backend (one worker process: --jobs 1, the only count it takes) whose
#     program first starts a helper of its own: outside attnfuzz's reach but for its
#     process group
#  3. the libFuzzer engine, --jobs 2 (--fuzzer: a stand-in that starts a job and waits),
#     whose jobs are the controller's children
set -u
AF=${1:?usage: test_orphans.sh path/to/attnfuzz}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}"
command -v python3 >/dev/null || { echo "SKIP test_orphans: no python3"; exit 77; }
command -v pgrep >/dev/null || { echo "SKIP test_orphans: no pgrep"; exit 77; }
MARK=af-orphan-$$-$RANDOM
T=$(mktemp -d)
kill_marked() { local pids; pids=$(pgrep -f -- "$MARK"); [ -z "$pids" ] || kill -KILL $pids 2>/dev/null; }
cleanup() { kill_marked; rm -rf "$T"; }
trap cleanup EXIT
fail=0
count() { pgrep -f -- "${1:-$MARK}" | wc -l; }
wait_for() { # wait_for SECONDS TEST...: poll until the test holds
    local until=$((SECONDS + $1)); shift
    while [ $SECONDS -lt $until ]; do "$@" && return 0; sleep 0.2; done; return 1
}
at_least() { [ "$(count "$2")" -ge "$1" ]; }
none_left() { [ "$(count)" -eq 0 ]; }

# kill_and_check NAME PID: SIGKILL attnfuzz, then no process with the marker within 5 s
kill_and_check() {
    local name=$1 pid=$2
    local before
    before=$(count)
    kill -KILL "$pid"
    wait "$pid" 2>/dev/null
    if wait_for 5 none_left; then
        echo "ok   $name: $before processes with the marker, none left 5 s after kill -9"
    else
        echo "FAIL $name: left after kill -9 of attnfuzz:"
        ps -o pid,ppid,pgid,args -p "$(pgrep -d, -f -- "$MARK")" | cut -c1-160
        fail=1
        kill_marked
        wait_for 5 none_left
    fi
}

# 1. cpu backend: the campaign process and its two workers
"$AF" campaign --inprocess --jobs 2 --time 60 --seed 5 --backend cpu --out "$T/cpu-$MARK" >"$T/cpu.log" 2>&1 &
pid=$!
if wait_for 30 at_least 3 "$MARK"; then
    kill_and_check "cpu --jobs 2" $pid
else
    echo "FAIL cpu: no two workers within 30 s"; cat "$T/cpu.log"; fail=1; kill -KILL $pid 2>/dev/null
fi

# 2. worker backend: the worker program starts a helper, then becomes the reference worker
cat >"$T/worker-$MARK.sh" <<EOF
#!/bin/sh
python3 -c 'import time; time.sleep(60)' helper-$MARK &
exec python3 -m attnfuzz_worker.examples.reference_py
EOF
mkdir -p "$T/seed"
printf 'dtype = fp16\nbatch = 1\nheads = 1\nseqlen = 8\nhead_dim = 8\nmask = causal\n' >"$T/seed/a.case"
"$AF" campaign "$T/seed" --inprocess --jobs 1 --time 60 --seed 3 --max-work 4096 --backend worker:refpy \
    --worker-cmd "sh $T/worker-$MARK.sh" --out "$T/worker-out-$MARK" >"$T/worker.log" 2>&1 &
pid=$!
if wait_for 30 at_least 1 "helper-$MARK"; then
    kill_and_check "worker backend (the worker program's helper)" $pid
else
    echo "FAIL worker: no worker helper within 30 s"; cat "$T/worker.log"; fail=1; kill -KILL $pid 2>/dev/null
fi

# 3. libFuzzer engine: the controller (a stand-in) and its job
cat >"$T/fuzzer-$MARK" <<EOF
#!/bin/sh
python3 -c 'import time; time.sleep(60)' job-$MARK &
wait
EOF
chmod +x "$T/fuzzer-$MARK"
"$AF" campaign --fuzzer "$T/fuzzer-$MARK" --jobs 2 --time 60 --seed 5 --backend cpu --out "$T/lf-$MARK" \
    >"$T/lf.log" 2>&1 &
pid=$!
if wait_for 30 at_least 1 "job-$MARK"; then
    kill_and_check "libFuzzer engine (its controller and job)" $pid
else
    echo "FAIL libFuzzer: the stand-in's job did not start within 30 s"; cat "$T/lf.log"; fail=1; kill -KILL $pid 2>/dev/null
fi

[ $fail -eq 0 ] && echo "test_orphans: ok"
exit $fail
