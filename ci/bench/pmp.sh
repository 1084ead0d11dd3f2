#!/usr/bin/env bash
# pmp.sh OUT INTERVAL CMD... — a sampling profile of CMD without perf: CMD runs in the
# background and every INTERVAL seconds a debugger (gdb, else cuda-gdb) attached to it and
# to each of its descendants (a case's isolated child, workers) writes every thread's
# stack into OUT (appended, one "== sample N" block each). Fold the samples with
# `python3 ci/bench/pmp_fold.py OUT`. Each attach stops CMD for a moment, so
# its own timings grow; read the profile as shares, not seconds. Exit: CMD's.
set -u
out=${1:?usage: pmp.sh OUT INTERVAL CMD...}
interval=${2:?usage: pmp.sh OUT INTERVAL CMD...}
shift 2
dbg=$(command -v gdb || command -v cuda-gdb) || { echo "pmp.sh: no gdb or cuda-gdb" >&2; exit 2; }
: >"$out"
"$@" &
pid=$!
n=0
while kill -0 "$pid" 2>/dev/null; do
    sleep "$interval"
    kill -0 "$pid" 2>/dev/null || break
    n=$((n + 1))
    echo "== sample $n" >>"$out"
    procs=$pid
    todo=$pid
    while [ -n "$todo" ]; do # the process tree under CMD
        kids=$(for p in $todo; do pgrep -P "$p"; done)
        procs="$procs $kids"
        todo=$kids
    done
    for p in $procs; do
        timeout 30 "$dbg" -p "$p" -batch -nx -ex "set pagination off" -ex "thread apply all bt" >>"$out" 2>/dev/null
    done
done
wait "$pid"
