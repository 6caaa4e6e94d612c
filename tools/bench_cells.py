"""Tabulate the issue's cells over several pages of `archipelago bench --quotient` (each run's
`--out PAGE.md`, e.g. the same shapes run three times at each world count):

    python3 tools/bench_cells.py bench4096-1.md bench4096-2.md ...

Per shape and world count (and card, where the pages name more than one), two Markdown tables:
  1. each run's best full rebuild (mode and device µs a step), quotient (reuse off) and the
     bench's speedup, then the ratio of the means (best full ÷ quotient);
  2. the bench's bound of any step (an empty replay plus every support and offset read once and
     every output written once at the measured bandwidth, from device memory), the most that
     bound lets any mode lead the best full rebuild by, and the quotient over the bound (below 1:
     the step beat the bound, as it can with L2 warm).
Figures are the pages' own; nothing is typed in. Shapes without a quotient row are left out.
A page run with `--modes` (an A/B page) knows only the full rebuilds it ran: its best full
rebuild is marked * and the table says so.

With `--summary` first, one table instead, README's "Where it stands": per shape and world count
the static share, the best full rebuild and the quotient (device µs, means over the runs), the
ratio of the means, and the mode `auto` keeps by whole-step wall time (its rule, as
`engine::auto_keeps_quotient`: the quotient only below QUOTIENT_MARGIN, read from
src/engine/trial.rs, times the best full rebuild's mean wall)
with the quotient's wall speedup (a cell of one run: the page's own speedups); from each page's
first summary table.
"""
import collections
import pathlib
import re
import sys

# `auto`'s margin, read from the engine so that the table's picks follow its rule.
_TRIAL = pathlib.Path(__file__).resolve().parent.parent / "src" / "engine" / "trial.rs"
QUOTIENT_MARGIN = float(
    re.search(r"const QUOTIENT_MARGIN: f64 = ([\d.]+);", _TRIAL.read_text(encoding="utf-8"))[1]
)


def cells(paths):
    """{(shape, nworld, card): [run, ...]}, each run a dict of the page's figures for that shape."""
    out = collections.defaultdict(list)
    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                lines = f.readlines()
        except OSError as e:
            sys.exit(f"{path}: {e.strerror}")
        shape, run, steady, card, subset = None, {}, False, "?", False
        # This page's runs by shape, for its summary table (after every shape's section).
        page, summary = {}, None

        def close():
            if shape and {"nworld", "quotient", "best"} <= run.keys():
                run["subset"] = subset
                out[(shape, run["nworld"], card)].append(run)
                page[shape] = run

        for line in lines:
            if line.startswith("Date: ") and "command:" in line:
                subset = " --modes " in line
            m = re.match(r"GPU: (.+?) \(", line)
            if m:
                card = m[1]
            if line.startswith("### "):
                close()
                # The first summary (the step replayed by itself), not the sequences' ones.
                summary = line.startswith("### Summary: quotient vs")
                is_summary = line.startswith("### Summary")
                shape, run = (None if is_summary else line[4:].split(" (")[0].strip()), {}
                continue
            if summary:
                summary_row(line, page)
            if shape is None:
                continue
            m = re.match(r"nworld (\d+)", line)
            if m:
                run["nworld"] = int(m[1])
            # The shape's first table of modes (the step replayed by itself); later tables
            # (step sequences) have other columns.
            if line.startswith("| mode |"):
                steady = line.startswith("| mode | construct ms | device µs/step |")
                steady = steady and "modes" not in run
                continue
            c = [x.strip() for x in line.split("|")]
            if steady and line.startswith("| ") and len(c) > 4 and re.fullmatch(r"[\d.]+", c[3]):
                run.setdefault("modes", {})[c[1]] = float(c[3])
                if c[1] == "quotient (reuse off)":
                    run["quotient"] = run["modes"][c[1]]
            elif not line.startswith("|"):
                steady = False
            m = re.match(r"bound of any step on this shape: ([\d.]+) µs", line)
            if m:
                run["bound"] = float(m[1])
                most = re.search(r"no mode can be more than ([\d.]+)x faster", line)
                run["most"] = float(most[1]) if most else None
            m = re.match(r"vs best full rebuild \((\w+)\): device ([\d.]+)x", line)
            if m:
                run["best"], run["speedup"] = m[1], m[2]
        close()
    return out


def summary_row(line, page):
    """A row of a page's first summary table into its shape's run: the static share, the best
    full rebuild's and the quotient's wall µs a step, and the page's own `auto` pick."""
    c = [x.strip() for x in line.split("|")]
    if len(c) < 11 or not re.fullmatch(r"[\d.]+", c[6]):
        return
    run = page.get(c[1].split(" (")[0])
    if run is not None:
        run["share"], run["wall_full"], run["wall_quot"] = c[2], float(c[6]), float(c[7])
        run["auto"], run["wall_speedup"] = c[9], c[8]


def mean(xs):
    return sum(xs) / len(xs)


