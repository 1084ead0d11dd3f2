#!/usr/bin/env bash
# test_install.sh ATTNFUZZ — `cmake --install` of the build that made ATTNFUZZ into a temporary
# prefix, then the installed attnfuzz run from / (no checkout around it): the campaign finds
# its default seeds in <prefix>/share/attnfuzz, select its default policy there, the planted
# plugins load from <prefix>/lib/attnfuzz/plugins; and a binary with no data anywhere
# (ATTNFUZZ_DATA_DIR an empty folder, no share/ beside it) refuses the campaign with one line
# naming every place it looked, exit 4 (bad-file), instead of fuzzing from 0 seeds.
# Everything is written under the temporary folder (cmake --install's install_manifest.txt
# in the build folder is put back as it was).
set -u
BIN=$(realpath "${1:?usage: test_install.sh path/to/attnfuzz}")
BUILD_DIR=$(dirname "$BIN")
command -v cmake >/dev/null || { echo "SKIP test_install: cmake not found"; exit 77; }
T=$(mktemp -d)
manifest="$BUILD_DIR/install_manifest.txt"
had_manifest=0
[ -e "$manifest" ] && { had_manifest=1; cp -p "$manifest" "$T/manifest.saved"; }
restore_manifest() {
  if [ $had_manifest = 1 ]; then cp -p "$T/manifest.saved" "$manifest"; else rm -f "$manifest"; fi
}
trap 'restore_manifest; rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

P="$T/prefix"
out=$(cmake --install "$BUILD_DIR" --prefix "$P" 2>&1) || fail "cmake --install: $out"
restore_manifest
for f in bin/attnfuzz lib/attnfuzz/plugins/example_plugin.so lib/attnfuzz/plugins/planted_window_off_by_one.so \
         share/attnfuzz/corpora/seed share/attnfuzz/corpora/seed-recent share/attnfuzz/policies/default.policy \
         share/attnfuzz/python/attnfuzz_worker/worker.py share/attnfuzz/python/targets/torch-sdpa.conf; do
  [ -e "$P/$f" ] || fail "not installed: $f"
done
[ ! -e "$P/share/attnfuzz/python/tests" ] || fail "tests installed: share/attnfuzz/python/tests"

cd / || fail "cd /"
# the campaign: the installed default seeds (their count > 0), a clean run (exit 0)
out=$("$P/bin/attnfuzz" campaign --backend cpu --time 5 --out "$T/out" 2>&1); rc=$?
[ $rc -eq 0 ] || fail "installed campaign from /: exit $rc: $(echo "$out" | tail -5)"
seeds=$(echo "$out" | sed -n 's/.* \([0-9][0-9]*\) seed(s).*/\1/p' | head -1)
[ -n "$seeds" ] && [ "$seeds" -gt 0 ] || fail "installed campaign from / found no seeds: $(echo "$out" | grep 'seed(s)')"
[ -f "$T/out/stats.json" ] || fail "no $T/out/stats.json"
echo "ok   campaign from /: $seeds seeds"

# select with the default policy: the installed one
case_file="$P/share/attnfuzz/corpora/examples/readme.case"
out=$("$P/bin/attnfuzz" select "$case_file" 2>&1); rc=$?
[ $rc -eq 0 ] || fail "installed select from /: exit $rc: $out"
echo "$out" | grep -q "^chosen: cpu ($P/share/attnfuzz/policies/default.policy:" || fail "select's policy: $out"
echo "ok   select from /: the installed default policy"

# the installed plugins: listed, and a planted bug found
out=$("$P/bin/attnfuzz" backends 2>&1)
echo "$out" | grep -q "^planted:window_off_by_one .*$P/lib/attnfuzz/plugins/planted_window_off_by_one.so" ||
  fail "installed plugins not listed: $(echo "$out" | grep -m3 planted)"
"$P/bin/attnfuzz" run "$P/share/attnfuzz/corpora/seed/fp16-window-br-left.case" \
  --backend planted:window_off_by_one >/dev/null 2>&1
rc=$?
[ $rc -eq 1 ] || fail "planted:window_off_by_one from the install: exit $rc, expected 1 (finding)"
echo "ok   plugins from lib/attnfuzz/plugins"

# ATTNFUZZ_DATA_DIR wins: a data folder whose seed folders are empty gives 0 seeds
mkdir -p "$T/data/corpora/seed" "$T/data/corpora/seed-recent"
out=$(ATTNFUZZ_DATA_DIR="$T/data" "$P/bin/attnfuzz" campaign --backend cpu --time 1 --out "$T/out-env" 2>&1); rc=$?
echo "$out" | grep -q " 0 seed(s)" || fail "ATTNFUZZ_DATA_DIR not searched first (exit $rc): $(echo "$out" | grep 'seed(s)')"
echo "ok   ATTNFUZZ_DATA_DIR searched first"

# no data anywhere: a copy of the binary in a bare prefix, ATTNFUZZ_DATA_DIR an empty folder
mkdir -p "$T/bare/bin" "$T/empty"
cp "$P/bin/attnfuzz" "$T/bare/bin/attnfuzz"
out=$(ATTNFUZZ_DATA_DIR="$T/empty" "$T/bare/bin/attnfuzz" campaign --backend cpu --time 5 --out "$T/out-bare" 2>&1)
rc=$?
[ $rc -eq 4 ] || fail "campaign without data: exit $rc, expected 4 (bad-file): $out"
[ "$(echo "$out" | wc -l)" -eq 1 ] || fail "campaign without data: not one line: $out"
for place in "$T/empty/corpora/seed" "./corpora/seed" "$T/bare/share/attnfuzz/corpora/seed" "$T/bare/corpora/seed" \
             "$T/empty/corpora/seed-recent" "$T/bare/share/attnfuzz/corpora/seed-recent"; do
  echo "$out" | grep -qF "$place" || fail "campaign without data: '$place' not named: $out"
done
[ ! -e "$T/out-bare" ] || fail "a refused campaign created its --out folder"
out=$(ATTNFUZZ_DATA_DIR="$T/empty" "$T/bare/bin/attnfuzz" select "$case_file" 2>&1); rc=$?
[ $rc -eq 4 ] && echo "$out" | grep -qF "$T/bare/share/attnfuzz/policies/default.policy" ||
  fail "select without data: exit $rc: $out"
echo "ok   no data: one line naming every place, exit 4"
echo "test_install: ok"
