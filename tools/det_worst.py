"""The worst deterministic on/off per shape of a `bench --deterministic` output (Markdown or
log), `dense` aside (its own step is the matrix): the summary table of
benches/results/deterministic-h200-*.md, computed from the measured cells.

    python3 tools/det_worst.py deterministic-bench.md
"""
import re
import sys

rows = {}
shape = None
for line in open(sys.argv[1], encoding="utf-8"):
    if line.startswith("### "):
        shape = line[4:].split(" (")[0].strip()
        continue
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if shape is None or len(cells) < 7 or not re.fullmatch(r"[\d.]+", cells[1]):
        continue
    mode, off, on, order, sort = cells[0], float(cells[1]), float(cells[2]), cells[5], cells[6]
    if mode == "dense":
        continue
    ratio = on / off
    if shape not in rows or ratio > rows[shape][3]:
        rows[shape] = (mode, off, on, ratio, order, sort)
print("| shape | worst mode (dense aside) | off µs | on µs | on/off (unrounded) "
      "| order stage alone µs | sort |")
print("|---|---|---|---|---|---|---|")
for shape, (mode, off, on, ratio, order, sort) in rows.items():
    print(f"| {shape} | {mode} | {off} | {on} | {ratio:.3f} | {order} | {sort} |")
worst = max(rows.items(), key=lambda kv: kv[1][3])
print(f"\nworst: {worst[0]} {worst[1][0]} {worst[1][3]:.3f}")
