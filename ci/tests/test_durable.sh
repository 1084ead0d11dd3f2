#!/usr/bin/env bash
# test_durable.sh ATTNFUZZ — nothing lost, nothing deleted, nothing run: the faults a
# campaign must survive honestly.
#   1. findings cannot be stored (DIR/findings a symlink loop; an injected EIO on every
#      write under findings/; a chmod 000 folder when not root): exit 6 naming the path
#      and the reason, never a pass; stats.json and the reports agree; triage
#      --fail-on-findings exits 1 and stores what was left in pending/;
#   2. a disk that fills mid-campaign (ATTNFUZZ_FAIL_WRITE=ENOSPC on rawmap/ or pending/;
#      a 1 MB tmpfs when this user may mount one): exit 6 with "No space left on device"
#      and the path, no finding lost, stats.json and the reports agree;
#   3. DIR/corpus a symlink (to a shared folder; to DIR itself): refused before anything
#      is written, nothing outside DIR deleted, DIR/lock survives; a file the campaign did
#      not write in a real DIR/corpus survives the corpus merge;
#   4. seeds: a FIFO never blocks, a symlinked seed is not read (its target's text is
#      never printed), a malformed one is named with file:line, counted (seeds_skipped)
#      and skipped, all-bad is refused (exit 2);
#   5. exit codes: an unusable output folder is 6 in campaign, triage, merge and
#      minimize; triage of a folder that is no campaign is 4 and writes nothing;
#   6. case files: exactly 16 MiB loads, one byte more is refused; a UTF-8 BOM is skipped.
# After every campaign fault, stats.json's findings and buckets equal report.json's and
# the bucket counts on disk (agree).
set -u
bin=${1:?usage: test_durable.sh path/to/attnfuzz}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
command -v python3 >/dev/null || { echo "SKIP test_durable: no python3"; exit 77; }
# Under ASan, LeakSanitizer's tracer crashed at the campaign's exit ("Tracer caught signal
# 11") in 4 of 6 runs once the plugin folder held a 64th plugin (0 of 4 with that .so moved
# out, 0 of 3 with use_tls=0): its scan of the main thread's thread-local storage. Without
# TLS among the roots the leak check can only report more, never less; the campaign
# parents here hold no TLS-only memory (MPFR's TLS caches live in the children, which
# _exit). The full ASan run keeps TLS roots: there MPFR's caches would read as leaks.
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}use_tls=0"
tmp=$(mktemp -d)
mounted=""
trap '[ -n "$mounted" ] && umount "$mounted" 2>/dev/null; chmod -R u+rwx "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
fail=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
planted=planted:scale_ignored
camp() { # camp DIR [campaign options...]: a short planted campaign (ends at its first bucket, or after 20 s: a loaded machine still reaches the bug); exit code in $rc, log in DIR.log
  local d=$1; shift
  "$bin" campaign --inprocess --jobs 1 --seed 7 --time 20 --stop-after-buckets 1 --total-time 40 --minimize-runs 20 --out "$d" "$@" >"$d.log" 2>&1
  rc=$?
}
agree() { # agree DIR LABEL: stats.json == report.json == the buckets on disk
  python3 - "$1" "$2" <<'PY' || fail=$((fail + 1))
import json, os, sys
d, label = sys.argv[1], sys.argv[2]
s = json.load(open(f"{d}/stats.json")); r = json.load(open(f"{d}/report.json"))["summary"]
counts = {}
for b in sorted(os.listdir(f"{d}/findings")) if os.path.isdir(f"{d}/findings") else []:
    try: counts[b] = json.load(open(f"{d}/findings/{b}/verdict.json"))["count"]
    except (OSError, ValueError, KeyError): pass  # a bucket a failed write left empty: not counted anywhere
problems = []
if not (s["findings"] == r["findings"] == sum(counts.values())):
    problems.append(f"findings: stats {s['findings']}, report {r['findings']}, on disk {sum(counts.values())}")
if not (s["buckets"] == r["buckets"] == len(counts)):
    problems.append(f"buckets: stats {s['buckets']}, report {r['buckets']}, on disk {len(counts)}")
for k in ("write_errors", "findings_unstored"):
    if s.get(k) != r.get(k): problems.append(f"{k}: stats {s.get(k)}, report {r.get(k)}")
if problems: print(f"FAIL {label}: stats.json and the reports disagree: " + "; ".join(problems)); sys.exit(1)
print(f"ok   {label}: stats.json = report.json = disk: {s['findings']} finding(s), {s['buckets']} bucket(s), "
      f"write_errors {s.get('write_errors')}, findings_unstored {s.get('findings_unstored')}")
PY
}
json() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$@"; }
n_pending() { ls "$1"/pending/*.case 2>/dev/null | wc -l; }

# ---- 1. findings cannot be stored ------------------------------------------------------
d=$tmp/loop; mkdir -p "$d"; ln -s loop2 "$d/loop1"; ln -s loop1 "$d/loop2"; ln -s loop1 "$d/findings"
camp "$d" --backend $planted
if [ "$rc" = 6 ] && grep -q "$d/findings is a symbolic link" "$d.log" && [ ! -e "$d/stats.json" ]; then
  ok "findings/ a symlink loop: exit 6 before anything is written: $(grep 'symbolic link' "$d.log")"
else bad "findings/ a symlink loop: exit $rc (expected 6, DIR untouched)"; tail -3 "$d.log"; fi

d=$tmp/eio
ATTNFUZZ_FAIL_WRITE=EIO:/findings/ camp "$d" --backend $planted
if [ "$rc" = 6 ] && grep -q "cannot store a finding: write $d/findings/[0-9a-f]*/[a-z.]*: Input/output error" "$d.log" \
   && [ "$(json "$d/stats.json" write_errors)" -ge 1 ] && [ "$(json "$d/stats.json" findings_unstored)" -ge 1 ]; then
  ok "EIO under findings/: exit 6, named: $(grep -m1 'cannot store' "$d.log")"
else bad "EIO under findings/: exit $rc (expected 6 with the path and Input/output error)"; tail -4 "$d.log"; fi
agree "$d" "EIO under findings/"
left=$(n_pending "$d")
out=$("$bin" triage "$d" --fail-on-findings 2>&1); trc=$?
if [ "$trc" = 1 ] && [ "$left" -ge 1 ] && [ "$(n_pending "$d")" = 0 ]; then
  ok "triage --fail-on-findings after the failed campaign: exit 1, its $left pending finding(s) stored"
else bad "triage after EIO: exit $trc, $left pending before, $(n_pending "$d") after: $out"; fi
agree "$d" "EIO, then triage"

if [ "$(id -u)" != 0 ]; then
  d=$tmp/eacces; mkdir -p "$d/findings"; chmod 000 "$d/findings"
  camp "$d" --backend $planted
  chmod 755 "$d/findings"
  if [ "$rc" = 6 ] && grep -q "Permission denied" "$d.log"; then ok "chmod 000 findings/: exit 6, Permission denied named"
  else bad "chmod 000 findings/: exit $rc"; tail -3 "$d.log"; fi
  agree "$d" "chmod 000 findings/"
else
  echo "skip chmod 000 findings/: running as root, which writes through any mode (the loop and EIO cases cover it)"
fi

# ---- 2. the disk fills mid-campaign -------------------------------------------------------
for where in /rawmap/ /pending/; do
  d=$tmp/enospc${where//\//}
  ATTNFUZZ_FAIL_WRITE=ENOSPC:$where camp "$d" --backend $planted
  if [ "$rc" = 6 ] && grep -q "cannot store .*: write $d$where[^:]*: No space left on device" "$d.log"; then
    ok "ENOSPC under $where: exit 6, named: $(grep -m1 'cannot store' "$d.log")"
  else bad "ENOSPC under $where: exit $rc (expected 6 naming the path and 'No space left on device')"; tail -4 "$d.log"; fi
  agree "$d" "ENOSPC under $where"
done
# nothing lost when the rawmap cannot be written: every finding seen is in findings/
d=$tmp/enospcrawmap
[ "$(json "$d/stats.json" findings_unstored)" = 0 ] && [ "$(n_pending "$d")" = 0 ] \
  && ok "ENOSPC under rawmap/: every finding stored, none left pending" \
  || bad "ENOSPC under rawmap/: unstored $(json "$d/stats.json" findings_unstored), pending $(n_pending "$d")"

m=$tmp/tmpfs; mkdir -p "$m"
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=1m tmpfs "$m" 2>/dev/null; then
  mounted=$m
  head -c 400000 /dev/zero >"$m/ballast" 2>/dev/null # the seeds fit, the campaign fills the rest
  d=$m/c
  timeout 120 "$bin" campaign --inprocess --jobs 1 --seed 7 --time 20 --total-time 40 --minimize-runs 20 --backend $planted \
    --out "$d" >"$tmp/tmpfs.log" 2>&1
  rc=$?
  if [ "$rc" = 6 ] && grep -q "cannot store .*: write $d/.*: No space left on device" "$tmp/tmpfs.log"; then
    ok "1 MB tmpfs filled mid-campaign: exit 6, $(grep -m1 'No space left' "$tmp/tmpfs.log")"
  else bad "1 MB tmpfs filled: exit $rc (expected 6 naming the path and ENOSPC)"; tail -4 "$tmp/tmpfs.log"; fi
  if [ -f "$d/stats.json" ] && [ -f "$d/report.json" ]; then agree "$d" "1 MB tmpfs"
  else echo "     1 MB tmpfs: no report.json (its stats.json could not be written at the end: no reports from an older one)"; fi
  umount "$m" && mounted=""
else
  echo "skip 1 MB tmpfs: mount -t tmpfs is not allowed here (the injected ENOSPC above covers a full disk)"
fi

# ---- 3. a symlinked corpus ----------------------------------------------------------------
shared=$tmp/shared; mkdir -p "$shared"
echo keep >"$shared/important.txt"; echo keep >"$shared/README"; echo keep >"$shared/seed-x"; echo keep >"$shared/0123456789abcdef"
before=$(cd "$shared" && md5sum * | sort)
d=$tmp/linked; mkdir -p "$d"; ln -s ../shared "$d/corpus"
camp "$d" --backend cpu --time 1
after=$(cd "$shared" && md5sum * 2>/dev/null | sort)
if [ "$rc" = 6 ] && grep -q "$d/corpus is a symbolic link (to ../shared)" "$d.log" && [ "$before" = "$after" ]; then
  ok "DIR/corpus -> a shared folder: exit 6, nothing there touched: $(grep 'symbolic link' "$d.log")"
else bad "DIR/corpus -> shared: exit $rc, shared folder lost: $(echo "$before" | grep -v -F -x "$after" | tr '\n' ' ')"; tail -3 "$d.log"; fi

mo=$tmp/mergeout; mkdir -p "$mo"; ln -s ../shared "$mo/corpus"
"$bin" merge "$mo" "$tmp/eio" >"$mo.log" 2>&1; rc=$?
after=$(cd "$shared" && md5sum * 2>/dev/null | sort)
[ "$rc" = 6 ] && grep -q "$mo/corpus is a symbolic link" "$mo.log" && [ "$before" = "$after" ] \
  && ok "merge into an OUT whose corpus is a symlink: exit 6, the shared folder untouched" \
  || { bad "merge OUT/corpus -> shared: exit $rc"; cat "$mo.log"; }

d=$tmp/self
camp "$d" --backend cpu --time 1
[ "$rc" = 0 ] || bad "self: first campaign exit $rc"
mv "$d/corpus" "$tmp/self-corpus"; ln -s ../self "$d/corpus"
lock_before=$(cat "$d/lock"); stats_before=$(md5sum <"$d/stats.json")
camp "$d" --backend cpu --time 1 --resume
if [ "$rc" = 6 ] && [ -f "$d/lock" ] && [ "$(cat "$d/lock")" = "$lock_before" ] && [ "$(md5sum <"$d/stats.json")" = "$stats_before" ] \
   && grep -q "$d/corpus is a symbolic link" "$d.log"; then
  ok "DIR/corpus -> ../DIR: exit 6; DIR/lock and stats.json as they were"
else bad "DIR/corpus -> ../DIR: exit $rc; lock $( [ -f "$d/lock" ] && echo kept || echo DELETED)"; tail -3 "$d.log"; fi

d=$tmp/ownonly; mkdir -p "$d/corpus"; echo "my notes" >"$d/corpus/important.txt"
camp "$d" --backend cpu --time 1
if [ "$rc" = 0 ] && [ "$(cat "$d/corpus/important.txt" 2>/dev/null)" = "my notes" ] && grep -q "corpus merged" "$d.log"; then
  ok "a file the campaign did not write survives the corpus merge of DIR/corpus"
else bad "DIR/corpus/important.txt after the merge: exit $rc, $(ls "$d/corpus" | head -5 | tr '\n' ' ')"; fi
agree "$d" "own corpus only"

# ---- 4. seeds ---------------------------------------------------------------------------------
f=$tmp/fifoseeds; mkdir -p "$f"
cp corpora/seed/fp16-causal-tl.case "$f/good.case"; mkfifo "$f/fifo.case"
d=$tmp/fifoseeded
timeout 30 "$bin" campaign --inprocess --jobs 1 --seed 7 --time 1 --backend cpu --out "$d" "$f" >"$d.log" 2>&1
rc=$?
[ "$rc" = 0 ] && grep -q "$f/fifo.case: not a regular file (not read) (skipped)" "$d.log" \
  && ok "a FIFO in the seed folder: named, skipped, the campaign ran (exit 0)" \
  || { bad "FIFO seed: exit $rc (124 = hung on the FIFO)"; tail -3 "$d.log"; }
s=$tmp/seeds; mkdir -p "$s"
cp corpora/seed/fp16-causal-tl.case "$s/good.case"
mkfifo "$s/fifo.case"
echo "TOPSECRET first line" >"$tmp/secret.txt"; ln -s "$tmp/secret.txt" "$s/link.case"
printf 'dtype = fp16\nnonsense = 1\n' >"$s/bad.case"
d=$tmp/seeded
timeout 30 "$bin" campaign --inprocess --jobs 1 --seed 7 --time 1 --backend cpu --out "$d" "$s" >"$d.log" 2>&1
rc=$?
[ "$rc" = 0 ] && ok "seed folder with a FIFO, a symlink and a malformed seed: the campaign ran (exit 0)" \
  || { bad "seed folder: exit $rc (124 = hung on the FIFO)"; tail -4 "$d.log"; }
grep -q "$s/link.case: is a symbolic link (not read) (skipped)" "$d.log" && ! grep -q TOPSECRET "$d.log" \
  && ok "symlinked seed skipped, its target never printed" || bad "symlinked seed: $(grep -e link.case -e TOPSECRET "$d.log")"
grep -q "$s/bad.case:2: nonsense: unknown key (skipped)" "$d.log" && ok "malformed seed named with file:line and skipped" \
  || bad "malformed seed: $(grep bad.case "$d.log")"
[ -f "$d/stats.json" ] && [ "$(json "$d/stats.json" seeds_skipped)" = 3 ] && grep -q " 1 seed(s) (some skipped" "$d.log" \
  && ok "seeds_skipped 3, 1 seed used" || bad "seeds_skipped: $(json "$d/stats.json" seeds_skipped 2>&1)"
rm -f "$s/good.case"
d=$tmp/noseed
timeout 60 "$bin" campaign --inprocess --time 1 --backend cpu --out "$d" "$s" >"$d.log" 2>&1
rc=$?
[ "$rc" = 2 ] && grep -q "none of the 3 seed file(s) is usable" "$d.log" && ok "no usable seed: refused (exit 2)" \
  || { bad "no usable seed: exit $rc"; tail -2 "$d.log"; }

# ---- 5. exit codes of an unusable output folder, triage of a folder that is no campaign ----
echo file >"$tmp/afile"
"$bin" campaign --inprocess --time 1 --backend cpu --out "$tmp/afile" >"$tmp/o.log" 2>&1; rc=$?
[ "$rc" = 6 ] && ok "campaign --out FILE: exit 6 ($(head -1 "$tmp/o.log"))" || bad "campaign --out FILE: exit $rc"
"$bin" merge "$tmp/afile" "$tmp/self" >"$tmp/o.log" 2>&1; rc=$?
[ "$rc" = 6 ] && ok "merge OUT=FILE: exit 6" || bad "merge OUT=FILE: exit $rc"
"$bin" minimize corpora/seed/fp16-causal-tl.case -o "$tmp/afile/x.case" --backend $planted --max-runs 5 >"$tmp/o.log" 2>&1; rc=$?
[ "$rc" = 6 ] && ok "minimize -o into a file's path: exit 6" || bad "minimize -o unusable: exit $rc"
ATTNFUZZ_FAIL_WRITE=EIO:report "$bin" triage "$tmp/ownonly" >"$tmp/o.log" 2>&1; rc=$?
[ "$rc" = 6 ] && grep -q "report.*Input/output error" "$tmp/o.log" && ok "triage, reports not writable: exit 6 ($(tail -1 "$tmp/o.log"))" \
  || bad "triage unwritable: exit $rc: $(cat "$tmp/o.log")"
x=$tmp/notacampaign; mkdir -p "$x"; echo hi >"$x/notes.txt"
"$bin" triage "$x" --fail-on-findings >"$tmp/o.log" 2>&1; rc=$?
if [ "$rc" = 4 ] && [ "$(ls "$x")" = notes.txt ] && grep -q "holds no campaign" "$tmp/o.log"; then
  ok "triage of a folder that is no campaign: exit 4, nothing written ($(cat "$tmp/o.log"))"
else bad "triage of a non-campaign: exit $rc, folder now: $(ls "$x" | tr '\n' ' ')"; fi

# ---- 6. case files -------------------------------------------------------------------------
python3 - "$tmp/exact.case" "$tmp/over.case" <<'PY'
import sys
head = b"seqlen = 32\n"
for path, size in ((sys.argv[1], 16 << 20), (sys.argv[2], (16 << 20) + 1)):
    body = bytearray(head)
    line = b"#" + b"x" * 1000 + b"\n"
    while len(body) + len(line) <= size: body += line
    body += b"#" * (size - len(body) - 1) + b"\n" if size - len(body) >= 1 else b""
    assert len(body) == size, (len(body), size)
    open(path, "wb").write(body)
PY
"$bin" print "$tmp/exact.case" >/dev/null 2>"$tmp/o.log"; rc=$?
[ "$rc" = 0 ] && ok "a case file of exactly 16 MiB loads" || bad "exactly 16 MiB: exit $rc: $(cat "$tmp/o.log")"
"$bin" print "$tmp/over.case" >/dev/null 2>"$tmp/o.log"; rc=$?
[ "$rc" = 4 ] && grep -q "larger than 16 MiB" "$tmp/o.log" && ok "16 MiB + 1 byte refused (exit 4)" || bad "16 MiB + 1: exit $rc"
printf '\xef\xbb\xbfseqlen = 32\n' >"$tmp/bom.case"
out=$("$bin" print "$tmp/bom.case" 2>&1); rc=$?
[ "$rc" = 0 ] && echo "$out" | grep -q "seqlen_q = 32" && ok "a UTF-8 BOM is skipped" || bad "BOM: exit $rc: $out"

[ "$fail" = 0 ] && echo "all durability checks passed" || echo "$fail durability check(s) failed"
[ "$fail" = 0 ]
