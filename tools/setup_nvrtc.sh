#!/usr/bin/env bash
# Fetch NVIDIA's NVRTC runtime library (the CUDA 13.0 wheel from the Python package index) into
# .nvrtc/ so that machines without CUDA can still compile every kernel: with
#   export LD_LIBRARY_PATH=$PWD/.nvrtc/lib:$LD_LIBRARY_PATH
# the kernel-compile tests run instead of skipping. No GPU or driver is needed.
# Prints the library folder on success; exits non-zero (changing nothing) on failure.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=.nvrtc
if [ ! -e "$dest/lib/libnvrtc.so" ]; then
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    python3 -m pip download --quiet --no-deps --only-binary=:all: \
        "nvidia-cuda-nvrtc==13.0.*" -d "$tmp" >&2
    python3 - "$tmp" "$dest" <<'PY'
import pathlib, sys, zipfile
tmp, dest = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
wheel = next(tmp.glob("nvidia_cuda_nvrtc-*.whl"))
lib = dest / "lib"
lib.mkdir(parents=True, exist_ok=True)
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        base = name.rsplit("/", 1)[-1]
        if "/lib/" in name and base.startswith("libnvrtc") and ".alt." not in base:
            (lib / base).write_bytes(z.read(name))
PY
    ln -sf libnvrtc.so.13 "$dest/lib/libnvrtc.so"
fi
echo "$PWD/$dest/lib"
