#!/usr/bin/env bash
# submit.sh — queue an attnfuzz campaign as a Slurm job array of N shards plus the merge
# job that runs once they all ended. Prints the two job ids.
#   ci/slurm/submit.sh --shards N --out DIR [--time SEC] [--backend NAME] [--seed S]
#                      [--bin PATH] [-- SBATCH-OPTIONS...]
# Run it from the repository root (or a directory with corpora/seed); DIR must be on
# storage every node sees. Options after -- go to both sbatch calls
# (--partition, --gres=gpu:1, --time ...).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
shards="" out="" time_s=3600 backend=cpu seed=1 bin=${AF_BIN:-attnfuzz}
while [ $# -gt 0 ]; do
  case $1 in
    --shards) shards=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --time) time_s=$2; shift 2 ;;
    --backend) backend=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "submit.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ -n "$shards" ] && [ -n "$out" ] || { echo "submit.sh: --shards N and --out DIR are required" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
env_vars="ALL,AF_OUT=$out,AF_SHARDS=$shards,AF_TIME=$time_s,AF_BACKEND=$backend,AF_SEED=$seed,AF_BIN=$bin"
# run from this directory (the default seed corpus is corpora/seed, relative); logs into DIR
array=$(sbatch --parsable --array=0-$((shards - 1)) --output="$out/shard-%a.log" --export="$env_vars" "$@" \
  "$here/attnfuzz-array.sbatch")
array=${array%%;*}
merge=$(sbatch --parsable --dependency=afterany:"$array" --output="$out/merge.log" --export="$env_vars" "$@" \
  "$here/attnfuzz-merge.sbatch")
echo "array job $array ($shards shards), merge job ${merge%%;*}; merged report: $out/merged/report.html"
