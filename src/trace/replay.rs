//! Replaying a trace through a mode and checking every output against native MuJoCo.

use std::time::{Duration, Instant};

use invalidation::Events;

use super::Trace;
use crate::cpu::{CpuMode, Stats};
use crate::error::Result;
use crate::islands::{Islands, Mismatch};
use crate::oracle;
use crate::rows::{Batch, Input};

/// The first difference between a mode's outputs and native's for one batch step.
///
/// Worlds where native found no island have no engine data beyond `nisland` and `nidof`, so
/// only those two are compared there; every other world is compared field by field.
#[must_use]
pub fn compare(got: &Islands, native: &Islands) -> Option<Mismatch> {
    (0..native.nworld).find_map(|w| world_mismatch(got, native, w))
}

/// The first difference in world `w` (see [`compare`]).
fn world_mismatch(got: &Islands, native: &Islands, w: usize) -> Option<Mismatch> {
    if got.nworld != native.nworld {
        let n = |x: usize| x as i32;
        return Some(Mismatch {
            world: 0,
            field: "nworld",
            index: 0,
            expected: n(native.nworld),
            got: n(got.nworld),
        });
    }
    let (g, e) = (got.world(w), native.world(w));
    if e.nisland != 0 {
        return g.first_mismatch(&e, w);
    }
    let m = |field, expected, got| Mismatch {
        world: w,
        field,
        index: 0,
        expected,
        got,
    };
    if g.nisland != 0 {
        return Some(m("nisland", 0, g.nisland));
    }
    (g.nidof != e.nidof).then(|| m("nidof", e.nidof, g.nidof))
}

/// A mismatch located in a trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepMismatch {
    /// Recorded step (index into the trace).
    pub step: usize,
    /// The simulation step it was recorded at.
    pub sim_step: i32,
    /// World, field, index, expected, got.
    pub mismatch: Mismatch,
}

/// What replaying one trace through one mode found.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The mode's name.
    pub mode: String,
    /// Steps replayed.
    pub steps: usize,
    /// Worlds per step.
    pub worlds: usize,
    /// Rows over all steps and worlds.
    pub rows: usize,
    /// (step, world) pairs whose outputs differ from native.
    pub mismatches: usize,
    /// The first mismatch, if any.
    pub first: Option<StepMismatch>,
    /// Time spent in the mode's `solve`, summed over steps.
    pub solve_time: Duration,
}

impl Report {
    /// Mean rows per recorded step (all worlds together).
    pub fn rows_per_step(&self) -> f64 {
        self.rows as f64 / self.steps.max(1) as f64
    }

    /// Mean solve time per recorded step (all worlds together).
    pub fn time_per_step(&self) -> Duration {
        self.solve_time / self.steps.max(1) as u32
    }
}

/// Replays every step of `trace` through `mode`, comparing with native at every step and world.
/// Errors only when a step cannot be run (a mode error); mismatches are in the report.
pub fn replay(trace: &Trace, mode: &mut dyn CpuMode) -> Result<Report> {
    let name = mode.name();
    replay_with(trace, name, |input, _, out| {
        mode.solve(input, out).map(drop)
    })
}

/// [`replay`] through any stepper: `step` gets each recorded step's input, the events between
/// it and the step before ([`Trace::events`]: equalities switched, trees put to sleep or woken)
/// and the outputs to fill, as [`crate::Engine::step`] does. The report's time is the time in
/// `step`.
///
/// ```
/// # fn main() -> archipelago::Result<()> {
/// use archipelago::{Engine, Mode, Options, trace::{self, Trace}};
/// let t = Trace::open("traces/invalidation_island_efc.npz")?;
/// let options = Options { mode: Mode::Quotient, ..Options::default() };
/// let mut engine = Engine::new(t.model(), t.capacity(), options)?;
/// let report = trace::replay_with(&t, "engine", |input, events, out| {
///     out.clone_from(engine.step_input(input, events)?);
///     Ok(())
/// })?;
/// assert_eq!(report.mismatches, 0);
/// # Ok(()) }
/// ```
pub fn replay_with(
    trace: &Trace,
    name: &str,
    mut step: impl FnMut(&Input<'_>, &Events, &mut Islands) -> Result<()>,
) -> Result<Report> {
    let mut batch = Batch::default();
    let mut native = Islands::default();
    let mut got = Islands::default();
    let mut events = Events::new();
    let mut report = Report {
        mode: name.to_string(),
        steps: trace.nstep(),
        worlds: trace.nworld(),
        rows: trace.nrow_total(),
        mismatches: 0,
        first: None,
        solve_time: Duration::ZERO,
    };
    for k in 0..trace.nstep() {
        trace.batch(k, &mut batch);
        trace.native(k, &mut native);
        trace.events(k, &mut events);
        let input = Input::new(trace.model(), &batch)?;
        let start = Instant::now();
        step(&input, &events, &mut got)?;
        report.solve_time += start.elapsed();
        if let Some(mismatch) = compare(&got, &native) {
            report.mismatches += (0..native.nworld)
                .filter(|&w| world_mismatch(&got, &native, w).is_some())
                .count();
            report.first.get_or_insert(StepMismatch {
                step: k,
                sim_step: trace.step_index()[k],
                mismatch,
            });
        }
    }
    Ok(report)
}

/// The reference ([`crate::oracle`]) as a mode, so that traces check it too.
#[derive(Debug, Default, Clone, Copy)]
pub struct Oracle;

impl CpuMode for Oracle {
    fn name(&self) -> &'static str {
        "oracle"
    }

    fn solve(&mut self, input: &Input<'_>, out: &mut Islands) -> Result<Stats> {
        *out = oracle::solve(input);
        Ok(Stats::default())
    }
}
