# ci/device_preamble.sh — sourced by a device call's script (docs/device/run-*/runN.sh),
# from the repository root on the GPU machine, with $OUT set by the device tool. Sets:
#   B           the carried build (default build-dev, ci/make_devbuild.sh)
#   R, S        the results folder ($OUT/r) and its summary file ($R/summary.txt)
#   VENV_CUDNN  the torch venv's cuDNN library folder (empty when there is none)
# and puts B's libraries (jansson, libpng) and python/ on the search paths. The script
# ends with `device_pack`, which leaves one file, $OUT/all.tgz, to bring back.
set -u
B=${B:-build-dev}
export LD_LIBRARY_PATH="$PWD/$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
R=$OUT/r
S=$R/summary.txt
mkdir -p "$R"
VENV_CUDNN=$(python3 -c 'import nvidia.cudnn as m, os; print(os.path.join(list(m.__path__)[0], "lib"))' 2>/dev/null)
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >>"$S" 2>&1
# stamp LABEL CMD...: run CMD, then append "LABEL: exit RC, N s" to the summary
stamp() {
    local label=$1 t0 rc
    shift
    t0=$(date +%s)
    "$@"
    rc=$?
    echo "$label: exit $rc, $(($(date +%s) - t0)) s" >>"$S"
    return $rc
}
device_pack() { (cd "$OUT" && tar czf all.tgz r && rm -rf r); }
