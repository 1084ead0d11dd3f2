#!/usr/bin/env bash
# test_isolation.sh ATTNFUZZ — safety and isolation of `run`, `repro` and `minimize`:
# a case file never loads the plugin it names; every misbehaving plugin
# (harness/plugins/misbehave/) becomes a verdict for its case and the next case still
# runs; a directory or empty file is an error; the exit-code table holds for every verb;
# a plugin whose constructor crashes while loading ends a probe child, never attnfuzz.
set -u
bin=${1:?usage: test_isolation.sh path/to/attnfuzz}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
plugins=$(cd "$(dirname "$bin")" && pwd)/plugins_misbehave
[ -f "$plugins/misbehave_segv.so" ] || { echo "FAIL: no misbehave plugins in $plugins"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
seed=corpora/seed/fp16-nomask-b1h1s16d64.case
other=corpora/seed/bf16-padding-causal.case
expect() { # expect NAME WANT_RC 'GREP PATTERN' COMMAND...  (pattern '' = none)
  local name=$1 want=$2 pat=$3; shift 3
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" != "$want" ]; then echo "FAIL $name: exit $rc, expected $want"; echo "$out" | tail -4; fail=$((fail+1));
  elif [ -n "$pat" ] && ! echo "$out" | grep -qE -- "$pat"; then echo "FAIL $name: output lacks /$pat/:"; echo "$out" | tail -4; fail=$((fail+1));
  else echo "ok   $name"; fi
}

# 1. a case naming a plugin: refused with the command to run it deliberately; the
#    plugin's constructor never runs
marker=$tmp/constructor-ran
export MISBEHAVE_MARKER=$marker
{ cat "$seed"; echo "backend = plugin:$plugins/misbehave_marker.so"; } > "$tmp/evil.case"
for verb in run repro; do
  expect "$verb refuses a case-named plugin" 5 "to run it deliberately: attnfuzz $verb $tmp/evil.case --backend plugin:$plugins/misbehave_marker.so" "$bin" $verb "$tmp/evil.case"
done
expect "minimize refuses a case-named plugin" 5 "may not load" "$bin" minimize "$tmp/evil.case" -o "$tmp/min.case"
if [ -e "$marker" ]; then echo "FAIL the case-named plugin's constructor ran"; fail=$((fail+1)); else echo "ok   its constructor never ran"; fi
# ... a relative plugin path from a case is refused the same way
( cd "$plugins" && { cat "$OLDPWD/$seed"; echo "backend = plugin:misbehave_marker.so"; } > "$tmp/rel.case" )
( cd "$plugins" && "$bin" run "$tmp/rel.case" >/dev/null 2>&1 ); rc=$?
[ "$rc" = 5 ] && [ ! -e "$marker" ] && echo "ok   relative case-named plugin refused" || { echo "FAIL relative plugin: exit $rc"; fail=$((fail+1)); }
# deliberately: --plugin-dir holding it, or --backend on the command line, loads it
expect "--plugin-dir allows the case's plugin" 1 "unwritten" "$bin" run "$tmp/evil.case" --plugin-dir "$plugins" --no-probes
[ -e "$marker" ] && echo "ok   --plugin-dir loaded it" || { echo "FAIL --plugin-dir did not load it"; fail=$((fail+1)); }
rm -f "$marker"
expect "--backend loads it deliberately" 1 "" "$bin" run "$seed" --backend "plugin:$plugins/misbehave_marker.so" --no-probes
[ -e "$marker" ] && echo "ok   --backend loaded it" || { echo "FAIL --backend did not load it"; fail=$((fail+1)); }
unset MISBEHAVE_MARKER

# 2. every misbehaviour is a verdict for its case, and the next case still runs
misbehaves() { # misbehaves KIND 'VERDICT PATTERN' [OPTIONS...]
  local kind=$1 pat=$2; shift 2
  out=$("$bin" run "$seed" "$other" --backend "plugin:$plugins/misbehave_$kind.so" --no-probes "$@" 2>&1); rc=$?
  n=$(echo "$out" | grep -cE -- "$pat")
  if [ "$rc" != 1 ] || [ "$n" != 2 ]; then echo "FAIL $kind: exit $rc (want 1), $n of 2 lines match /$pat/:"; echo "$out" | tail -4; fail=$((fail+1));
  else echo "ok   $kind: both cases report /$pat/, exit 1"; fi
}
# a sanitizer build reports the bad access and exits 1 itself: still a crash
if nm -an "$bin" 2>/dev/null | grep -q __asan_init; then asan=1; died='exited with status 1'; else asan=0; died='killed by signal'; fi
misbehaves segv "FINDING crash \\(($died|killed by signal 11)"
misbehaves abort 'FINDING crash \(killed by signal 6'
misbehaves heap "FINDING crash \\(($died|killed by signal (6|11))"
misbehaves exit0 'FINDING crash \(exited 0 inside run'
misbehaves error 'FINDING crash .*run failed on purpose'
misbehaves loop 'FINDING hang \(no result after 1 s' --deadline 1
expect "a hang's JSON is a verdict too" 1 '"kind": ?"hang"|hang' "$bin" run "$seed" --backend "plugin:$plugins/misbehave_loop.so" --deadline 1 --json --no-probes
# the memory limit (RLIMIT_AS) is not compatible with ASan's shadow memory: skipped there
if [ "$asan" = 1 ]; then
  echo "skip memory limit: this attnfuzz is built with ASan (RLIMIT_AS would break its shadow memory)"
else
  expect "--max-memory limits a case" 1 "malloc of 1 GiB failed" "$bin" run "$seed" --backend "plugin:$plugins/misbehave_memhog.so" --max-memory 512 --no-probes
  expect "without --max-memory the same case gets its GiB" 1 "unwritten" "$bin" run "$seed" --backend "plugin:$plugins/misbehave_memhog.so" --no-probes
fi
# --in-process: today's behaviour, for debugging (the crash ends the process)
"$bin" run "$seed" --backend "plugin:$plugins/misbehave_segv.so" --in-process --no-probes >/dev/null 2>&1; rc=$?
want=139; [ "$asan" = 1 ] && want=1 # UBSan reports the null store and exits 1
[ "$rc" = $want ] && echo "ok   --in-process: the segfault ends attnfuzz ($rc)" || { echo "FAIL --in-process: exit $rc, expected $want"; fail=$((fail+1)); }
expect "a passing case still passes isolated" 0 "pass" "$bin" run "$seed" --backend cpu

# 4. a directory or an empty file is not a case; one code per condition in every verb
: > "$tmp/empty.case"
for verb in run repro print; do
  expect "$verb on a directory" 4 "$tmp: file: is a directory" "$bin" $verb "$tmp"
  expect "$verb on an empty file" 4 "empty.case: file: is empty" "$bin" $verb "$tmp/empty.case"
done
expect "minimize on a directory" 4 "is a directory" "$bin" minimize "$tmp" -o "$tmp/x.case"
for verb in run repro; do
  expect "$verb: unloadable plugin" 5 "cannot load plugin" "$bin" $verb "$seed" --backend plugin:/no/such.so
done
expect "minimize: unloadable plugin" 5 "cannot load plugin" "$bin" minimize "$seed" -o "$tmp/x.case" --backend plugin:/no/such.so
expect "campaign: unloadable plugin" 5 "cannot load plugin" "$bin" campaign --time 1 --backend plugin:/no/such.so --out "$tmp/c"
expect "minimize on a passing case is not bad input" 0 "nothing to minimise" "$bin" minimize "$seed" -o "$tmp/x.case" --backend cpu --max-runs 3
expect "--help lists the exit codes" 0 "130  interrupted" "$bin" --help

# bucket identity: the same plugin file at two paths gives one bucket (name + content hash)
mkdir -p "$tmp/a" "$tmp/b"
cp "$plugins/misbehave_error.so" "$tmp/a/k.so"; cp "$plugins/misbehave_error.so" "$tmp/b/k.so"
ba=$("$bin" repro "$seed" --backend "plugin:$tmp/a/k.so" 2>&1 | sed -n 's/.*(bucket \([0-9a-f]*\)).*/\1/p')
bb=$("$bin" repro "$seed" --backend "plugin:$tmp/b/k.so" 2>&1 | sed -n 's/.*(bucket \([0-9a-f]*\)).*/\1/p')
if [ -n "$ba" ] && [ "$ba" = "$bb" ]; then echo "ok   one bucket for one plugin at two paths ($ba)"; else echo "FAIL buckets '$ba' and '$bb' for one plugin at two paths"; fail=$((fail+1)); fi
cp "$plugins/misbehave_abort.so" "$tmp/b/k.so" # another file under the same name: another bucket
bc=$("$bin" repro "$seed" --backend "plugin:$tmp/b/k.so" 2>&1 | sed -n 's/.*(bucket \([0-9a-f]*\)).*/\1/p')
[ -n "$bc" ] && [ "$bc" != "$ba" ] && echo "ok   another file of the same name: another bucket" || { echo "FAIL same bucket for two different files: $bc"; fail=$((fail+1)); }

# 5. a plugin named deliberately (--backend) is loaded first in a probe child: a
#    constructor that segfaults, aborts or calls exit(0) ends that child, never attnfuzz;
#    every verb exits 5 with one line naming the plugin, and nothing is lost (an
#    existing minimize output and an existing campaign directory stay as they were)
"$bin" campaign --time 1 --backend cpu --seed 1 --out "$tmp/camp" >/dev/null 2>&1
echo "keep me" > "$tmp/keep.case"
tree_sum() { (cd "$1" && find . -printf '%y %p\n' | sort && find . -type f -exec md5sum {} + | sort); }
camp_before=$(tree_sum "$tmp/camp")
[ -f "$tmp/camp/stats.json" ] || { echo "FAIL the clean campaign wrote no stats.json"; fail=$((fail+1)); }
for kind in ctor_segv ctor_abort ctor_exit0; do
  so=$plugins/misbehave_$kind.so
  case $kind in
    ctor_segv) how='killed by signal 11'; [ "$asan" = 1 ] && how='(killed by signal 11|exited 1)' ;; # ASan reports, exits 1
    ctor_abort) how='killed by signal 6' ;;
    ctor_exit0) how='exited 0' ;;
  esac
  line="^attnfuzz [a-z]+: (.*: )?plugin $so crashed while loading \\($how\\)\$"
  for verb in run repro minimize campaign; do
    case $verb in
      run|repro) args=("$seed") ;;
      minimize) args=("$seed" -o "$tmp/keep.case" --max-runs 3) ;;
      campaign) args=(--time 2 --resume --out "$tmp/camp") ;;
    esac
    out=$("$bin" $verb "${args[@]}" --backend "plugin:$so" 2>&1); rc=$?
    n_line=$(echo "$out" | grep -cE -- "$line")
    n_all=$(echo "$out" | grep -c .)
    # one line; under ASan the probe child's own report comes first (its stderr is kept)
    if [ "$rc" != 5 ] || [ "$n_line" != 1 ] || { [ "$asan" = 0 ] && [ "$n_all" != 1 ]; }; then
      echo "FAIL $verb with $kind: exit $rc (want 5), $n_line line(s) /$line/ of $n_all:"; echo "$out" | tail -4; fail=$((fail+1))
    else echo "ok   $verb with $kind: exit 5, one line: $(echo "$out" | grep -E -- "$line")"; fi
  done
