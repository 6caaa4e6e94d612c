//! `bench --deterministic`: each GPU mode with the canonical row order on and off, and what
//! the order's sort costs.

use std::fmt::Write as _;

use archipelago::cpu::CpuMode;
use archipelago::gpu::graph::median_us;
use archipelago::gpu::solver::{Options, Part};
use archipelago::gpu::{Gpu, Mode, Solver};
use archipelago::order::{Canonicalizer, KeyLayout};
use archipelago::{Capacity, Error, Input, Islands};

use super::{BenchArgs, Shape, timed_replays};

/// Median µs per step of `mode` with deterministic mode `on` or off, whether the outputs equal
/// `expected` (the CPU reference, canonical when on), the sort plan, and (when on) the median µs
/// of the order stage replayed alone.
fn measure_det(
    g: &Gpu,
    mode: Mode,
    shape: &Shape,
    input: &Input<'_>,
    expected: &Islands,
    on: bool,
    args: &BenchArgs,
) -> archipelago::Result<(f64, bool, String, Option<f64>)> {
    let cap = Capacity::fit(input.model(), input.batch());
    let opts = Options {
        deterministic: on,
        ..args.solver_options()
    };
    let mut solver = Solver::with_options(g, mode, cap, input.model(), opts)?;
    solver.upload_keyed(input, &shape.keys)?;
    solver.replay()?;
    let mut out = Islands::default();
    solver.download(input, &mut out)?;
    let mut ok = out.first_mismatch(expected).is_none();
    let plan = solver
        .order()
        .and_then(|o| o.plan())
        .map_or(String::new(), |p| format!("{p:?}"));
    let (times, reps, same) =
        timed_replays(&mut solver, input, &mut out, expected, args.reps, 2.0)?;
    ok &= same;
    let order = match on {
        true => Some(median_us(solver.time_part(
            Part::Order,
            2.min(reps),
            reps,
        )?)),
        false => None,
    };
    Ok((median_us(times), ok, plan, order))
}

/// Deterministic mode on versus off for every GPU mode on one shape.
pub(super) fn deterministic_table(
    g: &Gpu,
    shape: &Shape,
    input: &Input<'_>,
    reference: &Islands,
    args: &BenchArgs,
    out: &mut String,
) -> archipelago::Result<bool> {
    let cap = Capacity::fit(input.model(), input.batch());
    let mut canon = Canonicalizer::new(&cap);
    let (sorted, _) = canon.canonicalize(input, &shape.keys)?;
    let sorted_input = Input::new(input.model(), sorted)?;
    let mut canonical = Islands::default();
    archipelago::cpu::dsu::Dsu::default().solve(&sorted_input, &mut canonical)?;
    let bits = KeyLayout::fit(input.batch(), &shape.keys).bits();
    let _ = writeln!(out, "canonical key: {bits} bits\n");
    out.push_str("| mode | off µs/step | on µs/step | on/off | on − off µs | order stage alone µs | sort | off equals CPU | on equals CPU canonical |\n|---|---|---|---|---|---|---|---|---|\n");
    let mut all_ok = true;
    for mode in Mode::ALL.into_iter().filter(|&m| args.wants(m)) {
        let off = measure_det(g, mode, shape, input, reference, false, args);
        let on = measure_det(g, mode, shape, input, &canonical, true, args);
        match (off, on) {
            (Ok((off_us, off_ok, _, _)), Ok((on_us, on_ok, plan, order))) => {
                all_ok &= off_ok && on_ok;
                let _ = writeln!(
                    out,
                    "| {mode} | {off_us:.1} | {on_us:.1} | {:.2} | {:.1} | {} | {plan} | {} | {} |",
                    on_us / off_us,
                    on_us - off_us,
                    order.map_or("—".into(), |u| format!("{u:.1}")),
                    if off_ok { "yes" } else { "NO" },
                    if on_ok { "yes" } else { "NO" }
                );
            }
            (Err(e), _) | (_, Err(e)) => {
                let refused = matches!(e, Error::Refused { .. });
                all_ok &= refused;
                let short = match refused {
                    true => "does not fit (refused)".into(),
                    false => e.to_string(),
                };
                let _ = writeln!(out, "| {mode} | {short} | — | — | — | — | — | — | — |");
            }
        }
    }
    Ok(all_ok)
}
