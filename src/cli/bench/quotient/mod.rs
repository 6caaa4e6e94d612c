//! `archipelago bench --quotient`: the device quotient against the best full-rebuild GPU mode in
//! the same run, on shapes whose static share of rows is about 0%, 50%, 90% and 99% and on the
//! committed traces tiled across worlds, plus the cost of a rebuild.
//!
//! Per shape: every full-rebuild mode (all but `dense` unless `--modes` names it) and the quotient,
//! each checked against the CPU oracle first; device time per step from CUDA events around graph
//! replays of one batch (the figure the other tables report; the quotient with reuse off, since a
//! replayed batch is unchanged by construction), the same replays enqueued back to back (100
//! between one pair of events: each launch's overhead then overlaps the replay before it, as in a
//! loop that does not wait for every step), the same replays each after an L2 flush (a write
//! over twice the L2 cache, not timed: the step's rows, tables and outputs then come from device
//! memory, as after the rest of a simulation's step, where the other figures find them in L2),
//! the same replays each after the device was kept busy (`gpu::graph::Busy`: the replay is queued
//! before the device reaches it, so no host launch latency can enter the figure, while L2 stays
//! warm), the same replays each followed by one kernel that reads every output once
//! (`gpu::graph::OutputReader`: as a solver reading the islands right after the step would; what
//! the read adds is what the step's stores left to the kernel after it, since the full rebuilds
//! store their maps evict-first and the quotient plainly), and wall time per whole step (host
//! half, uploads, replay, downloads), which is what
//! `auto` compares; rows and outputs are in page-locked memory
//! (`gpu::PinnedBatch`, `gpu::PinnedIslands`). The rebuild rows time the host half (the host's own
//! work, which the upload runs beside the batch's copy: `QuotientSolver::last_host_half`) of a
//! step whose events invalidate every world (a capacity change), minus a steady step's, and of
//! one world (an edit): the median over worlds of an edit step's host half less that of the
//! steady step just before it. The
//! quotient's floor is its device time with reuse on and every world unchanged: only the reuse
//! check runs, which reads every hyperedge (the row-level outputs are then in place: nothing is
//! written), taken with a block a world (the warp kernels, which run past seven worlds a
//! multiprocessor, twelve for worlds of more than 1,024 rows, or past one with two warps a world,
//! have no reuse check). The bound of any step, by any mode, is the empty graph replay plus the
//! bytes a step must move (every support and offset read once, every output written once) at
//! the measured copy bandwidth: the best full rebuild divided by it is the most any mode could
//! gain on the shape where the step's bytes come from device memory (with L2 warm a step may beat
//! it: session 85 measured a build without the guard below it on an H100). Then the same
//! contenders step a sequence of batches (see [`super::sequence`]): there the quotient with
//! reuse on reuses the worlds that did not change, where the block kernels run. On synthetic
//! shapes with equalities, toggling sequences (an equality switched off and on at every step in
//! 10% or all of the worlds) set the quotient with equalities static against dynamic and
//! learned, by device and by wall time.
//!
//! Here: a shape measured and its section written ([`table`]). Beside it:
//! [`shapes`](mod@shapes) (the workloads and their sequences), [`timing`] (how each contender is
//! timed and checked) and [`report`] (the lines under a shape's table and the summary tables over
//! every shape).

mod report;
mod shapes;
mod timing;

use std::fmt::Write as _;

use super::sequence;
use super::{BenchArgs, Shape};
use archipelago::gpu::graph::{Busy, L2Flush};
use archipelago::gpu::{Gpu, Mode, PinnedBatch};
use archipelago::quotient::classify;
use archipelago::{Capacity, Input, Islands};
use report::{FullRebuilds, quotient_lines, row, sequence_line};
pub(super) use report::{Summary, summary};
use shapes::sequences;
pub(super) use shapes::shapes;
use timing::{full_mode, quotient};

/// The full-rebuild modes a default run would time that `modes` leaves out: "the best full
/// rebuild" of a run is the best of those it ran, and a shape's best can change with its world
/// count (at 8,192 worlds `warp` overtook `block`, which a run of `block` alone cannot show).
fn left_out(modes: &[Mode]) -> Vec<&'static str> {
    Mode::ALL
        .into_iter()
        .filter(|&m| m != Mode::Dense && !modes.contains(&m))
        .map(|m| m.name())
        .collect()
}

