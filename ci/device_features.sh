#!/usr/bin/env bash
# device_features.sh — the cudnn backend's features (bias, ALiBi, softcap, sinks, dropout) on a GPU.
#
#   OUT=dir bash ci/device_features.sh BUILD_DIR      (from the repository root)
#
# BUILD_DIR is a CUDA build (attnfuzz, test_cudnn_features, test_cudnn_feature_declines).
# Per cuDNN found (system: libcudnn.so.9 as the loader finds it; venv: the torch venv's
# nvidia/cudnn/lib through LD_LIBRARY_PATH, found as ci/device_run.sh finds it):
#   1. test_cudnn_feature_declines (the served / declined table; no GPU needed)
#   2. test_cudnn_features (each feature against the oracle + a feature-off control)
#   3. attnfuzz engines on each corpora/gpu/feat-*.case (which configs finalize, or why not)
#   4. attnfuzz run corpora/gpu/feat-*.case --backend cudnn --engine all --json
# and writes per feature (the part of the file name after feat-: bias, alibi, softcap,
# sink, dropout, decline) the engine runs that passed, were declined (with each distinct reason)
# and had findings (verdict and first finding) to $OUT/features.txt; the raw outputs sit
# beside it (features-<tag>-*.txt / .jsonl). Environment: TEST_TIMEOUT (600 s per test),
# CASE_TIMEOUT (900 s per case run), ENGINES_TIMEOUT (300 s per engines report).
# Exit status: 0 when both tests passed on every cuDNN and no run had a finding (a
# decline is not a failure: it is reported with its reason); 1 otherwise; 2 when the
# build is missing.
set -u
BUILD=${1:-${BUILD_DIR:-build}}
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
ATTNFUZZ="$BUILD/attnfuzz"
REPORT="$OUT/features.txt"
status=0
for f in "$ATTNFUZZ" "$BUILD/test_cudnn_features" "$BUILD/test_cudnn_feature_declines"; do
  if ! [ -x "$f" ]; then
    echo "device_features: $f missing: build with CUDA first (cmake -S . -B $BUILD && cmake --build $BUILD)" |
      tee "$REPORT"
    exit 2
  fi
done
mapfile -t CASES < <(ls corpora/gpu/feat-*.case 2> /dev/null)
if [ ${#CASES[@]} -eq 0 ]; then
  echo "device_features: no corpora/gpu/feat-*.case (run from the repository root)" | tee "$REPORT"
  exit 2
fi

declare -a TAGS=(system)
declare -A LIBPATH=([system]="")
venv_dir=$(python3 -c 'import nvidia.cudnn as m, os; print(os.path.join(list(m.__path__)[0], "lib"))' 2> /dev/null || true)
if [ -n "$venv_dir" ] && [ -e "$venv_dir/libcudnn.so.9" ]; then
  TAGS+=(venv)
  LIBPATH[venv]="$venv_dir"
fi
ORIG_LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}

{
  echo "# cudnn features on the device $(date -u +%FT%TZ)"
  { nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader || echo "nvidia-smi failed"; } 2>&1 |
    head -1
  echo "# cuDNN versions: ${TAGS[*]}${venv_dir:+ (venv: $venv_dir)}"
} > "$REPORT"

# run_test TAG NAME: one test binary under a timeout, its output to a file, a line in the report
run_test() {
  local tag=$1 name=$2 log="$OUT/features-$1-$2.txt" rc
  timeout "${TEST_TIMEOUT:-600}" "$BUILD/$name" > "$log" 2>&1
  rc=$?
  if [ $rc -eq 0 ]; then
    echo "- $name: pass ($(tail -1 "$log"))" >> "$REPORT"
  else
    case $rc in
      77) why="SKIPPED: $(grep -m1 '^SKIP' "$log")" ;;
      124) why="TIMEOUT after ${TEST_TIMEOUT:-600} s" ;;
      *) why="exit $rc" ;;
    esac
    echo "- $name: FAIL ($why; see $(basename "$log"))" >> "$REPORT"
    status=1
  fi
  # the per-feature lines of test_cudnn_features, and any CHECK failure
  grep -E '^feature |CHECK failed' "$log" | sed 's/^/    /' >> "$REPORT"
}

