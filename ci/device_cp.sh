#!/usr/bin/env bash
# device_cp.sh BUILD [CASES...] — on the GPU machine: CP over a worker target with virtual
# ranks (issue 14), at the FROST seed's shapes (b2 hq8 hkv4 d512 causal bf16;
# corpora/seed-cp/frost-shapes-cp2.case and corpora/gpu-cp/*.case: cp 2 and 4, every comm
# type). Default: worker:torch-sdpa --engine efficient, whose backward_given runs
# aten._efficient_attention_backward from the CP wrapper's global O and LSE
# (docs/worker-protocol.md). Once per transport: shm (the path tested on a CPU) and auto
# (CUDA IPC where it works). Writes $OUT/cp.txt (one summary line per run) and each run's
# verdict lines to $OUT/cp-<target>[-<engine>]-<transport>.out.
#   OUT=dir bash ci/device_cp.sh build
# Environment: ATTNFUZZ_PYTHON (default python3), CP_TARGET (a worker target of
# python/targets/NAME.conf, default torch-sdpa), CP_ENGINE (default efficient for torch-sdpa,
# else the target's default), CP_WORKER_ARGS (extra arguments of the target's command, e.g.
# "--device cpu" for a dry run with CP_ENGINE=math), CP_FORWARD=1 (forward copies of the
# cases: `backward = no`, for targets without backward_given), CP_TRANSPORTS (default
# "shm auto"), CP_TIMEOUT (seconds per run, default 540).
set -u
BUILD=${1:?usage: OUT=dir bash ci/device_cp.sh BUILD [CASES...]}
shift
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:?set OUT to the folder for the results}
mkdir -p "$OUT"
AF=$BUILD/attnfuzz
[ -x "$AF" ] || { echo "device_cp: no $AF (build first)" | tee -a "$OUT/cp.txt"; exit 2; }
export PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}"
PY=${ATTNFUZZ_PYTHON:-python3}
unset ATTNFUZZ_PYTHON # a name of this script, not of attnfuzz (which warns about unknown ATTNFUZZ_ names)
TARGET=${CP_TARGET:-torch-sdpa}
CONF=$ROOT/python/targets/$TARGET.conf
[ -f "$CONF" ] || { echo "device_cp: no worker target $TARGET ($CONF)" | tee -a "$OUT/cp.txt"; exit 2; }
if [ "$TARGET" = torch-sdpa ]; then ENGINE=${CP_ENGINE:-efficient}; else ENGINE=${CP_ENGINE:-}; fi
LIMIT=${CP_TIMEOUT:-540}
if [ $# -gt 0 ]; then cases=("$@"); else cases=("$ROOT/corpora/seed-cp/frost-shapes-cp2.case" "$ROOT"/corpora/gpu-cp/*.case); fi
# the target's command, its python3 replaced by $PY
CMD="$PY $(sed -n 's/^command = python3 //p' "$CONF") ${CP_WORKER_ARGS:-}"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
kind=forward+backward
if [ "${CP_FORWARD:-0}" = 1 ]; then
    kind=forward
    mkdir -p "$T/fwd"
    for c in "${cases[@]}"; do sed 's/^backward = yes/backward = no/' "$c" >"$T/fwd/$(basename "$c")"; done
    cases=("$T"/fwd/*.case)
fi

for transport in ${CP_TRANSPORTS:-shm auto}; do
    printf 'command = %s\nname = %s\ntimeout = 300\nstart_timeout = 300\ntransport = %s\n' \
        "$CMD" "$TARGET" "$transport" >"$T/$transport.conf"
    log=$OUT/cp-$TARGET${ENGINE:+-$ENGINE}-$transport.out
    start=$(date +%s)
    timeout -k 10 "$LIMIT" "$AF" run "${cases[@]}" --backend "worker:$TARGET" ${ENGINE:+--engine "$ENGINE"} \
        --worker-config "$T/$transport.conf" >"$log" 2>"${log%.out}.err"
    rc=$?
    n_pass=$(grep -c ': pass' "$log")
    n_decl=$(grep -c ': declined' "$log")
    n_find=$(grep -c ': FINDING' "$log")
    n_bwd_decl=$(grep -c 'declined.*backward_given' "$log")
    echo "cp $kind over worker:$TARGET engine ${ENGINE:-default} transport $transport: ${#cases[@]} cases, pass $n_pass," \
        "declined $n_decl (for backward_given: $n_bwd_decl), findings $n_find, rc $rc, $(($(date +%s) - start)) s" |
        tee -a "$OUT/cp.txt"
done
exit 0