/// Measures `shape` and appends its section to `out`; returns whether every result was exact,
/// and the summary line.
pub(super) fn table(
    g: &Gpu,
    name: &str,
    shape: &Shape,
    input: &Input<'_>,
    reference: &Islands,
    args: &BenchArgs,
    out: &mut String,
) -> archipelago::Result<(bool, Summary)> {
    // The rows in page-locked memory, as a user who wants the fastest walls would have them.
    let mut rows = PinnedBatch::new(g, &Capacity::fit(input.model(), input.batch()));
    rows.build(|b| {
        b.worlds_from(input.batch());
    });
    let input = &Input::new(input.model(), &rows)?;
    let policy = args.policy();
    let share = classify::share(input, &policy.classifier_for(input.batch()));
    let _ = writeln!(
        out,
        "static share ({}): {:.1}% of rows, {:.1}% of support entries\n",
        super::super::describe_policy(&policy, input.batch()),
        100.0 * share.row_fraction(),
        100.0 * share.entry_fraction()
    );
    let modes: Vec<Mode> = if args.modes.is_empty() {
        Mode::ALL
            .into_iter()
            .filter(|&m| m != Mode::Dense)
            .collect()
    } else {
        Mode::ALL.into_iter().filter(|&m| args.wants(m)).collect()
    };
    let left_out = left_out(&modes);
    if !left_out.is_empty() {
        let _ = writeln!(
            out,
            "full-rebuild modes left out by `--modes`: {} (the best full rebuild below is the best of those run)\n",
            left_out.join(", ")
        );
    }
    out.push_str("| mode | construct ms | device µs/step | wall µs/step | equals CPU | device µs/step, back to back | device µs/step, L2 flushed before each | device µs/step, device busy before each | device µs/step, then a reader of every output (what it adds) |\n|---|---|---|---|---|---|---|---|---|\n");
    let timers = (&L2Flush::new(g)?, &Busy::new(g)?);
    let full = full_rows(g, &modes, input, reference, args, timers, out);
    let mut all_ok = full.ok;
    let mut summary = Summary {
        shape: shape.name.clone(),
        static_rows: share.row_fraction(),
        static_entries: share.entry_fraction(),
        best: full.best.clone(),
        quotient: None,
        unchanged: None,
        bound: None,
        cold: None,
        busy: None,
        sequences: Vec::new(),
    };
    match quotient(g, input, reference, args, timers, shape.waking.as_ref()) {
        Ok(f) => {
            all_ok &= f.timed.ok;
            row(out, &f.timed);
            quotient_lines(g, input, &f, &full, timers, &mut summary, out)?;
        }
        Err(e) => {
            all_ok = false;
            let _ = writeln!(out, "| quotient | — | {e} | — | — | — | — | — | — |");
        }
    }
    let sequences = match args.no_sequences {
        true => Vec::new(),
        false => sequences(name, args.worlds(), args.asleep.zip(Some(&policy)))?,
    };
    for mut seq in sequences {
        let again = (!args.no_again).then_some(timers.0);
        let f = sequence::run(g, &mut seq, &modes, &policy, again)?;
        all_ok &= f.ok;
        f.report(&seq, out);
        summary.sequences.push(sequence_line(&seq, f));
    }
    Ok((all_ok, summary))
}

/// Times each full-rebuild mode in `modes` on `input` and writes its row (a refusal's reason
/// where it refused).
fn full_rows(
    g: &Gpu,
    modes: &[Mode],
    input: &Input<'_>,
    reference: &Islands,
    args: &BenchArgs,
    timers: (&L2Flush, &Busy),
    out: &mut String,
) -> FullRebuilds {
    let mut full = FullRebuilds {
        best: None,
        best_cold: None,
        best_busy: None,
        best_read: None,
        maps_us: None,
        capped: Vec::new(),
        ok: true,
    };
    for &mode in modes {
        match full_mode(g, mode, input, reference, args, timers) {
            Ok(t) => {
                full.ok &= t.ok;
                if t.ok && full.best.as_ref().is_none_or(|b| t.device_us < b.1) {
                    full.best = Some((t.name.clone(), t.device_us, t.wall_us));
                }
                if t.ok && full.best_cold.as_ref().is_none_or(|b| t.cold_us < b.1) {
                    full.best_cold = Some((t.name.clone(), t.cold_us));
                }
                if t.ok && full.best_busy.as_ref().is_none_or(|b| t.busy_us < b.1) {
                    full.best_busy = Some((t.name.clone(), t.busy_us));
                }
                if t.ok && full.best_read.as_ref().is_none_or(|b| t.read_us < b.1) {
                    full.best_read = Some((t.name.clone(), t.read_us, t.device_us));
                }
                full.maps_us = full.maps_us.or(t.maps_us);
                if let Some(n) = t.register_cap {
                    full.capped.push(format!("{} at {n}", t.name));
                }
                row(out, &t);
            }
            Err(e) => {
                full.ok &= matches!(e, archipelago::Error::Refused { .. });
                let _ = writeln!(out, "| {mode} | — | {e} | — | — | — | — | — | — |");
            }
        }
    }
    full
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_names_the_full_rebuilds_its_modes_leave_out() {
        assert!(left_out(&Mode::ALL).is_empty());
        let all_but_dense: Vec<Mode> = Mode::ALL
            .into_iter()
            .filter(|&m| m != Mode::Dense)
            .collect();
        assert!(left_out(&all_but_dense).is_empty());
        let out = left_out(&[Mode::Block, Mode::Labelprop]);
        assert!(out.contains(&"warp") && out.contains(&"dsu") && out.contains(&"tiled"));
        assert!(!out.contains(&"block") && !out.contains(&"dense"));
    }
}