for tag in "${TAGS[@]}"; do
  lp="${LIBPATH[$tag]}"
  export LD_LIBRARY_PATH="${lp}${lp:+:}${ORIG_LD_LIBRARY_PATH}"
  {
    echo ""
    echo "## cuDNN: $tag ${lp:+($lp)}"
    echo "    $("$ATTNFUZZ" backends 2>&1 | grep '^cudnn' || echo 'cudnn: not listed by attnfuzz backends')"
  } >> "$REPORT"
  run_test "$tag" test_cudnn_feature_declines
  run_test "$tag" test_cudnn_features

  # which engine configs each feature case has (the graph's decline text when none)
  eng="$OUT/features-$tag-engines.txt"
  : > "$eng"
  for c in "${CASES[@]}"; do
    echo "### $c" >> "$eng"
    timeout "${ENGINES_TIMEOUT:-300}" "$ATTNFUZZ" engines "$c" --backend cudnn >> "$eng" 2>&1 ||
      echo "(engines exit $?)" >> "$eng"
  done

  # every engine of every feature case, judged; one process per case so that a crash or
  # a sticky CUDA error stays with its case
  runs="$OUT/features-$tag-runs.jsonl"
  errs="$OUT/features-$tag-runs.stderr"
  : > "$runs"
  : > "$errs"
  for c in "${CASES[@]}"; do
    timeout "${CASE_TIMEOUT:-900}" "$ATTNFUZZ" run "$c" --backend cudnn --engine all --json >> "$runs" 2>> "$errs"
    rc=$?
    # 0 pass, 3 declined; 1 a finding (in the JSON); anything else: the case's run itself failed
    case $rc in
      0 | 1 | 3) ;;
      124) echo "{\"case\": \"$c\", \"verdict\": \"timeout\", \"reason\": \"no result in ${CASE_TIMEOUT:-900} s\"}" >> "$runs" ;;
      *) echo "{\"case\": \"$c\", \"verdict\": \"exit_$rc\", \"reason\": \"attnfuzz run exited $rc (see $(basename "$errs"))\"}" >> "$runs" ;;
    esac
  done

  python3 - "$runs" >> "$REPORT" << 'EOF' || status=1
import collections, json, os, sys
rows = collections.OrderedDict()
bad = 0
for line in open(sys.argv[1]):
    line = line.strip()
    if not line.startswith("{"):
        continue
    try:
        r = json.loads(line)
    except ValueError:
        continue
    name = os.path.basename(r.get("case", "?"))
    stem = name[len("feat-"):] if name.startswith("feat-") else name
    feature = stem.split("-")[0]
    if feature == "sink":
        feature = "sink-" + stem.split("-")[1]
    f = rows.setdefault(feature, {"pass": 0, "declined": collections.Counter(), "findings": [], "cases": set()})
    f["cases"].add(name)
    v = r.get("verdict", "?")
    if v == "pass":
        f["pass"] += 1
    elif v == "declined":
        f["declined"][(name, r.get("reason", ""))] += 1
    else:
        first = (r.get("findings") or [{}])[0]
        what = r.get("reason") or first.get("detail") or json.dumps(first)[:200]
        f["findings"].append("%s %s: %s: %s" % (name, r.get("engine", ""), v, what))
        bad += 1
print("")
print("| feature | cases | engine runs passed | declined | findings |")
print("|---|---|---|---|---|")
for feature, f in rows.items():
    print("| %s | %d | %d | %d | %d |" % (feature, len(f["cases"]), f["pass"], sum(f["declined"].values()),
                                         len(f["findings"])))
for feature, f in rows.items():
    for (name, why), n in f["declined"].items():
        print("  declined  %s (%d runs): %s" % (name, n, why))
    for line in f["findings"][:20]:
        print("  FINDING   %s" % line)
    if len(f["findings"]) > 20:
        print("  ... %d more findings for %s" % (len(f["findings"]) - 20, feature))
sys.exit(1 if bad else 0)
EOF
done
echo "" >> "$REPORT"
echo "device_features: exit $status" >> "$REPORT"
cat "$REPORT"
exit $status
