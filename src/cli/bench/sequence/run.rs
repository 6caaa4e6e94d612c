//! The timing loop on the GPU: every contender steps a sequence in lockstep, each step timed,
//! checked against the CPU and replayed again, into [`Figures`].
//!
//! [`run`] makes the [`Contenders`], steps them all at each step of the sequence
//! ([`Contenders::step`]) and sums up what they measured ([`Contenders::figures`]).

use std::time::Instant;

use archipelago::gpu::graph::{L2Flush, LaunchTimer};
use archipelago::gpu::quotient::{QuotientSolver, StepCounts};
use archipelago::gpu::{Gpu, Mode, PinnedBatch, PinnedIslands, Solver};
use archipelago::quotient::Policy;
use archipelago::{Engine, Input, Islands, Options, Result, cpu};
use invalidation::Events;

use super::figures::{Again, Figures, PhaseFigures, PolicyFigures};
use super::steps::{Phase, Sequence};
use crate::cli::bench::stepped::Stepped;

/// Steps `seq` through every mode in `modes`, the quotient under `policy` (reuse off, then on)
/// and an `auto` Engine under it, in lockstep, and under the default policy the sequence's other
/// policies ([`Sequence::policies`]). With `again`, each step is replayed again after its check
/// ([`Again`]), the second time after `again` evicts L2; without, no step is.
pub(in crate::cli::bench) fn run(
    g: &Gpu,
    seq: &mut Sequence,
    modes: &[Mode],
    policy: &Policy,
    again: Option<&L2Flush>,
) -> Result<Figures> {
    let model = seq.model.clone();
    let mut contenders = Contenders::new(g, seq, modes, policy)?;
    let mut reference = cpu::by_name("dsu").expect("the CPU dsu exists");
    // Page-locked rows and outputs, as a user who wants the fastest walls would have them.
    let (mut batch, mut events) = (PinnedBatch::new(g, &seq.capacity), Events::new());
    let mut out = PinnedIslands::new(g, &seq.capacity);
    let (mut check, mut phases) = (Check::default(), Vec::new());
    // Device times read after each step's own wait, so that every contender's wall is that of
    // a step as the `auto` Engine takes it (its copies enqueued while the device runs).
    let timer = LaunchTimer::new(g)?;
    for k in 0..seq.len {
        batch.build(|b| seq.step(k, b, &mut events));
        let input = Input::new(&model, &batch)?;
        reference.solve(&input, &mut check.reference)?;
        check.step = k;
        let step = Step {
            k,
            input: &input,
            events: &events,
            timer: &timer,
            again,
        };
        contenders.step(&step, &mut out, &mut check)?;
        if step.timed() {
            phases.extend(seq.phase(k));
        }
    }
    Ok(contenders.figures(&phases, check.mismatch))
}

/// One step of the sequence, as every contender takes it.
struct Step<'a, 'i> {
    k: usize,
    input: &'a Input<'i>,
    events: &'a Events,
    timer: &'a LaunchTimer,
    /// Replay each step again after its check ([`Again`]), the second time after this flush.
    again: Option<&'a L2Flush>,
}

impl Step<'_, '_> {
    /// Whether the step counts: every step but the first (which builds every solver's graph and
    /// contracts every quotient).
    fn timed(&self) -> bool {
        self.k > 0
    }
}

/// Each contender's outputs against the CPU's at the same step; the first mismatch is kept.
#[derive(Default)]
struct Check {
    reference: Islands,
    step: usize,
    mismatch: Option<String>,
}

impl Check {
    fn check(&mut self, who: &str, out: &Islands) {
        if self.mismatch.is_none()
            && let Some(m) = out.first_mismatch(&self.reference)
        {
            self.mismatch = Some(format!("{who} at step {}: {m:?}", self.step));
        }
    }
}

/// What one contender measured over the timed steps: the device µs of each step's first
/// replay, the wall µs of each whole step (upload, replay, download), and with `again` the
/// device µs of its replays again ([`Again`]; only the full rebuilds and the quotient with
/// reuse off are replayed again).
#[derive(Default)]
struct Times {
    device: Vec<f64>,
    wall: Vec<f64>,
    again: Vec<[f64; 2]>,
}

