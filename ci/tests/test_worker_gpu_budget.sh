#!/usr/bin/env bash
# test_worker_gpu_budget.sh ATTNFUZZ — a worker whose hello says device "cuda" runs its
# kernels on a GPU, so a campaign gives it the GPU work budget (2^48: long cases as a matter
# of course), as it does the cudnn backend; a worker on the CPU keeps the default 2^20
# (fuzz/fuzz.h, af_fuzz_campaign_work; backend flag AF_BACKEND_ON_GPU), and the GPU's
# per-case deadline (300 s; 60 s on the CPU). The test worker
# serves the pure-Python reference and only says which device it is on; each campaign is
# stopped with SIGINT once its first line (which names the budget) is out. Needs python3.
set -u
# AF, ROOT, PYTHONPATH, T, fail, check (and the skip without python3)
source "$(dirname "$0")/lib_pytargets.sh"
cat >"$T/dev.py" <<'PY'
import sys
from attnfuzz_worker.worker import Worker
from attnfuzz_worker.examples import reference_py as r

# the pure-Python kernel on the host; the hello says the device the test asks for (this
# test stops each campaign before a case would run)
w = Worker(r.kernel, "dev", device="cpu", dtypes=("fp16", "bf16"), supports=r.supports, mode="python")
w.device = sys.argv[1]
sys.exit(w.serve())
PY
mkdir -p "$T/seed"
printf 'dtype = fp16\nseqlen = 4\nhead_dim = 8\nseed = 1\n' >"$T/seed/tiny.case"
budget() { # budget DEVICE: the campaign's "max work" as its first line says it
    local dev=$1 log="$T/$1.log" pid i
    "$AF" campaign "$T/seed" --backend worker:dev --worker-cmd "python3 $T/dev.py $dev" --time 30 --jobs 1 \
        --seed 3 --out "$T/camp-$dev" >"$log" 2>&1 &
    pid=$!
    for i in $(seq 1 300); do
        grep -q "max work" "$log" && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -INT "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    sed -n 's/.*max work \([0-9]*\), deadline \([0-9]*\) s.*/\1 \2/p' "$log" | head -n 1
}
read -r cuda cuda_deadline <<<"$(budget cuda)"
read -r cpu cpu_deadline <<<"$(budget cpu)"
[ "${cuda_deadline:-}" = 300 ] && [ "${cpu_deadline:-}" = 60 ] && echo "ok   deadlines: cuda 300 s, cpu 60 s" ||
    { echo "FAIL deadlines: cuda '${cuda_deadline:-}' (expected 300), cpu '${cpu_deadline:-}' (expected 60)"; fail=1; }
if [ "$cuda" = 281474976710656 ]; then echo "ok   a worker on cuda gets the GPU budget (max work $cuda)"; else
    echo "FAIL a worker on cuda: max work '$cuda' (expected 2^48 = 281474976710656)"; cat "$T/cuda.log"; fail=1; fi
if [ "$cpu" = 1048576 ]; then echo "ok   a worker on the cpu keeps the default budget (max work $cpu)"; else
    echo "FAIL a worker on the cpu: max work '$cpu' (expected 2^20 = 1048576)"; cat "$T/cpu.log"; fail=1; fi
exit $fail
