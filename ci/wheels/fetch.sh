#!/usr/bin/env bash
# ci/wheels/fetch.sh [DEST] — on a machine WITH network: download the wheels of the fa4 and
# cudnn-fe worker targets for the GPU machine (CPython 3.12, manylinux x86_64; pinned below),
# and stage them in DEST (default .whl/targets) for a machine without network:
#   DEST/cudnn-fe/   nvidia-cudnn-frontend (11.6 MB): enough for cudnn-fe's backend engines
#   DEST/fa4/        flash-attn-4, quack-kernels, nvidia-cutlass-dsl (+ -libs-base, -libs-core),
#                    apache-tvm-ffi, torch-c-dlpack-ext (about 10 MB)
#   DEST/cu13/       nvidia-cutlass-dsl-libs-cu13 (a 92 MB wheel, a 193 MB compiler library
#                    inside), unpacked, tarred, xz-compressed and split into parts of
#                    PART_MB megabytes (default 40): cutlass-dsl-libs-cu13.tar.xz.NN, with
#                    cu13.manifest (the part count and the sha256 of the whole .tar.xz)
# and SHA256SUMS in each folder. Copy the folders over (in pieces if a copy is size-limited:
# install.sh collects parts across several runs) and run ci/wheels/install.sh there.
# FIRST_PART_MB=N makes the first part N MB (the rest PART_MB): a first copy that must also
# carry other things. The torch, einops, cuda-bindings and protobuf the packages also need
# are taken from the GPU machine's python (torch 2.11 cu130 brings them).
# Env: PY (default python3), PYTHON_VERSION (3.12), XZ_LEVEL (-6).
set -euo pipefail
DEST=${1:-.whl/targets}
PY=${PY:-python3}
PART_MB=${PART_MB:-40}
FIRST_PART_MB=${FIRST_PART_MB:-$PART_MB}
PYV=${PYTHON_VERSION:-3.12}
XZ_LEVEL=${XZ_LEVEL:--6}
FA4_WHEELS="flash-attn-4==4.0.0b36 quack-kernels==0.6.5 nvidia-cutlass-dsl==4.8.1 nvidia-cutlass-dsl-libs-base==4.8.1
nvidia-cutlass-dsl-libs-core==4.8.1 apache-tvm-ffi==0.1.15.post2 torch-c-dlpack-ext==0.1.5"
FE_WHEELS="nvidia-cudnn-frontend==1.32.0"
CU13_WHEEL="nvidia-cutlass-dsl-libs-cu13==4.8.1"
for tool in xz tar split sha256sum unzip; do
    command -v $tool >/dev/null || { echo "fetch.sh: $tool is needed" >&2; exit 2; }
done
case "$PART_MB$FIRST_PART_MB" in *[!0-9]*) echo "fetch.sh: PART_MB and FIRST_PART_MB are megabytes (integers)" >&2; exit 2 ;; esac
mkdir -p "$DEST/fa4" "$DEST/cudnn-fe" "$DEST/cu13"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# --no-deps: the metapackages would pull the cu12 libraries too; --only-binary: no sdists
download() { # download FOLDER SPEC...
    local dir=$1
    shift
    "$PY" -m pip download --quiet --no-deps --only-binary=:all: --python-version "$PYV" \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 \
        --platform any -d "$dir" "$@"
}
# shellcheck disable=SC2086
download "$DEST/fa4" $FA4_WHEELS
download "$DEST/cudnn-fe" $FE_WHEELS
download "$WORK" $CU13_WHEEL
whl=$(ls "$WORK"/nvidia_cutlass_dsl_libs_cu13-*.whl)
mkdir "$WORK/tree"
unzip -q "$whl" -d "$WORK/tree"
# a tar of the unpacked wheel (its dist-info included: pip and importlib.metadata see it)
tar -C "$WORK/tree" -cf - . | xz "$XZ_LEVEL" -T1 >"$WORK/cutlass-dsl-libs-cu13.tar.xz"
rm -f "$DEST"/cu13/cutlass-dsl-libs-cu13.tar.xz.*
whole=$(sha256sum "$WORK/cutlass-dsl-libs-cu13.tar.xz" | cut -d' ' -f1)
size=$(stat -c %s "$WORK/cutlass-dsl-libs-cu13.tar.xz")
first=$((FIRST_PART_MB * 1000000))
if [ "$size" -le "$first" ]; then
    cp "$WORK/cutlass-dsl-libs-cu13.tar.xz" "$DEST/cu13/cutlass-dsl-libs-cu13.tar.xz.00"
else
    head -c "$first" "$WORK/cutlass-dsl-libs-cu13.tar.xz" >"$DEST/cu13/cutlass-dsl-libs-cu13.tar.xz.00"
    tail -c +$((first + 1)) "$WORK/cutlass-dsl-libs-cu13.tar.xz" |
        split -d -a 2 --numeric-suffixes=1 -b "${PART_MB}000000" - "$DEST/cu13/cutlass-dsl-libs-cu13.tar.xz."
fi
parts=$(ls "$DEST"/cu13/cutlass-dsl-libs-cu13.tar.xz.* | wc -l)
printf 'wheel %s\nparts %d\nsha256 %s\n' "$(basename "$whl")" "$parts" "$whole" >"$DEST/cu13/cu13.manifest"
for d in fa4 cudnn-fe cu13; do
    (cd "$DEST/$d" && sha256sum -- * | grep -v ' SHA256SUMS$' >SHA256SUMS)
done
du -sh "$DEST"/* | sed 's/^/fetch.sh: /'
ls -l "$DEST"/cu13/
