#!/usr/bin/env bash
# ci/wheels/install.sh DEST SRC... — on the GPU machine (no network needed): install what
# ci/wheels/fetch.sh staged into the folder DEST, for the fa4 and cudnn-fe worker targets.
#   - SRC folders hold wheels (*.whl) and parts of the CuTe DSL library
#     (cutlass-dsl-libs-cu13.tar.xz.NN + cu13.manifest); each file is checked against the
#     SHA256SUMS beside it. Parts are kept in DEST/parts, so the parts may arrive over several
#     runs (a size-limited copy): the library is unpacked once every part is there.
#   - wheels go into DEST/site with pip --target --no-deps --no-index (pip skips a package
#     folder that exists, so the CuTe DSL's wheels go in first and the big library is
#     unpacked over them afterwards);
#   - DEST/env.sh is written: source it to put DEST/site and DEST/site/nvidia_cutlass_dsl/
#     dsl_packages on PYTHONPATH (the cutlass-dsl wheel's .pth file is not processed in a
#     --target folder) and to keep the JIT caches of the CuTe DSL kernels (FA4, cuDNN's
#     flex and FROST) in DEST/jit-cache: a folder to copy back and reuse (JIT_CACHE=DIR
#     at install time points them elsewhere; a later install keeps what is there).
# Prints what is installed and what is still missing; exit 0 when every given SRC was
# installed (a library still waiting for parts is not an error), 2 on a bad argument,
# 1 when a checksum or an install fails. Env: PY (default python3).
set -uo pipefail
DEST=${1:?usage: install.sh DEST SRC...}
shift
[ $# -ge 1 ] || { echo "usage: install.sh DEST SRC..." >&2; exit 2; }
PY=${PY:-python3}
SITE=$DEST/site
PARTS=$DEST/parts
CACHE=${JIT_CACHE:-$DEST/jit-cache}
mkdir -p "$SITE" "$PARTS" "$CACHE" || exit 1
DEST=$(cd "$DEST" && pwd) SITE=$DEST/site PARTS=$DEST/parts
CACHE=$(cd "$CACHE" && pwd)
say() { echo "install.sh: $*"; }

wheels=()
for src in "$@"; do
    [ -d "$src" ] || { echo "install.sh: $src: not a folder" >&2; exit 2; }
    if [ -f "$src/SHA256SUMS" ]; then
        (cd "$src" && sha256sum --quiet -c SHA256SUMS) || { say "$src: checksum mismatch (a truncated copy?)"; exit 1; }
    fi
    for f in "$src"/*.whl; do [ -e "$f" ] && wheels+=("$f"); done
    for f in "$src"/cutlass-dsl-libs-cu13.tar.xz.* "$src"/cu13.manifest; do
        [ -e "$f" ] && cp "$f" "$PARTS/"
    done
done

if [ ${#wheels[@]} -gt 0 ]; then
    say "pip install --target $SITE: $(printf '%s ' "${wheels[@]##*/}")"
    "$PY" -m pip install --quiet --no-deps --no-index --no-compile --disable-pip-version-check \
        --target "$SITE" "${wheels[@]}" || { say "pip install failed"; exit 1; }
fi

# the CuTe DSL compiler library: every part there, the base wheel installed, not yet unpacked
if [ -f "$PARTS/cu13.manifest" ]; then
    want=$(awk '$1 == "parts" { print $2 }' "$PARTS/cu13.manifest")
    have=$(ls "$PARTS"/cutlass-dsl-libs-cu13.tar.xz.* 2>/dev/null | wc -l)
    whl=$(awk '$1 == "wheel" { print $2 }' "$PARTS/cu13.manifest")
    info=$SITE/$(echo "$whl" | cut -d- -f1-2).dist-info
    if [ -d "$info" ]; then
        say "CuTe DSL library already unpacked ($(basename "$info"))"
    elif [ "$have" -lt "$want" ]; then
        say "CuTe DSL library: $have of $want parts here; the rest come with a later install.sh run"
    elif [ ! -d "$SITE/nvidia_cutlass_dsl/dsl_packages/cutlass" ]; then
        say "CuTe DSL library: all parts here, waiting for nvidia-cutlass-dsl-libs-base (install it, then rerun)"
    else
        sum=$(cat "$PARTS"/cutlass-dsl-libs-cu13.tar.xz.* | sha256sum | cut -d' ' -f1)
        if [ "$sum" != "$(awk '$1 == "sha256" { print $2 }' "$PARTS/cu13.manifest")" ]; then
            say "CuTe DSL library: the reassembled parts do not match the manifest's sha256"
            exit 1
        fi
        cat "$PARTS"/cutlass-dsl-libs-cu13.tar.xz.* | xz -d | tar -C "$SITE" -xf - || { say "unpacking failed"; exit 1; }
        say "CuTe DSL library unpacked into $SITE ($have parts)"
    fi
fi

cat >"$DEST/env.sh" <<EOF
# written by ci/wheels/install.sh: source it before attnfuzz runs worker:fa4 / worker:cudnn-fe
export PYTHONPATH="$SITE:$SITE/nvidia_cutlass_dsl/dsl_packages\${PYTHONPATH:+:\$PYTHONPATH}"
export FLASH_ATTENTION_CUTE_DSL_CACHE_ENABLED=1 FLASH_ATTENTION_CUTE_DSL_CACHE_DIR="$CACHE/fa4"
export FLEX_ATTENTION_CUTE_DSL_CACHE_ENABLED=1 FLEX_ATTENTION_CUTE_DSL_CACHE_DIR="$CACHE/cudnn-flex"
export CUDNN_FRONTEND_COMPILED_CACHE="$CACHE/cudnn-frost"
EOF
say "wrote $DEST/env.sh (source it); JIT caches in $CACHE"
# what imports now (in this python, with the new paths), one line per module
(
    # shellcheck disable=SC1091
    . "$DEST/env.sh"
    "$PY" - <<'EOF'
import importlib.util
for module, package in (("cudnn", "nvidia-cudnn-frontend"), ("cutlass", "nvidia-cutlass-dsl"),
                        ("tvm_ffi", "apache-tvm-ffi"), ("quack", "quack-kernels"), ("flash_attn.cute", "flash-attn-4")):
    try:
        found = importlib.util.find_spec(module) is not None
    except ImportError:
        found = False
    print("install.sh: %-16s %s" % (module, "found" if found else "missing (pip package %s)" % package))
EOF
)
exit 0
