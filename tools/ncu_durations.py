"""Group an Nsight Compute CSV of per-launch durations into runs of the same kernel.

    ncu --csv --metrics gpu__time_duration.sum ... > launches.csv
    python3 tools/ncu_durations.py launches.csv [SPLIT]

Consecutive launches of one kernel form a run; a run is split where a launch differs from the
run's median by more than SPLIT (default 0.15, a fraction), so that the bench's phases (steady
replays, the floor, the sequence) show as separate rows. Prints one Markdown row per run: launch
ids, kernel, launches, median, min and max µs.
"""
import csv
import statistics
import sys

path = sys.argv[1]
split = float(sys.argv[2]) if len(sys.argv) > 2 else 0.15
launches = []
with open(path, encoding="utf-8") as f:
    for row in csv.DictReader(line for line in f if line.startswith('"')):
        if row["Metric Name"] != "gpu__time_duration.sum":
            continue
        scale = {"ns": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}[row["Metric Unit"]]
        value = float(row["Metric Value"].replace(",", "")) * scale
        launches.append((int(row["ID"]), row["Kernel Name"], value))

runs = []
for i, name, us in launches:
    last = runs[-1] if runs else None
    if last and last[1] == name and abs(us - statistics.median(last[2])) <= split * statistics.median(last[2]):
        last[2].append(us)
        last[3] = i
    else:
        runs.append([i, name, [us], i])
print("| launches | kernel | count | median µs | min µs | max µs |")
print("|---|---|---|---|---|---|")
for first, name, us, last in runs:
    print(f"| {first}–{last} | {name} | {len(us)} | {statistics.median(us):.2f} | {min(us):.2f} | {max(us):.2f} |")
