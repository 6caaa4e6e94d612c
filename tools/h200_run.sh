#!/usr/bin/env bash
# Device calls that check and measure everything GPU-side. Build here first:
#   ../shared/tools/device-pack && tools/h200_run.sh --pack     (copies what the calls need to .dev/)
# then, with the device tool, from the repository root there (carry [".dev"]):
#   bash tools/h200_run.sh tests            # the GPU test executables (600 corpus cases)
#   bash tools/h200_run.sh corpus [RANGE]   # the two GPU corpus tests (conformance against the
#                                           # oracle, determinism across permutations) over
#                                           # RANGE of the conformance corpus (default: all)
#   bash tools/h200_run.sh bench [NAME...] [--OPTION VALUE...]
#                                           # benches: gpu quotient deterministic (default: all),
#                                           # with bench options passed on (--shapes a,b ...)
#   bash tools/h200_run.sh soak [SEEDS]     # the opt-in device soak (random invalidation of
#                                           # every source, SEEDS seeds, default 40)
# Steps can be chained in one call: `tests bench`, `corpus 0..10000 bench gpu`. Logs and
# Markdown tables go to $OUT, the logs packed into $OUT/logs.tgz at the end (the device tool
# brings back at most 8 files): commit them under benches/results/ with the date, the GPU and
# the command.
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
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$out/bench.log"
status=0
run_test() { # log name, executable, timeout, test arguments...
    local log=$1 exe=$2 limit=$3; shift 3
    local t0=$SECONDS
    timeout "$limit" ".dev/$exe-test" "$@" --nocapture > "$out/$log.log" 2>&1
    local rc=$?; [ $rc -ne 0 ] && status=1
    echo "== $log rc=$rc in $((SECONDS - t0)) s: $(grep -E '^test result' "$out/$log.log" | tail -1)"
}
bench() { # name, time limit in seconds, then bench arguments
    local name=$1 limit=$2; shift 2
    local t0=$SECONDS
    echo "== archipelago bench $* ${extra[*]}" >> "$out/bench.log"
    timeout "$limit" .dev/archipelago bench "$@" "${extra[@]}" --out "$out/$name.md" >> "$out/bench.log" 2>&1
    echo "== bench $name rc=$? in $((SECONDS - t0)) s"
}
while [ $# -gt 0 ]; do
    step=$1; shift
    case $step in
    tests)
        for t in gpu_quotient determinism gpu_order gpu; do run_test "test-$t" "$t" 300; done ;;
    corpus)
        range=all
        if [ $# -gt 0 ] && [[ $1 =~ ^([0-9.]+|all)$ ]]; then range=$1; shift; fi
        export ARCHIPELAGO_GPU_CORPUS=$range
        run_test corpus-gpu gpu 560 every_mode_equals_the_oracle_on_the_generated_corpus
        run_test corpus-determinism determinism 560 on_the_gpu
        unset ARCHIPELAGO_GPU_CORPUS ;;
    soak)
        # The opt-in device soak: random invalidation of every source over SEEDS seeds (default
        # 40; 80 took 288 s on the H200), every step against the oracle.
        seeds=40
        if [ $# -gt 0 ] && [[ $1 =~ ^[0-9]+$ ]]; then seeds=$1; shift; fi
        ARCHIPELAGO_SOAK_SEEDS=$seeds run_test soak gpu_quotient 560 --ignored soak ;;
    bench)
        names=()
        while [ $# -gt 0 ] && [[ $1 =~ ^(gpu|quotient|deterministic)$ ]]; do names+=("$1"); shift; done
        extra=()
        while [ $# -gt 0 ] && [[ $1 == --* ]]; do
            extra+=("$1"); shift
            if [ $# -gt 0 ] && [[ $1 != --* ]] && ! [[ $1 =~ ^(tests|corpus|soak|bench)$ ]]; then
                extra+=("$1"); shift
            fi
        done
        [ ${#names[@]} -eq 0 ] && names=(gpu quotient deterministic)
        for n in "${names[@]}"; do
            case $n in
            gpu) bench gpu-bench 240 ;;
            quotient) bench quotient-bench 420 --quotient ;;
            deterministic) bench deterministic-bench 240 --deterministic ;;
            esac
        done ;;
    *) echo "unknown step $step"; exit 2 ;;
    esac
done
# The device tool brings back at most 8 files from $OUT: the logs travel as one archive.
(cd "$out" && compgen -G '*.log' > /dev/null && tar czf logs.tgz ./*.log && rm -f ./*.log)
exit $status
