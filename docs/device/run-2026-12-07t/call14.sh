#!/usr/bin/env bash
# Device call (carry ["build-new"]: HEAD's stripped Release attnfuzz with the
# ATTNFUZZ_GPU_MPFR_BUDGET knob; about 7 min; first the GPU corpus once, for the staged
# input rows' check): where a mix case's CPU goes, by taking parts
# away one at a time. A sampling profile (call13 part 3) got 11 samples in 150 s (every
# attach of the debugger to a CUDA process is slow) and cannot split it. The first 80 cases
# of the bench's mix (ci/bench/gen_mix.py 600, seed 2026) at one worker, plans warm, each
# line: verdicts, wall, cases/s, CPU ms per case (user + sys of every process waited for):
#   base       the defaults
#   t1         --threads 1 (the oracle's and judge's passes on one thread each)
#   block      ATTNFUZZ_GPU_SYNC=block (no spinning while waiting for the GPU)
#   block-np   block and --no-probes
#   block-nc   block and ATTNFUZZ_GPU_MPFR_BUDGET=1 (the least certification: no case is
#              all-MPFR, a GPU-tier case certifies the fewest rows)
#   block-np-nc  both
#   block-1e6  block and ATTNFUZZ_GPU_MPFR_BUDGET=1e6 (a quarter of the default)
#   base2      the defaults again (the spread)
#   j8, j8-nc, j8-1e6  400 cases at --jobs 8: the defaults, ATTNFUZZ_GPU_MPFR_BUDGET=1, =1e6
# then the same 6 settings' ratios in the summary; the verdicts' stage means per setting.
B=build-new
source ci/device_preamble.sh
# 0. the staged input rows and gap margins (f5e1c2b and after) on the GPU corpus and the seeds with gaps:
#    no input_mutation finding; every gap case's verdict listed
timeout 100 $B/attnfuzz run corpora/gpu/*.case corpora/seed/*gaps*.case --backend cudnn --json > $R/corpus.jsonl 2> $R/corpus.err
echo "corpora/gpu: exit $? $(tail -n 1 $R/corpus.err); input_mutation findings: $(grep -c input_mutation $R/corpus.jsonl)" >> $S
grep -h '"case":"[^"]*gaps[^"]*"' $R/corpus.jsonl | python3 -c "
import json, sys
for l in sys.stdin:
    d = json.loads(l); f = d.get('findings') or []
    print('  %s: %s %s' % (d['case'], d['verdict'], (f[0].get('detail') or '')[:160] if f else ''))" >> $S
gzip -f $R/corpus.jsonl
mix=/tmp/mix
python3 ci/bench/gen_mix.py 600 $mix 2026 > /dev/null
export ATTNFUZZ_CUDNN_PLAN_DIR=/tmp/plans
timeout 45 $B/attnfuzz run $mix/*.case --backend cudnn --jobs 8 --json > /dev/null 2>&1
C=$(ls $mix/*.case | head -80)
run_set() {
  local label=$1; shift
  env "$@" timeout 100 python3 - "$R/$label" $B/attnfuzz run $C --backend cudnn --json $EXTRA <<'PY' >> $S 2>&1
import resource, subprocess, sys, time
t = time.monotonic()
subprocess.run(sys.argv[2:], stdout=open(sys.argv[1] + ".jsonl", "w"), stderr=open(sys.argv[1] + ".err", "w"))
e = time.monotonic() - t
r = resource.getrusage(resource.RUSAGE_CHILDREN)
n = sum(1 for line in open(sys.argv[1] + ".jsonl") if line.startswith("{") and '"verdict"' in line) or 1
print("%-12s %4d cases in %6.1f s: %5.2f cases/s, %6.1f ms wall/case, user %6.1f + sys %5.1f = %6.1f ms CPU/case (%.1f cores busy)" % (
    sys.argv[1].split("/")[-1], n, e, n / e, 1e3 * e / n, 1e3 * r.ru_utime / n, 1e3 * r.ru_stime / n,
    1e3 * (r.ru_utime + r.ru_stime) / n, (r.ru_utime + r.ru_stime) / e))
PY
}
EXTRA= run_set base X=1
EXTRA="--threads 1" run_set t1 X=1
EXTRA= run_set block ATTNFUZZ_GPU_SYNC=block
EXTRA=--no-probes run_set block-np ATTNFUZZ_GPU_SYNC=block
EXTRA= run_set block-nc ATTNFUZZ_GPU_SYNC=block ATTNFUZZ_GPU_MPFR_BUDGET=1
EXTRA=--no-probes run_set block-np-nc ATTNFUZZ_GPU_SYNC=block ATTNFUZZ_GPU_MPFR_BUDGET=1
EXTRA= run_set block-1e6 ATTNFUZZ_GPU_SYNC=block ATTNFUZZ_GPU_MPFR_BUDGET=1e6
EXTRA= run_set base2 X=1
C=$(ls $mix/*.case | head -400)
EXTRA="--jobs 8" run_set j8 X=1
EXTRA="--jobs 8" run_set j8-nc ATTNFUZZ_GPU_MPFR_BUDGET=1
EXTRA="--jobs 8" run_set j8-1e6 ATTNFUZZ_GPU_MPFR_BUDGET=1e6
for l in base t1 block block-np block-nc block-np-nc block-1e6 base2 j8 j8-nc j8-1e6; do
  echo "== $l $(tail -1 $R/$l.err)" >> $S
  python3 ci/bench/mix_stages.py $R/$l.jsonl 2>&1 | head -14 >> $S
done
for l in base t1 block block-np block-nc block-np-nc block-1e6 base2 j8 j8-nc j8-1e6; do gzip -f $R/$l.jsonl; rm -f $R/$l.err; done
cat $S
device_pack
