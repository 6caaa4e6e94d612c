#!/usr/bin/env python3
"""Side by side, from Nsight Compute raw pages (one kernel each): the kernel's duration and
cycles, how evenly the multiprocessors were busy, and the cycles a warp spent per issued
instruction in each stall reason. For telling latency (long and short scoreboard, wait) from
contention (not selected, pipe and MIO throttles) when the same kernel runs at several sizes.

    ncu --section WarpStateStats --section LaunchStats ... -o rep ...
    ncu -i rep.ncu-rep --page raw --csv | gzip > raw.csv.gz
    python3 tools/ncu_stalls.py NAME=raw.csv.gz [NAME=raw.csv.gz ...]
"""
import csv
import gzip
import sys

ROWS = [
    ("grid (blocks)", "launch__grid_size"),
    ("duration (us)", "gpu__time_duration.sum"),
    ("SM frequency (GHz)", "gpc__cycles_elapsed.avg.per_second"),
    ("elapsed cycles (max)", "gpc__cycles_elapsed.max"),
    ("SM active cycles, avg", "sm__cycles_active.avg"),
    ("SM active cycles, max", "sm__cycles_active.max"),
    ("SM active cycles, min", "sm__cycles_active.min"),
    ("warps active (% of peak)", "sm__warps_active.avg.pct_of_peak_sustained_active"),
    ("warp cycles per issued instruction", "smsp__average_warp_latency_per_inst_issued.ratio"),
]
PREFIX, SUFFIX = "smsp__average_warps_issue_stalled_", "_per_issue_active.ratio"


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    # Header, units, then one row per kernel profiled: the first.
    if len(rows) < 3:
        sys.exit(f"{path}: no profiled kernel in this page")
    return dict(zip(rows[0], rows[2]))


def number(text):
    try:
        return float(text.replace(",", ""))
    except (AttributeError, ValueError):
        return None


def main(argv):
    if not argv:
        print(__doc__)
        return 2
    names, pages = [], []
    for arg in argv:
        name, _, path = arg.rpartition("=")
        names.append(name or path)
        pages.append(load(path))
    # Every stall reason some page has, the longest waits first.
    reasons = sorted(
        {k[len(PREFIX):-len(SUFFIX)] for p in pages for k in p
         if k.startswith(PREFIX) and k.endswith(SUFFIX)},
        key=lambda r: -max(number(p.get(PREFIX + r + SUFFIX, "0")) or 0 for p in pages),
    )
    print("| metric | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    stalls = [(f"stall {r} (cycles per issued instruction)", PREFIX + r + SUFFIX) for r in reasons]
    for label, key in ROWS + stalls:
        values = [number(p.get(key)) for p in pages]
        if key.startswith(PREFIX) and not any(values):
            continue  # a reason no warp waited on
        cells = [
            "-" if v is None else f"{v:,.0f}" if v == int(v) or v >= 1000 else f"{v:,.2f}"
            for v in values
        ]
        print(f"| {label} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
