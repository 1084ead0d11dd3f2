#!/usr/bin/env bash
# test_case_print_stable.sh — `attnfuzz print` is pinned: for every file under corpora/ and
# ci/tests/cases, and for one-line probe cases that give each field of the case format a
# value at, inside and past its limits (and some that are not values at all), the exit
# code, stdout and stderr equal what ci/tests/case_print_golden.txt recorded before the case
# fields were moved into one table (model/case_fields.h). A change of the format that is
# meant shows up here: regenerate with `bash ci/tests/test_case_print_stable.sh ATTNFUZZ --write`
# and say so in the commit.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=$(realpath "$1")
golden=ci/tests/case_print_golden.txt
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Every field name the format knows, and values that probe each kind of field.
fields="dtype batch heads_q heads_kv seqlen_q seqlen_kv head_dim_qk head_dim_v head_dim heads seqlen
seqlens_q seqlens_kv layout packing stride_gap thd_gap page_size page_tail mask align window scale backward
cp seed data backend engine softmax softcap bias alibi stats dlse fp8_headroom dropout no_such_field"
values=(-1 0 1 2 65 257 1025 4097 131072 131073 x yes true 1e-3 0.0005 10001 nan 18446744073709551616
        "0.5 1 2" 1,2 "1,2,3,4,9" "2 p2p" "uniform:2 sink:3" fp8_e4m3 thd qkv bottom_right learnable bhss
        log2 "a b")

# one record per input: its name, exit code, stdout, stderr
record() { # NAME FILE
    local rc=0
    "$bin" print "$2" >"$tmp/out" 2>"$tmp/err" || rc=$?
    printf '== %s rc=%d\n' "$1" "$rc"
    cat "$tmp/out"
    printf -- '-- stderr\n'
    sed "s|$tmp/probe|PROBE|g" "$tmp/err"
}

# The corpus files: all of them with --write; else those the golden file holds (a case added
# later is not pinned until a --write, so that a merge of new cases does not fail here).
git ls-files corpora ci/tests/cases | LC_ALL=C sort >"$tmp/files"
if [ "${2:-}" != --write ]; then
    sed -n 's/^== \(.*\) rc=[0-9]*$/\1/p' "$golden" | grep -v ' = ' >"$tmp/pinned" || true
    grep -Fxf "$tmp/pinned" "$tmp/files" >"$tmp/keep" || true
    missing=$(grep -Fxvf "$tmp/files" "$tmp/pinned" || true)
    [ -z "$missing" ] || { echo "test_case_print_stable: pinned files gone: $missing (--write after a removal meant)" >&2; exit 1; }
    mv "$tmp/keep" "$tmp/files"
fi
{
    while IFS= read -r f; do record "$f" "$f"; done <"$tmp/files"
    for k in $fields; do
        for v in "${values[@]}"; do
            printf '%s = %s\n' "$k" "$v" >"$tmp/probe"
            record "$k = $v" "$tmp/probe"
        done
    done
} >"$tmp/now"

if [ "${2:-}" = --write ]; then
    cp "$tmp/now" "$golden"
    echo "test_case_print_stable: wrote $golden ($(grep -c '^== ' "$golden") inputs)"
    exit 0
fi
if ! diff -u "$golden" "$tmp/now" >"$tmp/diff"; then
    head -40 "$tmp/diff"
    echo "test_case_print_stable: attnfuzz print differs from $golden (above; --write only for a change meant)" >&2
    exit 1
fi
echo "test_case_print_stable: $(grep -c '^== ' "$golden") inputs print as recorded"
