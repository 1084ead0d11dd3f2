#!/usr/bin/env bash
# test_quote.sh ATTNFUZZ — every command attnfuzz prints for a user to paste (the refusal
# hint of a case-named plugin, minimize's reproduce line, a campaign's Reproduce line in
# report.json, report.junit.xml, report.sarif and report.html, and after `merge`) is quoted
# for sh (util/shquote.h): with a case file named `x;touch INJ;.case`, a backend
# `plugin:/tmp/a';id>F;'.so` and a directory with spaces and `$(touch INJ3)` in its name,
# each printed line pasted into `sh -c` runs nothing else (no INJ / F file appears) and
# hands attnfuzz exactly the words meant: a stand-in `attnfuzz` on PATH records its argv,
# and the real one, run through the pasted line, still reproduces the finding (exit 1).
set -u
AF=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
command -v python3 >/dev/null || { echo "SKIP test_quote: no python3"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=1; }

D="$T/dir with spaces \$(touch INJ3)" # the $( ) is part of the name
W=$T/paste                            # where pasted lines run: nothing may appear there
mkdir -p "$D/seed" "$W" "$T/fake" "$T/real"
cat >"$T/fake/attnfuzz" <<EOF
#!/bin/sh
printf '%s\0' "\$@" > "$T/argv"
EOF
chmod +x "$T/fake/attnfuzz"
ln -s "$AF" "$T/real/attnfuzz"

