#!/usr/bin/env bash
# Device call (carry ["build-dev"]; about 9 min): the campaign's "hang" 5ffafc2b1c13 of
# 2026-12-06 (fp16 thd ALiBi abs, s_q 2432 over s_kv 65536, backward) replayed alone with
# its judge summary (which oracle tier, each stage's seconds), then a cudnn campaign with
# the host-judged budget and the stage marks (CAMP_S, default 270 s), its report and each
# bucket replayed within REPLAY_S (120) seconds.
source ci/device_preamble.sh
stamp hang-replay timeout 240 $B/attnfuzz run docs/device/next/hang-5ffafc2b1c13.case --backend cudnn --json \
  > $R/hang-replay.jsonl 2> $R/hang-replay.err
head -c 600 $R/hang-replay.jsonl >> $S; echo >> $S
python3 - $R/hang-replay.jsonl >> $S 2>&1 <<'PY'
import json, sys
for line in open(sys.argv[1]):
    try: v = json.loads(line)
    except Exception: continue
    if 'judge' not in v: continue
    j = v['judge']
    print('verdict', v.get('verdict'), 'tier', j.get('oracle_tier'), 'reference', j.get('reference'))
    print('seconds', {k: round(x, 2) for k, x in j.get('seconds', {}).items() if isinstance(x, (int, float)) and x > 0.05})
    print('findings', [(f['kind'], f['tensor']) for f in v.get('findings', [])][:6])
PY
CAMP_S=${CAMP_S:-270}
dir=/tmp/attnfuzz-camp
rm -rf $dir
stamp campaign timeout $((CAMP_S + 90)) $B/attnfuzz campaign --backend cudnn --workers-per-gpu 8 --time $CAMP_S \
  --total-time $((CAMP_S + 60)) --out $dir > $R/campaign.log 2>&1
tail -8 $R/campaign.log >> $S
ls $dir/errors 2>/dev/null | head -20 >> $S
head -qn1 $dir/errors/*.case 2>/dev/null | head -20 >> $S
REPLAY_S=${REPLAY_S:-120} camp_report $dir camp --backend cudnn
tail -70 $S
device_pack
