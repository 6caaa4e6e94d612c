"""Summarize tools/ab_bench.sh output (runs separated by `== run N: NAME` lines).

    python3 tools/ab_table.py AB.md             # `bench --deterministic`: per shape and mode,
                                                # the mean off µs, on µs, order stage µs and
                                                # on/off of each named binary
    python3 tools/ab_table.py --steady AB.md    # `bench` or `bench --quotient`: per shape and
                                                # mode, every run's steady device µs per step
    python3 tools/ab_table.py --sequences AB.md # `bench --quotient`: per shape and step
                                                # sequence, every run's quotient device µs per
                                                # step, reuse off / reuse on (its summary table)
    python3 tools/ab_table.py --floor AB.md     # `bench --quotient`: per shape, every run's
                                                # quotient step with every world unchanged (µs)
    python3 tools/ab_table.py --back AB.md      # `bench --quotient`: per shape and mode, every
                                                # run's device µs per step back to back
    python3 tools/ab_table.py --cold AB.md      # `bench --quotient`: per shape and mode, every
                                                # run's device µs per step after an L2 flush
    python3 tools/ab_table.py --busy AB.md      # `bench --quotient`: per shape and mode, every
                                                # run's device µs per step with the device kept
                                                # busy before it (since session 41)
    python3 tools/ab_table.py --read AB.md      # `bench --quotient`: per shape and mode, every
                                                # run's device µs per step with a read of every
                                                # output after it (since session 99)
    python3 tools/ab_table.py --wall AB.md      # `bench` or `bench --quotient`: per shape and
                                                # mode, every run's wall µs per whole step
With --means besides --steady, --sequences, --floor, --back, --cold, --busy, --read or --wall: then also per
shape and mode (or step sequence) each binary's mean over its runs and its difference from the first
binary's (the A/B's verdict, computed rather than typed; for sequences reuse off / reuse on).
"""
import collections
import re
import sys

steady = "--steady" in sys.argv[1:]
sequences = "--sequences" in sys.argv[1:]
floor = "--floor" in sys.argv[1:]
back = "--back" in sys.argv[1:]
cold = "--cold" in sys.argv[1:]
wall = "--wall" in sys.argv[1:]
busy = "--busy" in sys.argv[1:]
read = "--read" in sys.argv[1:]
means = "--means" in sys.argv[1:]
path = [a for a in sys.argv[1:] if not a.startswith("--")][0]
in_summary = False
runs = collections.defaultdict(list)
order = []  # (name, run number) in the file's order
name = shape = None
for line in open(path, encoding="utf-8"):
    m = re.match(r"== run (\d+): (\S+)", line)
    if m:
        name = m.group(2)
        order.append((name, m.group(1)))
        continue
    if line.startswith("### "):
        shape = line[4:].split(" (")[0].strip()
        in_summary = line.startswith("### Summary: step sequences")
        continue
    if not name:
        continue
    if sequences:
        # | shape | static rows … | sequence | best full | reuse off | reuse on | speedup | …
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if in_summary and len(cells) >= 6 and cells[0] not in ("shape", "") and cells[0][0] != "-":
            rest = re.search(r"(\d+)% of worlds at rest", cells[2])
            switch = re.search(r"(\d+)% of worlds switch equality (\d+)", cells[2])
            if rest:
                seq = f"{rest.group(1)}% at rest"
            elif switch:
                seq = f"{switch.group(1)}% switch eq {switch.group(2)}"
            else:
                seq = "recorded steps"
            key = (cells[0].split(" (")[0], seq)
            runs[key].append((name, order[-1][1], f"{cells[4]} / {cells[5]}"))
        continue
    if floor:
        m = re.search(r"every world unchanged since its last step .*?: ([\d.]+) µs/step", line)
        if m:
            runs[(shape, "quotient, every world unchanged")].append((name, order[-1][1], m.group(1)))
        continue
    if back:
        # | mode | construct ms | device µs/step | wall µs/step | equals CPU | back to back |
        m = re.match(r"\| ([\w ()]+?) \| [\d.]+ \| [\d.]+ \| [\d.]+ \| \w+ \| ([\d.]+) \|", line)
        if m:
            runs[(shape, m.group(1))].append((name, order[-1][1], m.group(2)))
        continue
    if cold or busy or read:
        # | mode | construct ms | device µs/step | wall µs/step | equals CPU | back to back | cold |
        # busy | (since session 41) then a read (+ what it adds) | (since session 99)
        m = re.match(r"\| ([\w ()]+?) \| [\d.]+ \| [\d.]+ \| [\d.]+ \| \w+ \| [\d.]+ \| ([\d.]+) \|(?: ([\d.]+) \|)?(?: ([\d.]+) \([-+\d.]+\) \|)?", line)
        col = 2 if cold else 3 if busy else 4
        if m and m.group(col):
            runs[(shape, m.group(1))].append((name, order[-1][1], m.group(col)))
        continue
    if steady or wall:
        # | mode | construct ms | device µs/step | wall µs/step | equals CPU |
        m = re.match(r"\| ([\w ()]+?) \| [\d.]+ \| ([\d.]+) \| ([\d.]+) \| \w+ \|", line)
        if m:
            runs[(shape, m.group(1))].append((name, order[-1][1], m.group(3 if wall else 2)))
        continue
    m = re.match(r"\| (\w+) \| ([\d.]+) \| ([\d.]+) \| [\d.]+ \| [-\d.]+ \| ([\d.]+) \|", line)
    if m:
        runs[(shape, m.group(1), name)].append(tuple(float(m.group(i)) for i in (2, 3, 4)))

