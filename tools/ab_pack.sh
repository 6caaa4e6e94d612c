#!/usr/bin/env bash
# Builds the binaries of other commits for an A/B on the device: per NAME=REV, the release
# `archipelago` and the quotient's GPU test executable of REV (a branch or commit), built in a
# temporary worktree, stripped into .dev/NAME/ (next to what `tools/h200_run.sh --pack` put in
# .dev/). Then, in one device call with carry [".dev"] (each build's quotient test, then the
# A/B and its tables; see tools/ab_call.sh):
#   bash tools/ab_call.sh "--quotient --no-sequences --shapes trace:flex_trampolinex64 \
#       --modes tiled" main=.dev/archipelago NAME=.dev/NAME/archipelago ...
# Usage: tools/ab_pack.sh NAME=REV [NAME=REV...]
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || { sed -n 2,9p "$0"; exit 2; }
mkdir -p .dev
grep -qx '/.dev/' .git/info/exclude 2>/dev/null || echo '/.dev/' >> .git/info/exclude
for pair in "$@"; do
    name=${pair%%=*} rev=${pair#*=}
    [[ $name =~ ^[A-Za-z0-9._-]+$ ]] || { echo "bad name: $name" >&2; exit 2; }
    tree=$(mktemp -d)
    git worktree add --detach -q "$tree" "$rev"
    # One target folder for every build, so that the dependencies are built once.
    export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target/ab}
    (cd "$tree" && cargo build -q --release --bin archipelago)
    exe=$(cd "$tree" && cargo test -q --release --test gpu_quotient --no-run --message-format=json 2>/dev/null |
        python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "gpu_quotient":
        print(m["executable"])')
    rm -rf ".dev/$name" && mkdir -p ".dev/$name"
    cp "$CARGO_TARGET_DIR/release/archipelago" ".dev/$name/"
    cp "$exe" ".dev/$name/gpu_quotient-test"
    strip ".dev/$name"/*
    # Which commit this build is, for the call's log (tools/ab_call.sh).
    git rev-parse --short "$rev" > ".dev/$name/COMMIT"
    git worktree remove --force "$tree"
    echo "$name ($rev, $(git rev-parse --short "$rev")): $(du -sh ".dev/$name" | cut -f1)"
done
du -sh .dev
