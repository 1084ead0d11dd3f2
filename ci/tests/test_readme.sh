#!/usr/bin/env bash
# test_readme.sh ATTNFUZZ — the documentation is true:
#   1. README.md is at most 15000 bytes and carries no notebook lines; docs/README.md links
#      every document under docs/, and every relative link of both files exists;
#   2. the exit-code table of README.md is the CLI's (af_cli_exit_codes, `--help`): the same
#      codes with the same names, in the same order;
#   3. the environment table of docs/environment.md is harness/util/config.h's
#      (ci/env_table.py), and every ATTNFUZZ_* variable a script or the Python package reads
#      is declared there (the CLI does not warn about it);
#   4. the sample case of docs/cases.md is the file it names, verbatim, and passes;
#   5. each "$ build/attnfuzz ..." line of README.md's "Reading the output" prints the line
#      shown under it, with the exit code the text gives (0 for pass, 1 for FINDING);
#   6. the quick starts "Fuzz your C kernel" and "Fuzz your Python kernel" work verbatim:
#      their code block is written to the file its first line names and each line of their
#      sh block runs, in a scratch folder that links build/, harness/, corpora/, python/,
#      and exits 0 (a campaign's --time N runs as --time 3 to keep the test short); a
#      kernel with one planted error then fails the first run line (exit 1).
set -u
bin=${1:?usage: test_readme.sh path/to/attnfuzz}
case "$bin" in /*) ;; *) bin=$PWD/$bin ;; esac
root=$PWD
fail=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fail=$((fail+1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# ---- 1. size, notebook lines, the docs index, links ----
size=$(wc -c < README.md)
[ "$size" -le 15000 ] && ok "README.md is $size bytes (<= 15000)" || bad "README.md is $size bytes (> 15000)"
notebook='\bstop [0-9]|\bissue [0-9]|\bsession [0-9]|[0-9]-core machine|this [0-9]+-core|not run here yet|not run yet|\bcall [0-9]|\b[0-9a-f]{7,12}\b.*commit|commit [0-9a-f]{7}'
for f in README.md docs/README.md; do
  hits=$(grep -nEi "$notebook" "$f")
  [ -z "$hits" ] && ok "$f has no notebook lines" || bad "$f has notebook lines: $hits"
done
for d in $(cd docs && { ls *.md; ls */README.md; } | sort); do
  [ "$d" = README.md ] && continue
  grep -qF "($d)" docs/README.md || bad "docs/README.md does not link docs/$d"
done
for d in $(cd docs/results && ls | grep -v '^README.md$'); do
  grep -qF "($d)" docs/results/README.md || bad "docs/results/README.md does not link docs/results/$d"
done
ok "docs/README.md links every document of docs/ and of its folders' README.md; docs/results/README.md every result"
for f in README.md docs/README.md docs/results/README.md; do
  dir=$(dirname "$f")
  for link in $(grep -oE '\]\([^)#:]+\)' "$f" | sed 's/^](//; s/)$//'); do
    [ -e "$dir/$link" ] || bad "$f links $link, which does not exist"
  done
done
ok "the relative links of README.md, docs/README.md and docs/results/README.md exist"

# ---- 2. the exit-code table ----
awk '/^## Exit codes/{f=1; next} f&&/^## /{exit} f&&/^\| [0-9]+ \|/' README.md \
  | awk -F'|' '{gsub(/ /, "", $2); gsub(/ /, "", $3); print $2, $3}' > "$tmp/readme_codes"
"$bin" --help | awk '/^Exit codes:/{f=1; next} f&&/^ +[0-9]+ /{print $1, $2} f&&/^$/{exit}' > "$tmp/cli_codes"
if [ -s "$tmp/cli_codes" ] && cmp -s "$tmp/readme_codes" "$tmp/cli_codes"; then
  ok "README.md's exit codes are the CLI's ($(wc -l < "$tmp/cli_codes") codes)"
else
  bad "README.md's exit-code table differs from attnfuzz --help's:"; diff "$tmp/readme_codes" "$tmp/cli_codes"
fi

# ---- 3. the environment table ----
python3 ci/env_table.py > "$tmp/env_want" || bad "ci/env_table.py failed"
grep '^| `ATTNFUZZ_' docs/environment.md > "$tmp/env_doc"
if [ -s "$tmp/env_want" ] && cmp -s "$tmp/env_want" "$tmp/env_doc"; then
  ok "docs/environment.md's table is util/config.h's ($(wc -l < "$tmp/env_want") variables)"
else
  bad "docs/environment.md's table differs from util/config.h (python3 ci/env_table.py):"
  diff "$tmp/env_doc" "$tmp/env_want"
fi
# variables read outside the C code: os.environ / env.get in Python, ${ATTNFUZZ_NAME...} in scripts
read_vars=$( { grep -rhoE "(environ\.get|env\.get|environ\[)\(?['\"]ATTNFUZZ_[A-Z0-9_]+" python ci --include='*.py';
               grep -rhoE '\$\{ATTNFUZZ_[A-Z0-9_]+' ci --include='*.sh' --exclude=test_readme.sh; } | grep -oE 'ATTNFUZZ_[A-Z0-9_]+' | sort -u)
[ -n "$read_vars" ] || bad "found no ATTNFUZZ_* variable read by a script (the scan is broken)"
for v in $read_vars; do
  grep -q "\"$v\"" harness/util/config.h || bad "$v is read but not declared in harness/util/config.h"
  msg=$(env "$v=1" "$bin" print corpora/examples/readme.case 2>&1 >/dev/null)
  [ -z "$msg" ] || bad "attnfuzz warns about $v, which the project reads: $msg"
