#!/usr/bin/env python3
"""Registers, spills and code size of each kernel, as ptxas reports them, without a GPU.

Compiles the given CUDA sources (concatenated in order, as src/gpu/ does) with NVRTC for a real
architecture, so that NVRTC also runs ptxas, and prints ptxas's verbose lines. Needs libnvrtc on
the loader path (tools/setup_nvrtc.sh fetches it):

    LD_LIBRARY_PATH=$(tools/setup_nvrtc.sh) python3 tools/kernel_regs.py kernels/common.cu kernels/quotient.cu kernels/quotient_block.cu

(the quotient's block program; its warp program ends with kernels/quotient_warp.cu instead).

Then each kernel's machine code size in bytes (its .text section in the cubin): what the
multiprocessor's instruction caches must hold. Options: --arch sm_90 (default); --cubin FILE
also writes the cubin (for `cuobjdump -sass FILE` where a CUDA toolkit is installed, e.g. on
the device); --sass FILE writes the machine code of every kernel with the source line of each
instruction, from NVIDIA's disassembler (`tools/setup_nvrtc.sh nvdisasm` fetches it; or set
NVDISASM), so that spills (LDL, STL) and loops can be read without a device; --spills KERNEL
(repeatable) counts that kernel's instructions, its spill stores and loads and its copies to
uniform registers (R2UR: in an out-of-line device function, or in a kernel with a trap, ptxas
was seen to keep the global memory descriptor in vector registers and copy it before each load
and store), its out-of-line callees included, and names the source lines with the most spills
(what a kernel written for fewer registers must change);
--option passes one more NVRTC option (e.g. --option=--maxrregcount=40). Exits non-zero, with
NVRTC's log, when the program does not compile.
"""
import argparse
import collections
import ctypes
import os
import pathlib
import re
import shutil
import struct
import subprocess
import sys
import tempfile


def main(argv):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("sources", nargs="+", type=pathlib.Path)
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--cubin", type=pathlib.Path, help="also write the cubin here")
    parser.add_argument(
        "--sass", type=pathlib.Path,
        help="also write the machine code here, each instruction with its source line",
    )
    parser.add_argument(
        "--spills", action="append", default=[], metavar="KERNEL",
        help="count this kernel's instructions, R2UR, and spills by source line (repeatable)",
    )
    parser.add_argument(
        "--option", action="append", default=[],
        help="one more NVRTC option, e.g. --option=--maxrregcount=40 (repeatable)",
    )
    args = parser.parse_args(argv)
    arch, out = args.arch, args.cubin
    src = "".join(
        f'#line 1 "{p.name}"\n{p.read_text()}\n' for p in args.sources
    )
    try:
        lib = ctypes.CDLL("libnvrtc.so")
    except OSError as e:
        raise SystemExit(f"kernel_regs: NVRTC not found ({e}); LD_LIBRARY_PATH=$(tools/setup_nvrtc.sh) puts it on the path")
    prog = ctypes.c_void_p()
    check(lib, lib.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"regs.cu", 0, None, None))
    disasm = bool(args.sass or args.spills)
    nvdisasm = disasm and find_nvdisasm()
    opts = [f"--gpu-architecture={arch}", "-std=c++17", "--ptxas-options=-v", *args.option]
    if disasm:
        opts.append("-lineinfo")
    arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    status = lib.nvrtcCompileProgram(prog, len(opts), arr)
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, log)
    text = log.value.decode(errors="replace")
    if status != 0:
        sys.exit(f"NVRTC failed ({status}):\n{text}")
    # Per kernel: its registers and barriers, then its stack frame and spills.
    keep = ("Function properties", "Used ", "bytes stack frame")
    print("\n".join(l.strip() for l in text.splitlines() if any(k in l for k in keep)))
    lib.nvrtcGetCUBINSize(prog, ctypes.byref(size))
    cubin = ctypes.create_string_buffer(size.value)
    check(lib, lib.nvrtcGetCUBIN(prog, cubin))
    if out:
        out.write_bytes(cubin.raw)
    if disasm:
        with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
            f.write(cubin.raw)
            f.flush()
            run = subprocess.run(
                [nvdisasm, "--print-line-info", f.name], capture_output=True, text=True
            )
        if run.returncode != 0:
            sys.exit(f"kernel_regs: nvdisasm failed ({run.returncode}):\n{run.stderr}")
        sass = run.stdout
        if args.sass:
            args.sass.write_text(sass)
    for name, nbytes in text_sections(cubin.raw):
        print(f"code {name}: {nbytes} bytes")
    for kernel in args.spills:
        print_spills(sass, kernel)


def print_spills(sass, kernel, top=25):
    """The kernel's instructions, spill stores (STL) and loads (LDL), copies to uniform
    registers (R2UR), and the source lines (innermost file:line, as nvdisasm prints it) with the
    most spills."""
    head = f"//--------------------- .text.{kernel} "
    inside, seen, line = False, False, None
    count, r2ur, stl, ldl = 0, 0, collections.Counter(), collections.Counter()
    for text in sass.splitlines():
        if text.startswith("//---------------------"):
            inside = text.startswith(head)
            seen |= inside
        elif inside and (m := re.search(r'//## File "(?:[^"]*/)?([^"/]+)", line (\d+)', text)):
            line = f"{m.group(1)}:{m.group(2)}"
        elif inside and re.match(r"\s+/\*[0-9a-f]+\*/", text):
            count += 1
            r2ur += " R2UR " in text
            stl[line] += " STL" in text
            ldl[line] += " LDL" in text
    if not seen:
        sys.exit(f"kernel_regs: no kernel {kernel} in the program")
    print(
        f"spills {kernel}: {count} instructions, {sum(stl.values())} STL, {sum(ldl.values())} LDL,"
        f" {r2ur} R2UR"
    )
    for where, n in (stl + ldl).most_common(top):
        print(f"  {n:4d} ({stl[where]} STL, {ldl[where]} LDL) {where}")


def text_sections(elf):
    """(kernel, bytes) of every .text.<kernel> section of a 64-bit little-endian ELF."""
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    def section(i):
        name, _, _, _, off, size = struct.unpack_from("<IIQQQQ", elf, shoff + i * shentsize)
        return name, off, size
    _, stroff, _ = section(shstrndx)
    for i in range(shnum):
        name, _, size = section(i)
        end = elf.index(b"\0", stroff + name)
        full = elf[stroff + name : end].decode()
        if full.startswith(".text."):
            yield full[len(".text.") :], size


def find_nvdisasm():
    """NVDISASM if set (it must run), else the one tools/setup_nvrtc.sh fetched, else one on
    the PATH."""
    named = os.environ.get("NVDISASM")
    if named:
        if not os.access(named, os.X_OK):
            sys.exit(f"kernel_regs: NVDISASM={named} is not an executable file")
        return named
    fetched = pathlib.Path(__file__).resolve().parent.parent / ".nvrtc/bin/nvdisasm"
    for candidate in (fetched, shutil.which("nvdisasm")):
        if candidate and os.access(candidate, os.X_OK):
            return str(candidate)
    sys.exit("kernel_regs: nvdisasm not found; tools/setup_nvrtc.sh nvdisasm fetches it")


def check(lib, status):
    if status != 0:
        lib.nvrtcGetErrorString.restype = ctypes.c_char_p
        sys.exit(f"NVRTC: {lib.nvrtcGetErrorString(status).decode()}")


if __name__ == "__main__":
    main(sys.argv[1:])