def span(xs, fmt):
    lo, hi = min(xs), max(xs)
    return f"{lo:{fmt}}" if f"{lo:{fmt}}" == f"{hi:{fmt}}" else f"{lo:{fmt}}–{hi:{fmt}}"


def summary(found):
    """README's table (`--summary`): a row per shape and world count, means over the runs, in
    `found`'s order (card, world count, shape)."""
    cards = len({card for (_, _, card) in dict(found)}) > 1
    print(("| card " if cards else "") + "| shape | worlds | runs | static rows / entries "
          "| best full rebuild (device µs) | quotient | speedup "
          "| `auto` picks (quotient's wall speedup) |")
    print(("|---" if cards else "") + "|---|---|---|---|---|---|---|---|")
    for (shape, nworld, card), runs in found:
        if any("wall_full" not in r or r["subset"] for r in runs):
            continue  # a page without the summary's walls, or one of a subset of modes
        mf, quot = mean([r["modes"][r["best"]] for r in runs]), mean([r["quotient"] for r in runs])
        modes = "/".join(dict.fromkeys(r["best"] for r in runs))
        wf, wq = mean([r["wall_full"] for r in runs]), mean([r["wall_quot"] for r in runs])
        # One run: the page's own pick and speedups (from unrounded times); several: `auto`'s
        # rule on the mean walls and the ratios of the means of the pages' figures.
        if len(runs) == 1:
            keeps = runs[0]["auto"]
            speed, wspeed = (runs[0][k].removesuffix("x") + "×" for k in ("speedup", "wall_speedup"))
        else:
            keeps = "quotient" if wq < QUOTIENT_MARGIN * wf else modes
            speed, wspeed = f"{mf / quot:.2f}×", f"{wf / wq:.2f}×"
        picks = {r["auto"] for r in runs}
        split = "" if picks == {keeps} else f"; runs: {', '.join(r['auto'] for r in runs)}"
        name = shape.removeprefix("q:")
        name = re.sub(r"^trace:(.+)x\d+$", r"\1 (trace)", name)
        print((f"| {card} " if cards else "") + f"| {name} | {nworld:,} | {len(runs)} "
              f"| {runs[0]['share']} | `{modes}` {mf:.1f} | {quot:.1f} | {speed} "
              f"| {'quotient' if keeps == 'quotient' else f'`{keeps}`'} ({wspeed}{split}) |")


def main(paths):
    as_summary = paths[:1] == ["--summary"]
    paths = paths[1:] if as_summary else paths
    if not paths:
        sys.exit(__doc__)
    found = sorted(cells(paths).items(), key=lambda kv: (kv[0][2], kv[0][1], kv[0][0]))
    if not found:
        sys.exit("no shape with a quotient row and the best full rebuild in these pages")
    if as_summary:
        return summary(found)
    # The card's column only where the pages name more than one: runs on different cards are
    # never one cell.
    cards = len({card for (_, _, card) in dict(found)}) > 1
    card_head, card_rule = ("| card ", "|---") if cards else ("", "")

    def lead(shape, nworld, card):
        return (f"| {card} " if cards else "") + f"| {shape} | {nworld:,} "

    print(card_head + "| shape | worlds | runs | best full (device µs), each run "
          "| quotient, each run | speedup, each run (the bench's) | means: best full ÷ quotient |")
    print(card_rule + "|---|---|---|---|---|---|---|")
    for (shape, nworld, card), runs in found:
        full = [r["modes"][r["best"]] for r in runs]
        star = ["*" if r["subset"] else "" for r in runs]
        quot = [r["quotient"] for r in runs]
        mf, mq = sum(full) / len(full), sum(quot) / len(quot)
        print(lead(shape, nworld, card) + f"| {len(runs)} "
              f"| {', '.join(r['best'] + f' {f:.1f}' + x for r, f, x in zip(runs, full, star))} "
              f"| {', '.join(f'{q:.1f}' for q in quot)} "
              f"| {', '.join(r['speedup'] + 'x' for r in runs)} "
              f"| {mf / mq:.2f}× ({mf:.2f} / {mq:.2f}) |")
    if any(r["subset"] for _, runs in found for r in runs):
        print("\n\\* the best of the full rebuilds that page ran (`--modes`), not of every one")
    print()
    print(card_head + "| shape | worlds | runs | bound of any step (µs) "
          "| most any mode may lead by | quotient ÷ bound |")
    print(card_rule + "|---|---|---|---|---|---|")
    for (shape, nworld, card), runs in found:
        runs = [r for r in runs if "bound" in r]
        if not runs:
            continue
        most = [r["most"] for r in runs if r["most"] is not None]
        print(lead(shape, nworld, card) + f"| {len(runs)} "
              f"| {span([r['bound'] for r in runs], '.1f')} "
              f"| {span(most, '.2f') + '×' if most else '—'} "
              f"| {span([r['quotient'] / r['bound'] for r in runs], '.2f')} |")


if __name__ == "__main__":
    main(sys.argv[1:])
