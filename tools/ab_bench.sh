#!/usr/bin/env bash
# A/B of archipelago binaries on one device: runs the same bench with each binary, in the order
# given and then reversed (a b c c b a), so drifts of the clocks fall on every side alike, and
# appends every run's Markdown table to OUT.
#   tools/ab_bench.sh OUT.md "BENCH ARGS" NAME=BINARY NAME=BINARY...
# e.g. tools/ab_bench.sh $OUT/ab.md "--deterministic --modes block --shapes 1024x256" \
#          base=.dev/base/archipelago new=.dev/archipelago
# Summarize with tools/ab_table.py OUT.md (`bench --deterministic`) or --steady OUT.md (`bench`,
# `bench --quotient`: every run's steady device µs per shape and mode).
set -uo pipefail
out=$1 args=$2; shift 2
export ARCHIPELAGO_ROOT=${ARCHIPELAGO_ROOT:-$PWD}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
runs=("$@")
for ((i = $# - 1; i >= 0; i--)); do runs+=("${@:i+1:1}"); done
n=0
for run in "${runs[@]}"; do
    n=$((n + 1)); name=${run%%=*} bin=${run#*=}
    echo "== run $n: $name ($bin)" >> "$out"
    # shellcheck disable=SC2086 # the bench arguments are split on purpose
    rm -f /tmp/ab_bench.md # a failed run must not leave the last run's table
    timeout 300 "$bin" bench $args --out /tmp/ab_bench.md > /tmp/ab_bench.err 2>&1
    rc=$?
    echo "rc=$rc" >> "$out"
    [ $rc -ne 0 ] && tail -5 /tmp/ab_bench.err >> "$out"
    cat /tmp/ab_bench.md >> "$out" 2>/dev/null
done
