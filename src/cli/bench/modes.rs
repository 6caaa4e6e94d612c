//! The plain bench's table of modes on one shape: every GPU mode timed by graph replays, or,
//! without a device, every CPU mode by wall time; each checked against the oracle first.

use std::fmt::Write as _;
use std::time::Instant;

use archipelago::cpu::dense::Dense;
use archipelago::cpu::quotient::QuotientMode;
use archipelago::cpu::{self, CpuMode};
use archipelago::gpu::graph::median_us;
use archipelago::gpu::{Gpu, Mode, Solver};
use archipelago::{Capacity, Error, Input, Islands};

use super::{BenchArgs, floor_bandwidth, gib_bytes, maps_alone, mib, timed_replays};

struct Row {
    mode: Mode,
    result: archipelago::Result<Measured>,
}

struct Measured {
    construct_ms: f64,
    workspace: usize,
    peak: usize,
    median_us: f64,
    rounds: u32,
    floor_us: f64,
    /// The maps stage replayed alone (modes with a separate maps launch).
    maps_us: Option<f64>,
    ok: bool,
}

/// One GPU mode over `input`; `bandwidth` (bytes/s) puts its floor in µs.
fn measure(
    g: &Gpu,
    bandwidth: f64,
    mode: Mode,
    input: &Input<'_>,
    reference: &Islands,
    args: &BenchArgs,
) -> archipelago::Result<Measured> {
    let cap = Capacity::fit(input.model(), input.batch());
    let (free_before, _) = g.mem_info()?;
    let opts = args.solver_options();
    let start = Instant::now();
    let mut solver = Solver::with_options(g, mode, cap, input.model(), opts)?;
    // The first step: launched directly, its graph captured at the download (in the figure).
    solver.upload(input)?;
    solver.replay()?;
    let mut out = Islands::default();
    let stats = solver.download(input, &mut out)?;
    let construct_ms = start.elapsed().as_secs_f64() * 1e3;
    let mut ok = out.first_mismatch(reference).is_none();
    let (free_after, _) = g.mem_info()?;
    let (times, reps, same) =
        timed_replays(&mut solver, input, &mut out, reference, args.reps, 3.0)?;
    ok &= same;
    let maps_us = maps_alone(&mut solver, 2.min(reps), reps)?;
    Ok(Measured {
        construct_ms,
        workspace: solver.workspace().bytes(),
        peak: free_before.saturating_sub(free_after),
        median_us: median_us(times),
        rounds: stats.rounds,
        floor_us: solver.workspace().floor_bytes() as f64 / bandwidth * 1e6,
        maps_us,
        ok,
    })
}

