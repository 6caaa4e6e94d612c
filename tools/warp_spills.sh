#!/usr/bin/env bash
# The warp kernel's registers and spills in seconds, for work on kernels/quotient_warp.cu without
# a device. Builds a copy of SRC (default kernels/quotient_warp.cu) after this checkout's
# kernels/common.cu and kernels/quotient.cu, as the warp program is built, with two cuts:
#   - only quotient_warp_one_kernel is instantiated (the whole program, 24 kernels, takes NVRTC
#     75-80 s on the development machine; this one kernel about 3 s);
#   - the block fallback in qw_block is compiled out (a store of -1 to the pending world's
#     `rounds` instead), so that what is counted is the warp path alone (session 82: at 64
#     registers every spill of the kernel is in the fallback). Not a trap: a trap (sessions 82-84)
#     put about 960 R2UR on the warp path, which the real kernel's warp path does not have.
# The copy is for reading only, never for running; ptxas's smem line is the cut kernel's (the
# fallback's shared memory, about 1.9 KB a block, is not in it). BLOCKS is the launch bound's
# blocks of four warps a multiprocessor, 1 to 16: 8 (main's: 64 registers a thread), 10 (48),
# 12 (40), 16 (32). Prints ptxas's lines for the kernel, then tools/kernel_regs.py --spills'
# counts (instructions, R2UR, spill stores and loads by source line); with --sass FILE it also
# writes the kernel's machine code to FILE (its line numbers are SRC's). With --whole the block
# fallback stays in (the kernel as the device runs it: its spills by line then tell the warp
# path's, in qw_world, from the fallback's; for a SRC that calls the fallback elsewhere than
# main, which the cut would miss; session 87). With --pair the kernel is quotient_pair_one_kernel
# instead (a world's warp and its guard warp, qw_guard; its launch bound stays SRC's). Needs
# libnvrtc and nvdisasm: tools/setup_nvrtc.sh and tools/setup_nvrtc.sh nvdisasm.
# Usage: tools/warp_spills.sh [--sass FILE] [--whole] [--pair] BLOCKS [SRC]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
usage() { # the header above, after a line saying what was wrong
    [ $# -gt 0 ] && echo "warp_spills: $1" >&2
    sed -n '2,/^# Usage:/p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}
sass= whole=0 pair=0
while [ $# -gt 0 ]; do
    case $1 in
    --sass)
        [ $# -ge 2 ] || usage "--sass needs a FILE"
        sass=$(realpath -m "$2")
        shift 2 ;;
    --whole) whole=1; shift ;;
    --pair) pair=1; shift ;;
    *) break ;;
    esac
done
[ $# -ge 1 ] && [ $# -le 2 ] || usage "takes BLOCKS and at most one SRC"
blocks=$1
[[ $blocks =~ ^[1-9][0-9]*$ ]] && ((blocks <= 16)) || usage "BLOCKS must be 1 to 16, not $blocks"
src=$(realpath -m "${2:-$root/kernels/quotient_warp.cu}")
[ -f "$src" ] || usage "no file $src"
lib=$("$root/tools/setup_nvrtc.sh")
export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$root/kernels/common.cu" "$root/kernels/quotient.cu" "$work/"
kernel=quotient_warp_one_kernel
[ $pair = 1 ] && kernel=quotient_pair_one_kernel
python3 - "$src" "$blocks" "$work/quotient_warp.cu" "$whole" "$kernel" <<'PY'
import re, sys
src, blocks, out, whole, name = sys.argv[1:6]
whole = whole == "1"
s = open(src).read()
def cut(old, new, what):
    global s
    if s.count(old) != 1:
        sys.exit(f"warp_spills: {src} no longer has one {what} ({old!r}); update this script")
    s = s.replace(old, new)
if not whole:
    cut("q_world<true>(a, q, LIST ? s_world[i] : w0 + i);",
        "if (threadIdx.x == 0) a.rounds[LIST ? s_world[i] : w0 + i] = -1;", "block fallback call")
bound = re.search(r", pair \? (\d+) : (\d+)\)", s)
if not bound:
    sys.exit(f"warp_spills: {src} has no launch bound `, pair ? N : M)`; update this script")
s = s[: bound.start()] + f", pair ? {bound[1]} : {blocks})" + s[bound.end() :]
first = s.find("QW_ENTRIES(quotient_warp, false")
if first < 0:
    sys.exit(f"warp_spills: {src} has no QW_ENTRIES(quotient_warp, ...) line; update this script")
pair = "true" if name == "quotient_pair_one_kernel" else "false"
s = s[:first] + f"QW_ENTRY({name}, false, true, {pair}, false, false)\n"
open(out, "w").write(s)
PY
cd "$work"
args=(common.cu quotient.cu quotient_warp.cu --spills $kernel)
[ -n "$sass" ] && args+=(--sass "$sass")
python3 "$root/tools/kernel_regs.py" "${args[@]}" > out.txt 2>&1 || { cat out.txt >&2; exit 1; }
grep -A2 -E "for $kernel$" out.txt
sed -n '/^spills /,$p' out.txt
