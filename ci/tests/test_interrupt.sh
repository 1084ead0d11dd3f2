#!/usr/bin/env bash
# test_interrupt.sh ATTNFUZZ — nothing lost: SIGTERM / SIGINT stop a campaign with its
# reports and the "interrupted" exit code (130); a SIGKILL during minimisation leaves
# findings in DIR/pending that the next `triage` stores unminimised and counts (stats,
# --fail-on-findings); one planted hang is minimised once, not once per raw signature.
set -u
bin=${1:?usage: test_interrupt.sh path/to/attnfuzz}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
plugins=$(dirname "$bin")/plugins_misbehave
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
say() { echo "$@"; }
bad() { echo "FAIL $*"; fail=$((fail+1)); }
json() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$@"; }
wait_for() { # wait_for SECONDS TEST... : poll until the test holds
  local until=$((SECONDS + $1)); shift
  while [ $SECONDS -lt $until ]; do "$@" && return 0; sleep 0.2; done; return 1
}
has_pending() { ls "$1"/pending/*.case >/dev/null 2>&1; }
has_finding() { [ -n "$(ls "$1"/findings 2>/dev/null)" ] || has_pending "$1"; }

# 1. SIGTERM and SIGINT: reports written, exit 130, stats say interrupted
for sig in TERM INT; do
  d=$tmp/sig-$sig
  say "campaign on planted:scale_ignored, SIG$sig once a finding exists (log: $d.log)"
  "$bin" campaign --time 120 --backend planted:scale_ignored --inprocess --jobs 1 --seed 7 --out "$d" >"$d.log" 2>&1 &
  pid=$!
  wait_for 60 has_finding "$d" || bad "SIG$sig: no finding within 60 s"
  kill -$sig $pid
  start=$SECONDS
  wait $pid; rc=$?
  took=$((SECONDS - start))
  [ "$rc" = 130 ] && say "ok   SIG$sig: exit 130 after $took s" || { bad "SIG$sig: exit $rc, expected 130"; tail -5 "$d.log"; }
  [ "$took" -le 60 ] || bad "SIG$sig: took $took s to stop"
  for f in stats.json report.json report.html; do [ -s "$d/$f" ] || bad "SIG$sig: no $f"; done
  [ "$(json "$d/stats.json" interrupted)" = True ] && say "ok   SIG$sig: stats.json interrupted" || bad "SIG$sig: stats.json not interrupted"
  [ "$(json "$d/stats.json" findings)" -ge 1 ] && [ "$(json "$d/stats.json" buckets)" -ge 1 ] && say "ok   SIG$sig: findings kept" || bad "SIG$sig: findings lost: $(cat "$d/stats.json")"
  ls "$d"/pending/*.case >/dev/null 2>&1 && bad "SIG$sig: findings left in pending/"
done

# 2. SIGKILL during minimisation: pending/ survives; triage stores and counts it
d=$tmp/kill9
say "campaign on planted:scale_ignored, SIGKILL while a finding is pending"
"$bin" campaign --time 120 --backend planted:scale_ignored --inprocess --jobs 1 --seed 7 --out "$d" >"$d.log" 2>&1 &
pid=$!
if wait_for 60 has_pending "$d"; then
  kill -9 $pid; wait $pid 2>/dev/null
  n_pending=$(ls "$d"/pending/*.case 2>/dev/null | wc -l)
  say "killed with $n_pending finding(s) pending; stats.json says $(json "$d/stats.json" findings) finding(s)"
  out=$("$bin" triage "$d" --fail-on-findings 2>&1); rc=$?
  [ "$rc" = 1 ] && say "ok   triage --fail-on-findings exits 1" || { bad "triage after kill -9: exit $rc"; echo "$out" | tail -3; }
  echo "$out" | grep -q "stored unminimised" && say "ok   triage says they were unminimised" || bad "triage did not say: $out"
  [ "$(json "$d/stats.json" unminimised)" -ge 1 ] && [ "$(json "$d/stats.json" findings)" -ge 1 ] && say "ok   stats.json counts them" || bad "stats.json: $(cat "$d/stats.json")"
  has_pending "$d" && bad "pending/ not emptied by triage"
else
  bad "no pending finding within 60 s"
fi

# 3. one planted hang: one minimisation, one bucket
d=$tmp/hang
say "campaign on misbehave_loop (every case hangs), 12 s"
"$bin" campaign --time 12 --backend "plugin:$plugins/misbehave_loop.so" --inprocess --jobs 2 --deadline 1 --minimize-runs 3 --seed 3 --out "$d" >"$d.log" 2>&1
mins=$(json "$d/stats.json" minimised); buckets=$(json "$d/stats.json" buckets); raws=$(ls "$d/rawmap" | wc -l)
if [ "$mins" = 1 ] && [ "$buckets" = 1 ] && [ "$raws" -ge 1 ]; then say "ok   one hang: $raws raw signature(s), 1 minimisation, 1 bucket"
else bad "hang: $mins minimisations, $buckets buckets, $raws raw signatures"; tail -5 "$d.log"; fi

[ "$fail" = 0 ] && echo "all interrupt checks passed" || echo "$fail interrupt check(s) failed"
[ "$fail" = 0 ]
