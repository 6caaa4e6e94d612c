"""Where a warp kernel's step goes, warp by warp: reads the per-warp phase records of a build
with benches/results/logs/session85-exp-trace.patch applied (against 3b12e29's kernels).

That build has lane 0 of every warp of the plain warp kernels store clock64() after each step of
qw_world and %globaltimer at its start and end, into a device array (a world a slot); the
first block of every fiftieth launch prints the array (`QWR` lines) before its own world. Its
printing takes far longer than a launch, so the other blocks' records it prints are those of
its own launch (where the first block was busy printing) and the first block's are of the
launch before: the first block's are left out here. The marks add about 2 us a step (H100:
mechanism-90% at 4,096 worlds 18.5 us against 16.3).

    ARCHIPELAGO_KERNEL_CACHE=... archipelago bench --quotient --no-sequences --no-again \\
        --worlds 4096 --modes warp --shapes q:mechanism-90% | grep QWR | gzip > m.qwr.gz
    python3 tools/warp_phases.py m.qwr.gz [--timeline]

Prints, per printed launch (the second and third where the file has three or more, else each;
the files committed beside the patch keep those two; a launch is named by the number its records
carry, that of the first block's launch, one before the launch the others' records are of): the warps' span (first start to
last end, ns), their durations, their work in cycles by warp of the block (the fourth warp
takes the late guard), by multiprocessor load, and each step's mean cycles over all warps, the
middle tenth and the slowest tenth. --timeline adds, for the first of them, how many warps are
in each step per half microsecond.
"""
import collections
import gzip
import statistics as st
import sys

STEPS = ["setup, guard", "dynamic rows", "islands", "partition", "trees, dofs", "rows",
         "late guard", "return", "barrier"]


def records(path):
    """Launch -> records [index, gt0, gt1, sm, world, d1..d9] (d: cycles since the last mark)."""
    launches = collections.defaultdict(list)
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        for line in f:
            p = line.split()
            if p and p[0] == "QWR" and int(p[2]) >= 4:  # the first block's four: left out
                launches[int(p[1])].append([int(x) for x in p[2:]])
    return launches


def work(r):
    return sum(r[5:13])  # every step but the block's barrier


def pct(v, q):
    return v[min(len(v) - 1, int(q * len(v)))]


def report(launch, recs):
    g0 = min(r[1] for r in recs)
    dur = sorted(r[2] - r[1] for r in recs)
    print(f"launch {launch}: {len(recs)} warps, span {max(r[2] for r in recs) - g0} ns, "
          f"starts within {max(r[1] for r in recs) - g0} ns; durations ns mean "
          f"{st.mean(dur):.0f} p50 {pct(dur, .5)} p90 {pct(dur, .9)} max {dur[-1]}")
    wc = sorted(work(r) for r in recs)
    print(f"  work cycles mean {st.mean(wc):.0f} p50 {pct(wc, .5)} p90 {pct(wc, .9)} max {wc[-1]}")
    by_warp = collections.defaultdict(list)
    for r in recs:
        by_warp[r[0] % 4].append(work(r))
    print("  by warp of the block: " + ", ".join(
        f"{k}: {st.mean(v):.0f}" for k, v in sorted(by_warp.items())))
    by_sm = collections.defaultdict(list)
    for r in recs:
        by_sm[r[3]].append(r)
    for n, count in sorted(collections.Counter(len(v) for v in by_sm.values()).items()):
        ends = [max(r[2] for r in v) - g0 for v in by_sm.values() if len(v) == n]
        print(f"  {count} multiprocessors of {n} warps: last end ns mean {st.mean(ends):.0f}, "
              f"max {max(ends)}")
    ranked = sorted(recs, key=work)
    tenth = max(1, len(ranked) // 10)
    mid = ranked[len(ranked) // 2 - tenth // 2:len(ranked) // 2 + tenth // 2 + 1]
    slow = ranked[-tenth:]
    print("  step cycles:       all   middle tenth   slowest tenth")
    for i, name in enumerate(STEPS):
        print(f"  {name:14s} {st.mean(r[5 + i] for r in recs):8.0f} "
              f"{st.mean(r[5 + i] for r in mid):14.0f} {st.mean(r[5 + i] for r in slow):15.0f}")


def timeline(recs, bin_ns=500):
    """Warps in each step per bin, each warp's cycles mapped onto its own start and end."""
    g0 = min(r[1] for r in recs)
    bins = collections.defaultdict(collections.Counter)
    for r in recs:
        total = sum(r[5:14])
        if total <= 0:
            continue
        scale, t = (r[2] - r[1]) / total, r[1] - g0
        for i, d in enumerate(r[5:14]):
            t1 = t + d * scale
            for b in range(int(t // bin_ns), int(t1 // bin_ns) + 1):
                share = min(t1, (b + 1) * bin_ns) - max(t, b * bin_ns)
                if share > 0:
                    bins[b][STEPS[i]] += share / bin_ns
            t = t1
    print("  us    " + " ".join(f"{n[:12]:>12s}" for n in STEPS[:7]))
    for b in sorted(bins):
        print(f"  {b * bin_ns / 1000:4.1f}  " + " ".join(f"{bins[b][n]:12.0f}" for n in STEPS[:7]))


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if not args:
        print(__doc__)
        sys.exit(2)
    launches = records(args[0])
    # The first printed launch falls in the bench's warm-up where a file has three or more.
    order = sorted(launches)
    chosen = order[1:3] if len(order) >= 3 else order
    for launch in chosen:
        report(launch, launches[launch])
    if "--timeline" in sys.argv and chosen:
        timeline(launches[chosen[0]])


if __name__ == "__main__":
    main()
