#!/usr/bin/env bash
# The device call that checks main after a kernel merge, within one call's 600 s: the four GPU
# test executables and every GPU mode against the oracle on the whole conformance corpus (the
# quotient through every kernel family), side by side; then the quotient bench at 4,096 worlds on
# the four shapes of the README's table, and the bench at 8,192 worlds in the time left. Build
# here first:
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
# Every test executable, the whole conformance corpus in the six full-rebuild modes (gpu-test's
# corpus test: the quotient is not among them, so ARCHIPELAGO_Q_WARP has no effect there) and
# through every kernel family of the quotient (gpu_quotient-test, in eight parts: one process
# takes about 25 minutes on the H200, eight side by side 196 s), all side by side.
t0=$SECONDS
declare -A logs
for t in gpu_quotient determinism gpu_order gpu; do
    timeout 330 ".dev/$t-test" --nocapture > "$out/logs/test-$t.log" 2>&1 &
    logs[$!]="test $t:$out/logs/test-$t.log"
done
ARCHIPELAGO_GPU_CORPUS=all timeout 330 .dev/gpu-test \
    every_mode_equals_the_oracle_on_the_generated_corpus --nocapture > "$out/logs/corpus-full.log" 2>&1 &
logs[$!]="corpus, full-rebuild modes:$out/logs/corpus-full.log"
for i in 0 1 2 3 4 5 6 7; do
    f=$out/logs/corpus-quotient-$i.log
    ARCHIPELAGO_GPU_CORPUS=$i/8 timeout 330 \
        .dev/gpu_quotient-test every_kernel_equals_the_oracle_on_the_conformance_corpus \
        --nocapture > "$f" 2>&1 &
    logs[$!]="corpus, quotient part $i:$f"
done
for pid in "${!logs[@]}"; do
    wait "$pid"
    rc=$?
    echo "== ${logs[$pid]%%:*} rc=$rc by $((SECONDS - t0)) s: $(verdict "${logs[$pid]#*:}")" >> "$L"
done
# At most 200 s, and none where the tests left too little (timeout 0 would mean no limit).
t0=$SECONDS
limit=$((${VERIFY_END:-575} - 15 - SECONDS))
if [ "$limit" -ge 10 ]; then
    timeout "$((limit < 200 ? limit : 200))" .dev/archipelago bench --quotient --worlds 4096 \
        --shapes q:mechanism-90%,q:humanoid-50%,trace:hammockx4096,q:cloth-99% \
        --out "$out/q4096.md" > "$out/logs/bench4096.log" 2>&1
    echo "== bench 4096 rc=$? in $((SECONDS - t0)) s" >> "$L"
fi
# What is left of the call's 600 s (or of VERIFY_END s, where less device time is left), less
# a margin for the archive.
limit=$((${VERIFY_END:-575} - SECONDS))
echo "8192 limit $limit s" >> "$L"
if [ "$limit" -ge 30 ]; then
    t0=$SECONDS
    timeout "$limit" .dev/archipelago bench --quotient --worlds 8192 \
        --shapes q:mechanism-90%,trace:hammockx8192 --out "$out/q8192.md" > "$out/logs/bench8192.log" 2>&1
    echo "== bench 8192 rc=$? in $((SECONDS - t0)) s" >> "$L"
fi
(cd "$out" && tar czf logs.tgz logs && rm -rf logs)
cat "$L"