if sequences or steady or floor or back or cold or busy or read or wall:
    # One row per (shape, sequence) or (shape, mode), one column per run.
    second = "sequence" if sequences else "mode" if steady or back or cold or busy or read or wall else "step"
    print(f"| shape | {second} | " + " | ".join(f"{n} (run {k})" for n, k in order) + " |")
    print("|---|---|" + "---|" * len(order))
    for (shape, what), cells in runs.items():
        by_run = {(n, k): us for n, k, us in cells}
        row = " | ".join(by_run.get(r, "-") for r in order)
        print(f"| {shape} | {what} | {row} |")
    if means:
        names = list(dict.fromkeys(n for n, _ in order))
        heads = " | ".join(f"{n}: mean (vs {names[0]})" for n in names)
        print(f"\n| shape | {second} | {heads} |")
        print("|---|---|" + "---|" * len(names))
        # A sequence's cell is "reuse off / reuse on": each part averaged on its own.
        parts = 2 if sequences else 1
        for (shape, what), cells in runs.items():
            mean = {}
            for n in names:
                v = [[float(x) for x in us.split(" / ")] for m, _, us in cells if m == n]
                mean[n] = [sum(x[i] for x in v) / len(v) for i in range(parts)] if v else None
            base = mean[names[0]]
            row = []
            for n in names:
                if mean[n] is None:
                    row.append("-")
                    continue
                cell = " / ".join(f"{x:.2f}" for x in mean[n])
                if n != names[0] and base is not None:
                    cell += " (" + " / ".join(f"{x - b:+.2f}" for x, b in zip(mean[n], base)) + ")"
                row.append(cell)
            print(f"| {shape} | {what} | " + " | ".join(row) + " |")
    sys.exit(0)

names = list(dict.fromkeys(k[2] for k in runs))
print(f"{'shape':40s} {'mode':9s} | " + " | ".join(f"{n}: off on order on/off" for n in names))
for shape, mode in sorted({k[:2] for k in runs}):
    cells = []
    for n in names:
        v = runs.get((shape, mode, n), [])
        if not v:
            cells.append("-")
            continue
        off, on, order_us = (sum(x[i] for x in v) / len(v) for i in range(3))
        cells.append(f"{off:7.1f} {on:7.1f} {order_us:6.1f} {on / off:.3f}")
    print(f"{shape:40s} {mode:9s} | " + " | ".join(cells))
