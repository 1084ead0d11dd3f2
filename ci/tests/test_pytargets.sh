#!/usr/bin/env bash
# test_pytargets.sh ATTNFUZZ — the Python worker targets of issue 13 in CPU mode, end to
# end through `attnfuzz run` and `attnfuzz campaign`: FlexAttention (eager and compiled),
# JAX dot_product_attention (xla; cudnn declines on a CPU), the Triton MXFP8 pair under
# TRITON_INTERPRET=1 (ordinary recipe: a leak; own-block recipe: none). Cases:
# ci/tests/pytargets_cases/. Needs torch, jax and triton importable by $ATTNFUZZ_PYTHON
# (default python3); without them: exit 77 (skipped), naming the missing module.
# PYTARGETS_CAMPAIGN_S sets each campaign's fuzzing time (default 90 s).
set -u
AF=${1:?usage: test_pytargets.sh path/to/attnfuzz}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=${ATTNFUZZ_PYTHON:-python3}
export PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}"
command -v "$PY" >/dev/null || { echo "SKIP test_pytargets: no $PY (set ATTNFUZZ_PYTHON)"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
if ! "$PY" -m attnfuzz_worker.examples.targets --check flex-attention jax-dpa triton-mxfp8-ordinary >"$T/check" 2>&1; then
    echo "SKIP test_pytargets: a target's modules do not import with $PY (set ATTNFUZZ_PYTHON):"
    grep "cannot start\|unknown\|Error" "$T/check"
    exit 77
fi
C="$ROOT/ci/tests/pytargets_cases"
fail=0
check() { # check NAME FILE REGEX: FILE must match REGEX
    if grep -Eq -- "$3" "$2"; then echo "ok   $1"; else echo "FAIL $1: no /$3/ in:"; cat "$2"; fail=1; fi
}
verdict() { # verdict FILE CASE BACKEND REGEX: the line of CASE must match REGEX
    check "$2 [$3]: $4" "$1" "$2\.case \[$3[^]]*\]: $4"
}
FWD16="fp16-causal-tl-fwd fp16-gqa-window-fwd fp16-d512-fwd bf16-causal-br-padded-fwd bf16-thd-ragged-fwd bf16-window-masked-rows-fwd"
MX="mxfp8-causal-s64-d16 mxfp8-block-range-s64-d16 mxfp8-window-br-s48-d32"
files() { for n in "$@"; do printf '%s ' "$C/$n.case"; done; }
"$PY" -m attnfuzz_worker.examples.targets | grep -v "cannot start"

# 1. FlexAttention: forward passes (every mask kind, GQA, padding, ragged, d 512); on a CPU
#    FlexAttention refuses backward: a decline quoting it; mxfp8 declined by dtype
FLEX="$PY -m attnfuzz_worker.examples.flex_attention --device cpu"
"$AF" run $(files $FWD16 fp16-causal-bwd mxfp8-causal-s64-d16) --backend worker:flex --engine eager \
    --worker-cmd "$FLEX" >"$T/flex.out" 2>"$T/flex.err"
for n in $FWD16; do verdict "$T/flex.out" "$n" "worker:flex eager" "pass"; done
verdict "$T/flex.out" fp16-causal-bwd "worker:flex eager" "declined .*FlexAttention does not support backward on CPU"
verdict "$T/flex.out" mxfp8-causal-s64-d16 "worker:flex" "declined .*dtype mxfp8 is not among the worker's dtypes"
# compiled on a CPU: inductor's CPU flex_attention (torch 2.15) serves neither the LSE nor
# backward: declines quoting inductor / FlexAttention (the H200 run is the compiled test)
"$AF" run $(files fp16-causal-tl-fwd fp16-causal-bwd) --backend worker:flex --engine compiled \
    --worker-cmd "$FLEX" >"$T/flexc.out" 2>"$T/flexc.err"
verdict "$T/flexc.out" fp16-causal-tl-fwd "worker:flex compiled" "declined .*cannot compile this problem: .*return_lse"
verdict "$T/flexc.out" fp16-causal-bwd "worker:flex compiled" "declined .*refuses: .*does not support backward on CPU"

# 2. JAX: xla passes forward and backward with its translations declared in the engine
#    name; --raw shows JAX's own conventions as findings; cudnn declines on a CPU
JAX="$PY -m attnfuzz_worker.examples.jax_dpa --device cpu"
"$AF" run $(files $FWD16 fp16-causal-bwd mxfp8-causal-s64-d16) --backend worker:jax --engine xla \
    --worker-cmd "$JAX" >"$T/jax.out" 2>"$T/jax.err"
for n in $FWD16 fp16-causal-bwd; do verdict "$T/jax.out" "$n" "worker:jax xla\+lse32" "pass"; done
verdict "$T/jax.out" bf16-window-masked-rows-fwd "worker:jax xla\+lse32\+masked-rows" "pass"
verdict "$T/jax.out" mxfp8-causal-s64-d16 "worker:jax" "declined .*dtype mxfp8 is not among the worker's dtypes"
"$AF" run $(files fp16-causal-tl-fwd bf16-window-masked-rows-fwd) --backend worker:jax --engine xla \
    --worker-cmd "$JAX --raw" >"$T/jaxraw.out" 2>"$T/jaxraw.err"
verdict "$T/jaxraw.out" fp16-causal-tl-fwd "worker:jax xla" "FINDING mismatch LSE"
verdict "$T/jaxraw.out" bf16-window-masked-rows-fwd "worker:jax xla" "FINDING convention .*fully masked row"
"$AF" run $(files fp16-causal-tl-fwd) --backend worker:jax --engine cudnn --worker-cmd "$JAX" >"$T/jaxc.out" 2>"$T/jaxc.err"
verdict "$T/jaxc.out" fp16-causal-tl-fwd "worker:jax cudnn" "declined .*jax_dpa\[cudnn\] refused: cuDNN is not detected"

# 3. Triton MXFP8 in the interpreter: both recipes pass the mxfp8 cases and decline the
#    rest with their reasons; the ordinary recipe leaks on a block shared with future keys
MXC="$PY -m attnfuzz_worker.examples.triton_mxfp8 --device cpu --recipe"
for r in ordinary own-block; do
    "$AF" run $(files $MX mxfp8-d72 mxfp8-bwd fp16-causal-tl-fwd mxfp8-sq1-skv3-dv128) --backend "worker:$r" \
        --worker-cmd "$MXC $r" >"$T/$r.out" 2>"$T/$r.err"
    for n in $MX; do
        # the window's hidden keys 26.. share block 0 with visible keys: the ordinary recipe leaks
        [ "$r/$n" = ordinary/mxfp8-window-br-s48-d32 ] || verdict "$T/$r.out" "$n" "worker:$r" "pass"
    done
    verdict "$T/$r.out" mxfp8-d72 "worker:$r" "declined .*head_dim_qk = 72 \(the kernel takes powers of two"
    verdict "$T/$r.out" mxfp8-bwd "worker:$r" "declined .*backward is not written"
    verdict "$T/$r.out" fp16-causal-tl-fwd "worker:$r" "declined .*dtype fp16 is not among the worker's dtypes"
done
verdict "$T/ordinary.out" mxfp8-sq1-skv3-dv128 "worker:ordinary" "FINDING leak O"
verdict "$T/ordinary.out" mxfp8-window-br-s48-d32 "worker:ordinary" "FINDING leak O"
verdict "$T/own-block.out" mxfp8-sq1-skv3-dv128 "worker:own-block" "pass"
# the MXFP8 seed itself (s 64, d 64, causal): the block-edge set shrinks the hidden keys of the
# row's 32-token block (judge/probes/visibility.c), the block's V scale drops, a visible value
# re-quantised with it saturates: a leak on the ordinary recipe, none on the own-block one
for r in ordinary own-block; do
    "$AF" run "$ROOT/corpora/seed/mxfp8-causal.case" --backend "worker:$r" --worker-cmd "$MXC $r" >"$T/seed-$r.out" 2>&1
done
check "MXFP8 seed leaks on the ordinary recipe (block edge)" "$T/seed-ordinary.out" "FINDING leak O .*block edge"
check "MXFP8 seed passes on the own-block recipe" "$T/seed-own-block.out" "mxfp8-causal.case \[worker:own-block\]: pass"

# 4. campaigns of the same length from the mxfp8 seeds: the ordinary recipe reports a leak,
#    minimised to a case whose perturbed keys share a 32-token block with the moved row;
#    the own-block recipe reports none
mkdir -p "$T/seed"
for n in $MX; do cp "$C/$n.case" "$T/seed/"; done
cp "$ROOT/corpora/seed/mxfp8-causal.case" "$T/seed/"
secs=${PYTARGETS_CAMPAIGN_S:-90}
for r in ordinary own-block; do
    "$AF" campaign "$T/seed" --time "$secs" --seed 1 --max-work 65536 --backend "worker:$r" --worker-cmd "$MXC $r" \
        --out "$T/camp-$r" >"$T/camp-$r.log" 2>&1
    echo "campaign $r ($secs s): exit $? $(grep -E 'cases/s' "$T/camp-$r.log" | tail -1 | sed 's/.*\]: //')"
done
check "ordinary campaign: a leak bucket" "$T/camp-ordinary.log" "new bucket [0-9a-f]+: leak\||bucket [0-9a-f]+.*leak"
"$PY" - "$T/camp-ordinary/findings" <<'PYEOF' >"$T/block.out" 2>&1
import glob, json, re, sys
# a leak finding whose perturbed keys share a 32-token block with the moved row's visible keys
for path in glob.glob(sys.argv[1] + "/*/verdict.json"):
    for f in json.load(open(path)).get("findings", []):
        m = re.search(r"K/V keys ([0-9.,]+) .*\(visible keys (\d+)\.\.(\d+)\)", f.get("detail", ""))
        if f.get("kind") != "leak" or not m:
            continue
        keys = set()
        for part in m.group(1).split(","):
            lo, _, hi = part.partition("..")
            keys.update(range(int(lo), int(hi or lo) + 1))
        blocks = {int(m.group(2)) // 32, int(m.group(3)) // 32}
        if any(k // 32 in blocks for k in keys):
            print("shared block: %s: %s" % (path.split("/")[-2], f["detail"][:160]))
            sys.exit(0)
print("no leak finding with a perturbed key in the moved row's 32-token block")
sys.exit(1)
PYEOF
check "ordinary campaign: a leak whose perturbed keys share the moved row's 32-token block" "$T/block.out" "^shared block: "
# minimisation needs the leak to reproduce on a rerun, which a payload-only perturbation
# gives only sometimes (docs/targets.md): said, not asserted
for b in "$T"/camp-ordinary/findings/*/; do
    [ -f "$b/original.case" ] && m=minimised || m="kept as found"
    echo "info ordinary bucket $(basename "$b"): $m; $(grep -E '^(seqlen|head_dim)' "$b/finding.case" | tr '\n' ' ')"
done
if grep -rqs '"kind": *"leak"' "$T/camp-own-block/findings" || grep -q "bucket [0-9a-f]*: leak" "$T/camp-own-block.log"; then
    echo "FAIL own-block campaign reported a leak:"; grep -rl '"kind": *"leak"' "$T/camp-own-block/findings"; fail=1
else
    echo "ok   own-block campaign: no leak in $secs s ($(grep -c . "$T/camp-own-block.log") log lines)"
fi

[ $fail -eq 0 ] && echo "test_pytargets: all checks passed"
exit $fail
