#!/usr/bin/env bash
# Fetch NVIDIA's NVRTC runtime library (the CUDA 13.0 wheel from the Python package index) into
# .nvrtc/ so that machines without CUDA can still compile every kernel: with
#   export LD_LIBRARY_PATH=$PWD/.nvrtc/lib:$LD_LIBRARY_PATH
# the kernel-compile tests run instead of skipping. No GPU or driver is needed.
# Prints the library folder on success; exits non-zero (changing nothing) on failure.
#
# `tools/setup_nvrtc.sh nvdisasm` fetches NVIDIA's disassembler instead (its own wheel, into
# .nvrtc/bin/) and prints its path: tools/kernel_regs.py --sass then shows a kernel's machine
# code without a GPU or a CUDA toolkit. Its oldest wheel is of CUDA 13.2; it reads sm_90 code
# built by NVRTC 13.0.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=.nvrtc

# fetch WHEEL_SPEC PATTERN DEST: unpacks the wheel's files whose archive path matches PATTERN (a
# Python regular expression) into DEST, but the .alt. builds of a library (not loaded).
fetch() {
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT # also where set -e stops the script (each run fetches once)
    python3 -m pip download --quiet --no-deps --only-binary=:all: "$1" -d "$tmp" >&2
    python3 - "$tmp" "$2" "$3" <<'PY'
import pathlib, re, sys, zipfile
tmp, pattern, dest = pathlib.Path(sys.argv[1]), re.compile(sys.argv[2]), pathlib.Path(sys.argv[3])
wheel = next(tmp.glob("*.whl"))
dest.mkdir(parents=True, exist_ok=True)
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if pattern.search(name) and ".alt." not in name:
            out = dest / name.rsplit("/", 1)[-1]
            out.write_bytes(z.read(name))
            out.chmod(0o755)
PY
}

usage() {
    echo "usage: tools/setup_nvrtc.sh [nvdisasm]" >&2
    exit 2
}

[ $# -le 1 ] || usage
case "${1:-}" in
"")
    if [ ! -e "$dest/lib/libnvrtc.so" ]; then
        fetch "nvidia-cuda-nvrtc==13.0.*" '/lib/libnvrtc[^/]*$' "$dest/lib"
        ln -sf libnvrtc.so.13 "$dest/lib/libnvrtc.so"
    fi
    echo "$PWD/$dest/lib"
    ;;
nvdisasm)
    [ -x "$dest/bin/nvdisasm" ] || fetch "nvidia-cuda-nvdisasm==13.5.37" '/bin/nvdisasm$' "$dest/bin"
    echo "$PWD/$dest/bin/nvdisasm"
    ;;
*) usage ;;
esac
