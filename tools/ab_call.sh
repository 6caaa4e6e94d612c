#!/usr/bin/env bash
# One device call of a kernel A/B, after tools/ab_pack.sh built .dev/NAME/ for each experiment
# (and tools/h200_run.sh --pack put main's build in .dev/): each experiment's quotient test
# first, all side by side (a build that fails it is left out of the A/B), then
# tools/ab_bench.sh over the bench arguments, then its tables by tools/ab_table.py (every run's
# figures, then each build's means). The device tool brings back at most 8 files, so the call
# leaves three in $OUT: log.txt (the tests' verdicts and the tables: read it first), ab.md
# (every run's bench output) and logs.tgz (the tests' logs).
#   bash tools/ab_call.sh "BENCH ARGS" main=.dev/archipelago NAME=.dev/NAME/archipelago ...
# e.g. bash tools/ab_call.sh "--quotient --no-sequences --worlds 4096 --modes block \
#          --shapes q:mechanism-90%,q:cloth-99%" main=.dev/archipelago pf=.dev/pf/archipelago
# The runs go a b c c b a (ab_bench.sh); name a binary twice to run a b a b b a b a.
# AB_NO_TESTS=1 skips the tests (a second A/B in the same call, of builds already tested).
# Before the timed runs every build runs the bench once, untimed, side by side, so that no run
# pays for compiling its programs on a machine whose caches are cold (AB_NO_WARM=1 skips that).
# Stopped by a signal (`timeout N bash tools/ab_call.sh ...`), it drops the run in progress and
# still writes the tables of the runs finished, so a call that runs out of time keeps them.
# Leave the step sequences on (no --no-sequences) for a change that may pay only while a step's
# rows are the last replay's: session 46's claim kernels were 1 µs faster a replayed step and
# 2-3 µs slower a step of the sequences, whose contacts are new every step.
set -uo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { sed -n 2,12p "$0"; exit 2; }
args=$1; shift
out=${OUT:-out}
mkdir -p "$out/logs"
export ARCHIPELAGO_ROOT=$PWD
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
log=$out/log.txt
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >> "$log" 2>&1
# Each build's commit where its folder records one (tools/ab_pack.sh; tools/h200_run.sh --pack
# leaves .dev/COMMIT only where the caller wrote it, as tools/h200_verify.sh says).
for run in "$@"; do
    name=${run%%=*} dir=$(dirname "${run#*=}")
    [ -f "$dir/COMMIT" ] && echo "$name: $(cat "$dir/COMMIT") ($dir)"
done | sort -u >> "$log"
# The builds' tests run side by side (each is mostly host work: the oracle and NVRTC).
declare -A tested pids
t0=$SECONDS
for run in "$@"; do
    name=${run%%=*} bin=${run#*=}
    test=$(dirname "$bin")/gpu_quotient-test
    if [ -z "${AB_NO_TESTS:-}" ] && [ -z "${pids[$name]:-}" ] && [ -x "$test" ]; then
        timeout 300 "$test" > "$out/logs/test-$name.log" 2>&1 &
        pids[$name]=$!
    fi
done
for name in "${!pids[@]}"; do
    wait "${pids[$name]}"
    tested[$name]=$?
    echo "== test $name rc=${tested[$name]} by $((SECONDS - t0)) s: $(grep -E '^test result' "$out/logs/test-$name.log" | tail -1)" >> "$log"
done
runs=()
declare -A left
for run in "$@"; do
    name=${run%%=*}
    if [ "${tested[$name]:-0}" != 0 ]; then
        # Once per build, however often it is named.
        [ -z "${left[$name]:-}" ] && echo "== $name left out: its quotient test failed" >> "$log"
        left[$name]=1
        continue
    fi
    runs+=("$run")
done
# Each build's means from the runs in ab.md so far, into log.txt.
tables() {
    [ -f "$out/ab.md" ] || return 0
    python3 tools/ab_table.py --steady --means "$out/ab.md" >> "$log" 2>&1
    if grep -q 'L2 flushed before each |' "$out/ab.md"; then
        echo "L2 flushed before each step:" >> "$log"
        python3 tools/ab_table.py --cold --means "$out/ab.md" >> "$log" 2>&1
    fi
    if grep -q 'device busy before each |' "$out/ab.md"; then
        echo "Device kept busy before each step:" >> "$log"
        python3 tools/ab_table.py --busy --means "$out/ab.md" >> "$log" 2>&1
    fi
    if grep -q 'then a reader of every output' "$out/ab.md"; then
        echo "A read of every output after each step:" >> "$log"
        python3 tools/ab_table.py --read --means "$out/ab.md" >> "$log" 2>&1
    fi
    if grep -q '^### Summary: step sequences' "$out/ab.md"; then
        echo "Step sequences (device µs a step, reuse off / reuse on):" >> "$log"
        python3 tools/ab_table.py --sequences --means "$out/ab.md" >> "$log" 2>&1
    fi
}
# The tables, then the tests' logs packed: the end of a call, finished or stopped.
wrap_up() {
    tables
    (cd "$out" && tar czf logs.tgz logs && rm -rf logs)
}
# Stopped (`timeout` sends TERM): the run in progress is dropped, the finished runs' tables
# still written (session 47's call 3 lost its tables so). The bench runs in the background,
# since bash runs a trap only once its foreground command has ended.
stopped() {
    for pid in "${warming[@]}"; do kill -TERM "$pid" 2>/dev/null; done
    if [ -n "$bench" ]; then
        pkill -TERM -P "$bench" 2>/dev/null
        kill -TERM "$bench" 2>/dev/null
    fi
    echo "== stopped after $((SECONDS - t0)) s: the tables of the runs finished by then" >> "$log"
    wrap_up
    exit 124
}
# Each build's programs compiled and assembled once before any timed run: on a fresh machine the
# on-disk caches are cold, and a quotient solver's first construction then takes 40-48 s a
# program (session 50's call 2 finished two runs of ten in 200 s so; since session 53's kernel
# cache and side-by-side builds, about 18 s for all of a solver's programs). The same bench arguments,
# since which programs load depends on the shapes and counts (the register-capped copies), but
# no step sequences; every build side by side, the output kept in logs/. AB_NO_WARM=1 skips it.
t0=$SECONDS bench="" warming=()
trap stopped TERM INT
if [ -z "${AB_NO_WARM:-}" ] && [ ${#runs[@]} -gt 0 ]; then
    wargs=$args
    [[ " $args " == *" --quotient "* && " $args " != *" --no-sequences "* ]] && wargs="$args --no-sequences"
    declare -A warmed
    for run in "${runs[@]}"; do
        name=${run%%=*} bin=${run#*=}
        [ -n "${warmed[$name]:-}" ] && continue
        warmed[$name]=1
        # shellcheck disable=SC2086 # the bench arguments are split on purpose
        timeout 300 "$bin" bench $wargs --out "$out/logs/warm-$name.md" > "$out/logs/warm-$name.log" 2>&1 &
        warming+=($!)
    done
    wait "${warming[@]}"
    warming=()
    echo "== warmed up in $((SECONDS - t0)) s" >> "$log"
fi
t0=$SECONDS
if [ ${#runs[@]} -gt 0 ]; then
    bash tools/ab_bench.sh "$out/ab.md" "$args" "${runs[@]}" &
    bench=$!
    wait "$bench"
fi
trap - TERM INT
echo "== ab in $((SECONDS - t0)) s" >> "$log"
wrap_up
