#!/usr/bin/env bash
# The device call that checks main after a kernel merge, within one call's 600 s: the four GPU
# test executables, the quotient bench at 4,096 worlds on the four shapes of the README's table,
# every GPU mode against the oracle on the whole conformance corpus (the quotient through every
# kernel family), then the bench at 8,192 worlds in the time left. Build here first:
#   ../shared/tools/device-pack && tools/h200_run.sh --pack && git rev-parse --short HEAD > .dev/COMMIT
# then on the device (carry [".dev"]): bash tools/h200_verify.sh
# (VERIFY_END=S ends the 8,192-world bench by S s instead of 575, where less device time is left.)
# $OUT gets log.txt (the verdicts: read it first), q4096.md, q8192.md and logs.tgz.
set -uo pipefail
cd "$(dirname "$0")/.."
export ARCHIPELAGO_ROOT=$PWD
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
out=${OUT:-out}
L=$out/log.txt
mkdir -p "$out/logs"
{ date -u; echo "main $(cat .dev/COMMIT 2>/dev/null)"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >> "$L" 2>&1
verdict() { grep -E '^test result' "$1" | tail -1; }
for t in gpu_quotient determinism gpu_order gpu; do
    t0=$SECONDS
    timeout 200 ".dev/$t-test" --nocapture > "$out/logs/test-$t.log" 2>&1
    echo "== $t rc=$? in $((SECONDS - t0)) s: $(verdict "$out/logs/test-$t.log")" >> "$L"
done
t0=$SECONDS
timeout 200 .dev/archipelago bench --quotient --worlds 4096 \
    --shapes q:mechanism-90%,q:humanoid-50%,trace:hammockx4096,q:cloth-99% \
    --out "$out/q4096.md" > "$out/logs/bench4096.log" 2>&1
echo "== bench 4096 rc=$? in $((SECONDS - t0)) s" >> "$L"
t0=$SECONDS
# The whole conformance corpus: the full-rebuild modes (gpu-test) and every kernel family of the
# quotient (gpu_quotient-test) side by side. (gpu-test's corpus test runs the six full-rebuild
# modes only: ARCHIPELAGO_Q_WARP has no effect there.)
ARCHIPELAGO_GPU_CORPUS=all timeout 200 .dev/gpu-test \
    every_mode_equals_the_oracle_on_the_generated_corpus --nocapture > "$out/logs/corpus-full.log" 2>&1 &
full=$!
ARCHIPELAGO_GPU_CORPUS=all timeout 200 .dev/gpu_quotient-test \
    every_kernel_equals_the_oracle_on_the_conformance_corpus --nocapture > "$out/logs/corpus-quotient.log" 2>&1
echo "== corpus (quotient, every kernel family) rc=$? in $((SECONDS - t0)) s: $(verdict "$out/logs/corpus-quotient.log")" >> "$L"
wait $full
echo "== corpus (full-rebuild modes) rc=$? in $((SECONDS - t0)) s: $(verdict "$out/logs/corpus-full.log")" >> "$L"
# What is left of the call's 600 s (or of VERIFY_END s, where less device time is left), less
# a margin for the archive.
limit=$((${VERIFY_END:-575} - SECONDS))
echo "8192 limit $limit s" >> "$L"
t0=$SECONDS
timeout "$limit" .dev/archipelago bench --quotient --worlds 8192 \
    --shapes q:mechanism-90%,trace:hammockx8192 --out "$out/q8192.md" > "$out/logs/bench8192.log" 2>&1
echo "== bench 8192 rc=$? in $((SECONDS - t0)) s" >> "$L"
(cd "$out" && tar czf logs.tgz logs && rm -rf logs)
cat "$L"
