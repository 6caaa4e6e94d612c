"""Sum an Nsight Compute source page by CUDA source line: warp stall samples (all reasons) and
instructions executed, with the two most frequent stall reasons per line.

The page comes from a report of kernels compiled with line tables (ARCHIPELAGO_LINEINFO=1):
    ncu --set full --import-source yes -o rep ...; ncu -i rep.ncu-rep --page source --csv \
        --print-source cuda,sass | gzip > page.csv.gz
    python3 tools/ncu_lines.py page.csv.gz [TOP] [--by-inst]
Prints the TOP lines (default 40) by samples (with --by-inst: by instructions executed, where a
kernel's cost is its issue slots rather than its stalls) in file and line order, the total per file, the
stall samples by reason over the whole kernel, and the code it ran: distinct machine
instructions executed, the 128-byte lines they lie in (what the instruction caches had to
fetch) and the span from the first to the last.
Where the page has no source text (NVRTC compiles from memory, so the profiler finds no file),
the line is read from kernels/ of this checkout: run it on the commit that was profiled.
"""
import collections
import csv
import gzip
import os
import sys

args = [a for a in sys.argv[1:] if not a.startswith("--")]
by_inst = "--by-inst" in sys.argv[1:]
path, top = args[0], int(args[1]) if len(args) > 1 else 40
opener = gzip.open if path.endswith(".gz") else open
lines = collections.defaultdict(lambda: [0, 0, "", collections.Counter()])
header, current, fname = None, None, None
ran = set()  # addresses of the machine instructions executed
with opener(path, "rt", encoding="utf-8") as f:
    for row in csv.reader(f):
        if row and row[0] == "File Path":
            fname = row[1].rsplit("/", 1)[-1]
        elif row and row[0] == "Line No":
            header = row
        elif header and len(row) == len(header):
            if row[0]:  # a source line; the SASS rows under it carry the metrics
                current = (fname, int(row[0]))
                lines[current][2] = row[1].strip()[:80]
            elif current and row[4].isdigit():
                entry = lines[current]
                entry[0] += int(row[4])
                entry[1] += int(row[7]) if row[7].isdigit() else 0
                if row[7].isdigit() and int(row[7]) > 0 and row[2].startswith("0x"):
                    ran.add(int(row[2], 16))
                for i, h in enumerate(header):
                    if h.startswith("stall_") and "Not Issued" not in h and row[i].isdigit():
                        entry[3][h[6:]] += int(row[i])
kernels = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kernels")


def source(fname, no, text):
    """The page's text of the line, else the line of kernels/FNAME."""
    if text and not text.startswith("<"):
        return text
    try:
        with open(os.path.join(kernels, fname), encoding="utf-8") as f:
            return f.read().splitlines()[no - 1].strip()[:80]
    except (OSError, IndexError):
        return text


total = sum(v[0] for v in lines.values()) or 1
print(f"total stall samples {total}, instructions executed {sum(v[1] for v in lines.values())}")
best = sorted(lines.items(), key=lambda kv: -kv[1][1 if by_inst else 0])[:top]
for (fname, no), (samples, inst, src, why) in sorted(best):
    reasons = ", ".join(f"{k} {v}" for k, v in why.most_common(2))
    print(f"{fname:12s}{no:5d} {samples:6d} {100 * samples / total:5.1f}% {inst:9d}  {source(fname, no, src)}  [{reasons}]")
per_file = collections.Counter()
for (fname, _), v in lines.items():
    per_file[fname] += v[0]
for fname, samples in per_file.most_common():
    print(f"{fname:12s} {samples:6d} {100 * samples / total:5.1f}%")
reasons = collections.Counter()
for v in lines.values():
    reasons.update(v[3])
print("stall samples by reason: " + ", ".join(f"{k} {v}" for k, v in reasons.most_common()))
if ran:
    first, last = min(ran), max(ran)
    blocks = {a // 128 for a in ran}
    print(
        f"code run: {len(ran)} instructions in {len(blocks)} 128-byte lines "
        f"({128 * len(blocks)} bytes), spanning {last - first + 16} bytes"
    )
