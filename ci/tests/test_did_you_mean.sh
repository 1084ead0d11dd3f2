#!/usr/bin/env bash
# test_did_you_mean.sh ATTNFUZZ — a misspelt command, option, backend or planted bug is one
# line on stderr naming the closest known name, with the usage exit code (2); a word near
# nothing gets no guess. One spelling of each option across verbs: `--in-process` is the
# documented one for run and campaign, and `--inprocess` is read as it by both.
set -u
bin=${1:?usage: test_did_you_mean.sh path/to/attnfuzz}
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
case_file=corpora/quickstart/dv-differs.case
expect() { # expect NAME 'EXACT STDERR LINE' COMMAND...: exit 2 and exactly that one line on stderr
  local name=$1 want=$2; shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  if [ $rc -ne 2 ]; then echo "FAIL $name: exit $rc, expected 2: $(head -3 "$tmp/err")"; fail=$((fail+1))
  elif [ "$(cat "$tmp/err")" != "$want" ]; then
    echo "FAIL $name: stderr is"; sed 's/^/     /' "$tmp/err"; echo "     expected: $want"; fail=$((fail+1))
  else echo "ok   $name"; fi
}
expect "verb campain" \
  "attnfuzz: unknown command 'campain'; did you mean 'campaign'? (attnfuzz --help lists them)" "$bin" campain --time 1
expect "verb with no near name" \
  "attnfuzz: unknown command 'frobnicate' (attnfuzz --help lists them)" "$bin" frobnicate
expect "option --tme" \
  "attnfuzz campaign: unknown option '--tme'; did you mean '--time'?" "$bin" campaign --tme 5 --out "$tmp/c"
expect "option --backedn of run" \
  "attnfuzz run: unknown option '--backedn'; did you mean '--backend'?" "$bin" run "$case_file" --backedn cpu
expect "option with no near name" \
  "attnfuzz run: unknown option '--frobnicate'" "$bin" run --frobnicate "$case_file"
expect "backend cuda" \
  "attnfuzz run: $case_file: unknown backend 'cuda'; did you mean 'cudnn'? (see \`attnfuzz backends\`)" \
  "$bin" run "$case_file" --backend cuda
expect "planted:scale_ignore in run" \
  "attnfuzz run: $case_file: unknown backend 'planted:scale_ignore'; did you mean 'planted:scale_ignored'? (see \`attnfuzz backends\`)" \
  "$bin" run "$case_file" --backend planted:scale_ignore
expect "planted:scale_ignore in campaign" \
  "attnfuzz campaign: unknown backend 'planted:scale_ignore'; did you mean 'planted:scale_ignored'? (see \`attnfuzz backends\`)" \
  "$bin" campaign --backend planted:scale_ignore --time 1 --out "$tmp/c"
expect "backend with no near name" \
  "attnfuzz run: $case_file: unknown backend 'nosuch' (see \`attnfuzz backends\`)" "$bin" run "$case_file" --backend nosuch
[ ! -e "$tmp/c" ] && echo "ok   a refused campaign wrote nothing" || { echo "FAIL a refused campaign created $tmp/c"; fail=$((fail+1)); }

# one spelling: --in-process for run and campaign, --inprocess read as it
for verb in run campaign; do
  help=$("$bin" $verb --help)
  echo "$help" | grep -q -- '--in-process ' && ! echo "$help" | grep -q -- '--inprocess' \
    && echo "ok   $verb --help documents --in-process only" \
    || { echo "FAIL $verb --help: $(echo "$help" | grep -i 'in-\?process')"; fail=$((fail+1)); }
done
for spelling in --in-process --inprocess; do
  out=$("$bin" run "$case_file" $spelling 2>&1); rc=$?
  [ $rc -eq 0 ] && echo "ok   run $spelling" || { echo "FAIL run $spelling: exit $rc: $out"; fail=$((fail+1)); }
  out=$("$bin" campaign $spelling --time 1 --backend cpu --seed 1 --out "$tmp/c$spelling" corpora/quickstart 2>&1); rc=$?
  if [ $rc -eq 0 ] && echo "$out" | grep -q '^attnfuzz campaign: inprocess, backend cpu'; then echo "ok   campaign $spelling runs the in-process engine"
  else echo "FAIL campaign $spelling: exit $rc; its output:"; echo "$out" | tail -40; fail=$((fail+1)); fi
done
# after "--" an alias is an operand, not an option
out=$("$bin" print -- --inprocess 2>&1); rc=$?
[ $rc -eq 4 ] && echo "$out" | grep -q -- "--inprocess" && echo "ok   --inprocess after -- is a file name" \
  || { echo "FAIL print -- --inprocess: exit $rc: $out"; fail=$((fail+1)); }

[ "$fail" -eq 0 ] && echo "test_did_you_mean: all checks passed" || echo "test_did_you_mean: $fail check(s) failed"
exit $((fail > 0))
