"""Summarize tools/ab_bench.sh output of `bench --deterministic`: per shape and mode, the mean
off µs, on µs, order stage µs and on/off of each named binary.

    python3 tools/ab_table.py AB.md
"""
import collections
import re
import sys

runs = collections.defaultdict(list)
name = shape = None
for line in open(sys.argv[1], encoding="utf-8"):
    m = re.match(r"== run \d+: (\S+)", line)
    if m:
        name = m.group(1)
        continue
    if line.startswith("### "):
        shape = line[4:].split(" (")[0].strip()
        continue
    m = re.match(r"\| (\w+) \| ([\d.]+) \| ([\d.]+) \| [\d.]+ \| [-\d.]+ \| ([\d.]+) \|", line)
    if m and name:
        runs[(shape, m.group(1), name)].append(tuple(float(m.group(i)) for i in (2, 3, 4)))
names = list(dict.fromkeys(k[2] for k in runs))
print(f"{'shape':40s} {'mode':9s} | " + " | ".join(f"{n}: off on order on/off" for n in names))
for shape, mode in sorted({k[:2] for k in runs}):
    cells = []
    for n in names:
        v = runs.get((shape, mode, n), [])
        if not v:
            cells.append("-")
            continue
        off, on, order = (sum(x[i] for x in v) / len(v) for i in range(3))
        cells.append(f"{off:7.1f} {on:7.1f} {order:6.1f} {on / off:.3f}")
    print(f"{shape:40s} {mode:9s} | " + " | ".join(cells))
