# lib_fp8_kind.sh — sourced by the end-to-end tests of an fp8 case kind
# (test_fp8_e5m2_end_to_end.sh, test_fp8_out_dtype_end_to_end.sh). The caller sets bin (the
# attnfuzz binary), tmp (a scratch folder), TIME (campaign seconds) and fail=0, then calls:
#   check NAME FILE REGEX          FILE must match REGEX (else FAIL, fail=1)
#   kind_campaign BUG WHAT LINE [SEED]  a TIME-second campaign (--seed SEED, default 11) from the plain fp8_e4m3 seed on
#                                  flash_fp8_bug:BUG must find it; every minimised finding
#                                  keeps the kind (a line matching LINE, grep -E) and the
#                                  first still fails (repro exits 1); WHAT names the kind
#   kind_dropped SEED LINE WHAT    flash_fp8_bug:row_scale (an O row x 1.5, any fp8 kind) on
#                                  SEED minimises to a case whose lines match LINE (the kind
#                                  dropped)
#   worker_declines SEED REGEX NAME  the reference_py worker declines SEED, saying REGEX
check() {
  if grep -Eq -- "$3" "$2"; then echo "ok   $1"; else echo "FAIL $1: no /$3/ in:"; tail -5 "$2"; fail=1; fi
}

kind_campaign() {
  local bug=$1 what=$2 line=$3 seed=${4:-11} out="$tmp/camp" rc n kept first rrc
  "$bin" campaign --time "$TIME" --stop-after-buckets 1 --jobs 1 --seed "$seed" --backend "flash_fp8_bug:$bug" \
    --out "$out" \
    corpora/seed/fp8-e4m3-causal.case > "$tmp/camp.log" 2>&1
  rc=$?
  n=$(ls "$out/findings" 2>/dev/null | wc -l)
  if [ "$rc" != 1 ] || [ "$n" -lt 1 ]; then
    echo "FAIL campaign on flash_fp8_bug:$bug: exit $rc, $n bucket(s)"; tail -3 "$tmp/camp.log"; fail=1
    return
  fi
  kept=$(grep -lE "$line" "$out"/findings/*/finding.case | wc -l)
  first=$(ls "$out/findings" | head -n 1)
  "$bin" repro "$out/findings/$first/finding.case" > "$tmp/repro.out" 2>&1
  rrc=$?
  if [ "$kept" != "$n" ] || [ "$rrc" != 1 ]; then
    echo "FAIL campaign: $kept of $n minimised findings keep $what; repro exit $rrc"; fail=1
  else
    echo "ok   a ${TIME} s campaign from the fp8_e4m3 seed finds $bug: $n bucket(s), each minimised with $what," \
      "repro fails"
  fi
}

kind_dropped() {
  local seed=$1 line=$2 what=$3 rc
  "$bin" minimize "$seed" -o "$tmp/row.min.case" --backend flash_fp8_bug:row_scale --max-runs 60 --quiet \
    > "$tmp/row.min" 2>&1
  rc=$?
  if [ "$rc" = 0 ] && [ -s "$tmp/row.min.case" ] && grep -Eq "$line" "$tmp/row.min.case"; then
    echo "ok   flash_fp8_bug:row_scale on the $what seed minimises with $what dropped"
  else
    echo "FAIL minimise row_scale: exit $rc; $(grep -E '^(dtype|out_dtype)' "$tmp/row.min.case" 2>/dev/null)"
    tail -3 "$tmp/row.min"
    fail=1
  fi
}

worker_declines() {
  local seed=$1 regex=$2 name=$3
  if ! command -v python3 > /dev/null; then
    echo "SKIP worker decline: no python3"
    return
  fi
  PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}" "$bin" run "$seed" --backend worker:refpy \
    --worker-cmd "python3 -m attnfuzz_worker.examples.reference_py" > "$tmp/worker.out" 2>&1
  check "$name" "$tmp/worker.out" "$regex"
}