/// One step of `s` over `step`: upload, one graph replay timed, download into `out`, checked as
/// `who`; with `replay_again` and the step's flush, replayed again after its check. Its times go
/// into `times` where the step is timed. Returns whether its launch took a warp a world.
fn step_one(
    who: &str,
    s: &mut impl Stepped,
    step: &Step,
    out: &mut PinnedIslands,
    check: &mut Check,
    times: &mut Times,
    replay_again: bool,
) -> Result<bool> {
    let t = Instant::now();
    s.upload(step.input, step.events)?;
    let by_warps = s.by_warps();
    step.timer.around(|| s.replay())?;
    out.fill(step.input, |o| s.download(step.input, o))?;
    let wall = t.elapsed().as_secs_f64() * 1e6;
    let device = step.timer.elapsed_us()?;
    check.check(who, out);
    if step.timed() {
        times.device.push(device);
        times.wall.push(wall);
        if let (true, Some(flush)) = (replay_again, step.again) {
            let after_check = s.time_replays(0, 1)?[0];
            times
                .again
                .push([after_check, flush.time_replays(1, || s.replay())?[0]]);
        }
    }
    Ok(by_warps)
}

/// A full-rebuild mode: its solver (or why it could not be made) and its times.
struct Full {
    mode: Mode,
    solver: std::result::Result<Solver, String>,
    times: Times,
}

impl Full {
    fn step(&mut self, step: &Step, out: &mut PinnedIslands, check: &mut Check) -> Result<()> {
        if let Ok(s) = &mut self.solver {
            step_one(self.mode.name(), s, step, out, check, &mut self.times, true)?;
        }
        Ok(())
    }
}

/// A quotient solver and its times; with reuse off, replayed again ([`Again`]) too.
struct Quotient {
    solver: QuotientSolver,
    times: Times,
}

impl Quotient {
    fn new(g: &Gpu, seq: &Sequence, policy: &Policy, reuse: bool) -> Result<Quotient> {
        let mut solver = QuotientSolver::new(g, seq.capacity, &seq.model, policy.clone())?;
        solver.set_reuse(reuse)?;
        Ok(Quotient {
            solver,
            times: Times::default(),
        })
    }

    /// One step ([`step_one`]). With reuse on a replay again would reuse every world, so only a
    /// quotient with reuse off is replayed again.
    fn step(
        &mut self,
        who: &str,
        step: &Step,
        out: &mut PinnedIslands,
        c: &mut Check,
    ) -> Result<bool> {
        let again = !self.solver.reuse();
        step_one(who, &mut self.solver, step, out, c, &mut self.times, again)
    }
}

/// The `auto` Engine: its wall µs a timed step, whether the step was one of its trials, and the
/// timed steps it ran the quotient.
struct Auto {
    engine: Engine,
    wall: Vec<f64>,
    trial: Vec<bool>,
    quotient_steps: usize,
}

impl Auto {
    /// One step over the input every contender takes (validated once: the Engine takes it as
    /// is), checked.
    fn step(&mut self, step: &Step, check: &mut Check) -> Result<()> {
        let t = Instant::now();
        let got = self.engine.step_input(step.input, step.events)?;
        let wall = t.elapsed().as_secs_f64() * 1e6;
        check.check("auto", got);
        if step.timed() {
            self.wall.push(wall);
            self.trial.push(self.engine.auto_in_trial());
            self.quotient_steps +=
                usize::from(self.engine.last_mode() == archipelago::Mode::Quotient);
        }
        Ok(())
    }
}

/// How the quotient with reuse on solved its worlds over the timed steps.
#[derive(Default)]
struct Tally {
    /// World-steps reused, replayed, masked and solved directly.
    counts: [usize; 4],
    in_place: usize,
    rows_only: usize,
    by_nodes: usize,
    /// Timed steps that took a warp a replayed world.
    warp_steps: usize,
}

impl Tally {
    fn add(&mut self, c: StepCounts, by_warps: bool) {
        self.in_place += c.in_place;
        self.rows_only += c.rows_only;
        self.by_nodes += c.by_nodes;
        self.warp_steps += usize::from(by_warps);
        for (n, v) in self
            .counts
            .iter_mut()
            .zip([c.reused, c.replayed, c.masked, c.direct])
        {
            *n += v;
        }
    }
}

