#!/usr/bin/env bash
# test_worker_dispatch.sh ATTNFUZZ — the engine of each pass (docs/worker-protocol.md,
# "engines"), over the planted worker python/attnfuzz_worker/examples/planted_dispatch.py,
# whose backward falls back to a kernel that ignores the window:
#   - a windowed backward case is a finding on the gradients, and its verdict names the
#     passes' engines (forward main, backward fallback);
#   - the same case without the window passes (engines main, main), and the windowed
#     forward alone passes (engines forward main, no backward);
#   - a short campaign from those cases puts the finding in a bucket whose signature
#     carries "+backward=fallback".
# Needs python3 only (the worker is pure Python).
set -u
AF=$(cd "$(dirname "${1:?usage: test_worker_dispatch.sh path/to/attnfuzz}")" && pwd)/$(basename "$1")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}"
command -v python3 >/dev/null || { echo "SKIP test_worker_dispatch: no python3"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
W=(--backend worker:planted-dispatch --worker-cmd "python3 -m attnfuzz_worker.examples.planted_dispatch")
fail=0
mkcase() { # mkcase FILE WINDOW BACKWARD
  printf 'dtype = fp16\nbatch = 1\nheads_q = 2\nheads_kv = 1\nseqlen = 12\nhead_dim = 8\nmask = causal\nwindow = %s\nbackward = %s\nseed = 5\n' \
    "$2" "$3" >"$1"
}
mkdir -p "$T/seeds"
mkcase "$T/seeds/win-bwd.case" 3,0 yes
mkcase "$T/seeds/nowin-bwd.case" -1,-1 yes
mkcase "$T/seeds/win-fwd.case" 3,0 no
for n in win-bwd nowin-bwd win-fwd; do
  (cd "$T" && timeout 120 "$AF" run "seeds/$n.case" "${W[@]}" --json >"$n.jsonl" 2>"$n.err")
  echo "$? $n" >>"$T/rc"
done
python3 - "$T" <<'PY' || fail=1
import json, sys
t = sys.argv[1]
want = {"win-bwd": ("mismatch", 1, {"forward": "main", "backward": "fallback"}),
        "nowin-bwd": ("pass", 0, {"forward": "main", "backward": "main"}),
        "win-fwd": ("pass", 0, {"forward": "main", "backward": ""})}
rcs = dict(reversed(l.split()) for l in open(f"{t}/rc"))
bad = 0
for n, (verdict, rc, engines) in want.items():
    lines = [json.loads(l) for l in open(f"{t}/{n}.jsonl") if l.startswith("{")]
    if len(lines) != 1:
        print(f"FAIL {n}: {len(lines)} verdict lines; stderr: {open(f'{t}/{n}.err').read()[-400:]}"); bad += 1; continue
    v = lines[0]
    got = (v["verdict"], int(rcs[n]), v.get("engines"))
    if got != (verdict, rc, engines):
        print(f"FAIL {n}: verdict, exit, engines {got}, want {(verdict, rc, engines)}"); bad += 1
    else:
        print(f"ok   {n}: {verdict}, engines {engines}")
    if verdict == "mismatch" and not {"dQ", "dK", "dV"} & {f["tensor"] for f in v["findings"]}:
        print(f"FAIL {n}: the finding names no gradient: {[f['tensor'] for f in v['findings']]}"); bad += 1
sys.exit(1 if bad else 0)
PY
# the campaign: the finding's bucket carries the backward's own engine
(cd "$T" && timeout 120 "$AF" campaign seeds "${W[@]}" --time 8 --total-time 60 --jobs 1 --seed 3 --minimize-runs 10 \
  --out camp >camp.out 2>camp.err)
rc=$?
if [ $rc -ne 1 ]; then
  echo "FAIL campaign exit $rc (want 1: findings)"; tail -5 "$T/camp.err"; fail=1
elif grep -rqs -- "+backward=fallback" "$T"/camp/findings/*/; then
  echo "ok   campaign: a bucket's signature carries +backward=fallback"
else
  echo "FAIL campaign: no finding's signature carries +backward=fallback"; ls "$T"/camp/findings; fail=1
fi
[ $fail -eq 0 ] && echo "test_worker_dispatch: ok"
exit $fail
