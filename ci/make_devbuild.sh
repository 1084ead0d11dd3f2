#!/usr/bin/env bash
# make_devbuild.sh [BUILD] [DEST] — a slim copy of a Release CUDA build (CUDA runtime linked
# statically) to carry to the GPU machine: the stripped binaries ci/device_session.sh runs,
# the plugins, and the shared libraries that machine lacks (jansson, libpng) in DEST/lib.
# Usage: cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release && cmake --build build-gpu -j2
#        ci/make_devbuild.sh build-gpu build-dev   # then carry ["build-dev"] (< 64 MiB)
set -eu
SRC=${1:-build-gpu}
DEST=${2:-build-dev}
[ -x "$SRC/attnfuzz" ] || { echo "make_devbuild: $SRC/attnfuzz not built" >&2; exit 2; }
rm -rf "$DEST"
mkdir -p "$DEST/lib" "$DEST/plugins"
for b in attnfuzz attnfuzz_replay bench_oracle_gpu bench_ref_gpu bench_pipeline test_oracle_gpu test_oracle_pipeline \
         test_gpu_ref test_gpu_gen test_cudnn_sdpa test_cudnn_fp8 test_cudnn_fp8_stats test_cudnn_ahead \
         test_cudnn_plan_disk test_campaign_gpu test_compare_gpu test_gpu_sync ${EXTRA_BINS:-}; do
  if [ -x "$SRC/$b" ]; then
    # attnfuzz keeps its symbol table (0.4 MB): ci/bench/pmp.sh's stacks name functions
    if [ "$b" = attnfuzz ]; then strip --strip-debug -o "$DEST/$b" "$SRC/$b"; else strip -o "$DEST/$b" "$SRC/$b"; fi
  else
    echo "make_devbuild: $b not built in $SRC (skipped)" >&2
  fi
done
cp "$SRC"/plugins/*.so "$DEST/plugins/"
for lib in libjansson.so.4 libpng16.so.16; do
  cp -L "$(ldconfig -p | awk -v l="$lib" '$1 == l { print $NF; exit }')" "$DEST/lib/"
done
du -sh "$DEST"
