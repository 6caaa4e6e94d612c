#!/usr/bin/env bash
# One device call that checks and measures everything GPU-side. Build here first:
#   ../shared/tools/device-pack && tools/h200_run.sh --pack     (copies what the call needs to .dev/)
# then, with the device tool, from the repository root there (carry [".dev"]):
#   bash tools/h200_run.sh [all]        # `all`: the GPU conformance test over the whole corpus
# Logs and Markdown tables go to $OUT (the device tool brings them back): commit them under
# benches/results/ with the date, the GPU and this command.
set -uo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--pack" ]; then
    rm -rf .dev && mkdir -p .dev
    grep -qx '/.dev/' .git/info/exclude 2>/dev/null || echo '/.dev/' >> .git/info/exclude
    cp .device/bin/archipelago .dev/
    for t in gpu gpu_quotient gpu_order determinism; do cp ".device/tests/$t-test" .dev/; done
    strip .dev/* && du -sh .dev
    exit 0
fi
out=${OUT:-out}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export ARCHIPELAGO_ROOT=$PWD
[ "${1:-}" = "all" ] && export ARCHIPELAGO_GPU_CORPUS=all
# At most 8 files come back: four test logs, three tables and bench.log.
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/bench.log"
status=0
for t in gpu_quotient determinism gpu_order gpu; do
    timeout 480 ".dev/$t-test" --nocapture > "$out/test-$t.log" 2>&1
    rc=$?; [ $rc -ne 0 ] && status=1
    echo "== $t rc=$rc: $(grep -E '^test result' "$out/test-$t.log" | tail -1)"
done
bench() { # name, then bench arguments
    local name=$1; shift
    echo "== archipelago bench $*" >> "$out/bench.log"
    timeout 240 .dev/archipelago bench "$@" --out "$out/$name.md" >> "$out/bench.log" 2>&1
    echo "== bench $name rc=$?"
}
bench gpu-bench
bench quotient-bench --quotient
bench deterministic-bench --deterministic
exit $status
