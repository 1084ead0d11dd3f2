#!/usr/bin/env bash
# test_kinds.sh ATTNFUZZ — one case of each configuration kind the peer test suites test
# (ci/tests/peer_kinds.txt): each prints (`attnfuzz print`), runs on the cpu backend against
# the oracle and passes, and lies in a folder the corpus round-trip test
# (harness/fuzz/tests/test_fuzz_corpus_roundtrip.c) reads, which takes every case of those
# folders through the fuzz encoding and back. Kinds without a case are listed as NOT YET
# with their reason (they are not counted as passing).
set -u
bin=${1:?usage: test_kinds.sh path/to/attnfuzz}
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cases=()
not_yet=0
while IFS='|' read -r kind file want; do
  kind=$(echo "$kind" | sed 's/^ *//; s/ *$//')
  file=$(echo "$file" | sed 's/^ *//; s/ *$//')
  want=$(echo "$want" | sed 's/^ *//; s/ *$//')
  case "$kind" in '#'* | '') continue ;; esac
  if [ "$file" = - ]; then
    echo "NOT YET $kind: $want"
    not_yet=$((not_yet + 1))
    continue
  fi
  if ! "$bin" print "$file" > "$tmp/print.txt" 2>&1; then
    echo "FAIL $kind: attnfuzz print $file: $(head -1 "$tmp/print.txt")"; fail=1; continue
  fi
  dir=$(dirname "$file")
  grep -q "\"$dir\"" harness/fuzz/tests/test_fuzz_corpus_roundtrip.c ||
    { echo "FAIL $kind: $dir is not read by the corpus round-trip test"; fail=1; }
  cases+=("$file")
  echo "$file|$kind" >> "$tmp/index"
done < ci/tests/peer_kinds.txt
"$bin" run "${cases[@]}" --backend cpu > "$tmp/run.txt" 2>&1
while IFS='|' read -r file kind; do
  if grep -Fq "$file [cpu]: pass" "$tmp/run.txt"; then
    echo "ok   $kind ($file): prints, passes on cpu"
  else
    echo "FAIL $kind: $file does not pass on cpu: $(grep -F "$file" "$tmp/run.txt" | head -1)"; fail=1
  fi
done < "$tmp/index"
echo "test_kinds: ${#cases[@]} kinds with a case, $not_yet not yet"
[ ${#cases[@]} -gt 0 ] || fail=1
exit $fail