pub(super) fn gpu_table(
    g: &Gpu,
    input: &Input<'_>,
    reference: &Islands,
    args: &BenchArgs,
    out: &mut String,
) -> archipelago::Result<bool> {
    let (bandwidth, _) = floor_bandwidth(g)?;
    let rows: Vec<Row> = Mode::ALL
        .into_iter()
        .filter(|&m| args.wants(m))
        .map(|mode| Row {
            mode,
            result: measure(g, bandwidth, mode, input, reference, args),
        })
        .collect();
    let dense = rows
        .iter()
        .find(|r| r.mode == Mode::Dense)
        .and_then(|r| r.result.as_ref().ok())
        .map(|m| m.median_us);
    out.push_str("| mode | construct ms | workspace MiB | peak MiB | median µs/step | rounds | vs dense | floor µs | equals CPU |\n|---|---|---|---|---|---|---|---|---|\n");
    let mut all_ok = true;
    let mut best: Option<(f64, Mode)> = None;
    for r in &rows {
        match &r.result {
            Ok(m) => {
                all_ok &= m.ok;
                if m.ok && best.is_none_or(|(b, _)| m.median_us < b) {
                    best = Some((m.median_us, r.mode));
                }
                let ratio = match dense {
                    Some(d) => format!("{:.1}x", d / m.median_us),
                    None if rows.iter().any(|r| r.mode == Mode::Dense) => "does not fit".into(),
                    None => "not run".into(),
                };
                let _ = writeln!(
                    out,
                    "| {} | {:.1} | {} | {} | {:.1} | {} | {} | {:.2} | {} |",
                    r.mode,
                    m.construct_ms,
                    mib(m.workspace),
                    mib(m.peak),
                    m.median_us,
                    m.rounds,
                    ratio,
                    m.floor_us,
                    if m.ok { "yes" } else { "NO" }
                );
            }
            Err(e) => {
                let refused = matches!(e, Error::Refused { .. });
                all_ok &= refused;
                let short = match refused {
                    true => "does not fit (refused)".into(),
                    false => e.to_string(),
                };
                let _ = writeln!(
                    out,
                    "| {} | — | — | — | {} | — | — | — | — |",
                    r.mode, short
                );
            }
        }
    }
    if let Some((us, mode)) = best {
        let _ = writeln!(
            out,
            "\nauto (fastest measured, exact): {mode} at {us:.1} µs/step"
        );
    }
    let maps = rows.iter().find_map(|r| r.result.as_ref().ok()?.maps_us);
    if let Some(maps) = maps {
        let _ = writeln!(
            out,
            "maps alone (dsu's maps launch over its labels, replayed by itself): {maps:.1} µs/step"
        );
    }
    Ok(all_ok)
}

/// Seconds of timed steps a CPU cell takes at most (past them it stops before `--reps`).
pub(super) const CPU_BUDGET_S: f64 = 3.0;

pub(super) fn cpu_table(
    input: &Input<'_>,
    reference: &Islands,
    args: &BenchArgs,
    out: &mut String,
) -> archipelago::Result<bool> {
    out.push_str("| mode | median µs/step | rounds | scratch MiB | equals CPU oracle |\n|---|---|---|---|---|\n");
    let mut all_ok = true;
    for name in cpu::NAMES {
        // `--eq-dynamic`'s policy for the quotient, `--dense-limit-gib` for `dense`.
        let mut mode: Box<dyn CpuMode> = match (name, args.dense_limit_gib) {
            ("quotient", _) => Box::new(QuotientMode::new(args.policy())),
            ("dense", Some(gib)) => Box::new(Dense::new(gib_bytes(gib))),
            _ => match cpu::by_name(name) {
                Some(mode) => mode,
                None => continue,
            },
        };
        // One batch solved again and again: with reuse the quotient would time its cache.
        mode.set_reuse(false);
        let mut islands = Islands::default();
        let mut stats = match mode.solve(input, &mut islands) {
            Ok(s) => s,
            Err(e) => {
                // As in the GPU tables: a mode that does not fit is not a failure, any other
                // error is.
                all_ok &= matches!(e, Error::Refused { .. });
                let _ = writeln!(out, "| {name} | {e} | — | — | — |");
                continue;
            }
        };
        let mut ok = islands.first_mismatch(reference).is_none();
        let mut times = Vec::new();
        let budget = Instant::now();
        // At least one, as on the GPU: no timed step would leave the median NaN.
        for _ in 0..args.reps.max(1) {
            let t = Instant::now();
            stats = mode.solve(input, &mut islands)?;
            times.push(t.elapsed().as_secs_f64() * 1e6);
            if budget.elapsed().as_secs_f64() > CPU_BUDGET_S {
                break;
            }
        }
        // The timed steps' outputs too (the quotient's first step contracts; the timed ones
        // replay its quotients).
        ok &= islands.first_mismatch(reference).is_none();
        all_ok &= ok;
        let _ = writeln!(
            out,
            "| {name} | {:.1} | {} | {} | {} |",
            median_us(times),
            stats.rounds,
            mib(stats.scratch_bytes),
            if ok { "yes" } else { "NO" }
        );
    }
    Ok(all_ok)
}