# paste NAME LINE WANT...: sh -c LINE in W with the stand-in attnfuzz; its argv must be WANT
paste() {
    local name=$1 line=$2
    shift 2
    rm -f "$T/argv"
    (cd "$W" && PATH="$T/fake:$PATH" sh -c "$line") >/dev/null 2>&1
    local left
    left=$(ls -A "$W")
    if [ -n "$left" ]; then bad "$name: pasting ran something (created: $left): $line"; rm -rf "${W:?}"/*; return; fi
    local got=()
    [ -e "$T/argv" ] && mapfile -d '' got <"$T/argv"
    if [ "${got[*]-}" = "$*" ] && [ ${#got[@]} -eq $# ]; then
        ok "$name: intact, nothing run"
    else
        bad "$name: argv [${got[*]-}] want [$*] from: $line"
    fi
}
# real NAME LINE WANT_RC [DIR]: the same line with the real attnfuzz, run in W (or DIR:
# the reports' Reproduce lines name the case relative to the campaign directory)
real() {
    (cd "${4:-$W}" && PATH="$T/real:$PATH" sh -c "$2") >"$T/real.out" 2>&1
    local rc=$?
    [ $rc -eq "$3" ] && [ -z "$(ls -A "$W")" ] && ok "$1 (exit $rc)" || { bad "$1: exit $rc (want $3): $(tail -2 "$T/real.out")"; rm -rf "${W:?}"/*; }
}

printf 'dtype = fp16\nbatch = 1\nheads = 1\nseqlen = 16\nhead_dim = 16\nseed = 5\n' >"$D/seed/m;touch INJ;.case"
CASE="$D/x;touch INJ;.case"
PLUGIN="plugin:/tmp/a';id>F;'.so"
{ cat "$D/seed/m;touch INJ;.case"; echo "backend = $PLUGIN"; } >"$CASE"

# 1. the refusal hint of a case-named plugin (run and repro)
for verb in run repro; do
    (cd "$W" && "$AF" $verb "$CASE") >"$T/hint.out" 2>&1
    rc=$?
    [ $rc -eq 5 ] || bad "$verb: exit $rc (want 5)"
    line=$(sed -n 's/.*to run it deliberately: //p' "$T/hint.out")
    [ -n "$line" ] || bad "$verb: no hint in: $(cat "$T/hint.out")"
    paste "$verb refusal hint" "$line" "$verb" "$CASE" --backend "$PLUGIN"
done

# 2. minimize's reproduce line, the output path hostile too
OUT="$D/o';touch INJ;'.case"
(cd "$W" && "$AF" minimize "$D/seed/m;touch INJ;.case" -o "$OUT" --backend flash_bug:uniform_scale --max-runs 20 --quiet) \
    >"$T/min.out" 2>&1
line=$(sed -n 's/^reproduce: //p' "$T/min.out")
[ -n "$line" ] || bad "minimize printed no reproduce line: $(tail -3 "$T/min.out")"
paste "minimize reproduce line" "$line" repro "$OUT" --backend flash_bug:uniform_scale
real "minimize reproduce line runs the minimised case" "$line" 1

# 3. a campaign's Reproduce lines in every report, and after merge
(cd "$W" && timeout 120 "$AF" campaign --inprocess "$D/seed" --time 3 --minimize-runs 3 --seed 1 --backend flash_bug:uniform_scale \
    --out "$D/camp") >"$T/camp.out" 2>&1
[ -n "$(ls "$D/camp/findings" 2>/dev/null)" ] || bad "the campaign found nothing: $(tail -3 "$T/camp.out")"
(cd "$W" && "$AF" merge "$D/merged" "$D/camp" --quiet) >"$T/merge.out" 2>&1 # exit 1: it holds findings
[ -s "$D/merged/report.json" ] || bad "merge wrote no report: $(tail -2 "$T/merge.out")"
# one line per report and bucket: REPORT<TAB>BUCKET<TAB>LINE, NUL-terminated
python3 - "$D" >"$T/lines" <<'PY'
import glob, html, json, re, sys, xml.etree.ElementTree as ET
d = sys.argv[1]
out = []
def emit(src, bucket, line):
    out.append("%s\t%s\t%s" % (src, bucket, line))
for name in ("camp", "merged"):
    rep = json.load(open("%s/%s/report.json" % (d, name)))
    for b in rep["buckets"]:
        emit(name + " report.json", b["bucket"], b["repro"])
camp = "%s/camp" % d
for case in ET.parse(camp + "/report.junit.xml").iter():
    text = (case.text or "") + "".join((c.tail or "") for c in case)
    for m in re.finditer(r"bucket (\w+), .*\nrepro \(from the campaign directory\): (.*)", text):
        emit("report.junit.xml", m.group(1), m.group(2))
for run in json.load(open(camp + "/report.sarif"))["runs"]:
    for r in run["results"]:
        line = r["properties"]["repro"]
        emit("report.sarif", re.search(r"findings/(\w+)/finding.case", line).group(1), line)
for m in re.finditer(r"Reproduce \(from the campaign directory\):</p><pre>(.*?)</pre>", open(camp + "/report.html").read(), re.S):
    line = html.unescape(m.group(1)).strip()
    emit("report.html", re.search(r"findings/(\w+)/finding.case", line).group(1), line)
sys.stdout.write("".join(x + "\0" for x in out))
PY
n=0
declare -A seen
while IFS=$'\t' read -r -d '' src bucket line; do
    n=$((n + 1))
    # the reports name the case relative to the campaign directory
    paste "$src $bucket" "$line" repro "findings/$bucket/finding.case" --backend flash_bug:uniform_scale
    seen[$src]=1
done <"$T/lines"
for src in "camp report.json" "merged report.json" report.junit.xml report.sarif report.html; do
    [ -n "${seen[$src]-}" ] || bad "no Reproduce line read from $src"
done
line=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["buckets"][0]["repro"])' "$D/merged/report.json")
real "a merged bucket's Reproduce line reproduces it, run in the merged directory" "$line" 1 "$D/merged"
echo "     $n Reproduce lines pasted"

[ -z "$(find "$T" -name 'INJ*' -o -name F)" ] || bad "an injected command ran somewhere: $(find "$T" -name 'INJ*' -o -name F)"
[ $fail -eq 0 ] && echo "test_quote: all checks passed"
exit $fail
