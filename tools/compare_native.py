#!/usr/bin/env python3
"""Side-by-side timing: native mujoco.mj_island vs archipelago's CPU `dsu` on the same rows.

For each trace, re-runs its recording (arguments from the trace's `meta`) in this process with
native timing switched on: at every recorded world-step, `mujoco.mj_island` is called REPEAT
times on that state (through the Python bindings, as the scenes README measures it). The
re-recorded rows are checked to be identical to the trace's, so both sides see the same rows.
Then `archipelago replay --mode dsu TRACE` times archipelago on the trace (all worlds of a step in
one batch). Prints, per scene, rows per step and both times per step (all worlds together) and
the native/archipelago ratio.

    .venv/bin/python tools/compare_native.py [--bin target/release/archipelago] [--repeat 20] traces/*.npz
"""

import argparse
import json
import os
import platform
import re
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import record_trace  # noqa: E402

SAME = ("slot_rowadr", "row_type", "row_id", "row_supadr", "row_support", "nisland")


def native_time(path, repeat):
    z = np.load(path)
    meta = json.loads(bytes(z["meta"]).decode())
    args = argparse.Namespace(out=None, **meta["args"])
    arrays, summary = record_trace.record(args, time_native=repeat)
    for k in SAME:
        if not np.array_equal(arrays[k], z[k]):
            raise SystemExit(f"{path}: re-recorded `{k}` differs from the trace (not the same rows)")
    return meta, summary


def dsu_time(binary, path):
    out = subprocess.run([binary, "replay", "--mode", "dsu", path], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{path}: archipelago replay failed:\n{out.stdout}{out.stderr}")
    for line in out.stdout.splitlines():
        cols = line.split()
        if len(cols) == 7 and cols[1] == "dsu":
            return float(cols[4]), float(cols[6])
    raise SystemExit(f"{path}: no dsu row in replay output:\n{out.stdout}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    target = os.environ.get("CARGO_TARGET_DIR", "target")
    p.add_argument("--bin", default=os.path.join(target, "release", "archipelago"))
    p.add_argument("--repeat", type=int, default=20, help="mj_island calls per recorded world-step")
    p.add_argument("traces", nargs="+")
    a = p.parse_args()
    print(f"# native mujoco.mj_island (Python bindings, median of {a.repeat} calls per world-step, "
          f"summed over worlds) vs archipelago `dsu` (replay, all worlds in one batch)")
    print(f"# machine: {platform.node()} {platform.machine()} {platform.processor() or ''}, "
          f"python {platform.python_version()}, mujoco {record_trace.mujoco.__version__}")
    header = f"{'trace':<32} {'worlds':>6} {'rows/step':>10} {'native µs/step':>15} {'dsu µs/step':>12} {'native/dsu':>11}"
    print(header)
    print("-" * len(header))
    for path in a.traces:
        meta, s = native_time(path, a.repeat)
        rows, dsu_us = dsu_time(a.bin, path)
        native_us = s["native_ns_per_step_mean"] / 1e3
        name = re.sub(r"\.npz$", "", os.path.basename(path))
        ratio = native_us / dsu_us if dsu_us > 0 else float("inf")
        print(f"{name:<32} {meta['args']['worlds']:>6} {rows:>10.1f} {native_us:>15.2f} {dsu_us:>12.2f} {ratio:>11.2f}", flush=True)


if __name__ == "__main__":
    main()
