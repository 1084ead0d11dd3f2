#!/usr/bin/env bash
# ci/nightly.sh [ATTNFUZZ] — the nightly campaign (issue 16): a campaign on every backend
# present, its reports (triage), then the buckets diffed against the previous night's.
#   backends   $NIGHTLY_BACKENDS (space-separated) when set; else cpu, and cudnn where
#              nvidia-smi lists a GPU. Planted plugins are never run unless named there.
#   output     $NIGHTLY_ROOT/$NIGHT/<backend>/ (root default out/nightly, night default
#              today's date, YYYY-MM-DD; ':' and '/' of a backend name become '_'). A
#              directory that already holds that night's campaign is continued with
#              campaign --resume, so a rerun of the same night is safe.
#   time       $NIGHTLY_TIME fuzzing seconds per backend (default 3600); $NIGHTLY_ARGS
#              more campaign options (word-split), e.g. --jobs 8 --inprocess
#   diff       against the latest night before this one under the root (by name): each
#              bucket (backend + bucket id) new, gone or still there; printed one line
#              each and written to $NIGHTLY_ROOT/$NIGHT/diff.json
#              {"night", "previous", "new": [..], "gone": [..], "still": [..]}, each entry
#              {"backend", "bucket", "signature", "count"}.
#   tests      then ci/nightly_tests.sh: the long versions of the campaign tests CI runs
#              short (NIGHTLY_TESTS=0 skips them)
#   plans      cuDNN's execution plans kept from night to night in $NIGHTLY_PLANS (default
#              $NIGHTLY_ROOT/cudnn-plans; empty: none) as ATTNFUZZ_CUDNN_PLAN_DIR for the
#              campaigns (docs/cudnn.md; one worker judged 1.26x the cases with them on an
#              H100). Plans are keyed by the binary, so when ATTNFUZZ is newer than the
#              folder's stamp (.binary) its *.plan files go first. An ATTNFUZZ_CUDNN_PLAN_DIR
#              of your own is used as it is.
# Exit: 1 when there are new buckets, 0 when none, 2 when a campaign, triage or a long
# test failed (the diff is still written for the backends that ran).
set -u
bin=${1:-build/attnfuzz}
root=${NIGHTLY_ROOT:-out/nightly}
night=${NIGHT:-$(date +%F)}
secs=${NIGHTLY_TIME:-3600}
if [ -n "${NIGHTLY_BACKENDS:-}" ]; then
  read -r -a backends <<<"$NIGHTLY_BACKENDS"
else
  backends=(cpu)
  nvidia-smi -L 2>/dev/null | grep -q '^GPU' && backends+=(cudnn)
fi
command -v python3 >/dev/null || { echo "nightly: python3 is needed for the diff"; exit 2; }
mkdir -p "$root/$night"
plans=${NIGHTLY_PLANS-$root/cudnn-plans}
plan_dir=${ATTNFUZZ_CUDNN_PLAN_DIR:-} # the campaigns' folder (theirs alone: not the long tests')
if [ -z "$plan_dir" ] && [ -n "$plans" ]; then
  mkdir -p "$plans"
  # an earlier build's plans are never read again (their key names that binary)
  [ -e "$plans/.binary" ] && [ ! "$bin" -nt "$plans/.binary" ] || find "$plans" -maxdepth 1 -name '*.plan' -delete
  touch "$plans/.binary"
  plan_dir=$plans
fi
status=0
for b in "${backends[@]}"; do
  d=$root/$night/$(echo "$b" | tr ':/' '__')
  resume=""
  [ -f "$d/stats.json" ] && resume=--resume
  echo "nightly $night: campaign $b ${resume:+(resumed) }for $secs s -> $d"
  # shellcheck disable=SC2086
  ATTNFUZZ_CUDNN_PLAN_DIR=$plan_dir "$bin" campaign --time "$secs" --backend "$b" $resume --out "$d" ${NIGHTLY_ARGS:-} >"$d.log" 2>&1
  rc=$?
  case $rc in
    0 | 1 | 130) ;;
    *) echo "nightly $night: campaign $b failed (exit $rc): $(tail -n 1 "$d.log")"; status=2; continue ;;
  esac
  "$bin" triage "$d" --quiet || { echo "nightly $night: triage $d failed"; status=2; }
  tail -n 1 "$d.log"
done
previous=$(find "$root" -mindepth 1 -maxdepth 1 -type d -not -path "$plans" -printf '%f\n' | sort | awk -v n="$night" '$0 < n' | tail -n 1)
python3 - "$root" "$night" "$previous" <<'PY'
import json, os, sys
root, night, previous = sys.argv[1], sys.argv[2], sys.argv[3]
def buckets(name):
    out = {}
    if not name: return out
    top = os.path.join(root, name)
    for b in sorted(os.listdir(top)):
        stats = os.path.join(top, b, "stats.json")
        if not os.path.isfile(stats): continue
        backend = json.load(open(stats)).get("backend", b)
        fdir = os.path.join(top, b, "findings")
        for bucket in sorted(os.listdir(fdir)) if os.path.isdir(fdir) else []:
            try: v = json.load(open(os.path.join(fdir, bucket, "verdict.json")))
            except (OSError, ValueError): continue
            out[(backend, bucket)] = {"backend": backend, "bucket": bucket,
                                      "signature": v.get("signature", ""), "count": v.get("count", 0)}
    return out
now, before = buckets(night), buckets(previous)
diff = {"night": night, "previous": previous or None,
        "new": [now[k] for k in sorted(now) if k not in before],
        "gone": [before[k] for k in sorted(before) if k not in now],
        "still": [now[k] for k in sorted(now) if k in before]}
with open(os.path.join(root, night, "diff.json.tmp"), "w") as f: json.dump(diff, f, indent=2)
os.replace(os.path.join(root, night, "diff.json.tmp"), os.path.join(root, night, "diff.json"))
print(f"nightly {night} vs {previous or '(no previous night)'}: {len(diff['new'])} new, "
      f"{len(diff['gone'])} gone, {len(diff['still'])} still there")
for what in ("new", "gone", "still"):
    for e in diff[what]: print(f"  {what:5} {e['backend']} {e['bucket']} x{e['count']} {e['signature']}")
print(f"diff: {os.path.join(root, night, 'diff.json')}")
sys.exit(1 if diff["new"] else 0)
PY
rc=$?
if [ "${NIGHTLY_TESTS:-1}" != 0 ]; then
  bash "$(dirname "$0")/nightly_tests.sh" "$bin" || status=2
fi
[ "$status" = 2 ] && exit 2
exit $rc