done
[ "$(cat "$tmp/keep.case")" = "keep me" ] && echo "ok   minimize left its existing -o file alone" ||
  { echo "FAIL minimize's -o file changed"; fail=$((fail+1)); }
[ "$camp_before" = "$(tree_sum "$tmp/camp")" ] && echo "ok   the existing campaign directory is unchanged" ||
  { echo "FAIL the campaign directory changed:"; diff <(echo "$camp_before") <(tree_sum "$tmp/camp") | head -6; fail=$((fail+1)); }
[ ! -e "$tmp/fresh-camp" ] || rm -rf "$tmp/fresh-camp"
"$bin" campaign --time 2 --out "$tmp/fresh-camp" --backend "plugin:$plugins/misbehave_ctor_segv.so" >/dev/null 2>&1
[ ! -e "$tmp/fresh-camp" ] && echo "ok   no output directory for a campaign whose plugin crashed while loading" ||
  { echo "FAIL a campaign whose plugin crashed while loading left $(ls "$tmp/fresh-camp" | tr '\n' ' ')"; fail=$((fail+1)); }
# an isolated run never loads the plugin in attnfuzz itself (its children do); --in-process does
marker=$tmp/marker-pids
export MISBEHAVE_MARKER=$marker
for mode in isolated in-process; do
  rm -f "$marker"
  if [ $mode = isolated ]; then "$bin" run "$seed" --backend "plugin:$plugins/misbehave_marker.so" --no-probes >/dev/null 2>&1 &
  else "$bin" run "$seed" --backend "plugin:$plugins/misbehave_marker.so" --no-probes --in-process >/dev/null 2>&1 & fi
  pid=$!; wait $pid
  n_loads=$(grep -c 'constructor ran' "$marker" 2>/dev/null); n_loads=${n_loads:-0}
  in_self=$(grep -c "constructor ran in pid $pid\$" "$marker" 2>/dev/null); in_self=${in_self:-0}
  if [ $mode = isolated ] && { [ "$in_self" != 0 ] || [ "$n_loads" -lt 2 ]; }; then
    echo "FAIL isolated run: constructor ran $in_self time(s) in attnfuzz (pid $pid), $n_loads in all (want 0, >= 2: probe, case)"; fail=$((fail+1))
  elif [ $mode = in-process ] && [ "$in_self" != 1 ]; then
    echo "FAIL --in-process run: constructor ran $in_self time(s) in attnfuzz (pid $pid), want 1"; fail=$((fail+1))
  else echo "ok   $mode run: the constructor ran $in_self time(s) in attnfuzz itself, $n_loads in all"; fi
done
unset MISBEHAVE_MARKER

[ "$fail" = 0 ] && echo "all isolation checks passed" || echo "$fail isolation check(s) failed"
[ "$fail" = 0 ]