/// Every contender of one sequence.
struct Contenders {
    full: Vec<Full>,
    /// The quotient with reuse off, then on.
    off: Quotient,
    on: Quotient,
    /// The quotient with reuse on and the node-level maps off, where the model has them.
    trees: Option<Quotient>,
    /// The sequence's other policies, reuse on: label, quotient, worlds solved directly.
    policies: Vec<(&'static str, Quotient, usize)>,
    auto: Auto,
    tally: Tally,
    /// Graphs captured by the quotient with reuse off and on at the first step (untimed).
    captured_first: [u64; 2],
}

impl Contenders {
    fn new(g: &Gpu, seq: &Sequence, modes: &[Mode], policy: &Policy) -> Result<Contenders> {
        let (cap, model) = (seq.capacity, &seq.model);
        let full = modes
            .iter()
            .map(|&mode| Full {
                mode,
                solver: Solver::new(g, mode, cap, model).map_err(|e| e.to_string()),
                times: Times::default(),
            })
            .collect();
        let on = Quotient::new(g, seq, policy, true)?;
        let off = Quotient::new(g, seq, policy, false)?;
        let trees = match on.solver.node_maps() {
            true => {
                let mut t = Quotient::new(g, seq, policy, true)?;
                t.solver.set_node_maps(false);
                Some(t)
            }
            false => None,
        };
        let others = match *policy == Policy::default() {
            true => seq.policies(),
            false => Vec::new(),
        };
        let mut policies = Vec::new();
        for (label, other) in others {
            policies.push((label, Quotient::new(g, seq, &other, true)?, 0));
        }
        let options = Options {
            mode: archipelago::Mode::Auto,
            policy: policy.clone(),
            ..Options::default()
        };
        let auto = Auto {
            engine: Engine::with_gpu(g, model, cap, options)?,
            wall: Vec::new(),
            trial: Vec::new(),
            quotient_steps: 0,
        };
        Ok(Contenders {
            full,
            off,
            on,
            trees,
            policies,
            auto,
            tally: Tally::default(),
            captured_first: [0; 2],
        })
    }

    /// Every contender takes `step`, each checked against the CPU.
    fn step(&mut self, step: &Step, out: &mut PinnedIslands, check: &mut Check) -> Result<()> {
        let k = step.k;
        // Whoever runs first after the CPU reference finds the input where it left it: on all
        // 19 sequences of sessions 29 and 30 (4,096 and 8,192 worlds) the first full mode,
        // always `dsu`, had the lowest median wall of every mode, 30-70 µs below modes faster
        // on the device. So the full modes take turns at the front, and `auto` runs first on
        // odd steps and last on even ones.
        let auto_first = k % 2 == 1;
        if auto_first {
            self.auto.step(step, check)?;
        }
        let n = self.full.len();
        for j in 0..n {
            self.full[(j + k) % n].step(step, out, check)?;
        }
        self.off.step("quotient (reuse off)", step, out, check)?;
        // The tree-level maps run before the quotient on even steps and after it on odd ones,
        // so that neither always finds the caches as the other left them.
        let trees_label = "quotient (tree-level maps)";
        if let (0, Some(t)) = (k % 2, &mut self.trees) {
            t.step(trees_label, step, out, check)?;
        }
        let by_warps = self.on.step("quotient", step, out, check)?;
        if let (1, Some(t)) = (k % 2, &mut self.trees) {
            t.step(trees_label, step, out, check)?;
        }
        for (label, q, direct) in &mut self.policies {
            q.step(label, step, out, check)?;
            if step.timed() {
                *direct += q.solver.last_counts().direct;
            }
        }
        if !auto_first {
            self.auto.step(step, check)?;
        }
        if k == 0 {
            self.captured_first = [self.off.solver.captures(), self.on.solver.captures()];
        }
        if step.timed() {
            self.tally.add(self.on.solver.last_counts(), by_warps);
        }
        Ok(())
    }

    /// What every contender measured, with `phases` the timed steps' phases (a sleeping
    /// sequence's; else empty) and the first mismatch, if any.
    fn figures(self, phases: &[Phase], mismatch: Option<String>) -> Figures {
        let again = self.again();
        let policies = self.policy_figures();
        let wall = self.walls(&policies);
        // The full rebuild the Engine ran, over the steps it ran between trials (walls of the
        // contenders that ran: the same timed steps as the Engine's).
        let auto_full = self.auto.engine.gpu_full_mode();
        let auto_between = self.auto_between(auto_full);
        let by_phase = self.by_phase(phases);
        let captures = [
            self.off.solver.captures() - self.captured_first[0],
            self.on.solver.captures() - self.captured_first[1],
        ];
        let Tally {
            counts,
            in_place,
            rows_only,
            by_nodes,
            warp_steps,
        } = self.tally;
        Figures {
            quotient: mean(&self.on.times.device),
            quotient_off: mean(&self.off.times.device),
            again,
            counts,
            in_place,
            rows_only,
            by_nodes,
            warp_steps,
            quotient_trees: self.trees.as_ref().map(|t| mean(&t.times.device)),
            policies,
            by_phase,
            captures,
            ok: mismatch.is_none(),
            mismatch,
            wall,
            auto_mean: mean(&self.auto.wall),
            auto_quotient_steps: self.auto.quotient_steps,
            auto_full,
            auto_between,
            full: self
                .full
                .into_iter()
                .map(|f| (f.mode, f.solver.map(|_| mean(&f.times.device))))
                .collect(),
        }
    }

