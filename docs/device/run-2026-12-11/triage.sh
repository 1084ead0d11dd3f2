#!/usr/bin/env bash
# device call (triage branch): the candidate buckets of the 2026-12-11 cudnn campaign
# (docs/cudnn-findings.md, "The H200 campaign of 2026-12-11"), each replayed with the
# variations that tell cuDNN from the harness, on the system cuDNN (9.14) and, where marked,
# the torch venv's (9.19, LD_LIBRARY_PATH=$VENV_CUDNN first, as run-2026-12-10/falsealarm.sh).
#   A. ALiBi without a mask (005429614587, cf297360f1df): --engine all; forward-only copies
#      on their own graph (ATTNFUZZ_CUDNN_PLAN_REUSE=0: no seq_len tensors, the shift
#      s_kv - s_q by value) against the same with seqlens given (the shift from the seq_len
#      tensors); s_q = s_kv as the control (no shift at all).
#   B. thd GQA decode, Stats of head 1 unwritten (0d21e21a50be, e62906a0457d): --engine
#      all; MHA (heads_kv = 2), no padding (seqlen_kv = 1), s_q = 2, and bshd.
#   C. thd d_qk 160 / d_v 8 backward, dK columns 128.. unwritten (f9223c4b7a72): --engine
#      all; bshd; d_qk 128 and 192.
#   D. bf16 thd d 256 GQA 6:1 backward (03a31bd5e796): the default engine pair and the
#      same on cuDNN 9.19; heads_kv = 6 (MHA).
#   E. fp16 dV one subnormal step (60d738c3ea17): --engine all on both versions.
#   F. bf16 s_kv 115803 stride_gap 3 (b4c3ab327ec2): PLAN_REUSE=0; stride_gap 8 control.
# Build: the lead's Release build-dev (ci/make_devbuild.sh)     carry: ["build-dev"]
# Runtime: about 3 minutes (every command under its own timeout; the script stops starting
# new ones after 220 s).
source ci/device_preamble.sh
F=docs/device/run-2026-12-11/c2/r/f/findings
C=$R/cases
mkdir -p $C
T0=$(date +%s)
# variant NAME BUCKET SED-EXPR...: the bucket's finding.case without its engine line, edited
variant() {
    local name=$1 bucket=$2
    shift 2
    local args=()
    for e in "$@"; do args+=(-e "$e"); done
    sed -e '/^engine = /d' -e '/^backend = /d' "${args[@]}" $F/$bucket/finding.case > $C/$name.case
}
# rep LABEL LIB ENV TIMEOUT CASE...: attnfuzz run on cudnn, --engine all unless ENGINE names one
# (ENGINE=heuristic: no --engine, the first config that finalizes); LIB system or venv
rep() {
    local label=$1 lib=$2 envs=$3 tmo=$4
    shift 4
    if [ $(($(date +%s) - T0)) -gt ${TRIAGE_S:-220} ]; then echo "$label: skipped (time)" >> $S; return; fi
    local lp=$LD_LIBRARY_PATH
    if [ "$lib" = venv ]; then
        [ -z "$VENV_CUDNN" ] && { echo "$label: venv has no cuDNN" >> $S; return; }
        lp="$VENV_CUDNN:$LD_LIBRARY_PATH"
    fi
    local eng=(--engine "${ENGINE:-all}")
    [ "${ENGINE:-}" = heuristic ] && eng=()
    (
        export LD_LIBRARY_PATH="$lp"
        [ -n "$envs" ] && export "$envs"
        stamp "$label" timeout $tmo $B/attnfuzz run "$@" --backend cudnn "${eng[@]}" > $R/$label.txt 2>&1
    )
    grep -h "FINDING\|^run:" $R/$label.txt | cut -c1-260 | sort | uniq -c | sort -rn | head -8 >> $S
}
# A. ALiBi
variant alibi-bwd 005429614587
variant alibi-paged cf297360f1df
variant alibi-fwd 005429614587 's/^backward = .*/backward = no/'
variant alibi-fwd-seqlens 005429614587 's/^backward = .*/backward = no/' 's/^mask = .*/mask = padding/' '/^seqlen_kv = /a seqlens_q = 2,2\nseqlens_kv = 3,3'
variant alibi-fwd-sq3 005429614587 's/^backward = .*/backward = no/' 's/^seqlen_q = .*/seqlen_q = 3/'
rep alibi-914 system "" 40 $C/alibi-bwd.case $C/alibi-paged.case
rep alibi-919 venv "" 40 $C/alibi-bwd.case $C/alibi-paged.case
rep alibi-fwd-own-graph system ATTNFUZZ_CUDNN_PLAN_REUSE=0 30 $C/alibi-fwd.case
rep alibi-fwd-seqlens system ATTNFUZZ_CUDNN_PLAN_REUSE=0 30 $C/alibi-fwd-seqlens.case
rep alibi-fwd-sq-eq-skv system ATTNFUZZ_CUDNN_PLAN_REUSE=0 30 $C/alibi-fwd-sq3.case
# B. thd decode GQA, Stats head 1
variant lse-fwd e62906a0457d
variant lse-bwd 0d21e21a50be
variant lse-mha e62906a0457d 's/^heads_kv = .*/heads_kv = 2/'
variant lse-nopad e62906a0457d 's/^seqlen_kv = .*/seqlen_kv = 1/'
variant lse-sq2 e62906a0457d 's/^seqlen_q = .*/seqlen_q = 2/' 's/^seqlens_q = .*/seqlens_q = 2/'
variant lse-bshd e62906a0457d 's/^layout = .*/layout = bshd/' '/^thd_gap/d' 's/^mask = .*/mask = padding/'
rep lse-914 system "" 40 $C/lse-fwd.case $C/lse-bwd.case
rep lse-919 venv "" 40 $C/lse-fwd.case $C/lse-bwd.case
rep lse-variants-914 system "" 40 $C/lse-mha.case $C/lse-nopad.case $C/lse-sq2.case $C/lse-bshd.case
# C. d_qk 160 backward
variant dk160 f9223c4b7a72
variant dk160-bshd f9223c4b7a72 's/^layout = .*/layout = bshd/' '/^thd_gap/d' 's/^mask = .*/mask = padding/'
variant dk128 f9223c4b7a72 's/^head_dim_qk = .*/head_dim_qk = 128/'
variant dk192 f9223c4b7a72 's/^head_dim_qk = .*/head_dim_qk = 192/'
rep dk160-914 system "" 40 $C/dk160.case $C/dk160-bshd.case $C/dk128.case $C/dk192.case
rep dk160-919 venv "" 40 $C/dk160.case $C/dk160-bshd.case
# D. bf16 thd d 256 GQA 6:1 backward (large: the campaign's engine pair only)
variant d256 03a31bd5e796
variant d256-mha 03a31bd5e796 's/^heads_kv = .*/heads_kv = 6/'
ENGINE=eng2_k24=7+bwd_eng2_k24=26 rep d256-914 system "" 60 $C/d256.case $C/d256-mha.case
ENGINE=heuristic rep d256-919 venv "" 40 $C/d256.case
# E. dV one fp16 subnormal step
variant dv-sub 60d738c3ea17
rep dv-sub-914 system "" 30 $C/dv-sub.case
rep dv-sub-919 venv "" 30 $C/dv-sub.case
# F. bf16 s_kv 115803, stride_gap 3, on its own graph; stride_gap 8 control
variant long-gap3 b4c3ab327ec2
variant long-gap8 b4c3ab327ec2 's/^stride_gap = .*/stride_gap = 8/'
ENGINE=eng2_k24=7 rep long-914 system ATTNFUZZ_CUDNN_PLAN_REUSE=0 60 $C/long-gap3.case $C/long-gap8.case
echo "triage: $(($(date +%s) - T0)) s" >> $S
tail -120 $S
device_pack