done
ok "every ATTNFUZZ_* variable read by a script or the Python package is declared ($(echo $read_vars | wc -w))"

# ---- 4. the sample case of docs/cases.md ----
awk '/^## Cases/{f=1} f&&/^```$/{n++; if(n==2) exit; next} f&&n==1' docs/cases.md > "$tmp/sample.case"
named=$(head -1 "$tmp/sample.case" | sed -n 's/^# \([^ ]*\.case\).*/\1/p')
if [ -z "$named" ] || [ ! -f "$named" ] || ! cmp -s "$tmp/sample.case" "$named"; then
  bad "docs/cases.md's sample case is not the file it names ('$named')"
elif "$bin" run "$named" --backend cpu > /dev/null 2>&1; then
  ok "docs/cases.md's sample case is $named verbatim and passes on cpu"
else
  bad "the sample case $named does not pass on cpu"
fi

# ---- 5. the pass line and the finding line ----
awk '/^## Reading the output/{f=1; next} f&&/^## /{exit} f' README.md > "$tmp/reading"
n=0
while IFS= read -r cmd; do
  want=$(grep -A1 -xF -- "$cmd" "$tmp/reading" | sed -n 2p)
  line=${cmd#\$ }
  got=$(cd "$root" && eval "\"$bin\"${line#build/attnfuzz}" 2>/dev/null); rc=$?
  case "$want" in *": FINDING "*) want_rc=1 ;; *) want_rc=0 ;; esac
  if [ "$got" = "$want" ] && [ "$rc" = "$want_rc" ]; then n=$((n+1)); else
    bad "'$line': exit $rc (want $want_rc), printed: $got"; echo "     README shows: $want"; fi
done < <(grep '^\$ build/attnfuzz ' "$tmp/reading")
[ "$n" -ge 2 ] && ok "the $n output lines of \"Reading the output\" are what attnfuzz prints" \
  || bad "\"Reading the output\" shows $n command lines that hold (want 2)"

# ---- 6. the quick starts, verbatim ----
block() { # block SECTION LANG: the first ```LANG block of README.md's section SECTION
  awk -v s="## $1" -v l="\`\`\`$2" '$0==s{f=1; next} f&&/^## /{exit} f&&$0==l{b=1; next} b&&/^```$/{exit} b' README.md
}
scratch() { # a fresh scratch folder with the repository's folders the quick starts name
  local d=$tmp/$1
  mkdir -p "$d"
  ln -s "$(dirname "$bin")" "$d/build"
  for x in harness corpora python; do ln -s "$root/$x" "$d/$x"; done
  echo "$d"
}
quickstart() { # quickstart SECTION LANG BROKEN_SED: the section's code and commands
  local section=$1 lang=$2 broken=$3 dir file first
  dir=$(scratch "$lang")
  block "$section" "$lang" > "$tmp/code"
  file=$(head -1 "$tmp/code" | sed -nE 's@^(/\*|#) *([A-Za-z0-9_]+\.[a-z]+):.*@\2@p')
  [ -n "$file" ] && [ -s "$tmp/code" ] || { bad "$section: no $lang block naming its file"; return; }
  cp "$tmp/code" "$dir/$file"
  block "$section" sh > "$tmp/cmds"
  [ "$(wc -l < "$tmp/cmds")" -ge 2 ] || { bad "$section: no sh block"; return; }
  first=""
  while IFS= read -r line; do
    [ -z "$line" ] && continue
    run=$(echo "$line" | sed -E 's/--time [0-9]+/--time 3/')
    out=$(cd "$dir" && bash -c "$run" 2>&1); rc=$?
    [ $rc -eq 0 ] && ok "$section: $line" || { bad "$section: '$line' exits $rc"; echo "$out" | tail -5; }
    case "$line" in *" run "*) [ -z "$first" ] && first=$line ;; esac
  done < "$tmp/cmds"
  # the same kernel with one planted error fails the first run line: the quick start checks something
  sed -i -E "$broken" "$dir/$file"
  cmp -s "$tmp/code" "$dir/$file" && { bad "$section: the planted error did not apply ($broken)"; return; }
  (cd "$dir" && while IFS= read -r line; do case "$line" in *" run "*) break ;; *) bash -c "$line" >/dev/null 2>&1 ;; esac; done < "$tmp/cmds")
  out=$(cd "$dir" && bash -c "$first" 2>&1); rc=$?
  [ $rc -eq 1 ] && echo "$out" | grep -q 'FINDING' && ok "$section: a kernel with a planted error fails ($(echo "$out" | grep -c FINDING) findings)" \
    || { bad "$section: the broken kernel gives exit $rc"; echo "$out" | tail -3; }
}
quickstart "Fuzz your C kernel" c 's/s \*= p->scale;/s *= p->scale * 1.01f;/'
# the Python quick start's kernel needs numpy in `python3`: where the first python3 on PATH
# lacks it (a pyenv or venv interpreter), the Debian one that ci/setup.sh gives python3-numpy
# stands in for it through a python3 link first on PATH (the commands stay verbatim)
if ! python3 -c 'import numpy' 2>/dev/null; then
  if /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
    mkdir -p "$tmp/pybin" && ln -sf /usr/bin/python3 "$tmp/pybin/python3"
    PATH="$tmp/pybin:$PATH"
  else
    bad "Fuzz your Python kernel: no python3 with numpy (ci/setup.sh installs python3-numpy)"
  fi
fi
quickstart "Fuzz your Python kernel" python 's/problem\.scale \* np/1.01 * problem.scale * np/'

[ "$fail" -eq 0 ] && echo "test_readme: all checks passed" || echo "test_readme: $fail check(s) failed"
exit $((fail > 0))