    /// The full-rebuild modes that ran (those whose solver could be made).
    fn ran(&self) -> impl Iterator<Item = &Full> {
        self.full.iter().filter(|f| f.solver.is_ok())
    }

    /// The replays again ([`Again`]) of the full rebuilds that ran and of the quotient with
    /// reuse off, by name.
    fn again(&self) -> Vec<(String, Again)> {
        // Only the contenders replayed again (none without `again`).
        self.ran()
            .map(|f| (f.mode.name().to_string(), &f.times.again))
            .chain([("quotient (reuse off)".to_string(), &self.off.times.again)])
            .filter(|(_, a)| !a.is_empty())
            .map(|(name, a)| (name, mean_again(a)))
            .collect()
    }

    /// The quotient's figures under the sequence's other policies.
    fn policy_figures(&self) -> Vec<PolicyFigures> {
        self.policies
            .iter()
            .map(|&(label, ref q, direct)| PolicyFigures {
                label,
                device: mean(&q.times.device),
                wall: median(&q.times.wall),
                direct,
            })
            .collect()
    }

    /// The median walls: of the full rebuilds that ran, the quotient, the quotient under each
    /// of the `policies`, and the `auto` Engine.
    fn walls(&self, policies: &[PolicyFigures]) -> Vec<(String, f64)> {
        let mut wall: Vec<(String, f64)> = self
            .ran()
            .map(|f| (f.mode.name().to_string(), median(&f.times.wall)))
            .collect();
        wall.push(("quotient".into(), median(&self.on.times.wall)));
        for p in policies {
            wall.push((format!("quotient ({})", p.label), p.wall));
        }
        wall.push(("auto".into(), median(&self.auto.wall)));
        wall
    }

    /// Over the timed steps outside the `auto` Engine's trials: their count, the Engine's median
    /// wall and that of `auto_full`, its full rebuild (`None` where that did not run here).
    fn auto_between(&self, auto_full: Option<Mode>) -> Option<(usize, f64, f64)> {
        let between = |w: &[f64]| -> Vec<f64> {
            let steps = w.iter().zip(&self.auto.trial);
            steps
                .filter(|&(_, &trial)| !trial)
                .map(|(&us, _)| us)
                .collect()
        };
        self.ran()
            .find(|f| Some(f.mode) == auto_full)
            .and_then(|f| {
                let (a, b) = (between(&self.auto.wall), between(&f.times.wall));
                (!a.is_empty() && a.len() == b.len()).then(|| (a.len(), median(&a), median(&b)))
            })
    }

    /// A sleeping sequence's figures by phase, with `phases` its timed steps' (empty for other
    /// sequences).
    fn by_phase(&self, phases: &[Phase]) -> Vec<PhaseFigures> {
        // A sleeping sequence's timed steps by phase (each contender's times are of the same
        // steps).
        let of_phase = |times: &[f64], phase: Phase| -> f64 {
            let steps = times.iter().zip(phases).filter(|&(_, &p)| p == phase);
            mean(&steps.map(|(&us, _)| us).collect::<Vec<_>>())
        };
        match phases.is_empty() {
            true => Vec::new(),
            false => Phase::ALL
                .into_iter()
                .map(|phase| PhaseFigures {
                    phase,
                    steps: phases.iter().filter(|&&p| p == phase).count(),
                    full: self
                        .ran()
                        .map(|f| (f.mode, of_phase(&f.times.device, phase)))
                        .collect(),
                    quotient_off: of_phase(&self.off.times.device, phase),
                    quotient: of_phase(&self.on.times.device, phase),
                })
                .collect(),
        }
    }
}

/// The mean of `v` (0 where it is empty).
fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// The median of `v` (`gpu::graph::median_us`).
fn median(v: &[f64]) -> f64 {
    archipelago::gpu::graph::median_us(v.to_vec())
}

/// The mean of each of a contender's replays again (0 where there were none).
fn mean_again(v: &[[f64; 2]]) -> Again {
    let n = v.len().max(1) as f64;
    Again {
        after_check: v.iter().map(|a| a[0]).sum::<f64>() / n,
        flushed: v.iter().map(|a| a[1]).sum::<f64>() / n,
    }
}
